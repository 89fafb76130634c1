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

use fw_riscv32_virt::board::CONFIG_ADDR;
use fw_riscv32_virt::board::{halt, handle_trap, report_panic, virtio_slots, VirtBoard};
use fw_riscv32_virt::{cpu, plic, timer, uart};
use linklab_firmware::RX_QUEUE;
use linklab_mac::RxFormat;
use linklab_virtio_net::{probe, SharedTx, VirtioNet};

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
    handle_trap(|irq| {
        if NIC_READY.load(Ordering::Acquire) {
            // SAFETY: as in `with_nic`; we are in the trap handler.
            let nic = unsafe { (*NIC.0.get()).assume_init_mut() };
            if irq == nic.irq() {
                nic.on_interrupt(&RX_QUEUE.producer());
            }
        }
    });
}

#[no_mangle]
extern "C" fn main_entry() -> ! {
    let mut board = VirtBoard {
        nic_ready: &NIC_READY,
        phy: None,
    };
    // SAFETY: RAM, inside the region the linker script keeps free for the blob.
    let config = unsafe { linklab_firmware::config_or_default(&mut board, CONFIG_ADDR) };
    // SAFETY: the virtio-mmio window of `virt`; unused slots read zero.
    let Some(slot) = (unsafe { probe(virtio_slots()) }) else {
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

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    report_panic(info)
}
