//! What a board gives the board-independent main loop: time, sleep, a console, and its
//! figures. Everything else (the NIC's interrupt, which fills the RX queue's grants, and its
//! transmit side, a `linklab_mac::PhyTx`) is handed to [`crate::run`] directly.

/// A board's services for [`crate::run`].
pub trait Board {
    /// Board name, reported in `/stats` and on the console (e.g. `mps2-an385`).
    const NAME: &'static str;

    /// Nanoseconds since boot from the board's timer: monotonic, never wrapping in practice
    /// (64 bits), resolution of the timer (40 ns on mps2's 25 MHz timer, 100 ns on the
    /// 10 MHz ACLINT mtime).
    fn now_ns(&mut self) -> u64;

    /// Sleeps (WFI) until an interrupt arrives or `deadline_ns` (absolute, [`Board::now_ns`]
    /// time) passes; `None` sleeps until an interrupt. Must mask interrupts, then return at
    /// once if an interrupt is pending or [`crate::work_pending`] is true (a frame the NIC's
    /// interrupt committed after the main loop's last poll), else WFI, then unmask: otherwise
    /// that frame waits for the next, unrelated, interrupt.
    fn sleep_until(&mut self, deadline_ns: Option<u64>);

    /// Writes text to the console (the board's UART).
    fn console(&mut self, text: &str);

    /// Instructions retired since boot, where the CPU counts them (riscv `minstret`);
    /// `None` where it does not (Cortex-M3: no DWT cycle counter in QEMU).
    fn instructions(&mut self) -> Option<u64>;

    /// A counter of the CPU's work for per-layer costs: [`Board::instructions`] where the CPU
    /// counts them, else [`Board::now_ns`] (under QEMU's `-icount shift=0` one nanosecond is
    /// one instruction; while awake, time is work).
    fn work_counter(&mut self) -> u64 {
        match self.instructions() {
            Some(n) => n,
            None => self.now_ns(),
        }
    }

    /// The controller's link state (PHY link bit).
    fn link_up(&mut self) -> bool;

    /// The lowest address the stack may grow down to (the end of `.bss`/heap-free RAM),
    /// for stack painting: [`crate::run`] paints from there up to its own frame at start,
    /// and `/stats` reports the deepest the stack has reached since.
    fn stack_limit(&self) -> usize;

    /// A soft PHY's counters, shown in `/stats` beside the MAC's with the law that joins
    /// them; `None` (the default) for a board whose NIC is an Ethernet controller.
    fn phy(&mut self) -> Option<crate::stats::PhyFigures> {
        None
    }

    /// Where the stack starts (the stack pointer the reset code sets), if the board knows:
    /// then `/stats` counts the stack's peak from there, including the frames of the reset
    /// code, the board's `main` and [`crate::run`]; else from [`crate::run`]'s painting frame,
    /// which leaves those out.
    fn stack_top(&self) -> Option<usize> {
        None
    }
}
