//! The MAC: consumer side of the RX queue plus the transmitter, with counters, the address
//! filter, the inter-packet gap and 802.3x PAUSE.
mod config;
mod phy_tx;
mod rx_side;
mod tx_side;

pub use config::{MacConfig, PauseWatermarks};
pub use phy_tx::PhyTx;
pub use rx_side::RxFrame;
pub(crate) use tx_side::TxSide;

use core::cell::Cell;

use crate::checksum;
use crate::counters::{Counters, Widen};
use crate::deframe::RxError;
use crate::filter::AddressFilter;
use crate::frame::{self, MacAddr, MAX_WIRE_LEN};
use crate::queue::{RxConsumer, Storage};
use crate::timing::Clock;
use crate::tx::TxError;
use rx_side::{Outcome, RxSide};
use tx_side::{TxBuffer, NEVER, TX_FRAME_OFFSET};

/// The software MAC over an RX queue with storage `S`, a PHY transmit sink `T` and a clock
/// `C`.
///
/// * [`Mac::receive`] takes the next good frame out of the queue in place (realigning,
///   checking FCS, length and address, consuming PAUSE), counting every transmission.
/// * [`Mac::transmit`] builds a frame in place through a closure and hands it to the PHY
///   once the inter-packet gap and any received PAUSE have passed.
/// * With the `smoltcp` feature, `Mac` is a `smoltcp::phy::Device`.
///
/// A frame that cannot leave yet (gap or PAUSE) is kept built in the MAC ("deferred");
/// call [`Mac::poll`] at [`Mac::poll_at_ns`] to send it. While one is deferred,
/// [`Mac::transmit`] answers [`TxError::NotReady`] and the smoltcp `Device` hands out no
/// tokens.
pub struct Mac<'q, S: Storage, T: PhyTx, C: Clock> {
    rx: RxSide<'q, S>,
    tx: TxSide<T, C>,
    committed: Cell<Widen>,
    missed: Cell<Widen>,
    cancelled: Cell<Widen>,
    dequeued: Cell<Widen>,
    /// smoltcp's `max_burst_size`: derived from the queue once (smoltcp asks for the
    /// capabilities on every egress pass), or lifted with [`Mac::set_burst_cap`].
    max_burst: Option<usize>,
}

impl<'q, S: Storage, T: PhyTx, C: Clock> Mac<'q, S, T, C> {
    /// A MAC reading from `consumer`, sending through `phy`, timed by `clock`.
    pub fn new(consumer: RxConsumer<'q, S>, mut phy: T, clock: C, config: MacConfig) -> Self {
        let capacity = consumer.queue().capacity();
        let phy_completes_l4 = phy.completes_l4_checksums();
        Mac {
            rx: RxSide {
                consumer,
                format: config.rx_format,
                filter: AddressFilter::new(config.address),
                packets: 0,
                bytes: 0,
                pause_frames: 0,
                filtered: 0,
                frame_errors: 0,
                crc_errors: 0,
                short_errors: 0,
                long_errors: 0,
                checksum_offload: false,
                checksum_errors: 0,
                staged: None,
            },
            tx: TxSide {
                phy,
                clock,
                format: config.tx_format,
                line_rate_bps: config.line_rate_bps,
                address: config.address,
                buf: TxBuffer([0; TX_FRAME_OFFSET + MAX_WIRE_LEN]),
                deferred: None,
                phy_completes_l4,
                gap_end_ns: 0,
                paused_until_ns: 0,
                flow: config.flow_control,
                pause_pending: None,
                pause_asserted: false,
                pause_refresh_ns: 0,
                requests: 0,
                packets: 0,
                bytes: 0,
                dropped: 0,
                pause_frames: 0,
                checksum_offload: false,
            },
            committed: Cell::new(Widen::default()),
            missed: Cell::new(Widen::default()),
            cancelled: Cell::new(Widen::default()),
            dequeued: Cell::new(Widen::default()),
            max_burst: Some(crate::window::smoltcp_max_burst_size(
                capacity,
                config.rx_format,
            )),
        }
    }

    /// The destination address filter.
    pub fn filter(&self) -> &AddressFilter {
        &self.rx.filter
    }

    /// The destination address filter, to add multicast groups or go promiscuous.
    pub fn filter_mut(&mut self) -> &mut AddressFilter {
        &mut self.rx.filter
    }

    /// Our unicast address.
    pub fn address(&self) -> MacAddr {
        self.tx.address
    }

    /// The PHY transmit sink (e.g. to inspect a test sink).
    pub fn phy(&self) -> &T {
        &self.tx.phy
    }

    /// The PHY transmit sink, mutably.
    pub fn phy_mut(&mut self) -> &mut T {
        &mut self.tx.phy
    }

    /// The clock.
    pub fn clock(&self) -> &C {
        &self.tx.clock
    }

