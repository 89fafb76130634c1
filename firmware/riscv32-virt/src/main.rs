//! linklab firmware for QEMU's riscv32 `virt` machine (riscv32imac, the ESP32-C6's ISA):
//! virtio-net on virtio-mmio as the NIC, the NS16550 UART as console, the ACLINT timer
//! (10 MHz) for time, machine mode without an SBI (`-bios none`). Everything past bring-up is
//! `linklab_firmware::run`, the same main loop and apps as every linklab device. The
//! bring-up itself (entry, CSRs, UART, timer, PLIC, the NIC, the board's services) is this
//! package's library.
#![no_std]
#![no_main]

use fw_riscv32_virt::board::{halt, handle_trap, report_panic, VirtBoard, CONFIG_ADDR};
use fw_riscv32_virt::{cpu, nic, timer, uart};
use linklab_mac::RxFormat;

/// The trap handler (called from `entry.S` with interrupts off).
#[no_mangle]
extern "C" fn trap_handler() {
    handle_trap(nic::on_irq);
}

#[no_mangle]
extern "C" fn main_entry() -> ! {
    let mut board = VirtBoard {
        nic_ready: nic::ready_flag(),
        phy: None,
    };
    // SAFETY: RAM, inside the region the linker script keeps free for the blob.
    let config = unsafe { linklab_firmware::config_or_default(&mut board, CONFIG_ADDR) };
    let tx = match nic::start() {
        Ok(tx) => tx,
        Err(why) => {
            uart::write(why);
            halt();
        }
    };
    timer::disarm();
    cpu::enable_machine_interrupts();
    linklab_firmware::run(board, tx, RxFormat::Tagged, config)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    report_panic(info)
}
