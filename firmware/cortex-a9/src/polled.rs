//! Two small things every board's bring-up needs, whatever its peripherals: a UART written
//! by polling its "FIFO full" bit ([`PolledTx`]), and a driver half handed to the interrupt
//! handler once ([`IrqOwned`]).

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, Ordering};

/// A UART's transmitter, written by polling: its data register and the status register's
/// "transmit FIFO full" bit.
pub struct PolledTx {
    /// The transmit data register's address.
    pub data: usize,
    /// The status register's address.
    pub status: usize,
    /// The status bit that says the FIFO is full.
    pub full: u32,
}

impl PolledTx {
    /// Writes `bytes`, waiting for room in the FIFO before each.
    pub fn write_bytes(&self, bytes: &[u8]) {
        let (data, status) = (self.data as *mut u32, self.status as *const u32);
        for &b in bytes {
            // SAFETY: the UART's registers (the board's constants), word aligned.
            unsafe {
                while status.read_volatile() & self.full != 0 {}
                data.write_volatile(u32::from(b));
            }
        }
    }

    /// Writes `text`.
    pub fn write(&self, text: &str) {
        self.write_bytes(text.as_bytes());
    }
}

/// A value the interrupt handler owns from the moment it is [`IrqOwned::give`]n (before the
/// interrupt is enabled): the handler reaches it with [`IrqOwned::get`], which is None
/// before. For a driver's receive half.
pub struct IrqOwned<T> {
    value: UnsafeCell<MaybeUninit<T>>,
    ready: AtomicBool,
}

// SAFETY: written once by `give` before the interrupt that uses it is enabled (the caller's
// promise), then reached only from that interrupt's handler, which does not nest.
unsafe impl<T: Send> Sync for IrqOwned<T> {}

impl<T> IrqOwned<T> {
    /// Nothing yet.
    pub const fn new() -> Self {
        IrqOwned {
            value: UnsafeCell::new(MaybeUninit::uninit()),
            ready: AtomicBool::new(false),
        }
    }

    /// Hands `value` over; false (and `value` dropped) if one was given before.
    ///
    /// # Safety
    /// The interrupt whose handler calls [`IrqOwned::get`] must not be enabled yet.
    pub unsafe fn give(&self, value: T) -> bool {
        if self.ready.load(Ordering::Acquire) {
            return false;
        }
        // SAFETY: not ready, and the handler cannot run (the caller's promise): the only
        // reference.
        unsafe { (*self.value.get()).write(value) };
        self.ready.store(true, Ordering::Release);
        true
    }

    /// The value, once given.
    ///
    /// # Safety
    /// Only from the one interrupt handler that owns it (it does not nest with itself).
    #[allow(clippy::mut_from_ref)]
    pub unsafe fn get(&self) -> Option<&mut T> {
        if !self.ready.load(Ordering::Acquire) {
            return None;
        }
        // SAFETY: given (ready); the caller is the only user.
        Some(unsafe { (*self.value.get()).assume_init_mut() })
    }
}

impl<T> Default for IrqOwned<T> {
    fn default() -> Self {
        Self::new()
    }
}
