//! The NIC of every image that networks on `virt`: the virtio-net device found by probing the
//! eight virtio-mmio slots, shared by the interrupt handler (RX into linklab-firmware's RX
//! queue) and the main loop or the stack's task (TX, interrupts masked).

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};

use linklab_firmware::memory::QUEUE_BYTES;
use linklab_firmware::RX_QUEUE;
use linklab_mac::Inline;
use linklab_virtio_net::{probe, SharedTx, VirtioNet};

use crate::board::virtio_slots;
use crate::{cpu, plic};

/// The virtio-net driver over linklab-firmware's RX queue.
type Device = VirtioNet<Inline<QUEUE_BYTES>>;

/// The NIC, shared by the interrupt handler (RX) and the main loop (TX, interrupts masked).
struct Nic(UnsafeCell<MaybeUninit<Device>>);
// SAFETY: single hart; every access is in the trap handler (interrupts off) or inside
// `cpu::without_interrupts`, and only after `NIC_READY` is set.
unsafe impl Sync for Nic {}
static NIC: Nic = Nic(UnsafeCell::new(MaybeUninit::uninit()));
static NIC_READY: AtomicBool = AtomicBool::new(false);

/// Runs `f` on the NIC with interrupts masked.
fn with_nic(f: &mut dyn FnMut(&mut Device)) {
    cpu::without_interrupts(|| {
        if NIC_READY.load(Ordering::Acquire) {
            // SAFETY: initialised (NIC_READY) and not aliased: interrupts are masked.
            f(unsafe { (*NIC.0.get()).assume_init_mut() });
        }
    });
}

/// The NIC's transmit side.
pub type Tx = SharedTx<Inline<QUEUE_BYTES>, fn(&mut dyn FnMut(&mut Device))>;

/// Finds the virtio-net device, brings it up, posts a grant of the RX queue for its first
/// frame and enables its interrupt at the PLIC (interrupts stay masked at the hart); its
/// transmit side, or the console line saying why not.
pub fn start() -> Result<Tx, &'static str> {
    // SAFETY: the virtio-mmio window of `virt`; unused slots read zero.
    let Some(slot) = (unsafe { probe(virtio_slots()) }) else {
        return Err("linklab firmware: no virtio-net device (-device virtio-net-device)\n");
    };
    // SAFETY: found by probe, brought up once.
    let nic = match unsafe { VirtioNet::new(slot, RX_QUEUE.producer()) } {
        Ok(n) => n,
        Err(_) => return Err("linklab firmware: the virtio-net device refused the driver\n"),
    };
    if NIC_READY.load(Ordering::Acquire) {
        return Err("linklab firmware: the NIC was started twice\n");
    }
    // SAFETY: interrupts are still off and NIC_READY is not set: the only reference.
    let nic = unsafe { (*NIC.0.get()).write(nic) };
    if nic.start().is_err() {
        return Err("linklab firmware: cannot post a receive buffer\n");
    }
    plic::enable(slot.irq);
    NIC_READY.store(true, Ordering::Release);
    Ok(SharedTx::new(with_nic as fn(&mut dyn FnMut(&mut Device))))
}

/// True once [`start`] succeeded (the board's link bit: virtio-net has no PHY).
pub fn ready() -> bool {
    NIC_READY.load(Ordering::Acquire)
}

/// The flag behind [`ready`], for [`crate::board::VirtBoard`].
pub fn ready_flag() -> &'static AtomicBool {
    &NIC_READY
}

/// PLIC source `irq` was claimed: if it is the NIC's, move the received frames into the RX
/// queue. Call from the trap handler (interrupts off).
pub fn on_irq(irq: u32) {
    if NIC_READY.load(Ordering::Acquire) {
        // SAFETY: as in `with_nic`; we are in the trap handler.
        let nic = unsafe { (*NIC.0.get()).assume_init_mut() };
        if irq == nic.irq() {
            nic.on_interrupt();
        }
    }
}

/// The machine external interrupt: claims every pending PLIC source, moving received frames
/// into the RX queue. Call from the trap handler (interrupts off).
pub fn on_external_interrupt() {
    plic::serve(&mut on_irq);
}
