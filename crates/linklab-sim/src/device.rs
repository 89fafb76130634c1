//! The device's MAC: linklab-mac's RX queue, [`Mac`] and smoltcp `Device`, wrapped behind
//! the object-safe [`DevicePort`] so that only this file depends on the queue's
//! compile-time capacity.
//!
//! The simulator plays the PHY: in the receive interrupt it takes a grant, writes the
//! captured bits and commits (or cancels for a link pulse); the main loop calls smoltcp,
//! which reads the frames in place through the MAC (SFD search, realignment and FCS check
//! happen there, on every frame).

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;

use linklab_mac::deframe::RxFormat;
use linklab_mac::queue::{FRAME_HEADER_LEN, MIN_QUEUE_CAPACITY};
use linklab_mac::window::{queue_frames, stored_len, ETHERNET_MSS};
use linklab_mac::{
    Clock, Counters, Mac, MacAddr, MacConfig, PhyTx, RxGrant, RxProducer, RxQueue, RX_GRANT_LEN,
};
use smoltcp::iface::{Interface, SocketSet};
use smoltcp::time::Instant;

/// Queue sizes `--rx-frames` accepts.
pub const RX_FRAMES_RANGE: std::ops::RangeInclusive<usize> = 2..=16;

/// Bytes of queue that hold exactly `frames` full-size frames from any position
/// (`linklab_mac::window::queue_frames` of the result is `frames`; tested below).
pub const fn capacity_for_frames(frames: usize) -> usize {
    let slot = stored_len(RxFormat::Raw, linklab_mac::frame::MAX_FRAME_LEN) + FRAME_HEADER_LEN;
    MIN_QUEUE_CAPACITY + (frames.saturating_sub(1)) * slot
}

/// Virtual time shared between the simulator and the device's MAC clock (ns).
#[derive(Clone, Default, Debug)]
pub struct VirtualClock(pub Rc<Cell<u64>>);

impl Clock for VirtualClock {
    fn now_ns(&self) -> u64 {
        self.0.get()
    }
}

/// The PHY transmit side of the device: wire images the MAC handed over, in order.
#[derive(Default, Debug)]
pub struct TxSink(pub VecDeque<Vec<u8>>);

impl PhyTx for TxSink {
    fn transmit(&mut self, wire: &[u8]) {
        self.0.push_back(wire.to_vec());
    }
}

/// What the simulator needs from the device's MAC, independent of the queue capacity.
pub trait DevicePort {
    /// RX interrupt entry: takes a grant; false if the queue has no room.
    fn isr_grant(&mut self) -> bool;
    /// RX interrupt exit: writes `captured` into the open grant and commits it (cancels if
    /// empty). Returns the committed length (0 if cancelled or no grant was open).
    fn isr_commit(&mut self, captured: &[u8]) -> usize;
    /// Counts a transmission lost because no grant was available.
    fn isr_missed(&mut self);
    /// Creates the smoltcp interface on this device.
    fn interface(&mut self, config: smoltcp::iface::Config, now: Instant) -> Interface;
    /// smoltcp ingress of at most one frame.
    fn ingress_one(&mut self, iface: &mut Interface, sockets: &mut SocketSet<'_>, now: Instant);
    /// smoltcp egress (all it wants to send now).
    fn egress(&mut self, iface: &mut Interface, sockets: &mut SocketSet<'_>, now: Instant);
    /// Lets the MAC release a frame it deferred for the inter-packet gap.
    fn mac_poll(&mut self);
    /// When the MAC wants [`DevicePort::mac_poll`] called (ns), if at all.
    fn mac_poll_at_ns(&self) -> Option<u64>;
    /// Moves the wire images the MAC produced into `out`.
    fn take_tx(&mut self, out: &mut VecDeque<Vec<u8>>);
    /// The MAC counters.
    fn counters(&self) -> Counters;
    /// Queue capacity in bytes.
    fn capacity(&self) -> usize;
    /// Full-size frames the queue always holds.
    fn queue_frames(&self) -> usize;
    /// The TCP window that cannot overrun the queue (linklab-mac's formula).
    fn auto_window(&self) -> usize;
}

/// The device MAC for a queue of `N` bytes.
pub struct MacPort<'q, const N: usize> {
    producer: RxProducer<'q, N>,
    grant: Option<RxGrant<'q, N>>,
    mac: Mac<'q, N, TxSink, VirtualClock>,
}

impl<'q, const N: usize> MacPort<'q, N> {
    /// Binds a MAC with address `address` at `line_rate_bps` to `queue`.
    pub fn new(
        queue: &'q RxQueue<N>,
        address: MacAddr,
        line_rate_bps: u64,
        clock: VirtualClock,
    ) -> Self {
        let (producer, consumer) = queue.split();
        let config = MacConfig::raw_phy(address, line_rate_bps);
        let mut mac = Mac::new(consumer, TxSink::default(), clock, config);
        // The TCP window is what the socket buffer says (`--tcp-window`), even when that is
        // larger than the queue: the experiment that shows why it must not be.
        mac.set_burst_cap(false);
        MacPort {
            producer,
            grant: None,
            mac,
        }
    }
}

impl<const N: usize> DevicePort for MacPort<'_, N> {
    fn isr_grant(&mut self) -> bool {
        self.grant = self.producer.grant().ok();
        self.grant.is_some()
    }

