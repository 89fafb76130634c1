//! Data streams: setting them up in iperf3's order, counting what they carry, and deciding
//! when each may send (`-n`/`-k`, `-b` pacing).

use super::{Failure, Phase, Session};
use crate::iperf::json::Protocol;
use crate::iperf::stream::{stream_id, Stream};
use crate::iperf::wire::{self, state, UdpHeader};
use crate::time::Micros;

impl<const S: usize> Session<'_, S> {
    /// A data stream failed during the test.
    pub fn stream_failed(&mut self, now: Micros) {
        self.now = now;
        if matches!(
            self.test.phase,
            Phase::CreateStreams | Phase::Starting | Phase::Running
        ) {
            self.fail(Failure::StreamFailed);
        }
    }

    /// True if the next stream to be set up is one this side sends on.
    fn stream_role_for_next(&self) -> bool {
        let p = usize::from(self.test.params.parallel.max(1));
        let i = self.test.nstreams;
        match self.is_client() {
            // iperf_create_streams: --bidir opens P sending streams, then P receiving.
            true if self.test.params.bidirectional => i < p,
            true => !self.test.params.reverse,
            // iperf_run_server: receivers are accepted first, then senders.
            false if self.test.params.bidirectional => i >= p,
            false => self.test.params.reverse,
        }
    }

    /// Adds the next stream while streams are being created; the server starts the test
    /// once all are there.
    fn add_stream(&mut self, now: Micros) -> Option<usize> {
        if self.test.phase != Phase::CreateStreams
            || self.test.nstreams >= self.streams_wanted()
            || self.test.nstreams >= S
        {
            return None;
        }
        let idx = self.test.nstreams;
        let sender = self.stream_role_for_next();
        self.test.streams[idx] = Stream::new(stream_id(idx), sender);
        self.test.nstreams += 1;
        self.test.last_activity = now;
        if !self.is_client() && self.test.nstreams == self.streams_wanted() {
            self.push_state(state::TEST_START);
            self.start_clock(now);
            self.push_state(state::TEST_RUNNING);
            self.test.phase = Phase::Running;
        }
        Some(idx)
    }

    /// Server: a TCP data connection presented `cookie`. Returns the new stream's index if
    /// it belongs to the test being set up; otherwise the connection should get
    /// ACCESS_DENIED and be closed.
    pub fn accept_tcp_stream(&mut self, cookie: &[u8], now: Micros) -> Option<usize> {
        self.now = now;
        if self.test.params.protocol != Protocol::Tcp || cookie != self.test.cookie.as_slice() {
            return None;
        }
        self.add_stream(now)
    }

    /// Server: a UDP datagram arrived from an unknown peer while streams are being set
    /// up. Returns the new stream's index if it is a hello; the adapter then answers
    /// [`wire::udp_hello_reply`] and binds the peer address to the stream.
    pub fn accept_udp_stream(&mut self, datagram: &[u8], now: Micros) -> Option<usize> {
        self.now = now;
        if self.test.params.protocol != Protocol::Udp || !wire::is_udp_hello(datagram) {
            return None;
        }
        self.add_stream(now)
    }

    /// Client: the data stream at the next index is connected (TCP: cookie sent; UDP:
    /// hello answered). Returns its index.
    pub fn client_stream_opened(&mut self, now: Micros) -> Option<usize> {
        self.now = now;
        if !self.is_client() {
            return None;
        }
        self.add_stream(now)
    }

    /// True if data streams should be read now (iperf3 reads only while running; the
    /// client keeps draining until the end so a sending server never blocks).
    pub fn should_read(&self) -> bool {
        if self.is_client() {
            matches!(
                self.test.phase,
                Phase::Running | Phase::Ending | Phase::ExchangeResults | Phase::Display
            )
        } else {
            self.test.phase == Phase::Running
        }
    }

    /// True while received data is counted.
    fn counting(&self) -> bool {
        self.test.phase == Phase::Running && self.test.clock.end.is_none()
    }

    /// Bytes read from TCP stream `idx`.
    pub fn on_tcp_received(&mut self, idx: usize, n: usize, now: Micros) {
        self.now = now;
        self.test.last_activity = now;
        if !self.counting() {
            return;
        }
        let t = &mut self.test;
        if let Some(s) = t.streams[..t.nstreams].get_mut(idx) {
            if !s.sender {
                s.bytes_received = s.bytes_received.saturating_add(n as u64);
                t.totals.bytes_received = t.totals.bytes_received.saturating_add(n as u64);
                t.totals.last_rx = Some(now);
            }
        }
    }

    /// A datagram read from UDP stream `idx`.
    pub fn on_udp_received(&mut self, idx: usize, datagram: &[u8], now: Micros) {
        self.now = now;
        self.test.last_activity = now;
        if !self.counting() {
            return;
        }
        let c64 = self.test.params.udp_counters_64bit;
        let t = &mut self.test;
        if let Some(s) = t.streams[..t.nstreams].get_mut(idx) {
            if !s.sender {
                s.on_udp_datagram(datagram, now, c64);
                t.totals.bytes_received = t
                    .totals
                    .bytes_received
                    .saturating_add(datagram.len() as u64);
                t.totals.datagrams_received += 1;
                t.totals.last_rx = Some(now);
            }
        }
    }

    /// True once `-n` bytes or `-k` blocks are sent (counted after the omitted period).
    /// A server sending at a paced rate (`-b` without a burst) goes on until the client
    /// ends the test, as iperf3's does (it checks `-n`/`-k` only when it sends several
    /// blocks per turn): a `-R -u -n` client that lost datagrams still gets its bytes.
    pub(super) fn sender_done(&self) -> bool {
        let p = &self.test.params;
        let paced = self.pacing_rate() != 0 && p.burst == 0;
        if self.test.clock.omitting {
            return false;
        }
        if self.test.data_exhausted {
            return true;
        }
        if !self.is_client() && paced {
            return false;
        }
        (p.bytes != 0 && self.test.totals.bytes_sent >= p.bytes)
            || (p.blocks != 0 && self.test.totals.blocks_sent >= p.blocks)
    }

    /// The rate sending streams are paced to: `-b`, and the lower of `-b` and `--fq-rate`
    /// when the adapter paces `--fq-rate` in software; 0 = unlimited.
    fn pacing_rate(&self) -> u64 {
        // Without `iperf-rate` no paced test is accepted (the pool refuses it).
        if !cfg!(feature = "iperf-rate") {
            return 0;
        }
        let p = &self.test.params;
        let fq = if self.app_fq_pacing { p.fq_rate_bps } else { 0 };
        match (p.rate_bps, fq) {
            (0, f) => f,
            (r, 0) => r,
            (r, f) => r.min(f),
        }
    }

    /// The earliest time stream `s` may send again under `-b` pacing: iperf3 compares the
    /// stream's average rate since the start with the target, on a timer of
    /// `--pacing-timer` µs, so a stream held back resumes at the next tick. Inside a burst
    /// (`-b RATE/BURST`) the rate is not checked.
    pub(super) fn paced_until(&self, s: &Stream) -> Option<Micros> {
        let rate = self.pacing_rate();
        let start = self.test.clock.start?;
        if rate == 0 || s.bytes_sent == 0 || s.burst_left > 0 {
            return None;
        }
        // In u64 (no 128-bit division on an MCU): bits × 10⁶ fits until 2.3 TB sent, and
        // saturates beyond (the stream then waits for the end of the test).
        let us = s
            .bytes_sent
            .saturating_mul(8_000_000)
            .checked_div(rate)
            .unwrap_or(u64::MAX);
        let tick = u64::from(self.test.params.pacing_timer_us.max(1));
        let us = us.div_ceil(tick).saturating_mul(tick).min(u64::MAX / 2);
        Some(start.saturating_add(us))
    }

    /// After `blocks` whole blocks went out on stream `idx`: a burst (`-b RATE/BURST`)
    /// starts when the rate allowed the first block and ends `BURST` blocks later.
    fn count_burst(&mut self, idx: usize, blocks: u64) {
        let burst = self.test.params.burst;
        if !cfg!(feature = "iperf-rate") || burst == 0 || blocks == 0 {
            return;
        }
        if let Some(s) = self.streams_mut().get_mut(idx) {
            let left = if s.burst_left == 0 {
                burst
            } else {
                s.burst_left
            };
            s.burst_left = left.saturating_sub(blocks.min(u64::from(u32::MAX)) as u32);
        }
    }

    /// How many bytes TCP stream `idx` may send now: the rest of the current block, or 0
    /// if it must wait (not running, not a sender, paced, or the test is complete).
    pub fn tcp_send_budget(&self, idx: usize, now: Micros) -> usize {
        if self.test.params.protocol != Protocol::Tcp || !self.may_send(idx, now) {
            return 0;
        }
        let Some(s) = self.streams().get(idx) else {
            return 0;
        };
        let len = self.test.params.len.max(1);
        (len - s.block_offset.min(len - 1)) as usize
    }

    /// True if stream `idx` may send now: we send on it, the test is running, the end
    /// condition is not met and `-b` pacing allows it.
    pub fn may_send(&self, idx: usize, now: Micros) -> bool {
        let Some(s) = self.streams().get(idx) else {
            return false;
        };
        s.sender
            && self.counting()
            && !self.sender_done()
            && self.paced_until(s).is_none_or(|t| t <= now)
    }

    /// Bytes written to TCP stream `idx`.
    pub fn on_tcp_sent(&mut self, idx: usize, n: usize, now: Micros) {
        self.now = now;
        self.test.last_activity = now;
        let len = self.test.params.len;
        let t = &mut self.test;
        let mut blocks = 0;
        if let Some(s) = t.streams[..t.nstreams].get_mut(idx) {
            let before = s.blocks_sent;
            s.on_sent(n, len);
            blocks = s.blocks_sent - before;
            t.totals.blocks_sent += blocks;
            t.totals.bytes_sent = t.totals.bytes_sent.saturating_add(n as u64);
        }
        self.count_burst(idx, blocks);
    }

    /// Writes the next datagram of UDP stream `idx` into `buf` (header + filler already in
    /// `buf`) if it may send now; returns its length. Call [`on_udp_sent`](Self::on_udp_sent)
    /// once it is out, or just call this again after a failed send.
    pub fn udp_next(&self, idx: usize, now: Micros, buf: &mut [u8]) -> Option<usize> {
        if self.test.params.protocol != Protocol::Udp || !self.may_send(idx, now) {
            return None;
        }
        let s = self.streams().get(idx)?;
        let len = self.test.params.len as usize;
        let h = UdpHeader {
            sec: (now / 1_000_000) as u32,
            usec: (now % 1_000_000) as u32,
            count: s.packet_count + 1,
        };
        let dgram = buf.get_mut(..len)?;
        h.write(dgram, self.test.params.udp_counters_64bit)?;
        Some(len)
    }

    /// The datagram from [`udp_next`](Self::udp_next) went out (`n` bytes).
    pub fn on_udp_sent(&mut self, idx: usize, n: usize, now: Micros) {
        self.now = now;
        self.test.last_activity = now;
        let t = &mut self.test;
        if let Some(s) = t.streams[..t.nstreams].get_mut(idx) {
            s.packet_count += 1;
            s.bytes_sent = s.bytes_sent.saturating_add(n as u64);
            s.blocks_sent += 1;
            t.totals.blocks_sent += 1;
            t.totals.bytes_sent = t.totals.bytes_sent.saturating_add(n as u64);
            self.count_burst(idx, 1);
        }
    }

    /// This side's data source is exhausted (`-F` at the end of its file): stop sending;
    /// a sending client then ends the test, as iperf3's does.
    pub fn data_exhausted(&mut self) {
        if self.counting() {
            self.test.data_exhausted = true;
        }
    }

    /// Records TCP retransmits the adapter read for stream `idx` (e.g. Linux TCP_INFO).
    pub fn set_retransmits(&mut self, idx: usize, retransmits: u64) {
        if let Some(s) = self.streams_mut().get_mut(idx) {
            s.retransmits = Some(retransmits);
        }
    }
}
