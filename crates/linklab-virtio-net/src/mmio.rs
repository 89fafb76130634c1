//! The virtio-mmio transport, version 2 (virtio 1.x, section 4.2.2): the registers this
//! driver uses, reached through [`Registers`] so that the driver is tested on the host
//! against a model of the device, and the steps of bringing a device up.

use crate::queue::Areas;
use crate::InitError;

/// The register access the driver is generic over (linklab-mmio): [`Mmio`] on a board (its
/// window is a virtio-mmio slot, 0x200 bytes), a model of the device in the tests.
pub use linklab_mmio::{Mmio, Registers};

/// Register offsets (bytes from the slot's base).
pub mod reg {
    /// "virt" in little endian.
    pub const MAGIC: usize = 0x000;
    /// 2 for virtio 1.x (1 is the legacy interface).
    pub const VERSION: usize = 0x004;
    /// 1 for a network device.
    pub const DEVICE_ID: usize = 0x008;
    /// The 32 feature bits selected by `DEVICE_FEATURES_SEL`.
    pub const DEVICE_FEATURES: usize = 0x010;
    /// Which 32 feature bits `DEVICE_FEATURES` shows.
    pub const DEVICE_FEATURES_SEL: usize = 0x014;
    /// The 32 feature bits selected by `DRIVER_FEATURES_SEL` that the driver accepts.
    pub const DRIVER_FEATURES: usize = 0x020;
    /// Which 32 feature bits `DRIVER_FEATURES` sets.
    pub const DRIVER_FEATURES_SEL: usize = 0x024;
    /// The queue the queue registers below refer to.
    pub const QUEUE_SEL: usize = 0x030;
    /// Largest queue the device supports (0: no such queue).
    pub const QUEUE_NUM_MAX: usize = 0x034;
    /// The queue's size as the driver sets it up.
    pub const QUEUE_NUM: usize = 0x038;
    /// 1 once the queue is set up.
    pub const QUEUE_READY: usize = 0x044;
    /// Write a queue's index: it has new buffers.
    pub const QUEUE_NOTIFY: usize = 0x050;
    /// Why the device interrupted (bit 0: used buffers, bit 1: configuration change).
    pub const INTERRUPT_STATUS: usize = 0x060;
    /// Write the bits of `INTERRUPT_STATUS` handled.
    pub const INTERRUPT_ACK: usize = 0x064;
    /// Device status (the bring-up steps below).
    pub const STATUS: usize = 0x070;
    /// Descriptor table address, low and high 32 bits.
    pub const QUEUE_DESC_LOW: usize = 0x080;
    /// High half of the descriptor table address.
    pub const QUEUE_DESC_HIGH: usize = 0x084;
    /// Driver area address, low 32 bits.
    pub const QUEUE_DRIVER_LOW: usize = 0x090;
    /// High half of the driver area address.
    pub const QUEUE_DRIVER_HIGH: usize = 0x094;
    /// Device area address, low 32 bits.
    pub const QUEUE_DEVICE_LOW: usize = 0x0a0;
    /// High half of the device area address.
    pub const QUEUE_DEVICE_HIGH: usize = 0x0a4;
    /// Device configuration space (virtio-net: the MAC address first).
    pub const CONFIG: usize = 0x100;
}

/// Device status bits.
mod status {
    pub const ACKNOWLEDGE: u32 = 1;
    pub const DRIVER: u32 = 2;
    pub const DRIVER_OK: u32 = 4;
    pub const FEATURES_OK: u32 = 8;
    pub const FAILED: u32 = 128;
}

/// Feature bits this driver knows.
pub mod feature {
    /// The device completes TCP/UDP checksums of what the driver sends (`NEEDS_CSUM`).
    pub const CSUM: u64 = 1 << 0;
    /// The driver accepts frames whose checksums are partial or validated by the host
    /// (`NEEDS_CSUM`, `DATA_VALID`).
    pub const GUEST_CSUM: u64 = 1 << 1;
    /// The device has a MAC address in its configuration space.
    pub const MAC: u64 = 1 << 5;
    /// virtio 1.x (modern) device.
    pub const VERSION_1: u64 = 1 << 32;
}

