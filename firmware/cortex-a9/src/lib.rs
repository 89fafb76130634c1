//! What linklab's Cortex-A9 images share, whichever SoC they run on (QEMU's
//! `xilinx-zynq-a9` and `sabrelite`): the reset entry and vectors ([`entry`]), the linker
//! script's sections (`cortex-a9.x`, which a board's script includes after its MEMORY), the
//! MPCore's global timer ([`gtimer`]) and GIC ([`gic`]), a flat MMU map with the caches on
//! ([`mmu`]), IRQ masking and WFI, the console a fault or panic line goes to (the board's
//! UART, registered with [`set_console`]), a polled UART writer and a cell for what the
//! interrupt handler owns ([`polled`]).
#![no_std]

pub mod entry;
pub mod gic;
pub mod gtimer;
pub mod mmu;
pub mod polled;

use core::sync::atomic::{AtomicUsize, Ordering};

/// The board's console writer (a `fn(&str)`), 0 until [`set_console`].
static CONSOLE: AtomicUsize = AtomicUsize::new(0);
/// The board's IRQ handler (a `fn()`), 0 until [`set_irq_handler`].
static IRQ_HANDLER: AtomicUsize = AtomicUsize::new(0);

/// Where fault and panic lines go: the board's UART writer.
pub fn set_console(write: fn(&str)) {
    CONSOLE.store(write as usize, Ordering::Release);
}

/// Writes `text` to the registered console (nothing before [`set_console`]).
pub fn console(text: &str) {
    let f = CONSOLE.load(Ordering::Acquire);
    if f != 0 {
        // SAFETY: only `set_console` stores here, always a `fn(&str)`.
        let write: fn(&str) = unsafe { core::mem::transmute::<usize, fn(&str)>(f) };
        write(text);
    }
}

/// The function every IRQ calls (IRQs masked): it acknowledges at the GIC and serves the
/// lines the board enabled.
pub fn set_irq_handler(handler: fn()) {
    IRQ_HANDLER.store(handler as usize, Ordering::Release);
}

/// The registered IRQ handler.
fn irq_handler() -> Option<fn()> {
    let f = IRQ_HANDLER.load(Ordering::Acquire);
    // SAFETY: only `set_irq_handler` stores here, always a `fn()`.
    (f != 0).then(|| unsafe { core::mem::transmute::<usize, fn()>(f) })
}

/// Masks IRQs (CPSR.I).
pub fn disable_irqs() {
    // SAFETY: sets the I bit; no memory touched.
    unsafe { core::arch::asm!("cpsid i", options(nomem, nostack, preserves_flags)) };
}

/// Unmasks IRQs (CPSR.I): a pending one is taken at once.
pub fn enable_irqs() {
    // SAFETY: clears the I bit; the handler is registered before any line is enabled.
    unsafe { core::arch::asm!("cpsie i", options(nomem, nostack, preserves_flags)) };
}

/// Waits for an interrupt (a signalled one ends it even with IRQs masked).
pub fn wfi() {
    // SAFETY: an instruction that waits; no memory touched.
    unsafe { core::arch::asm!("wfi", options(nomem, nostack, preserves_flags)) };
}

/// Stops here for good (IRQs masked; WFI in a loop).
pub fn halt() -> ! {
    disable_irqs();
    loop {
        wfi();
    }
}

/// Writes a panic to the console (where, if `location` says: the boards pass
/// linklab-firmware's `panic_location`, None in the minimal image) and halts.
pub fn report_panic(location: Option<&core::panic::Location<'_>>) -> ! {
    disable_irqs();
    console("linklab firmware: panic");
    if let Some(loc) = location {
        let mut buf = [0u8; 10];
        console(" at ");
        console(loc.file());
        console(":");
        console(decimal(loc.line(), &mut buf));
    }
    console("\n");
    halt()
}

/// `n` in decimal, in `buf`.
pub fn decimal(mut n: u32, buf: &mut [u8; 10]) -> &str {
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    core::str::from_utf8(&buf[i..]).unwrap_or("?")
}

/// `v` as 8 hex digits, in `buf`.
pub fn hex(v: u32, buf: &mut [u8; 8]) -> &str {
    for (i, b) in buf.iter_mut().enumerate() {
        let nibble = (v >> (28 - 4 * i)) & 0xF;
        *b = b"0123456789abcdef"[nibble as usize];
    }
    core::str::from_utf8(buf).unwrap_or("????????")
}
