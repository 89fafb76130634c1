//! linklab-mmio: how linklab's no_std drivers (linklab-lan9118, linklab-virtio-net) reach a
//! device's 32-bit registers.
//!
//! A driver is generic over [`Registers`] (read and write a 32-bit register at a byte offset
//! from the device's base), so its tests run on the host against a model of the device that
//! implements the trait; on the board it uses [`Mmio`], volatile loads and stores at a base
//! address. Register-struct crates (tock-registers, volatile-register, safe-mmio) describe a
//! register block as a typed struct in memory, which a host model cannot stand in for; an
//! offset-addressed trait is what the drivers' models implement.
//!
//! A driver over any register block, and a host test of it against a model:
//!
//! ```
//! use core::cell::Cell;
//! use linklab_mmio::{Mmio, Registers};
//!
//! /// A device with a control register at 0x00 and a status register at 0x04.
//! struct Device<R: Registers>(R);
//!
//! impl<R: Registers> Device<R> {
//!     fn enable(&self) {
//!         self.0.write(0x00, 1);
//!     }
//!     fn ready(&self) -> bool {
//!         self.0.read(0x04) & 1 != 0
//!     }
//! }
//!
//! /// On the board: the registers at their address.
//! fn on_board() -> Device<Mmio> {
//!     // SAFETY: the device's register window, used by nothing else.
//!     Device(unsafe { Mmio::new(0x4000_0000) })
//! }
//!
//! /// In a host test: a model that becomes ready once enabled.
//! struct Model(Cell<u32>);
//!
//! impl Registers for Model {
//!     fn read(&self, offset: usize) -> u32 {
//!         if offset == 0x04 { self.0.get() } else { 0 }
//!     }
//!     fn write(&self, offset: usize, value: u32) {
//!         if offset == 0x00 { self.0.set(value & 1) }
//!     }
//! }
//!
//! let device = Device(Model(Cell::new(0)));
//! assert!(!device.ready());
//! device.enable();
//! assert!(device.ready());
//! ```
#![no_std]

/// 32-bit register access at byte offsets from a device's base.
pub trait Registers {
    /// Reads the register at `offset`.
    fn read(&self, offset: usize) -> u32;
    /// Writes `value` to the register at `offset`.
    fn write(&self, offset: usize, value: u32);

    /// The window's address when the registers are memory-mapped, so a driver may move a
    /// FIFO's words with its CPU's load- and store-multiple instructions (a FIFO port that
    /// answers at consecutive word addresses, as the LAN9118's do); None (the default) for
    /// a model, which is then reached through [`Registers::read`] and
    /// [`Registers::write`] alone.
    fn mapped_at(&self) -> Option<usize> {
        None
    }
}

/// A device's registers in memory at a base address, read and written volatile.
#[derive(Clone, Copy, Debug)]
pub struct Mmio {
    base: usize,
}

impl Mmio {
    /// The registers at `base`.
    ///
    /// # Safety
    /// `base` must be the start of a device's register window, mapped and word-aligned, every
    /// offset the driver reads or writes must lie inside that window, and nothing else may
    /// use the window in a conflicting way.
    pub const unsafe fn new(base: usize) -> Mmio {
        Mmio { base }
    }
}

impl Registers for Mmio {
    fn read(&self, offset: usize) -> u32 {
        // SAFETY: inside the window `new`'s caller vouched for.
        unsafe { core::ptr::read_volatile((self.base + offset) as *const u32) }
    }

    fn write(&self, offset: usize, value: u32) {
        // SAFETY: as above.
        unsafe { core::ptr::write_volatile((self.base + offset) as *mut u32, value) }
    }

    fn mapped_at(&self) -> Option<usize> {
        Some(self.base)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use core::cell::UnsafeCell;

    /// Plain memory standing in for a register window: `Mmio` must reach the word at each
    /// byte offset, and only that word.
    #[test]
    fn mmio_reads_and_writes_the_word_at_each_offset() {
        let window = UnsafeCell::new([0u32; 4]);
        // SAFETY: `window` is 16 bytes, word-aligned, and only reached through `regs` below.
        let regs = unsafe { Mmio::new(window.get() as usize) };
        regs.write(0x4, 0x1234_5678);
        regs.write(0xc, 0xdead_beef);
        assert_eq!(regs.read(0x0), 0);
        assert_eq!(regs.read(0x4), 0x1234_5678);
        assert_eq!(regs.read(0x8), 0);
        assert_eq!(regs.read(0xc), 0xdead_beef);
        assert_eq!(regs.mapped_at(), Some(window.get() as usize));
        assert_eq!(window.into_inner(), [0, 0x1234_5678, 0, 0xdead_beef]);
    }
}
