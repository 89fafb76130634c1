//! The MAC: consumer side of the RX queue plus the transmitter, with counters, the address
//! filter, the inter-packet gap and 802.3x PAUSE.

use core::cell::Cell;
use core::ops::{Deref, DerefMut, Range};

use crate::checksum;
use crate::counters::{Counters, Widen};
use crate::deframe::{deframe, RxChecksums, RxError, RxFormat, RxTag};
use crate::filter::AddressFilter;
use crate::frame::{self, MacAddr, ETHERTYPE_MAC_CONTROL, FCS_LEN, MAX_WIRE_LEN, MIN_FRAME_LEN};
use crate::pause::{self, MacControl, PAUSE_DESTINATION, PAUSE_FRAME_LEN};
use crate::queue::{RxConsumer, RxRead, Storage};
use crate::timing::{bits_ns, ipg_ns, Clock};
use crate::tx::{build, TxError, TxFormat};

/// Where the MAC hands finished transmissions: the PHY (or a simulator's wire, or a TAP).
pub trait PhyTx {
    /// Sends one transmission; `wire` is exactly what goes out in the configured
    /// [`TxFormat`] (with preamble and FCS for [`TxFormat::Wire`]).
    fn transmit(&mut self, wire: &[u8]);

    /// Transmissions the PHY or driver dropped since start (no buffer or FIFO room in
    /// time), where it counts them; 0 where it does not.
    fn dropped(&mut self) -> u64 {
        0
    }

    /// True if a full-size transmission would be taken now without waiting or dropping
    /// (a free buffer, FIFO room); PHYs that cannot tell say true.
    fn ready(&mut self) -> bool {
        true
    }

    /// True if the PHY completes the TCP and UDP checksums of the IPv4 frames it is handed
    /// (a NIC with transmit checksum offload, e.g. virtio-net with `VIRTIO_NET_F_CSUM`):
    /// then the MAC's checksum offload writes only their pseudo-header sums
    /// ([`checksum::fill_partial`]) and the NIC finds them with
    /// [`checksum::l4_checksum_field`]. False (the default): the MAC fills them in.
    fn completes_l4_checksums(&mut self) -> bool {
        false
    }

    /// A buffer of at least `len` bytes that the PHY sends from (a DMA descriptor's), for
    /// the MAC to build the next transmission in place and then hand over with
    /// [`PhyTx::transmit_buffer`]: the frame is then never copied. None (the default, or no
    /// buffer free): the MAC builds it in its own buffer and calls [`PhyTx::transmit`].
    /// The buffer stays the MAC's until `transmit_buffer`; the MAC asks for no other
    /// meanwhile.
    fn tx_buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        let _ = len;
        None
    }

    /// Sends the first `len` bytes of the buffer [`PhyTx::tx_buffer`] lent last.
    fn transmit_buffer(&mut self, len: usize) {
        let _ = len;
    }
}

impl<F: FnMut(&[u8])> PhyTx for F {
    fn transmit(&mut self, wire: &[u8]) {
        self(wire)
    }
}

/// Optional RX flow control: send PAUSE when the RX queue fills (off by default).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct PauseWatermarks {
    /// Send PAUSE(`quanta`) when the queue holds at least this many bytes.
    pub high_bytes: usize,
    /// Send PAUSE(0) (resume) when it has drained to at most this many bytes.
    pub low_bytes: usize,
    /// Pause time requested, in units of 512 bit times; refreshed at half time while the
    /// queue stays above `low_bytes` (with a line rate; at rate 0 the time is unknown and
    /// PAUSE is sent only when the queue crosses `high_bytes`).
    pub quanta: u16,
}

/// Configuration of a [`Mac`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct MacConfig {
    /// Our unicast address (filter and PAUSE source).
    pub address: MacAddr,
    /// What the PHY puts into the RX queue.
    pub rx_format: RxFormat,
    /// What the PHY expects on transmit.
    pub tx_format: TxFormat,
    /// Line rate in bit/s for the inter-packet gap and PAUSE timing; 0 = no timing (as is
    /// any rate under a clock that never moves, `Clock::TIMED` false).
    pub line_rate_bps: u64,
    /// Send PAUSE on RX queue watermarks (None = off, the default).
    pub flow_control: Option<PauseWatermarks>,
}

