//! linklab firmware for QEMU's sabrelite, embassy image: the board's bring-up (this
//! package's library: MMU and caches, UART, GIC, ENET through linklab-imx-enet and its
//! interrupt), an `embassy_time_driver::Driver` on the global timer, and linklab-firmware's
//! embassy image (embassy-executor, embassy-net over linklab-mac's `EmbassyMac`,
//! linklab-perf's embassy apps). Logs are defmt frames on UART1, decoded by
//! `linklab emu BOARD --image embassy`.
#![no_std]
#![no_main]

use fw_sabrelite::nic::{self, IRQ_ENET};
use fw_sabrelite::{init, now_ns, serve_interrupts, uart, CONFIG_ADDR, GIC, TIMER};
use linklab_cortex_a9::gtimer;
use linklab_firmware::embassy::{logger, EmbassyBoard};
use linklab_mac::RxFormat;
use static_cell::StaticCell;

// embassy-time on the global timer: its count for now, its comparator for the alarm.
linklab_firmware::board_time_driver!(TIME, const TIMER);

/// Every interrupt: the ENET's receive, the timer's alarm (the comparator off first, then
/// the queue arms the next); the handler's time counts as interrupt work.
fn on_irq() {
    let start = TIMER.now_ns();
    serve_interrupts(|id| match id {
        IRQ_ENET => {
            nic::on_interrupt();
        }
        gtimer::IRQ => {
            TIMER.disarm();
            TIMER.clear_event();
            TIME.on_alarm();
        }
        _ => {}
    });
    linklab_firmware::add_isr_work(TIMER.now_ns().saturating_sub(start));
}

/// Masks IRQs; WFI unless `ready()` or an interrupt is signalled (one ends WFI even masked,
/// and is taken after the unmask); unmasks.
fn idle(ready: fn() -> bool) {
    linklab_cortex_a9::disable_irqs();
    if !(ready() || GIC.pending()) {
        linklab_cortex_a9::wfi();
    }
    linklab_cortex_a9::enable_irqs();
}

#[no_mangle]
extern "C" fn main_entry() -> ! {
    init(on_irq);
    logger::set_console(uart::write_bytes);
    // SAFETY: RAM, inside the region the linker script keeps free for the blob.
    let config = unsafe { linklab_firmware::embassy::config(CONFIG_ADDR) };
    static TX: StaticCell<nic::Tx> = StaticCell::new();
    let tx = TX.init(nic::start(config.mac).unwrap_or_else(|why| {
        defmt::error!("{=str}", why.trim_end());
        fw_sabrelite::halt()
    }));
    GIC.enable(IRQ_ENET);
    linklab_cortex_a9::enable_irqs();
    let board = EmbassyBoard {
        name: "sabrelite",
        now_ns,
        work: now_ns,
        counts_instructions: false,
        link_up: nic::link_up,
        idle,
        console: uart::write_bytes,
        stack_limit: fw_sabrelite::stack_limit(),
        stack_top: Some(fw_sabrelite::stack_top()),
    };
    linklab_firmware::embassy::run(board, tx, RxFormat::Tagged, config)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    linklab_cortex_a9::disable_irqs();
    linklab_firmware::embassy::panic(info);
    fw_sabrelite::halt()
}
