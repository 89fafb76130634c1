// The board code of the main-loop images (the NIC image, main.rs; the minimal image,
// minimal_main.rs), included into each crate root: linklab-firmware's features pick the apps.

use fw_zynq7000::gem::{self, GemDevice};
use fw_zynq7000::{halt, init, report_panic, uart, wake, Zynq, CONFIG_ADDR, TIMER};

#[no_mangle]
extern "C" fn main_entry() -> ! {
    uart::init();
    linklab_cortex_a9::set_console(uart::write);
    let mut periphs = init();
    TIMER.init();
    wake::init(&mut periphs);
    let mut board = Zynq { phy: None };
    // SAFETY: RAM, inside the region the linker script keeps free for the blob.
    let config = unsafe { linklab_firmware::config_or_default(&mut board, CONFIG_ADDR) };
    let (driver, rings, phy) = match gem::start(config.mac) {
        Ok(parts) => parts,
        Err(why) => {
            uart::write("linklab firmware: ");
            uart::write(why);
            uart::write("\n");
            halt();
        }
    };
    board.phy = Some(phy);
    linklab_firmware::run_device(board, GemDevice::new(driver, rings), config)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    report_panic(info)
}
