//! Where the embassy driver's link state comes from: a [`LinkStatus`] the user picks or
//! writes in one line.
//!
//! * A PHY that only knows "now" (a controller's link bit read over MMIO or MDIO, the link
//!   integrity of linklab-phy10's `LinkMonitor`): a closure `|now_ns| -> bool`, polled every
//!   [`LINK_POLL_NS`] on the MAC's clock.
//! * A PHY that interrupts on a change: [`LinkSignal`], set from the interrupt, wakes the
//!   stack itself.
//! * A link that is always there (a TAP, a simulator): [`AlwaysUp`].

use crate::atomic::{AtomicBool, Ordering};
use core::task::Waker;

use atomic_waker::AtomicWaker;

/// How often a polled link source is read when nothing else wakes the stack: 100 ms, within
/// the 50..150 ms 10BASE-T takes to declare a silent link lost.
pub const LINK_POLL_NS: u64 = 100_000_000;

/// The link state for the embassy driver.
pub trait LinkStatus {
    /// True if the link is up at clock time `now_ns` (the MAC's clock). Called on every poll
    /// of the stack: keep it cheap.
    fn is_up(&mut self, now_ns: u64) -> bool;

    /// How the driver learns of a change, asked before each [`LinkStatus::is_up`]: `Some(ns)`
    /// to be read again at least that often (the default, every [`LINK_POLL_NS`]), or `None`
    /// after registering `waker`, if this source wakes it on every change itself (or never
    /// changes).
    fn watch(&mut self, waker: &Waker) -> Option<u64> {
        let _ = waker;
        Some(LINK_POLL_NS)
    }
}

/// A closure reading the link at a clock time is a polled source, e.g.
/// `|now_ns| monitor.is_up((now_ns / 1000) as u32)` or `|_| lan.link_up()`.
impl<F: FnMut(u64) -> bool> LinkStatus for F {
    fn is_up(&mut self, now_ns: u64) -> bool {
        self(now_ns)
    }
}

/// A link that is always up (a TAP, a simulator, a board without link detection).
#[derive(Clone, Copy, Debug, Default)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct AlwaysUp;

impl LinkStatus for AlwaysUp {
    fn is_up(&mut self, _now_ns: u64) -> bool {
        true
    }

    fn watch(&mut self, _waker: &Waker) -> Option<u64> {
        None
    }
}

/// A link state set from anywhere (a PHY's link-change interrupt, another task) that wakes
/// the stack on every change. Lock-free; put it in a `static` and give the driver `&SIGNAL`.
#[derive(Debug)]
pub struct LinkSignal {
    up: AtomicBool,
    waker: AtomicWaker,
}

impl LinkSignal {
    /// A signal starting in state `up`.
    pub const fn new(up: bool) -> Self {
        LinkSignal {
            up: AtomicBool::new(up),
            waker: AtomicWaker::new(),
        }
    }

    /// Sets the state; wakes the stack if it changed. Interrupt-safe.
    pub fn set(&self, up: bool) {
        if self.up.swap(up, Ordering::AcqRel) != up {
            self.waker.wake();
        }
    }

    /// The current state.
    pub fn get(&self) -> bool {
        self.up.load(Ordering::Acquire)
    }
}

impl LinkStatus for &LinkSignal {
    fn is_up(&mut self, _now_ns: u64) -> bool {
        self.get()
    }

    fn watch(&mut self, waker: &Waker) -> Option<u64> {
        self.waker.register(waker);
        None
    }
}
