// The board code of both main-loop images (the NIC image, main.rs; the serial image,
// serial_main.rs), included into each crate root: feature `serial` picks the network. The
// bring-up itself is this package's library.

#[cfg(feature = "serial")]
mod serial_uart;

use cortex_m::peripheral::NVIC;
use cortex_m_rt::{entry, exception};
use fw_mps2_an385::{nic, timer, uart, Irq, Mps2, CONFIG_ADDR, IRQ_ETHERNET, IRQ_TIMER0, IRQ_TIMER1};
use linklab_lan9118::Lan9118;

/// Every device interrupt: cortex-m-rt's default handler gets the interrupt number
/// (negative for system exceptions).
#[exception]
unsafe fn DefaultHandler(irqn: i16) {
    let Ok(irq) = u16::try_from(irqn) else {
        return;
    };
    match irq {
        IRQ_TIMER0 => timer::on_wrap(),
        IRQ_TIMER1 => timer::on_deadline(),
        #[cfg(feature = "serial")]
        serial_uart::IRQ_RX => {
            let start = timer::now_ns();
            serial_uart::on_rx_interrupt();
            linklab_firmware::add_isr_work(timer::now_ns().saturating_sub(start));
        }
        IRQ_ETHERNET => {
            let start = timer::now_ns();
            if nic::on_interrupt() {
                linklab_firmware::add_isr_work(timer::now_ns().saturating_sub(start));
            }
        }
        _ => {}
    }
}

#[entry]
fn main() -> ! {
    uart::init();
    timer::init();
    let mut probe = Mps2 {
        nic: Lan9118::new(nic::regs()),
    };
    // SAFETY: data SSRAM, inside the region memory.x keeps free for the blob.
    let config = unsafe { linklab_firmware::config_or_default(&mut probe, CONFIG_ADDR) };
    #[cfg(feature = "serial")]
    {
        // The serial image: the network is the link on UART1; the LAN9118 stays idle.
        serial_uart::init();
        // SAFETY: unmasking the interrupts whose handlers are above.
        unsafe {
            NVIC::unmask(Irq(IRQ_TIMER0));
            NVIC::unmask(Irq(IRQ_TIMER1));
            NVIC::unmask(Irq(serial_uart::IRQ_RX));
        }
        linklab_firmware::serial::run_serial(probe, serial_uart::Tx, config)
    }
    #[cfg(not(feature = "serial"))]
    {
        let tx = match nic::start(config.mac) {
            Ok(tx) => tx,
            Err(why) => {
                uart::write(why);
                loop {
                    cortex_m::asm::wfi();
                }
            }
        };
        // SAFETY: unmasking the three interrupts whose handlers are above.
        unsafe {
            NVIC::unmask(Irq(IRQ_TIMER0));
            NVIC::unmask(Irq(IRQ_TIMER1));
            NVIC::unmask(Irq(IRQ_ETHERNET));
        }
        linklab_firmware::run(probe, tx, linklab_lan9118::RX_FORMAT, config)
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    cortex_m::interrupt::disable();
    uart::write("linklab firmware: panic");
    if let Some(loc) = linklab_firmware::panic_location(info) {
        uart::write(" at ");
        uart::write(loc.file());
    }
    uart::write("\n");
    loop {
        cortex_m::asm::wfi();
    }
}
