//! defmt over the console UART: each log call is one defmt frame (rzcobs, ended by a zero
//! byte), which `linklab emu` decodes with the image's own table. The firmware takes no
//! interrupt, so a frame is never cut by another; a log call inside a log call's argument is
//! dropped.

use core::sync::atomic::{AtomicBool, Ordering};

#[defmt::global_logger]
struct Logger;

/// A frame is being written.
static TAKEN: AtomicBool = AtomicBool::new(false);
/// A log call came while a frame was being written: that inner frame is dropped.
static NESTED: AtomicBool = AtomicBool::new(false);

/// The encoder, only touched between `acquire` and `release`.
struct Frame(core::cell::RefCell<defmt::Encoder>);

// SAFETY: one core, no interrupt taken, and `TAKEN` keeps out a nested frame.
unsafe impl Sync for Frame {}

static FRAME: Frame = Frame(core::cell::RefCell::new(defmt::Encoder::new()));

fn emit(bytes: &[u8]) {
    crate::uart::write_bytes(bytes);
}

// SAFETY: acquire/release bracket every frame; a nested acquire is refused.
unsafe impl defmt::Logger for Logger {
    fn acquire() {
        if TAKEN.swap(true, Ordering::Acquire) {
            NESTED.store(true, Ordering::Relaxed);
            return;
        }
        if let Ok(mut e) = FRAME.0.try_borrow_mut() {
            e.start_frame(emit);
        }
    }

    unsafe fn flush() {}

    unsafe fn release() {
        if NESTED.swap(false, Ordering::Relaxed) {
            return;
        }
        if let Ok(mut e) = FRAME.0.try_borrow_mut() {
            e.end_frame(emit);
        }
        TAKEN.store(false, Ordering::Release);
    }

    unsafe fn write(bytes: &[u8]) {
        if NESTED.load(Ordering::Relaxed) {
            return;
        }
        if let Ok(mut e) = FRAME.0.try_borrow_mut() {
            e.write(bytes, emit);
        }
    }
}

defmt::timestamp!("{=u64:us}", crate::TIMER.now_ns() / 1000);
