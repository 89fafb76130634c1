//! The board both binaries run on, QEMU's mps2-an386 (Cortex-M4F at 25 MHz, a LAN9220 at
//! 0x4020_0000), and what they share: the LAN9118 driver brought up, a millisecond clock on
//! SysTick, the RX queue, the panic handler. The controller's receive FIFO is polled (each
//! pass of the main loop, a task on embassy) rather than wired to its interrupt, which keeps
//! the vector table cortex-m-rt's own.
#![no_std]

use core::cell::Cell;

use cortex_m::peripheral::syst::SystClkSource;
use cortex_m::peripheral::SYST;
use critical_section::Mutex;
use linklab_lan9118::{Lan9118, Lan9118Rx, Lan9118Tx, Mmio};
use linklab_mac::{Inline, MacAddr, MacConfig, RxFormat, RxQueue, TxFormat};
pub use linklab_perf::device_config::DeviceConfig;

/// The LAN9220's register window on the AN386 image.
const LAN9118_BASE: usize = 0x4020_0000;
/// The AN386's system clock, which SysTick counts.
const SYSCLK_HZ: u32 = 25_000_000;
/// The MAC's RX queue: the controller's frames wait here for the stack (16 KiB: ten
/// full-size frames).
pub type Queue = Inline<16384>;

/// The RX queue: the poller fills it, the MAC (the stack's device) reads it.
pub static RX: RxQueue<Queue> = RxQueue::new();

/// Milliseconds since [`start_clock`], counted by [`tick`].
static MILLIS: Mutex<Cell<u64>> = Mutex::new(Cell::new(0));

/// Starts SysTick at 1 kHz; its handler (each binary's) calls [`tick`].
pub fn start_clock(mut syst: SYST) {
    syst.set_clock_source(SystClkSource::Core);
    syst.set_reload(SYSCLK_HZ / 1000 - 1);
    syst.clear_current();
    syst.enable_interrupt();
    syst.enable_counter();
}

/// One more millisecond; the time after it.
pub fn tick() -> u64 {
    critical_section::with(|cs| {
        let ms = MILLIS.borrow(cs);
        ms.set(ms.get() + 1);
        ms.get()
    })
}

/// Milliseconds since [`start_clock`].
pub fn millis() -> u64 {
    critical_section::with(|cs| MILLIS.borrow(cs).get())
}

/// Brings the LAN9220 up with the device's MAC address: its receive half (to poll into
/// [`RX`]) and its transmit half (the MAC's PHY); `None` when no controller answers.
pub fn lan9118(config: &DeviceConfig) -> Option<(Lan9118Rx<Mmio>, Lan9118Tx<Mmio>)> {
    // SAFETY: the LAN9220's register window on mps2-an386, used by nothing else.
    let mut nic = Lan9118::new(unsafe { Mmio::new(LAN9118_BASE) });
    nic.init(config.mac).ok()?;
    Some(nic.split())
}

/// The MAC's configuration for the controller: it strips the FCS and drops bad frames
/// itself, and pads and appends the FCS on transmit.
pub fn mac_config(config: &DeviceConfig) -> MacConfig {
    MacConfig {
        rx_format: RxFormat::Aligned { fcs: false },
        tx_format: TxFormat::Plain,
        ..MacConfig::aligned_fcs(MacAddr(config.mac))
    }
}

/// Stops where it is: a firmware has no one to tell.
#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    loop {
        cortex_m::asm::wfi();
    }
}
