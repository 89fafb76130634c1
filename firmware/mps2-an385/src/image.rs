// The board code of both images (the NIC image, main.rs; the serial image, serial_main.rs),
// included into each crate root: feature `serial` picks the network.

#[cfg(feature = "serial")]
mod serial_uart;
mod timer;
mod uart;

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};

use cortex_m::peripheral::NVIC;
use cortex_m_rt::{entry, exception};
use linklab_firmware::{Board, RX_QUEUE};
use linklab_lan9118::{Lan9118, Lan9118Rx, Mmio};
#[cfg(not(feature = "serial"))]
use linklab_mac::RxFormat;

/// Where `linklab emu` puts the configuration blob (last 256 bytes of the data SSRAM).
const CONFIG_ADDR: usize = 0x203F_FF00;
/// The LAN9118's register window.
const LAN9118_BASE: usize = 0x4020_0000;
/// Interrupt numbers (NVIC) of the devices used.
const IRQ_TIMER0: u16 = 8;
const IRQ_TIMER1: u16 = 9;
const IRQ_ETHERNET: u16 = 13;

/// An NVIC interrupt by number (no device crate needed for three of them).
#[derive(Clone, Copy)]
struct Irq(u16);

// SAFETY: the numbers are the board's device interrupts, all below the NVIC's limit.
unsafe impl cortex_m::interrupt::InterruptNumber for Irq {
    fn number(self) -> u16 {
        self.0
    }
}

/// The LAN9118's receive half, used only by its interrupt handler once `RX_READY` is set.
struct Rx(UnsafeCell<MaybeUninit<Lan9118Rx<Mmio>>>);
// SAFETY: written once before the interrupt is unmasked, then used only in the handler.
unsafe impl Sync for Rx {}
static RX: Rx = Rx(UnsafeCell::new(MaybeUninit::uninit()));
static RX_READY: AtomicBool = AtomicBool::new(false);

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
        IRQ_ETHERNET if RX_READY.load(Ordering::Acquire) => {
            let start = timer::now_ns();
            // SAFETY: initialised (RX_READY); only this handler uses it, and it does not nest
            // with itself.
            let rx = unsafe { (*RX.0.get()).assume_init_mut() };
            rx.on_interrupt(&RX_QUEUE.producer());
            linklab_firmware::add_isr_work(timer::now_ns().saturating_sub(start));
        }
        _ => {}
    }
}

/// The board's services for the main loop.
struct Mps2 {
    nic: Lan9118<Mmio>,
}

extern "C" {
    /// End of the statics (cortex-m-rt's start of heap): the lowest the stack may reach.
    static __sheap: u8;
    /// cortex-m-rt's initial stack pointer (the top of RAM in memory.x).
    static _stack_start: u8;
}

impl Board for Mps2 {
    const NAME: &'static str = "mps2-an385";

    fn now_ns(&mut self) -> u64 {
        timer::now_ns()
    }

    fn sleep_until(&mut self, deadline_ns: Option<u64>) {
        cortex_m::interrupt::disable();
        match deadline_ns {
            Some(d) => timer::arm_at_ns(d),
            None => timer::disarm(),
        }
        // With PRIMASK set a pending interrupt still ends WFI, and is taken right after.
        let due = deadline_ns.is_some_and(|d| timer::now_ns() >= d);
        if !(due || linklab_firmware::work_pending()) {
            cortex_m::asm::wfi();
        }
        // SAFETY: re-enabling what this function disabled.
        unsafe { cortex_m::interrupt::enable() };
    }

    fn console(&mut self, text: &str) {
        uart::write(text);
    }

    fn instructions(&mut self) -> Option<u64> {
        None
    }

    fn link_up(&mut self) -> bool {
        self.nic.link_up()
    }

    fn stack_limit(&self) -> usize {
        core::ptr::addr_of!(__sheap) as usize
    }

    fn stack_top(&self) -> Option<usize> {
        Some(core::ptr::addr_of!(_stack_start) as usize)
    }
}

#[entry]
fn main() -> ! {
    uart::init();
    timer::init();
    // SAFETY: the LAN9118's window on mps2-an385.
    let regs = unsafe { Mmio::new(LAN9118_BASE) };
    let mut probe = Mps2 {
        nic: Lan9118::new(regs),
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
        let mut nic = Lan9118::new(regs);
        if let Err(e) = nic.init(config.mac) {
            uart::write(match e {
                linklab_lan9118::InitError::NotFound(_) => "linklab firmware: no LAN9118 found\n",
                linklab_lan9118::InitError::Timeout => {
                    "linklab firmware: the LAN9118 did not respond\n"
                }
            });
            loop {
                cortex_m::asm::wfi();
            }
        }
        let (rx, tx) = nic.split();
        // SAFETY: the interrupt is still masked; this is the only reference until RX_READY.
        unsafe { (*RX.0.get()).write(rx) };
        RX_READY.store(true, Ordering::Release);
        // SAFETY: unmasking the three interrupts whose handlers are above.
        unsafe {
            NVIC::unmask(Irq(IRQ_TIMER0));
            NVIC::unmask(Irq(IRQ_TIMER1));
            NVIC::unmask(Irq(IRQ_ETHERNET));
        }
        linklab_firmware::run(probe, tx, RxFormat::Aligned { fcs: false }, config)
    }
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    cortex_m::interrupt::disable();
    uart::write("linklab firmware: panic");
    if let Some(loc) = info.location() {
        uart::write(" at ");
        uart::write(loc.file());
    }
    uart::write("\n");
    loop {
        cortex_m::asm::wfi();
    }
}