impl MacConfig {
    /// A sampling PHY: raw RX captures, wire-format TX, timing at `line_rate_bps` (feature
    /// `soft-framing`).
    #[cfg(feature = "soft-framing")]
    pub const fn raw_phy(address: MacAddr, line_rate_bps: u64) -> Self {
        MacConfig {
            address,
            rx_format: RxFormat::Raw,
            tx_format: TxFormat::Wire,
            line_rate_bps,
            flow_control: None,
        }
    }

    /// A soft PHY that decodes the line itself (linklab-phy10): its interrupt writes the bytes
    /// after the SFD, FCS included, straight into the grant, and the MAC checks the FCS on
    /// the consumer side; wire-format TX (the PHY encodes what it gets), timing at
    /// `line_rate_bps` (feature `soft-framing`).
    #[cfg(feature = "soft-framing")]
    pub const fn decoding_phy(address: MacAddr, line_rate_bps: u64) -> Self {
        MacConfig {
            address,
            rx_format: RxFormat::Aligned { fcs: true },
            tx_format: TxFormat::Wire,
            line_rate_bps,
            flow_control: None,
        }
    }

    /// An Ethernet controller that hands over aligned frames with their FCS (the MAC checks
    /// it on the consumer side) and transmits plain frames, adding preamble and FCS itself
    /// (e.g. a LAN9118). Line timing is the controller's, so none here.
    pub const fn aligned_fcs(address: MacAddr) -> Self {
        MacConfig {
            address,
            rx_format: RxFormat::Aligned { fcs: true },
            tx_format: TxFormat::Plain,
            line_rate_bps: 0,
            flow_control: None,
        }
    }

    /// A Linux TAP: aligned frames without FCS both ways, no line timing.
    pub const fn tap(address: MacAddr) -> Self {
        MacConfig {
            address,
            rx_format: RxFormat::Aligned { fcs: false },
            tx_format: TxFormat::Plain,
            line_rate_bps: 0,
            flow_control: None,
        }
    }
}

/// A good frame for the stack, read in place from the RX queue (destination..payload,
/// without FCS). Dropping it releases the queue space.
pub struct RxFrame<'q, S: Storage> {
    read: RxRead<'q, S>,
    range: Range<usize>,
}

impl<S: Storage> Deref for RxFrame<'_, S> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.read.bytes().get(self.range.clone()).unwrap_or(&[])
    }
}

impl<S: Storage> DerefMut for RxFrame<'_, S> {
    fn deref_mut(&mut self) -> &mut [u8] {
        let r = self.range.clone();
        self.read.buf().get_mut(r).unwrap_or(&mut [])
    }
}

/// What the MAC did with one dequeued transmission.
enum Outcome {
    Deliver(Range<usize>),
    Pause(u16),
    Filtered,
    Error(RxError),
}

/// Receive half of the MAC (private; a separate struct so the smoltcp tokens can borrow
/// the transmit half while a frame is held).
struct RxSide<'q, S: Storage> {
    consumer: RxConsumer<'q, S>,
    format: RxFormat,
    filter: AddressFilter,
    packets: u64,
    bytes: u64,
    pause_frames: u64,
    filtered: u64,
    frame_errors: u64,
    crc_errors: u64,
    short_errors: u64,
    long_errors: u64,
    /// Verify IPv4/TCP/UDP checksums here instead of in the stack.
    checksum_offload: bool,
    checksum_errors: u64,
}

/// The transmit buffer: word-aligned, and the frame built [`TX_FRAME_OFFSET`] bytes in, so
/// that it starts at [`crate::FRAME_ALIGN`] mod 4 (the preamble of [`TxFormat::Wire`] is 8
/// bytes). The stack's copy of each TCP payload into the frame (54 bytes in) is then
/// word-aligned with a socket buffer that is; from a frame at 0 mod 4 `memcpy` took its
/// misaligned path, 3.6 instructions per byte on the Cortex-M3.
#[repr(C, align(4))]
struct TxBuffer([u8; TX_FRAME_OFFSET + MAX_WIRE_LEN]);

