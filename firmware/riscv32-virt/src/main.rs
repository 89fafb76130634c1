//! linklab firmware for QEMU's riscv32 `virt` machine (riscv32imac, the ESP32-C6's ISA):
//! virtio-net on virtio-mmio as the NIC, the NS16550 UART as console, the ACLINT timer
//! (10 MHz) for time, machine mode without an SBI (`-bios none`). Everything past bring-up is
//! `linklab_firmware::run`, the same main loop and apps as every linklab device. The
//! bring-up itself (entry, CSRs, UART, timer, PLIC, the NIC, the board's services) is this
//! package's library.
#![no_std]
#![no_main]

use fw_riscv32_virt::board::VirtBoard;
use fw_riscv32_virt::{cpu, nic, timer, uart};
use linklab_mac::RxFormat;

/// Where `linklab emu` puts the configuration blob (last 256 bytes of the linked RAM).
const CONFIG_ADDR: usize = 0x803F_FF00;

/// The trap handler (called from `entry.S` with interrupts off).
#[no_mangle]
extern "C" fn trap_handler() {
    let start = cpu::instret();
    let cause = cpu::mcause();
    const INTERRUPT: usize = 1 << 31;
    match (cause & INTERRUPT != 0, cause & !INTERRUPT) {
        (true, 7) => timer::disarm(),
        (true, 11) => {
            nic::on_external_interrupt();
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

#[no_mangle]
extern "C" fn main_entry() -> ! {
    let mut board = VirtBoard;
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
