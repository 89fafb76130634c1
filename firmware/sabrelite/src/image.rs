// The board code of the main-loop images (the NIC image, main.rs; the minimal image,
// minimal_main.rs), included into each crate root: linklab-firmware's features pick the apps.

use fw_sabrelite::nic::{self, IRQ_ENET};
use fw_sabrelite::{halt, init, serve_interrupts, uart, Sabrelite, CONFIG_ADDR, GIC, TIMER};
use linklab_cortex_a9::gtimer;
use linklab_mac::RxFormat;

/// Every interrupt: the ENET's receive (its work counted as the driver's), the timer's
/// deadline (it only ends a sleep: disarmed).
fn on_irq() {
    serve_interrupts(|id| match id {
        IRQ_ENET => {
            let start = TIMER.now_ns();
            if nic::on_interrupt() {
                linklab_firmware::add_isr_work(TIMER.now_ns().saturating_sub(start));
            }
        }
        gtimer::IRQ => {
            TIMER.disarm();
            TIMER.clear_event();
        }
        _ => {}
    });
}

#[no_mangle]
extern "C" fn main_entry() -> ! {
    init(on_irq);
    let mut board = Sabrelite;
    // SAFETY: RAM, inside the region the linker script keeps free for the blob.
    let config = unsafe { linklab_firmware::config_or_default(&mut board, CONFIG_ADDR) };
    let tx = match nic::start(config.mac) {
        Ok(tx) => tx,
        Err(why) => {
            uart::write(why);
            halt();
        }
    };
    GIC.enable(IRQ_ENET);
    linklab_cortex_a9::enable_irqs();
    linklab_firmware::run(board, tx, RxFormat::Tagged, config)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    linklab_cortex_a9::report_panic(linklab_firmware::panic_location(info))
}
