//! `virt`'s services for linklab-firmware's main loops ([`linklab_firmware::Board`]).

use linklab_firmware::Board;

use crate::{cpu, nic, timer, uart};

/// The board's services.
pub struct VirtBoard;

extern "C" {
    static _ebss: u8;
}

impl Board for VirtBoard {
    const NAME: &'static str = "riscv32-virt";

    fn now_ns(&mut self) -> u64 {
        timer::now_ns()
    }

    fn sleep_until(&mut self, deadline_ns: Option<u64>) {
        cpu::disable_interrupts();
        match deadline_ns {
            Some(d) => timer::arm_at_ns(d),
            None => timer::disarm(),
        }
        // With interrupts masked a pending one still ends WFI, and is taken right after.
        let due = deadline_ns.is_some_and(|d| timer::now_ns() >= d);
        if !(due || cpu::interrupt_pending() || linklab_firmware::work_pending()) {
            cpu::wfi();
        }
        cpu::enable_interrupts();
    }

    fn console(&mut self, text: &str) {
        uart::write(text);
    }

    fn instructions(&mut self) -> Option<u64> {
        Some(cpu::instret())
    }

    fn link_up(&mut self) -> bool {
        nic::ready()
    }

    fn stack_limit(&self) -> usize {
        // SAFETY: taking the address of a linker symbol.
        core::ptr::addr_of!(_ebss) as usize
    }
}
