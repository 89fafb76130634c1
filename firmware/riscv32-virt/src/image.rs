// The board code of the main-loop images (the NIC image, main.rs; the minimal image,
// minimal_main.rs), included into each crate root: linklab-firmware's features pick the apps.

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
