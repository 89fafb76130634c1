//! linklab-app-gate: linklab-perf's [`ServiceGate`] as the [`FrameGate`] of linklab-mac's
//! embassy-net driver (`EmbassyMac::with_gate`).
//!
//! linklab-mac and linklab-perf are siblings: neither knows the other, so each has its own
//! `Admit` (what the driver does with a received frame). This crate, above both, translates
//! the one into the other, once: the firmware's embassy images (firmware/common) and
//! embassy-net on a TAP (linklab-embassy-test) both use it.
//!
//! `#![no_std]`, no heap.
#![no_std]

use core::task::Waker;

use linklab_mac::embassy::{Admit, FrameGate};
use linklab_perf::embassy::ServiceGate;

/// linklab-perf's service gate as the driver's gate: a SYN that finds all of a service's
/// sockets busy waits until one is freed for it (or is dropped while a handshake answered
/// may complete), a UDP echo request until the reply before it had its turn to leave, and
/// the SYN-ACKs that leave are noted.
#[derive(Clone, Copy)]
pub struct AppGate(pub &'static ServiceGate);

impl FrameGate for AppGate {
    fn admit(&mut self, frame: &[u8], waker: &Waker) -> Admit {
        match self.0.admit(frame, waker) {
            linklab_perf::embassy::Admit::Pass => Admit::Pass,
            linklab_perf::embassy::Admit::Hold => Admit::Hold,
            linklab_perf::embassy::Admit::Drop => Admit::Drop,
        }
    }

    fn sent(&mut self, frame: &[u8]) {
        self.0.sent(frame)
    }

    fn hold_tx(&mut self, waker: &Waker) -> bool {
        self.0.hold_tx(waker)
    }
}
