//! linklab firmware for QEMU's riscv32 `virt` machine (riscv32imac, the ESP32-C6's ISA):
//! virtio-net on virtio-mmio as the NIC, the NS16550 UART as console, the ACLINT timer
//! (10 MHz) for time, machine mode without an SBI (`-bios none`). Everything past bring-up is
//! `linklab_firmware::run`, the same main loop and apps as every linklab device. The
//! bring-up itself (entry, CSRs, UART, timer, PLIC) is this package's library.
#![no_std]
#![no_main]

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};

use fw_riscv32_virt::{cpu, plic, timer, uart};
use linklab_firmware::{Board, RX_QUEUE};
use linklab_mac::RxFormat;
use linklab_virtio_net::{probe, SharedTx, Slot, VirtioNet};

/// Where `linklab emu` puts the configuration blob (last 256 bytes of the linked RAM).
const CONFIG_ADDR: usize = 0x803F_FF00;
/// virtio-mmio slots of `virt`: 8 of them from 0x1000_1000, interrupts 1..=8 at the PLIC.
const VIRTIO_SLOTS: usize = 8;

/// The NIC, shared by the interrupt handler (RX) and the main loop (TX, interrupts masked).
struct Nic(UnsafeCell<MaybeUninit<VirtioNet>>);
// SAFETY: single hart; every access is in the trap handler (interrupts off) or inside
// `cpu::without_interrupts`, and only after `NIC_READY` is set.
unsafe impl Sync for Nic {}
static NIC: Nic = Nic(UnsafeCell::new(MaybeUninit::uninit()));
static NIC_READY: AtomicBool = AtomicBool::new(false);

/// Runs `f` on the NIC with interrupts masked.
fn with_nic(f: &mut dyn FnMut(&mut VirtioNet)) {
    cpu::without_interrupts(|| {
        if NIC_READY.load(Ordering::Acquire) {
            // SAFETY: initialised (NIC_READY) and not aliased: interrupts are masked.
            f(unsafe { (*NIC.0.get()).assume_init_mut() });
        }
    });
}

/// The trap handler (called from `entry.S` with interrupts off).
#[no_mangle]
extern "C" fn trap_handler() {
    let start = cpu::instret();
    let cause = cpu::mcause();
    const INTERRUPT: usize = 1 << 31;
    match (cause & INTERRUPT != 0, cause & !INTERRUPT) {
        (true, 7) => timer::disarm(),
        (true, 11) => {
            while let Some(irq) = plic::claim() {
                if NIC_READY.load(Ordering::Acquire) {
                    // SAFETY: as in `with_nic`; we are in the trap handler.
                    let nic = unsafe { (*NIC.0.get()).assume_init_mut() };
                    if irq == nic.irq() {
                        nic.on_interrupt(&RX_QUEUE.producer());
                    }
                }
                plic::complete(irq);
            }
            linklab_firmware::add_isr_work(cpu::instret().wrapping_sub(start));
        }
        (_, code) => {
            uart::write("linklab firmware: unexpected trap, mcause ");
            uart::write_hex(code as u32);
            uart::write(" mepc ");
            uart::write_hex(cpu::mepc() as u32);
            uart::write("\n");
            loop {
                cpu::wfi();
            }
        }
    }
}

/// The board's services for the main loop.
struct VirtBoard;

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
        NIC_READY.load(Ordering::Acquire)
    }

    fn stack_limit(&self) -> usize {
        // SAFETY: taking the address of a linker symbol.
        core::ptr::addr_of!(_ebss) as usize
    }

    fn stack_top(&self) -> Option<usize> {
        Some(core::ptr::addr_of!(_stack_top) as usize)
    }
}

#[no_mangle]
extern "C" fn main_entry() -> ! {
    let mut board = VirtBoard;
    // SAFETY: RAM, inside the region the linker script keeps free for the blob.
    let config = unsafe { linklab_firmware::config_or_default(&mut board, CONFIG_ADDR) };
    let slots = (0..VIRTIO_SLOTS).map(|n| Slot {
        base: 0x1000_1000 + n * 0x1000,
        irq: 1 + n as u32,
    });
    // SAFETY: the virtio-mmio window of `virt`; unused slots read zero.
    let Some(slot) = (unsafe { probe(slots) }) else {
        uart::write("linklab firmware: no virtio-net device (-device virtio-net-device)\n");
        halt();
    };
    // SAFETY: found by probe, brought up once.
    let nic = match unsafe { VirtioNet::new(slot) } {
        Ok(n) => n,
        Err(_) => {
            uart::write("linklab firmware: the virtio-net device refused the driver\n");
            halt();
        }
    };
    // SAFETY: interrupts are still off; this is the only reference until NIC_READY.
    let nic = unsafe { (*NIC.0.get()).write(nic) };
    if nic.start().is_err() {
        uart::write("linklab firmware: cannot post the receive buffers\n");
        halt();
    }
    plic::enable(slot.irq);
    NIC_READY.store(true, Ordering::Release);
    timer::disarm();
    cpu::enable_machine_interrupts();
    let tx = SharedTx::new(with_nic);
    linklab_firmware::run(board, tx, RxFormat::Aligned { fcs: false }, config)
}

fn halt() -> ! {
    loop {
        cpu::wfi();
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    cpu::disable_interrupts();
    uart::write("linklab firmware: panic");
    if let Some(loc) = info.location() {
        uart::write(" at ");
        uart::write(loc.file());
        uart::write(":");
        uart::write_hex(loc.line());
    }
    uart::write("\n");
    halt()
}
