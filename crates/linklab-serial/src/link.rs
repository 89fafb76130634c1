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

mod input;
mod output;

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

    /// Split borrows for the stack adapters: the receive store and the transmit store.
    #[cfg(any(feature = "smoltcp", feature = "embassy"))]
    pub(crate) fn stores(&mut self) -> (&mut RxStore<W>, &mut TxStore<W>, usize) {
        let mtu = self.mtu();
        self.core.service();
        (&mut self.core.rx, &mut self.core.tx, mtu)
    }
}