/// Where in [`TxBuffer`] a transmission starts.
const TX_FRAME_OFFSET: usize = crate::queue::FRAME_ALIGN;

impl TxBuffer {
    fn transmission(&mut self) -> &mut [u8] {
        &mut self.0[TX_FRAME_OFFSET..]
    }
}

/// A transmission built and not yet handed over.
#[derive(Clone, Copy, Debug)]
struct Built {
    /// Bytes to hand over.
    wire_len: usize,
    /// The frame's length.
    frame_len: usize,
    /// Built in the PHY's buffer ([`PhyTx::tx_buffer`]), not the MAC's.
    in_phy_buffer: bool,
}

/// Transmit half of the MAC.
pub(crate) struct TxSide<T: PhyTx, C: Clock> {
    phy: T,
    clock: C,
    format: TxFormat,
    line_rate_bps: u64,
    address: MacAddr,
    buf: TxBuffer,
    /// A built frame waiting for the gap/PAUSE.
    deferred: Option<Built>,
    /// The PHY completes TCP/UDP checksums ([`PhyTx::completes_l4_checksums`], asked once).
    phy_completes_l4: bool,
    /// Earliest start of the next transmission (end of the last one plus the gap).
    gap_end_ns: u64,
    /// End of a PAUSE received from the peer.
    paused_until_ns: u64,
    flow: Option<PauseWatermarks>,
    /// PAUSE (quanta) waiting for the gap.
    pause_pending: Option<u16>,
    /// We told the peer to pause and have not yet sent the resume.
    pause_asserted: bool,
    pause_refresh_ns: u64,
    requests: u64,
    packets: u64,
    bytes: u64,
    dropped: u64,
    pause_frames: u64,
    /// Fill in IPv4/TCP/UDP checksums here instead of in the stack.
    checksum_offload: bool,
}

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

    /// Lends the next queued transmission to `f` as the PHY committed it, without receiving
    /// it (nothing is counted or released): lets a device look at what comes next, e.g. to
    /// make room for a TCP SYN before the stack answers it. With an aligned RX format this is
    /// the frame itself (plus FCS if the PHY passes it on); with a raw one, the capture.
    pub fn peek<R>(&self, f: impl FnOnce(&[u8]) -> R) -> Option<R> {
        self.rx.consumer.peek(f)
    }

    /// The next good frame for the stack, in place; None when the queue holds no good
    /// frame. Bad, filtered and PAUSE frames on the way are counted and released.
    pub fn receive(&mut self) -> Option<RxFrame<'q, S>> {
        self.poll();
        loop {
            if let Some(frame) = self.take_next()? {
                return Some(frame);
            }
        }
    }

    /// Takes the next queued transmission (the one [`peek`](Self::peek) shows) out of the
    /// queue without lending it to anyone, counted as [`receive`](Self::receive) counts it: a
    /// good frame a gate above the MAC refused, or a bad one. False when the queue is empty.
    pub fn drop_next(&mut self) -> bool {
        self.take_next().is_some()
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
        let sample = |cell: &Cell<Widen>, a: &core::sync::atomic::AtomicU32| {
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

impl<S: Storage> RxSide<'_, S> {
    /// True if the NIC's tag after the frame says its checksums are good
    /// ([`RxFormat::Tagged`]).
    fn nic_vouches(&self, transmission: &[u8]) -> bool {
        self.format == RxFormat::Tagged
            && RxTag::of(transmission).is_some_and(|t| t.checksums == RxChecksums::Valid)
    }

    fn classify(&self, buf: &mut [u8]) -> Outcome {
        let range = match deframe(buf, self.format) {
            Ok(r) => r,
            Err(e) => return Outcome::Error(e),
        };
        let frame = buf.get(range.clone()).unwrap_or(&[]);
        let dst = match frame::destination(frame) {
            Some(d) => d,
            None => return Outcome::Error(RxError::TooShort),
        };
        if frame::ethertype(frame) == Some(ETHERTYPE_MAC_CONTROL) {
            // MAC Control frames are for the MAC, never for the stack.
            if dst != PAUSE_DESTINATION && dst != self.filter.address {
                return Outcome::Filtered;
            }
            return match pause::parse(frame) {
                Some(MacControl::Pause { quanta }) => Outcome::Pause(quanta),
                _ => Outcome::Filtered,
            };
        }
        if self.filter.accepts(dst) {
            Outcome::Deliver(range)
        } else {
            Outcome::Filtered
        }
    }
}

impl<T: PhyTx, C: Clock> TxSide<T, C> {
    /// The clock's time, for line timing. Without it (rate 0) every time the MAC keeps is a
    /// past `now` plus 0 (no gap, no PAUSE time), so any `now` finds it passed: 0 serves, and
    /// the clock is not read (on an MCU a read can cost a timer access and a conversion per
    /// frame).
    fn now_ns(&self) -> u64 {
        if self.line_rate() == 0 {
            0
        } else {
            self.clock.now_ns()
        }
    }

    /// The line rate the MAC times transmissions by: 0 (no timing) under a clock that never
    /// moves ([`Clock::TIMED`]), known when the image is built, so it links no timing code.
    fn line_rate(&self) -> u64 {
        if C::TIMED {
            self.line_rate_bps
        } else {
            0
        }
    }

    /// Start of the next data transmission: after the gap and after any received PAUSE.
    pub(crate) fn ready_at_ns(&self) -> u64 {
        self.gap_end_ns.max(self.paused_until_ns)
    }

    fn apply_received_pause(&mut self, quanta: u16) {
        let now = self.now_ns();
        // Saturating: the quanta come from the wire and the clock from the user.
        self.paused_until_ns = now.saturating_add(pause::quanta_ns(quanta, self.line_rate()));
    }

    /// Nanoseconds a transmission of a `frame_len`-byte frame occupies the line.
    fn line_ns(&self, frame_len: usize) -> u64 {
        let bytes = frame::PREAMBLE_SFD_LEN + frame_len.max(MIN_FRAME_LEN) + FCS_LEN;
        bits_ns(8 * bytes as u64, self.line_rate())
    }

    /// End of the gap after a `frame_len`-byte frame that starts at `now`: its time on the
    /// line plus 96 bit times.
    fn gap_after(&self, frame_len: usize, now: u64) -> u64 {
        now.saturating_add(self.line_ns(frame_len))
            .saturating_add(ipg_ns(self.line_rate()))
    }

    /// Hands the built transmission to the PHY now and starts the gap.
    fn emit(&mut self, b: Built, now: u64) {
        if b.in_phy_buffer {
            self.phy.transmit_buffer(b.wire_len);
        } else {
            let wire = self.buf.transmission().get(..b.wire_len).unwrap_or(&[]);
            self.phy.transmit(wire);
        }
        self.gap_end_ns = self.gap_after(b.frame_len, now);
        self.packets += 1;
        self.bytes += b.frame_len as u64;
    }

    /// Builds a frame (the caller has checked there is no deferred frame and counted the
    /// request), in the PHY's buffer if it lends one, else in the MAC's, and sends it now or
    /// defers it. Always calls `fill`.
    pub(crate) fn send<R>(&mut self, len: usize, fill: impl FnOnce(&mut [u8]) -> R) -> R {
        let len = len.min(frame::MAX_VLAN_FRAME_LEN);
        let offload = self.checksum_offload;
        // A PHY that completes transport checksums gets pseudo-header sums whatever filled
        // the rest (the stack, or the MAC's offload).
        let partial = self.phy_completes_l4;
        let wire_len = self.format.wire_len(len);
        let lent = self.phy.tx_buffer(wire_len).filter(|b| b.len() >= wire_len);
        let in_phy_buffer = lent.is_some();
        let out = match lent {
            Some(b) => b,
            None => self.buf.transmission(),
        };
        let built = build(out, self.format, len, |frame| {
            let r = fill(frame);
            if partial {
                checksum::fill_partial(frame);
            } else if offload {
                checksum::fill(frame);
            }
            r
        });
        let (wire_len, r) = match built {
            Ok(x) => x,
            // Unreachable: len is capped, the MAC's buffer holds MAX_WIRE_LEN and a lent one
            // at least wire_len.
            Err(_) => unreachable_tx(),
        };
        let b = Built {
            wire_len,
            frame_len: len,
            in_phy_buffer,
        };
        let now = self.now_ns();
        if now >= self.ready_at_ns() {
            self.emit(b, now);
        } else {
            self.deferred = Some(b);
        }
        r
    }

    #[cfg_attr(not(feature = "embassy"), allow(dead_code))]
    pub(crate) fn has_deferred(&self) -> bool {
        self.deferred.is_some()
    }

    /// True while a frame built now could not go: one is deferred (the gap, a PAUSE), or
    /// the PHY has no room for one ([`PhyTx::ready`]: a driver whose transmit buffers are
    /// all in flight drops what it is handed). The stack then keeps its frame and tries
    /// again; a TCP segment handed over and dropped would wait for the retransmission
    /// timer (1 s and more) instead.
    #[cfg_attr(not(any(feature = "smoltcp", feature = "embassy")), allow(dead_code))]
    pub(crate) fn blocked(&mut self) -> bool {
        self.deferred.is_some() || !self.phy.ready()
    }

    #[cfg_attr(not(any(feature = "smoltcp", feature = "embassy")), allow(dead_code))]
    pub(crate) fn count_request(&mut self) {
        self.requests += 1;
    }

    #[cfg_attr(not(feature = "embassy"), allow(dead_code))]
    pub(crate) fn clock(&self) -> &C {
        &self.clock
    }

    /// Sends what time allows: PAUSE frames first (they ignore a received PAUSE), then a
    /// deferred data frame.
    fn service(&mut self, occupancy: usize) {
        let now = self.now_ns();
        if let Some(wm) = self.flow {
            if self.pause_pending.is_none() {
                if !self.pause_asserted && occupancy >= wm.high_bytes {
                    self.pause_pending = Some(wm.quanta);
                } else if self.pause_asserted && occupancy <= wm.low_bytes {
                    self.pause_pending = Some(0);
                } else if self.pause_asserted
                    && self.pause_refresh_ns != NEVER
                    && now >= self.pause_refresh_ns
                {
                    self.pause_pending = Some(wm.quanta);
                }
            }
        }
        if let Some(quanta) = self.pause_pending {
            if now >= self.gap_end_ns {
                self.send_pause(quanta, now);
            }
        }
        if let Some(b) = self.deferred {
            let now = self.now_ns();
            if now >= self.ready_at_ns() {
                self.deferred = None;
                self.emit(b, now);
            }
        }
    }

    fn send_pause(&mut self, quanta: u16, now: u64) {
        let mut out = [0u8; frame::PREAMBLE_SFD_LEN + PAUSE_FRAME_LEN + FCS_LEN];
        let src = self.address;
        let built = build(&mut out, self.format, PAUSE_FRAME_LEN, |f| {
            pause::build_pause(f, src, quanta)
        });
        if let Ok((n, _)) = built {
            debug!("tx: PAUSE for {} quanta", quanta);
            self.phy.transmit(out.get(..n).unwrap_or(&[]));
            self.gap_end_ns = self.gap_after(PAUSE_FRAME_LEN, now);
            self.pause_frames += 1;
        }
        self.pause_pending = None;
        self.pause_asserted = quanta != 0;
        // Refresh at half the pause time. Without line timing (rate 0) that time is unknown
        // (it would be 0, a PAUSE on every poll): no refresh, only the watermark crossings.
        let hold_ns = pause::quanta_ns(quanta, self.line_rate());
        self.pause_refresh_ns = if hold_ns == 0 {
            NEVER
        } else {
            now.saturating_add(hold_ns / 2)
        };
    }
}

/// A clock time that never comes (no PAUSE refresh scheduled).
const NEVER: u64 = u64::MAX;

#[cold]
fn unreachable_tx() -> ! {
    unreachable!("TX buffer holds every capped frame")
}