/// Brings a network device up to the point of setting up queues: reset, acknowledge,
/// negotiate `wanted` (of which [`feature::VERSION_1`] is required; the legacy interface
/// is refused), features OK. Returns the features both sides have.
pub(crate) fn negotiate<R: Registers>(regs: &R, wanted: u64) -> Result<u64, InitError> {
    const MAGIC: u32 = 0x7472_6976;
    if regs.read(reg::MAGIC) != MAGIC || regs.read(reg::DEVICE_ID) != 1 {
        return Err(InitError::NotFound);
    }
    if regs.read(reg::VERSION) != 2 {
        warn!(
            "virtio-net: legacy interface (boot QEMU with -global virtio-mmio.force-legacy=false)"
        );
        return Err(InitError::Device);
    }
    regs.write(reg::STATUS, 0);
    regs.write(reg::STATUS, status::ACKNOWLEDGE);
    regs.write(reg::STATUS, status::ACKNOWLEDGE | status::DRIVER);
    let mut offered = 0u64;
    for half in 0..2 {
        regs.write(reg::DEVICE_FEATURES_SEL, half);
        offered |= u64::from(regs.read(reg::DEVICE_FEATURES)) << (32 * half);
    }
    let features = offered & wanted;
    if features & feature::VERSION_1 == 0 {
        regs.write(reg::STATUS, status::FAILED);
        return Err(InitError::Device);
    }
    for half in 0..2 {
        regs.write(reg::DRIVER_FEATURES_SEL, half);
        regs.write(reg::DRIVER_FEATURES, (features >> (32 * half)) as u32);
    }
    let s = status::ACKNOWLEDGE | status::DRIVER | status::FEATURES_OK;
    regs.write(reg::STATUS, s);
    if regs.read(reg::STATUS) & status::FEATURES_OK == 0 {
        regs.write(reg::STATUS, status::FAILED);
        return Err(InitError::Device);
    }
    Ok(features)
}

/// Sets up queue `index` of `size` entries at `areas` and marks it ready.
pub(crate) fn setup_queue<R: Registers>(
    regs: &R,
    index: u32,
    size: usize,
    areas: Areas,
) -> Result<(), InitError> {
    regs.write(reg::QUEUE_SEL, index);
    if regs.read(reg::QUEUE_READY) != 0 || (regs.read(reg::QUEUE_NUM_MAX) as usize) < size {
        return Err(InitError::Device);
    }
    regs.write(reg::QUEUE_NUM, size as u32);
    let halves = |low: usize, addr: usize| {
        let a = addr as u64;
        regs.write(low, a as u32);
        regs.write(low + 4, (a >> 32) as u32);
    };
    halves(reg::QUEUE_DESC_LOW, areas.desc);
    halves(reg::QUEUE_DRIVER_LOW, areas.driver);
    halves(reg::QUEUE_DEVICE_LOW, areas.device);
    regs.write(reg::QUEUE_READY, 1);
    Ok(())
}

/// Tells the device the driver is ready: from now on it uses the queues.
pub(crate) fn driver_ok<R: Registers>(regs: &R) {
    let s = status::ACKNOWLEDGE | status::DRIVER | status::FEATURES_OK | status::DRIVER_OK;
    regs.write(reg::STATUS, s);
}

/// The MAC address in a network device's configuration space.
pub(crate) fn mac_address<R: Registers>(regs: &R) -> [u8; 6] {
    let a = regs.read(reg::CONFIG).to_le_bytes();
    let b = regs.read(reg::CONFIG + 4).to_le_bytes();
    [a[0], a[1], a[2], a[3], b[0], b[1]]
}

/// Acknowledges whatever the device interrupted for.
pub(crate) fn ack_interrupt<R: Registers>(regs: &R) {
    let why = regs.read(reg::INTERRUPT_STATUS);
    if why != 0 {
        regs.write(reg::INTERRUPT_ACK, why);
    }
}
