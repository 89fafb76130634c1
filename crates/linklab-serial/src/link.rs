//! [`Link`]: one end of a reliable framed link, sans-IO. Bytes from the line and the time go
//! in ([`Link::handle_input`]), bytes for the line come out ([`Link::poll_output`]); the
//! application queues frames ([`Link::send`]) and takes them in order ([`Link::receive`]).
//!
//! Session: each end picks a random epoch when it starts. SYN says "I am epoch E", SYN-ACK
//! answers "I know you are E, I am F", and any frame carrying both epochs correctly confirms.
//! A SYN with a new epoch means the peer restarted: both stores are cleared (counted) and
//! sequence numbers start again at 0. Frames of an earlier session are discarded.
//!
//! Reliability: selective repeat over a window of up to `W` frames (8-bit sequence numbers),
//! cumulative plus selective ACKs on every frame, loss inferred from the FIFO order of the
//! line, an adaptive retransmission timeout for the tail, duplicates dropped, delivery in order.
//! Flow control: the receiver grants credits (its free slots); a sender without credits
//! probes at the retransmission timeout.

use crate::counters::Counters;
use crate::framing::{self, Deframer, FrameError};
use crate::rto::Rto;
use crate::rx::{Accept, RxStore};
use crate::tx::{Reason, TxStore};
use crate::wire::{
    self, Header, Kind, WireError, CRC_LEN, FLAG_ECHO_REPLY, FLAG_ECHO_REQUEST, FLAG_POLL,
    HEADER_LEN, MAX_PAYLOAD, MAX_WIRE,
};

/// Timers and limits of a link, in microseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Config {
    /// Retransmission timeout before the first round-trip sample.
    pub rto_initial_us: u64,
    /// Lowest retransmission timeout.
    pub rto_min_us: u64,
    /// Highest retransmission timeout (also the cap of its backoff).
    pub rto_max_us: u64,
    /// Interval between SYNs while connecting.
    pub syn_interval_us: u64,
    /// Largest payload the application may send (at most [`MAX_PAYLOAD`]).
    pub mtu: usize,
    /// The line's byte rate, if known (0: unknown). Bytes handed over wait in the driver's
    /// and the UART's buffers; with the rate the link knows when a frame's last byte really
    /// leaves, and starts its retransmission timer then, not when it was queued.
    pub line_bytes_per_s: u64,
}

impl Config {
    /// Timers scaled to a line of `bytes_per_second` (a UART at B baud, 8N1, moves B/10):
    /// the timeouts never go below a few largest-frame times, so a slow line is not flooded
    /// with retransmissions before the first round trip is measured.
    pub const fn for_line_rate(bytes_per_second: u64) -> Config {
        let rate = if bytes_per_second == 0 {
            1
        } else {
            bytes_per_second
        };
        let frame_us = MAX_WIRE as u64 * 1_000_000 / rate;
        Config {
            rto_initial_us: max(500_000, 8 * frame_us),
            rto_min_us: max(5_000, 2 * frame_us),
            rto_max_us: max(2_000_000, 32 * frame_us),
            syn_interval_us: max(50_000, 2 * frame_us),
            mtu: MAX_PAYLOAD,
            line_bytes_per_s: bytes_per_second,
        }
    }
}

const fn max(a: u64, b: u64) -> u64 {
    if a > b {
        a
    } else {
        b
    }
}

/// Where the handshake is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum State {
    /// Sending SYNs; DATA waits.
    Connecting,
    /// Both ends know each other's epoch; DATA flows.
    Established,
}

/// Why [`Link::send`] refused a frame (the caller still holds it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SendError {
    /// Every slot of the transmit store is taken: wait for acknowledgements.
    Full,
    /// Longer than the configured MTU.
    TooLong,
}

