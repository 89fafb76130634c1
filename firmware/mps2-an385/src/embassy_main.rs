//! linklab firmware for QEMU's mps2-an385, embassy image: the board's bring-up (this
//! package's library: UART0, CMSDK timers, the LAN9118 and its interrupt), an
//! `embassy_time_driver::Driver` on the CMSDK timers, and linklab-firmware's embassy image
//! (embassy-executor, embassy-net over linklab-mac's `EmbassyMac`, linklab-perf's embassy
//! apps). Logs are defmt frames on UART0, decoded by `linklab emu BOARD --image embassy`.
#![no_std]
#![no_main]

use cortex_m::peripheral::NVIC;
use cortex_m_rt::{entry, exception};
use fw_mps2_an385::{nic, timer, uart, Irq, CONFIG_ADDR, IRQ_ETHERNET, IRQ_TIMER0, IRQ_TIMER1};
use linklab_firmware::embassy::{logger, EmbassyBoard};
use linklab_lan9118::Lan9118;
use static_cell::StaticCell;

// embassy-time on the CMSDK timers: timer 0 (extended to 64 bits) for now, timer 1's
// one-shot for the alarm.
linklab_firmware::board_time_driver!(TIME, timer);

/// Every device interrupt (cortex-m-rt's default handler gets the interrupt number).
#[exception]
unsafe fn DefaultHandler(irqn: i16) {
    let Ok(irq) = u16::try_from(irqn) else {
        return;
    };
    let start = timer::now_ns();
    match irq {
        IRQ_TIMER0 => timer::on_wrap(),
        IRQ_TIMER1 => {
            timer::on_deadline();
            TIME.on_alarm();
            linklab_firmware::add_isr_work(timer::now_ns().saturating_sub(start));
        }
        IRQ_ETHERNET => {
            let started = nic::on_interrupt();
            if started {
                linklab_firmware::add_isr_work(timer::now_ns().saturating_sub(start));
            }
        }
        _ => {}
    }
}

fn link_up() -> bool {
    Lan9118::new(nic::regs()).link_up()
}

/// Masks interrupts; WFI unless `ready()` (a pending interrupt ends WFI even masked, and
/// is taken after the unmask); unmasks.
fn idle(ready: fn() -> bool) {
    cortex_m::interrupt::disable();
    if !ready() {
        cortex_m::asm::wfi();
    }
    // SAFETY: re-enabling what this function disabled.
    unsafe { cortex_m::interrupt::enable() };
}

extern "C" {
    /// End of the statics (cortex-m-rt's start of heap): the lowest the stack may reach.
    static __sheap: u8;
    /// cortex-m-rt's initial stack pointer (the top of RAM in memory.x).
    static _stack_start: u8;
}

#[entry]
fn main() -> ! {
    uart::init();
    timer::init();
    logger::set_console(uart::write_bytes);
    // SAFETY: data SSRAM, inside the region memory.x keeps free for the blob.
    let config = unsafe { linklab_firmware::embassy::config(CONFIG_ADDR) };
    let tx = match nic::start(config.mac) {
        Ok(tx) => tx,
        Err(why) => {
            defmt::error!("{=str}", why.trim_end());
            loop {
                cortex_m::asm::wfi();
            }
        }
    };
    static TX: StaticCell<linklab_lan9118::Lan9118Tx<linklab_lan9118::Mmio>> = StaticCell::new();
    let tx = TX.init(tx);
    // SAFETY: unmasking the three interrupts whose handlers are above.
    unsafe {
        NVIC::unmask(Irq(IRQ_TIMER0));
        NVIC::unmask(Irq(IRQ_TIMER1));
        NVIC::unmask(Irq(IRQ_ETHERNET));
    }
    let board = EmbassyBoard {
        name: "mps2-an385",
        now_ns: timer::now_ns,
        work: timer::now_ns,
        counts_instructions: false,
        link_up,
        idle,
        console: uart::write_bytes,
        stack_limit: core::ptr::addr_of!(__sheap) as usize,
        stack_top: Some(core::ptr::addr_of!(_stack_start) as usize),
    };
    linklab_firmware::embassy::run(board, tx, linklab_lan9118::RX_FORMAT, config)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    cortex_m::interrupt::disable();
    linklab_firmware::embassy::panic(info);
    loop {
        cortex_m::asm::wfi();
    }
}
