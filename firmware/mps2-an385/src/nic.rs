//! The LAN9118 at 0x4020_0000 (NVIC 13): brought up once, its receive half moved into a
//! static for the interrupt handler, which fills linklab-firmware's RX queue.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};

use linklab_firmware::RX_QUEUE;
use linklab_lan9118::{InitError, Lan9118, Lan9118Rx, Lan9118Tx, Mmio};

/// The LAN9118's register window.
pub const LAN9118_BASE: usize = 0x4020_0000;

/// The LAN9118's receive half, used only by its interrupt handler once `RX_READY` is set.
struct Rx(UnsafeCell<MaybeUninit<Lan9118Rx<Mmio>>>);
// SAFETY: written once before the interrupt is unmasked, then used only in the handler.
unsafe impl Sync for Rx {}
static RX: Rx = Rx(UnsafeCell::new(MaybeUninit::uninit()));
static RX_READY: AtomicBool = AtomicBool::new(false);

/// The registers.
pub fn regs() -> Mmio {
    // SAFETY: the LAN9118's window on mps2-an385.
    unsafe { Mmio::new(LAN9118_BASE) }
}

/// Brings the LAN9118 up with address `mac` and hands its receive half to the interrupt
/// handler (the interrupt stays masked at the NVIC); its transmit side, or the console line
/// saying why not.
pub fn start(mac: [u8; 6]) -> Result<Lan9118Tx<Mmio>, &'static str> {
    let mut nic = Lan9118::new(regs());
    if let Err(e) = nic.init(mac) {
        return Err(match e {
            InitError::NotFound(_) => "linklab firmware: no LAN9118 found\n",
            InitError::Timeout => "linklab firmware: the LAN9118 did not respond\n",
        });
    }
    if RX_READY.load(Ordering::Acquire) {
        return Err("linklab firmware: the NIC was started twice\n");
    }
    let (rx, tx) = nic.split();
    // SAFETY: the interrupt is still masked and RX_READY not set: the only reference.
    unsafe { (*RX.0.get()).write(rx) };
    RX_READY.store(true, Ordering::Release);
    Ok(tx)
}

/// The LAN9118's interrupt: frames into the RX queue. Returns false before [`start`].
pub fn on_interrupt() -> bool {
    if !RX_READY.load(Ordering::Acquire) {
        return false;
    }
    // SAFETY: initialised (RX_READY); only this handler uses it, and it does not nest with
    // itself.
    let rx = unsafe { (*RX.0.get()).assume_init_mut() };
    rx.on_interrupt(&RX_QUEUE.producer());
    true
}