/// The frame being handed to the line.
struct Output {
    wire: [u8; MAX_WIRE],
    len: usize,
    pos: usize,
    /// The DATA transmission in `wire` (sequence, transmission number).
    data: Option<(u8, u32)>,
    /// Nothing was sent since the last frame ended: lead the next one with a delimiter.
    idle: bool,
    /// When the line will have sent every byte handed over so far (with a known rate).
    line_free_at: u64,
    /// The frame in `wire` was wholly handed over and accounted for.
    finished: bool,
}

/// Everything but the deframer, so the deframer's callback can borrow it.
struct Core<const W: usize> {
    config: Config,
    state: State,
    my_epoch: u16,
    peer_epoch: Option<u16>,
    tx: TxStore<W>,
    rx: RxStore<W>,
    rto: Rto,
    /// Credits the peer granted beyond our oldest unacknowledged frame.
    peer_credits: u8,
    /// Credits we last advertised.
    advertised: u8,
    ack_due: bool,
    synack_due: bool,
    next_syn_at: u64,
    probe_at: Option<u64>,
    /// Interval to the next zero-window probe: the timeout, doubled per probe.
    probe_interval: u64,
    echoed_bytes: u64,
    out: Output,
    counters: Counters,
}

/// One end of the link with a window of `W` frames (8..=16; 16 selective-ACK bits).
pub struct Link<const W: usize = 8> {
    deframer: Deframer,
    core: Core<W>,
}

/// A frame delivered in order; its slot is freed (and a credit granted) when dropped.
pub struct Received<'a, const W: usize> {
    rx: &'a mut RxStore<W>,
}

impl<const W: usize> Received<'_, W> {
    /// The payload.
    pub fn payload(&self) -> &[u8] {
        self.rx.head().map_or(&[], |(_, p)| p)
    }

    /// True for the echo of a self-test frame (see [`crate::selftest`]).
    pub fn is_echo_reply(&self) -> bool {
        self.rx
            .head()
            .is_some_and(|(f, _)| f & FLAG_ECHO_REPLY != 0)
    }
}

impl<const W: usize> Drop for Received<'_, W> {
    fn drop(&mut self) {
        self.rx.release_head();
    }
}

/// Derives a non-zero 16-bit epoch from a seed.
const fn epoch_from(seed: u32) -> u16 {
    let x = seed.wrapping_mul(0x9E37_79B9) ^ (seed >> 15);
    let e = (x ^ (x >> 16)) as u16;
    if e == 0 {
        1
    } else {
        e
    }
}

impl<const W: usize> Link<W> {
    /// A link that starts connecting at once. `seed` picks its epoch: give each start of a
    /// device a different one (a clock, a counter kept across resets, a unique ID mixed with
    /// uptime), or the peer cannot tell a restart from a late frame.
    pub const fn new(config: Config, seed: u32) -> Link<W> {
        const { assert!(W >= 1 && W <= 16, "the window is 1..=16 frames") };
        Link {
            deframer: Deframer::new(),
            core: Core {
                config,
                state: State::Connecting,
                my_epoch: epoch_from(seed),
                peer_epoch: None,
                tx: TxStore::new(),
                rx: RxStore::new(),
                rto: Rto::new(config.rto_initial_us, config.rto_min_us, config.rto_max_us),
                peer_credits: 0,
                advertised: 0,
                ack_due: false,
                synack_due: false,
                next_syn_at: 0,
                probe_at: None,
                probe_interval: 0,
                echoed_bytes: 0,
                out: Output {
                    wire: [0; MAX_WIRE],
                    len: 0,
                    pos: 0,
                    data: None,
                    idle: true,
                    line_free_at: 0,
                    finished: true,
                },
                counters: Counters {
                    rx_bytes: 0,
                    rx_chunks: 0,
                    rx_data: 0,
                    rx_control: 0,
                    rx_duplicates: 0,
                    rx_window_errors: 0,
                    rx_stale: 0,
                    rx_frame_errors: 0,
                    rx_length_errors: 0,
                    rx_crc_errors: 0,
                    rx_header_errors: 0,
                    rx_delivered: 0,
                    rx_delivered_bytes: 0,
                    rx_echoed: 0,
                    rx_reset_dropped: 0,
                    rx_held: 0,
                    tx_requests: 0,
                    tx_echoes: 0,
                    tx_acked: 0,
                    tx_acked_bytes: 0,
                    tx_aborted: 0,
                    tx_pending: 0,
                    tx_dropped: 0,
                    tx_packets: 0,
                    tx_retransmissions: 0,
                    tx_fast_retransmissions: 0,
                    tx_timeouts: 0,
                    tx_control: 0,
                    tx_bytes: 0,
                    tx_window_probes: 0,
                    resets: 0,
                },
            },
        }
    }

