//! Bring-up of QEMU's mps2-an385 (Arm's MPS2 FPGA board with the AN385 Cortex-M3 image),
//! shared by the images that run on it (the main-loop image, its serial flavour, the embassy
//! image): the CMSDK UART0 console, the CMSDK timers, the NVIC lines, the LAN9118 NIC with
//! its interrupt, and the board's services for linklab-firmware ([`Mps2`]).
#![no_std]

pub mod nic;
pub mod timer;
pub mod uart;

use linklab_firmware::Board;
use linklab_lan9118::{Lan9118, Mmio};

/// Where `linklab emu` puts the configuration blob (last 256 bytes of the data SSRAM).
pub const CONFIG_ADDR: usize = 0x203F_FF00;
/// Interrupt numbers (NVIC) of the devices used.
pub const IRQ_TIMER0: u16 = 8;
/// Timer 1: the deadline of a sleep.
pub const IRQ_TIMER1: u16 = 9;
/// The LAN9118.
pub const IRQ_ETHERNET: u16 = 13;

/// Device interrupt lines of QEMU's mps2-an385 NVIC (its `num-irq`).
pub const IRQ_LINES: usize = 32;

extern "C" {
    /// cortex-m-rt's default handler, which each image defines with `#[exception]`: it
    /// reads the interrupt number and serves every line.
    fn DefaultHandler();
}

/// The device part of the vector table: one entry per line the board has, each to
/// `DefaultHandler`. (Without it, cortex-m-rt's generic table has 240: 832 bytes of flash
/// for lines that do not exist; its `device` feature lets the board give its own.)
#[link_section = ".vector_table.interrupts"]
#[no_mangle]
#[used]
pub static __INTERRUPTS: [unsafe extern "C" fn(); IRQ_LINES] = [DefaultHandler; IRQ_LINES];

/// An NVIC interrupt by number (no device crate needed for three of them).
#[derive(Clone, Copy)]
pub struct Irq(pub u16);

// SAFETY: the numbers are the board's device interrupts, all below the NVIC's limit.
unsafe impl cortex_m::interrupt::InterruptNumber for Irq {
    fn number(self) -> u16 {
        self.0
    }
}

/// The board's services for the main loop.
pub struct Mps2 {
    /// The LAN9118's registers (for its link bit).
    pub nic: Lan9118<Mmio>,
}

extern "C" {
    /// End of the statics (cortex-m-rt's start of heap): the lowest the stack may reach.
    static __sheap: u8;
    /// cortex-m-rt's initial stack pointer (the top of RAM in memory.x).
    static _stack_start: u8;
}

impl Board for Mps2 {
    const NAME: &'static str = "mps2-an385";

    fn now_ns(&mut self) -> u64 {
        timer::now_ns()
    }

    fn sleep_until(&mut self, deadline_ns: Option<u64>) {
        cortex_m::interrupt::disable();
        match deadline_ns {
            Some(d) => timer::arm_at_ns(d),
            None => timer::disarm(),
        }
        // With PRIMASK set a pending interrupt still ends WFI, and is taken right after.
        let due = deadline_ns.is_some_and(|d| timer::now_ns() >= d);
        if !(due || linklab_firmware::work_pending()) {
            cortex_m::asm::wfi();
        }
        // SAFETY: re-enabling what this function disabled.
        unsafe { cortex_m::interrupt::enable() };
    }

    fn console(&mut self, text: &str) {
        uart::write(text);
    }

    fn instructions(&mut self) -> Option<u64> {
        None
    }

    fn link_up(&mut self) -> bool {
        self.nic.link_up()
    }

    fn stack_limit(&self) -> usize {
        core::ptr::addr_of!(__sheap) as usize
    }

    fn stack_top(&self) -> Option<usize> {
        Some(core::ptr::addr_of!(_stack_start) as usize)
    }
}