    fn isr_commit(&mut self, captured: &[u8]) -> usize {
        let Some(mut grant) = self.grant.take() else {
            return 0;
        };
        let n = captured.len().min(RX_GRANT_LEN);
        if n == 0 {
            grant.cancel();
            return 0;
        }
        if let (Some(dst), Some(src)) = (grant.buf().get_mut(..n), captured.get(..n)) {
            dst.copy_from_slice(src);
        }
        grant.commit(n);
        n
    }

    fn isr_missed(&mut self) {
        self.producer.record_missed();
    }

    fn interface(&mut self, config: smoltcp::iface::Config, now: Instant) -> Interface {
        Interface::new(config, &mut self.mac, now)
    }

    fn ingress_one(&mut self, iface: &mut Interface, sockets: &mut SocketSet<'_>, now: Instant) {
        iface.poll_ingress_single(now, &mut self.mac, sockets);
    }

    fn egress(&mut self, iface: &mut Interface, sockets: &mut SocketSet<'_>, now: Instant) {
        iface.poll_egress(now, &mut self.mac, sockets);
    }

    fn mac_poll(&mut self) {
        self.mac.poll();
    }

    fn mac_poll_at_ns(&self) -> Option<u64> {
        self.mac.poll_at_ns()
    }

    fn take_tx(&mut self, out: &mut VecDeque<Vec<u8>>) {
        out.extend(self.mac.phy_mut().0.drain(..));
    }

    fn counters(&self) -> Counters {
        self.mac.counters()
    }

    fn capacity(&self) -> usize {
        N
    }

    fn queue_frames(&self) -> usize {
        queue_frames(N, RxFormat::Raw, ETHERNET_MSS)
    }

    fn auto_window(&self) -> usize {
        self.mac.tcp_rx_window()
    }
}

/// Runs `f` with a device port whose queue holds `frames` full-size frames
/// (`frames` in [`RX_FRAMES_RANGE`]). The queue lives on the heap for the call.
pub fn with_port<R>(
    frames: usize,
    address: MacAddr,
    line_rate_bps: u64,
    clock: VirtualClock,
    f: impl FnOnce(&mut dyn DevicePort) -> R,
) -> Option<R> {
    macro_rules! dispatch {
        ($($n:literal),*) => {
            match frames {
                $($n => {
                    let queue: Box<RxQueue<{ capacity_for_frames($n) }>> = Box::new(RxQueue::new());
                    let mut port = MacPort::new(&queue, address, line_rate_bps, clock);
                    Some(f(&mut port))
                })*
                _ => None,
            }
        };
    }
    dispatch!(2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capacity_holds_exactly_the_requested_frames() {
        for n in RX_FRAMES_RANGE {
            let c = capacity_for_frames(n);
            assert_eq!(queue_frames(c, RxFormat::Raw, ETHERNET_MSS), n, "n = {n}");
            assert_eq!(
                queue_frames(c - 1, RxFormat::Raw, ETHERNET_MSS),
                n - 1,
                "n = {n}"
            );
        }
    }

    #[test]
    fn nine_frames_give_the_seed_window() {
        let w = with_port(
            9,
            MacAddr([2, 0, 0, 0, 0, 1]),
            10_000_000,
            VirtualClock::default(),
            |p| p.auto_window(),
        );
        assert_eq!(w, Some((9 - 2) * 1460));
    }
}