    /// Feeds bytes received from the line at `now` (µs, any monotonic origin).
    pub fn handle_input(&mut self, now: u64, bytes: &[u8]) {
        let core = &mut self.core;
        core.counters.rx_bytes += bytes.len() as u64;
        self.deframer.push(bytes, |chunk| core.on_chunk(chunk, now));
        self.core.service();
    }

    /// Writes bytes for the line into `out` (as many as fit, possibly 0) and returns how many.
    /// Call whenever the line can take bytes, and at [`Link::poll_at`].
    pub fn poll_output(&mut self, now: u64, out: &mut [u8]) -> usize {
        self.core.poll_output(now, out)
    }

    /// When [`Link::poll_output`] has something to send without new input (a timer), if ever;
    /// `Some(t <= now)` when it has something now.
    pub fn poll_at(&self, now: u64) -> Option<u64> {
        self.core.poll_at(now)
    }

    /// True when [`Link::send`] would accept a frame.
    pub fn can_send(&self) -> bool {
        !self.core.tx.is_full()
    }

    /// Queues a frame of `len` bytes, written in place by `fill`.
    pub fn send<R>(
        &mut self,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<R, SendError> {
        self.send_flagged(0, len, fill)
    }

    pub(crate) fn send_flagged<R>(
        &mut self,
        flags: u8,
        len: usize,
        fill: impl FnOnce(&mut [u8]) -> R,
    ) -> Result<R, SendError> {
        if len > self.core.config.mtu.min(MAX_PAYLOAD) {
            return Err(SendError::TooLong);
        }
        self.core.tx.push(flags, len, fill).ok_or(SendError::Full)
    }

    /// The next frame in sequence, if one is waiting. Self-test echoes show up here too
    /// ([`Received::is_echo_reply`]); self-test requests never do (the link answers them).
    pub fn receive(&mut self) -> Option<Received<'_, W>> {
        self.core.service();
        let head = self.core.rx.head()?;
        if head.0 & FLAG_ECHO_REQUEST != 0 {
            return None; // waiting for a transmit slot to echo it
        }
        Some(Received {
            rx: &mut self.core.rx,
        })
    }

    /// True when a frame waits for [`Link::receive`] (cheap: for a main loop that skips its
    /// stack when only part of a frame arrived).
    pub fn has_received(&self) -> bool {
        self.core.rx.head().is_some()
    }

    /// The counters, with the held and pending gauges filled in.
    pub fn counters(&self) -> Counters {
        let c = &self.core;
        Counters {
            rx_delivered: c.rx.released - c.counters.rx_echoed,
            rx_delivered_bytes: c.rx.released_bytes - c.echoed_bytes,
            rx_held: c.rx.held() as u64,
            tx_requests: c.tx.pushed,
            tx_echoes: c.tx.pushed_echoes,
            tx_pending: c.tx.len() as u64,
            tx_dropped: c.tx.dropped,
            ..c.counters
        }
    }

    /// The handshake state.
    pub fn state(&self) -> State {
        self.core.state
    }

    /// The smoothed round-trip time, once measured (µs).
    pub fn srtt(&self) -> Option<u64> {
        self.core.rto.srtt()
    }

