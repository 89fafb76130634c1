//! The iperf servers' one data memory on embassy-net ([`crate::data_memory`]), shared by
//! their two tasks: each lends slices of it to its sockets while they carry a test, the
//! first to claim it for a test holds it, and each wakes the other when that one has
//! something to do about it (iperf 2 to give back its idle slices when iperf3 claims; iperf3
//! to take them once given back; iperf 2 to listen again once iperf3's test is over).

use core::cell::RefCell;
use core::task::Waker;

use atomic_waker::AtomicWaker;
use critical_section::Mutex;

use crate::data_memory::{DataMemory, Tenant};

/// The data memory of the embassy apps' iperf servers (see the module docs). Put it in a
/// `static`, [`init`](Self::init) it once with its bytes, and lend it to both servers.
pub struct SharedMemory {
    memory: Mutex<RefCell<Option<DataMemory<'static>>>>,
    wakers: [AtomicWaker; 2],
}

fn slot(tenant: Tenant) -> usize {
    match tenant {
        Tenant::Iperf3 => 0,
        Tenant::Iperf2 => 1,
    }
}

impl SharedMemory {
    /// Without bytes yet.
    pub const fn new() -> Self {
        SharedMemory {
            memory: Mutex::new(RefCell::new(None)),
            wakers: [AtomicWaker::new(), AtomicWaker::new()],
        }
    }

    /// Gives it its bytes (once: false, and nothing changed, after the first time).
    pub fn init(&self, bytes: &'static mut [u8]) -> bool {
        critical_section::with(|cs| {
            let mut m = self.memory.borrow_ref_mut(cs);
            if m.is_some() {
                return false;
            }
            *m = Some(DataMemory::new(bytes));
            true
        })
    }

    /// Runs `f` on the memory (None before [`init`](Self::init)).
    pub(crate) fn with<R>(&self, f: impl FnOnce(&mut DataMemory<'static>) -> R) -> Option<R> {
        critical_section::with(|cs| self.memory.borrow_ref_mut(cs).as_mut().map(f))
    }

    /// `tenant`'s task is to be woken by [`wake`](Self::wake).
    pub(crate) fn register(&self, tenant: Tenant, waker: &Waker) {
        self.wakers[slot(tenant)].register(waker);
    }

    /// Wakes `tenant`'s task.
    pub(crate) fn wake(&self, tenant: Tenant) {
        self.wakers[slot(tenant)].wake();
    }
}

impl Default for SharedMemory {
    fn default() -> Self {
        Self::new()
    }
}