    /// Lends the next good frame, the one [`receive`](Self::receive) delivers next, to `f`
    /// without delivering it: lets a device look at what comes next, e.g. to make room for a
    /// TCP SYN before the stack answers it. None when the queue holds no good frame. Bad,
    /// filtered and PAUSE transmissions ahead of it are counted and released as `receive`
    /// does, and the good one is counted now and held for `receive` (or
    /// [`drop_next`](Self::drop_next)). A look at the queue's head alone showed a filtered
    /// frame (an IPv6 multicast the host sent) while `receive` delivered the TCP SYN behind
    /// it, which so passed the SYN rule by and got the stack's RST. Does the time-driven work
    /// first ([`poll`](Self::poll)), as `receive` does: a loop that receives only after a look
    /// that found a frame still sends what waits to go.
    pub fn peek<R>(&mut self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.poll();
        self.stage().map(|frame| f(frame))
    }

    /// The next good frame for the stack, in place; None when the queue holds no good
    /// frame. Bad, filtered and PAUSE frames on the way are counted and released.
    pub fn receive(&mut self) -> Option<RxFrame<'q, S>> {
        self.poll();
        self.stage()?;
        self.rx.staged.take()
    }

    /// Takes the next good frame (the one [`peek`](Self::peek) shows) out of the queue
    /// without lending it to anyone, counted as [`receive`](Self::receive) counts it: a good
    /// frame a gate above the MAC refused. False when the queue holds no good frame.
    pub fn drop_next(&mut self) -> bool {
        self.stage().is_some() && self.rx.staged.take().is_some()
    }

    /// The next good frame, held for [`receive`](Self::receive) (taken out of the queue
    /// first if none is held): the one place both `peek` and `receive` get theirs.
    fn stage(&mut self) -> Option<&RxFrame<'q, S>> {
        while self.rx.staged.is_none() {
            self.rx.staged = self.take_next()?;
        }
        self.rx.staged.as_ref()
    }

    /// The next queued transmission (None when the queue is empty): a good frame for the
    /// stack, or nothing when it was bad, filtered or PAUSE (counted and released).
    fn take_next(&mut self) -> Option<Option<RxFrame<'q, S>>> {
        let mut read = self.rx.consumer.read()?;
        Some(match self.rx.classify(read.buf()) {
            Outcome::Deliver(range) => {
                if self.rx.checksum_offload
                    && !self.rx.nic_vouches(read.bytes())
                    && checksum::verify(&read.buf()[range.clone()]) == checksum::Verdict::Bad
                {
                    trace!("rx: dropped, bad IPv4/TCP/UDP checksum");
                    self.rx.checksum_errors += 1;
                    None
                } else {
                    self.rx.packets += 1;
                    self.rx.bytes += range.len() as u64;
                    Some(RxFrame { read, range })
                }
            }
            Outcome::Pause(quanta) => {
                debug!("rx: PAUSE for {} quanta", quanta);
                self.rx.pause_frames += 1;
                self.tx.apply_received_pause(quanta);
                None
            }
            Outcome::Filtered => {
                self.rx.filtered += 1;
                None
            }
            Outcome::Error(e) => {
                trace!("rx: dropped, {:?}", e);
                match e {
                    RxError::NoSfd => self.rx.frame_errors += 1,
                    RxError::Crc => self.rx.crc_errors += 1,
                    RxError::TooShort => self.rx.short_errors += 1,
                    RxError::TooLong => self.rx.long_errors += 1,
                }
                None
            }
        })
    }

    /// Builds a `len`-byte frame in place (`fill` writes destination..payload) and hands it
    /// to the PHY, or keeps it deferred until the gap/PAUSE is over.
    ///
    /// Returns [`TxError::NotReady`] without calling `fill` while an earlier frame is still
    /// deferred, and [`TxError::TooLong`] (counted in `tx_dropped`) above 1518 bytes.
    pub fn transmit<R>(
        &mut self,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<R, TxError> {
        self.poll();
        if self.tx.deferred.is_some() {
            return Err(TxError::NotReady {
                ready_at_ns: self.tx.ready_at_ns(),
            });
        }
        self.tx.requests += 1;
        if len > frame::MAX_VLAN_FRAME_LEN {
            warn!("tx: {} byte frame dropped (over 1518)", len);
            self.tx.dropped += 1;
            return Err(TxError::TooLong);
        }
        Ok(self.tx.send(len, fill))
    }

    /// Does the time-driven work: sends a deferred frame whose gap/PAUSE is over, and sends
    /// PAUSE/resume frames for the RX watermarks. Called by `receive` and `transmit`.
    pub fn poll(&mut self) {
        let occupancy = self.rx.consumer.queue().occupancy();
        self.tx.service(occupancy);
    }

    /// True when [`Mac::poll`] may have work now or later: a deferred frame, a PAUSE to send
    /// or refresh, or flow control watching the queue. False, it has none (it would only
    /// read the clock), and [`Mac::poll_at_ns`] is None.
    pub fn has_timed_work(&self) -> bool {
        let tx = &self.tx;
        tx.flow.is_some()
            || tx.deferred.is_some()
            || tx.pause_pending.is_some()
            || tx.pause_asserted
    }

    /// When [`Mac::poll`] next has work (a deferred frame or PAUSE to send), in clock ns.
    pub fn poll_at_ns(&self) -> Option<u64> {
        let mut at = None;
        if self.tx.deferred.is_some() {
            at = Some(self.tx.ready_at_ns());
        }
        if self.tx.pause_pending.is_some() {
            let p = self.tx.gap_end_ns;
            at = Some(at.map_or(p, |a: u64| a.min(p)));
        } else if self.tx.pause_asserted && self.tx.pause_refresh_ns != NEVER {
            let p = self.tx.pause_refresh_ns;
            at = Some(at.map_or(p, |a: u64| a.min(p)));
        }
        at
    }

    /// The TCP receive window (bytes) that keeps a peer sending full-size segments from
    /// overrunning this MAC's RX queue: [`crate::window::tcp_rx_window`] with MSS 1460.
    pub fn tcp_rx_window(&self) -> usize {
        crate::window::tcp_rx_window(
            self.rx.consumer.queue().capacity(),
            self.rx.format,
            crate::window::ETHERNET_MSS,
        )
    }

    /// The smoltcp `max_burst_size` the MAC reports: by default the queue's
    /// ([`crate::window::smoltcp_max_burst_size`]), `None` once the cap is lifted.
    pub fn max_burst_size(&self) -> Option<usize> {
        self.max_burst
    }

    /// Keeps (`true`, the default) or lifts (`false`) the burst cap smoltcp applies to the
    /// advertised TCP window. Lift it only to advertise a window larger than the queue on
    /// purpose: to show, or measure, the overruns that cap prevents.
    pub fn set_burst_cap(&mut self, keep: bool) {
        let capacity = self.rx.consumer.queue().capacity();
        self.max_burst =
            keep.then(|| crate::window::smoltcp_max_burst_size(capacity, self.rx.format));
    }

    /// Turns checksum offload on or off (off by default): on, the MAC verifies the IPv4
    /// header, TCP and UDP checksums of every frame it delivers (dropping and counting bad
    /// ones in `rx_checksum_errors`) and fills them in on every frame it sends, a 32-bit word
    /// at a time ([`crate::checksum`]), and the smoltcp capabilities tell the stack to do
    /// neither.
    pub fn set_checksum_offload(&mut self, on: bool) {
        self.rx.checksum_offload = on;
        self.tx.checksum_offload = on;
    }

    /// True if checksum offload is on.
    pub fn checksum_offload(&self) -> bool {
        self.rx.checksum_offload
    }

    /// True if a frame is built and waiting for the gap or a PAUSE to end.
    pub fn tx_deferred(&self) -> bool {
        self.tx.deferred.is_some()
    }

    /// Clock time (ns) until which a PAUSE received from the peer holds our transmitter.
    pub fn paused_until_ns(&self) -> u64 {
        self.tx.paused_until_ns
    }

    /// A snapshot of all counters (see [`crate::counters`] for the conservation law).
    pub fn counters(&self) -> Counters {
        let q = self.rx.consumer.queue();
        let pc = &q.producer_counters;
        let sample = |cell: &Cell<Widen>, a: &crate::atomic::AtomicU32| {
            let mut w = cell.get();
            let v = w.sample(a);
            cell.set(w);
            v
        };
        // Dequeued is sampled before committed: a commit racing in between can only make
        // pending larger, never negative.
        let rx_dequeued = sample(&self.dequeued, &q.dequeued);
        let rx_missed_errors = sample(&self.missed, &pc.missed);
        let rx_committed = sample(&self.committed, &pc.committed);
        let rx_cancelled = sample(&self.cancelled, &pc.cancelled);
        Counters {
            rx_transmissions: rx_committed + rx_missed_errors,
            rx_committed,
            rx_dequeued,
            rx_cancelled,
            rx_packets: self.rx.packets,
            rx_bytes: self.rx.bytes,
            rx_pause_frames: self.rx.pause_frames,
            rx_filtered: self.rx.filtered,
            rx_frame_errors: self.rx.frame_errors,
            rx_crc_errors: self.rx.crc_errors,
            rx_short_length_errors: self.rx.short_errors,
            rx_long_length_errors: self.rx.long_errors,
            rx_checksum_errors: self.rx.checksum_errors,
            rx_missed_errors,
            tx_requests: self.tx.requests,
            tx_packets: self.tx.packets,
            tx_bytes: self.tx.bytes,
            tx_dropped: self.tx.dropped,
            tx_deferred: self.tx.deferred.is_some() as u64,
            tx_pause_frames: self.tx.pause_frames,
        }
    }

    /// Splits into the pieces the smoltcp and embassy tokens need.
    #[cfg(any(feature = "smoltcp", feature = "embassy"))]
    pub(crate) fn tx_side(&mut self) -> &mut TxSide<T, C> {
        &mut self.tx
    }

    /// The RX queue this MAC reads (for the embassy driver's waker).
    #[cfg(feature = "embassy")]
    pub(crate) fn rx_queue(&self) -> &'q crate::queue::RxQueue<S> {
        self.rx.consumer.queue()
    }
}