    /// The current retransmission timeout (µs).
    pub fn rto(&self) -> u64 {
        self.core.rto.timeout()
    }

    /// The configured MTU.
    pub fn mtu(&self) -> usize {
        self.core.config.mtu.min(MAX_PAYLOAD)
    }

    /// Frames queued or in flight.
    pub fn tx_pending(&self) -> usize {
        self.core.tx.len()
    }

    /// Split borrows for the smoltcp device: the receive store and the transmit store.
    #[cfg(feature = "smoltcp")]
    pub(crate) fn stores(&mut self) -> (&mut RxStore<W>, &mut TxStore<W>, usize) {
        let mtu = self.mtu();
        self.core.service();
        (&mut self.core.rx, &mut self.core.tx, mtu)
    }
}

impl<const W: usize> Core<W> {
    fn header(&self, kind: Kind, flags: u8, seq: u8) -> Header {
        Header {
            kind,
            flags,
            seq,
            ack: self.rx.ack(),
            credits: self.rx.credits(),
            sack: self.rx.sack(),
            src_epoch: self.my_epoch,
            dst_epoch: self.peer_epoch.unwrap_or(0),
        }
    }

    /// One delimited chunk from the deframer.
    fn on_chunk(&mut self, chunk: Result<&[u8], FrameError>, now: u64) {
        let c = &mut self.counters;
        c.rx_chunks += 1;
        let frame = match chunk {
            Ok(frame) => frame,
            Err(FrameError::TooLong) => return c.rx_length_errors += 1,
            Err(FrameError::Cobs) => return c.rx_frame_errors += 1,
        };
        let (h, payload) = match wire::open(frame) {
            Ok(x) => x,
            Err(WireError::Length) => return c.rx_length_errors += 1,
            Err(WireError::Crc) => return c.rx_crc_errors += 1,
            Err(WireError::Header) => return c.rx_header_errors += 1,
        };
        match h.kind {
            Kind::Syn => {
                self.counters.rx_control += 1;
                self.meet(h.src_epoch, h.credits, now);
                self.synack_due = true;
                if h.dst_epoch == self.my_epoch {
                    self.state = State::Established;
                }
            }
            Kind::SynAck => {
                if h.dst_epoch != self.my_epoch {
                    return self.counters.rx_stale += 1;
                }
                self.counters.rx_control += 1;
                self.meet(h.src_epoch, h.credits, now);
                self.state = State::Established;
                self.ack_due = true; // confirms the session to the peer
            }
            Kind::Data | Kind::Ack => {
                if h.dst_epoch != self.my_epoch || self.peer_epoch != Some(h.src_epoch) {
                    return self.counters.rx_stale += 1;
                }
                self.state = State::Established;
                self.on_ack(&h, now);
                if h.flags & FLAG_POLL != 0 {
                    self.ack_due = true;
                }
                if h.kind == Kind::Ack {
                    return self.counters.rx_control += 1;
                }
                let echo = h.flags & (FLAG_ECHO_REQUEST | FLAG_ECHO_REPLY);
                match self.rx.accept(h.seq, echo, payload) {
                    Accept::InOrder | Accept::OutOfOrder => self.counters.rx_data += 1,
                    Accept::Duplicate => self.counters.rx_duplicates += 1,
                    Accept::OutOfWindow => self.counters.rx_window_errors += 1,
                }
                self.ack_due = true;
            }
        }
    }

    /// A SYN or SYN-ACK from epoch `epoch`: a new peer (or the known one again).
    fn meet(&mut self, epoch: u16, credits: u8, now: u64) {
        if self.peer_epoch == Some(epoch) {
            return;
        }
        if self.peer_epoch.is_some() {
            // The peer restarted: whatever we held for its old incarnation is void.
            self.counters.resets += 1;
            self.counters.tx_aborted += self.tx.clear() as u64;
            self.counters.rx_reset_dropped += self.rx.clear() as u64;
            self.probe_at = None;
        }
        self.peer_epoch = Some(epoch);
        self.peer_credits = credits;
        self.state = State::Connecting;
        self.next_syn_at = now;
    }

