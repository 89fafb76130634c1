//! The `linklab_firmware::Board` of the `virt` machine and what every network image on it
//! shares: where the configuration blob sits, the virtio-mmio slots, halting, and the
//! console lines of a panic or an unexpected trap.

use core::sync::atomic::{AtomicBool, Ordering};

use linklab_firmware::Board;
use linklab_virtio_net::Slot;

use crate::{cpu, plic, timer, uart};

/// Where `linklab emu` puts the configuration blob (last 256 bytes of the linked RAM).
pub const CONFIG_ADDR: usize = 0x803F_FF00;
/// virtio-mmio slots of `virt`: 8 of them from 0x1000_1000, interrupts 1..=8 at the PLIC.
const VIRTIO_SLOTS: usize = 8;

/// The virtio-mmio slots of `virt`, to probe for a device.
pub fn virtio_slots() -> impl Iterator<Item = Slot> {
    (0..VIRTIO_SLOTS).map(|n| Slot {
        base: 0x1000_1000 + n * 0x1000,
        irq: 1 + n as u32,
    })
}

/// The board's services for the main loop; `nic_ready` is the image's flag that its NIC is
/// up (the link bit), `phy` its soft PHY's counters, if it has one.
pub struct VirtBoard {
    /// Set by the image once its NIC is up.
    pub nic_ready: &'static AtomicBool,
    /// The soft PHY's counters (None for a controller NIC).
    pub phy: Option<fn() -> linklab_firmware::stats::PhyFigures>,
}

extern "C" {
    static _ebss: u8;
    /// The top of RAM, where entry.S puts the stack pointer (link.x).
    static _stack_top: u8;
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
        self.nic_ready.load(Ordering::Acquire)
    }

    fn stack_limit(&self) -> usize {
        // SAFETY: taking the address of a linker symbol.
        core::ptr::addr_of!(_ebss) as usize
    }

    fn stack_top(&self) -> Option<usize> {
        Some(core::ptr::addr_of!(_stack_top) as usize)
    }

    fn phy(&mut self) -> Option<linklab_firmware::stats::PhyFigures> {
        self.phy.map(|figures| figures())
    }
}

/// The trap handler's work for a network image (call it from `trap_handler`): the timer's
/// interrupt disarms the timer (it only ends a WFI), each external interrupt claimed at the
/// PLIC goes to `on_external` and is completed, and the handler's instructions count as the
/// firmware's interrupt work; any other trap is reported and halts.
pub fn handle_trap(mut on_external: impl FnMut(u32)) {
    let start = cpu::instret();
    let cause = cpu::mcause();
    const INTERRUPT: usize = 1 << 31;
    match (cause & INTERRUPT != 0, cause & !INTERRUPT) {
        (true, 7) => timer::disarm(),
        (true, 11) => {
            plic::serve(&mut on_external);
            linklab_firmware::add_isr_work(cpu::instret().wrapping_sub(start));
        }
        (_, code) => unexpected_trap(code),
    }
}

/// Sleeps forever.
pub fn halt() -> ! {
    loop {
        cpu::wfi();
    }
}

/// Says on the console which trap came unexpectedly, and halts.
pub fn unexpected_trap(code: usize) -> ! {
    uart::write("linklab firmware: unexpected trap, mcause ");
    uart::write_hex(code as u32);
    uart::write(" mepc ");
    uart::write_hex(cpu::mepc() as u32);
    uart::write("\n");
    halt()
}

/// Says on the console that there was a panic, and where (not in the minimal image:
/// [`linklab_firmware::panic_location`]), and halts (an image's `#[panic_handler]`).
pub fn report_panic(info: &core::panic::PanicInfo) -> ! {
    cpu::disable_interrupts();
    uart::write("linklab firmware: panic");
    if let Some(loc) = linklab_firmware::panic_location(info) {
        uart::write(" at ");
        uart::write(loc.file());
        uart::write(":");
        uart::write_hex(loc.line());
    }
    uart::write("\n");
    halt()
}
