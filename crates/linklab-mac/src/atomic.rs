//! The atomics the MAC uses: core's where the target has compare-and-swap, portable-atomic's
//! (over a critical section the build provides) where it has none — thumbv6m, the RP2040's
//! Cortex-M0+, whose atomics are loads and stores only. bbqueue's coordination follows:
//! lock-free CAS, or its critical-section coordination.

#[cfg(all(target_has_atomic = "32", feature = "embassy"))]
pub(crate) use core::sync::atomic::AtomicBool;
#[cfg(target_has_atomic = "32")]
pub(crate) use core::sync::atomic::{AtomicU32, Ordering};
#[cfg(all(not(target_has_atomic = "32"), feature = "embassy"))]
pub(crate) use portable_atomic::AtomicBool;
#[cfg(not(target_has_atomic = "32"))]
pub(crate) use portable_atomic::{AtomicU32, Ordering};

/// bbqueue's coordination of the RX queue's producer and consumer.
#[cfg(target_has_atomic = "32")]
pub(crate) type Coord = bbqueue::traits::coordination::cas::AtomicCoord;
/// bbqueue's coordination of the RX queue's producer and consumer: short critical sections
/// where the core has no compare-and-swap.
#[cfg(not(target_has_atomic = "32"))]
pub(crate) type Coord = bbqueue::traits::coordination::cs::CsCoord;
