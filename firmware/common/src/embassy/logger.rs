//! defmt over the board's console UART: each log call becomes one defmt frame (rzcobs,
//! ended by a zero byte) written to the UART; `linklab emu` decodes the frames with the
//! image's defmt table. Logging masks interrupts for the frame (as defmt-rtt does), so a
//! frame is never cut by another.

use core::cell::Cell;
use core::sync::atomic::{AtomicBool, Ordering};

use critical_section::{Mutex, RestoreState};

/// A console: writes bytes to the UART (blocking).
type Console = Option<fn(&[u8])>;

/// The board's console.
static CONSOLE: Mutex<Cell<Console>> = Mutex::new(Cell::new(None));

/// Sets the console the frames go to (before it, they are dropped).
pub fn set_console(write: fn(&[u8])) {
    critical_section::with(|cs| CONSOLE.borrow(cs).set(Some(write)));
}

#[defmt::global_logger]
struct Logger;

/// A frame is being written.
static TAKEN: AtomicBool = AtomicBool::new(false);
/// A log call was made while a frame was being written (only a `Format` impl that logs
/// could): that inner frame is dropped.
static NESTED: AtomicBool = AtomicBool::new(false);

/// The frame's state, only touched between `acquire` and `release` (interrupts masked).
struct Frame {
    restore: Cell<RestoreState>,
    encoder: core::cell::RefCell<defmt::Encoder>,
    console: Cell<Console>,
}

// SAFETY: touched only inside the critical section `acquire` opens and `release` closes, on
// one core.
unsafe impl Sync for Frame {}

static FRAME: Frame = Frame {
    restore: Cell::new(RestoreState::invalid()),
    encoder: core::cell::RefCell::new(defmt::Encoder::new()),
    console: Cell::new(None),
};

fn emit(bytes: &[u8]) {
    if let Some(write) = FRAME.console.get() {
        write(bytes);
    }
}

// SAFETY: acquire/release bracket every frame in a critical section; a nested acquire (a log
// call from an interrupt cannot happen: interrupts are masked) is refused.
unsafe impl defmt::Logger for Logger {
    fn acquire() {
        // SAFETY: released in `release`, which defmt always calls after `acquire`.
        let restore = unsafe { critical_section::acquire() };
        if TAKEN.swap(true, Ordering::Acquire) {
            // Re-entered (a log call inside a log call's argument): drop the inner frame.
            NESTED.store(true, Ordering::Relaxed);
            // SAFETY: undoing the acquire above.
            unsafe { critical_section::release(restore) };
            return;
        }
        FRAME.restore.set(restore);
        let console = critical_section::with(|cs| CONSOLE.borrow(cs).get());
        FRAME.console.set(console);
        if let Ok(mut e) = FRAME.encoder.try_borrow_mut() {
            e.start_frame(emit);
        }
    }

    unsafe fn flush() {}

    unsafe fn release() {
        if NESTED.swap(false, Ordering::Relaxed) {
            return;
        }
        if let Ok(mut e) = FRAME.encoder.try_borrow_mut() {
            e.end_frame(emit);
        }
        TAKEN.store(false, Ordering::Release);
        // SAFETY: the state `acquire` saved.
        unsafe { critical_section::release(FRAME.restore.get()) };
    }

    unsafe fn write(bytes: &[u8]) {
        if NESTED.load(Ordering::Relaxed) {
            return;
        }
        if let Ok(mut e) = FRAME.encoder.try_borrow_mut() {
            e.write(bytes, emit);
        }
    }
}

defmt::timestamp!("{=u64:us}", embassy_time::Instant::now().as_micros());