    fn on_ack(&mut self, h: &Header, now: u64) {
        if let Some(acked) = self.tx.on_ack(h.ack, h.sack, now) {
            self.counters.tx_acked += acked.frames;
            self.counters.tx_acked_bytes += acked.bytes;
            if let Some(rtt) = acked.rtt {
                self.rto.sample(rtt);
            }
            self.peer_credits = h.credits;
        }
    }

    /// Answers self-test requests at the head of the receive store while transmit slots last.
    fn service(&mut self) {
        while let Some((flags, payload)) = self.rx.head() {
            if flags & FLAG_ECHO_REQUEST == 0 {
                return;
            }
            let len = payload.len();
            if self
                .tx
                .push(FLAG_ECHO_REPLY, len, |dst| dst.copy_from_slice(payload))
                .is_none()
            {
                return;
            }
            self.rx.release_head();
            self.counters.rx_echoed += 1;
            self.echoed_bytes += len as u64;
        }
    }

    fn poll_output(&mut self, now: u64, out: &mut [u8]) -> usize {
        self.service();
        let mut n = 0;
        while n < out.len() {
            if self.out.pos == self.out.len {
                self.finish_frame(now);
                if self.paced_until(now).is_some() {
                    break;
                }
                if !self.next_frame(now) {
                    self.out.idle = true;
                    break;
                }
            }
            let k = (out.len() - n).min(self.out.len - self.out.pos);
            out[n..n + k].copy_from_slice(&self.out.wire[self.out.pos..self.out.pos + k]);
            self.out.pos += k;
            n += k;
        }
        if self.out.pos == self.out.len {
            self.finish_frame(now);
        }
        self.counters.tx_bytes += n as u64;
        n
    }

    /// With a known line rate, frames are handed over no more than one largest frame's line
    /// time ahead of the line: the rest wait here, where ACKs can still overtake them and
    /// every frame leaves with the newest ACK state (instead of a second of frames queued in
    /// driver buffers). Returns when the next frame may start, if not now.
    fn paced_until(&self, now: u64) -> Option<u64> {
        let rate = self.config.line_bytes_per_s;
        if rate == 0 {
            return None;
        }
        let ahead = MAX_WIRE as u64 * 1_000_000 / rate;
        let resume = self.out.line_free_at.saturating_sub(ahead);
        (resume > now).then_some(resume)
    }

    /// The frame in the output buffer is wholly handed over: a DATA frame's timer starts when
    /// its last byte leaves the line (at the line's rate behind what was handed over before).
    fn finish_frame(&mut self, now: u64) {
        if self.out.finished {
            return;
        }
        self.out.finished = true;
        let mut left = now;
        if let Some(line_us) =
            (self.out.len as u64 * 1_000_000).checked_div(self.config.line_bytes_per_s)
        {
            // Its bytes were handed over during the last `line_us` at the latest.
            let start = self.out.line_free_at.max(now.saturating_sub(line_us));
            self.out.line_free_at = start + line_us;
            left = self.out.line_free_at.max(now);
        }
        if let Some((seq, tx_no)) = self.out.data.take() {
            self.tx.mark_sent(seq, tx_no, left);
        }
    }

