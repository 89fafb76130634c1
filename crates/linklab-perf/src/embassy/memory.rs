//! The iperf servers' one data memory on embassy-net ([`crate::data_memory`]), shared by
//! their two tasks: each lends slices of it to its sockets while they carry a test, the
//! first to claim it for a test holds it, and each wakes the other when that one has
//! something to do about it (iperf 2 to give back its idle slices when iperf3 claims; iperf3
//! to take them once given back; iperf 2 to listen again once iperf3's test is over).

use core::cell::RefCell;
use core::task::Waker;

use atomic_waker::AtomicWaker;
use critical_section::Mutex;

use embassy_net::tcp::TcpSocket;

use crate::data_memory::{DataMemory, Share, Tenant};

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

    /// Lends `tenant` a slice of `len` bytes for a socket (`idle`: one waiting for a test, see
    /// `DataMemory::lend`), unless the socket holds one (`slot`: the socket, its slice): makes
    /// the socket anew over it (`make`) and records the slice with `share`, how it is split.
    /// False when the memory has none to lend. The iperf3 and iperf 2 tasks share it.
    pub(crate) fn lend_to<'a>(
        &self,
        (tenant, len, idle): (Tenant, usize, bool),
        share: Share,
        (socket, slice): (&mut Option<TcpSocket<'a>>, &mut Option<(u8, Share)>),
        make: impl FnOnce(&'static mut [u8]) -> TcpSocket<'a>,
    ) -> bool {
        if slice.is_some() {
            return true;
        }
        let Some((id, bytes)) = self.with(|m| m.lend(tenant, len, idle)).flatten() else {
            return false;
        };
        *socket = Some(make(bytes));
        *slice = Some((id as u8, share));
        true
    }

    /// Drops the socket over `slice` (embassy-net removes it from the stack), then gives the
    /// slice back; false when it held none.
    pub(crate) fn take_back(
        &self,
        socket: &mut Option<TcpSocket<'_>>,
        slice: &mut Option<(u8, Share)>,
    ) -> bool {
        let Some((id, _)) = slice.take() else {
            return false;
        };
        *socket = None;
        // SAFETY: the only socket made over slice `id` was just dropped.
        self.with(|m| unsafe { m.give_back(usize::from(id)) });
        true
    }
}

impl Default for SharedMemory {
    fn default() -> Self {
        Self::new()
    }
}