    /// Puts the next frame to send, if any, into the output buffer.
    fn next_frame(&mut self, now: u64) -> bool {
        if self.synack_due {
            self.synack_due = false;
            return self.control(Kind::SynAck, 0);
        }
        if self.state == State::Connecting {
            if now >= self.next_syn_at {
                self.next_syn_at = now + self.config.syn_interval_us;
                return self.control(Kind::Syn, 0);
            }
            return false;
        }
        let window = self.peer_credits as usize;
        if let Some((seq, reason)) = self.tx.next(window, now, self.rto.timeout()) {
            match reason {
                Reason::New => {}
                Reason::Lost => self.counters.tx_fast_retransmissions += 1,
                Reason::Timeout => {
                    self.counters.tx_timeouts += 1;
                    if seq == self.tx.una() {
                        self.rto.back_off();
                    }
                }
            }
            return self.data(seq, now);
        }
        // Zero window: probe for credits at the retransmission timeout.
        if self.tx.unsent() > 0 && self.tx.unacked() == 0 && window == 0 {
            if self.probe_at.is_none() {
                self.probe_interval = self.rto.timeout();
                self.probe_at = Some(now + self.probe_interval);
            }
            if self.probe_at.is_some_and(|at| now >= at) {
                self.probe_interval = (2 * self.probe_interval).min(self.config.rto_max_us);
                self.probe_at = Some(now + self.probe_interval);
                self.counters.tx_window_probes += 1;
                return self.control(Kind::Ack, FLAG_POLL);
            }
        } else {
            self.probe_at = None;
        }
        // A window update when our credits reopen after running low.
        let credits = self.rx.credits();
        if (self.advertised as usize) < W.div_ceil(2) && credits > self.advertised {
            self.ack_due = true;
        }
        if self.ack_due {
            return self.control(Kind::Ack, 0);
        }
        false
    }

    fn control(&mut self, kind: Kind, flags: u8) -> bool {
        let header = self.header(kind, flags, 0);
        let mut frame = [0u8; HEADER_LEN + CRC_LEN];
        let len = wire::seal(&mut frame, &header, 0);
        self.counters.tx_control += 1;
        self.load(&frame[..len], None, header.credits);
        true
    }

    fn data(&mut self, seq: u8, _now: u64) -> bool {
        let mut header = self.header(Kind::Data, 0, seq);
        let out = self.tx.transmit(seq);
        header.flags = out.flags;
        let len = wire::seal(out.frame, &header, out.payload_len);
        let (repeat, tx_no) = (out.repeat, out.tx_no);
        self.out.len = framing::encode(&out.frame[..len], self.out.idle, &mut self.out.wire);
        self.loaded(Some((seq, tx_no)), header.credits);
        self.counters.tx_packets += 1;
        if repeat {
            self.counters.tx_retransmissions += 1;
        }
        true
    }

    fn load(&mut self, frame: &[u8], data: Option<(u8, u32)>, credits: u8) {
        self.out.len = framing::encode(frame, self.out.idle, &mut self.out.wire);
        self.loaded(data, credits);
    }

    /// A frame was encoded into the output buffer: it carries the current ACK state.
    fn loaded(&mut self, data: Option<(u8, u32)>, credits: u8) {
        self.out.pos = 0;
        self.out.idle = false;
        self.out.finished = false;
        self.out.data = data;
        self.advertised = credits;
        self.ack_due = false;
    }

    fn poll_at(&self, now: u64) -> Option<u64> {
        if self.out.pos < self.out.len {
            return Some(now);
        }
        let due = self.due_at(now)?;
        Some(self.paced_until(now).map_or(due, |p| p.max(due)))
    }

    /// When the next frame is due, ignoring pacing.
    fn due_at(&self, now: u64) -> Option<u64> {
        if self.synack_due {
            return Some(now);
        }
        if self.state == State::Connecting {
            return Some(self.next_syn_at);
        }
        if self.ack_due
            || self
                .tx
                .next(self.peer_credits as usize, 0, u64::MAX)
                .is_some()
            || ((self.advertised as usize) < W.div_ceil(2) && self.rx.credits() > self.advertised)
        {
            return Some(now);
        }
        [self.tx.deadline(self.rto.timeout()), self.probe_at]
            .into_iter()
            .flatten()
            .min()
            .or_else(|| {
                (self.tx.unsent() > 0 && self.peer_credits == 0).then(|| now + self.rto.timeout())
            })
    }
}
