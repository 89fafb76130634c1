//! Per-stream counters: bytes and blocks sent, bytes received, and the UDP receive
//! accounting (loss, out-of-order, RFC 1889 jitter) computed exactly as iperf3's
//! `iperf_udp_recv` does, including its `-O` (omit) bookkeeping.

use super::json::StreamResult;
use super::wire::UdpHeader;

use crate::time::Micros;

/// One data stream of a test and everything counted on it.
#[derive(Clone, Copy, Debug, Default)]
pub struct Stream {
    /// iperf3 stream id: 1, 3, 4, 5, ... (iperf3 skips 2).
    pub id: u32,
    /// True if this side sends on the stream.
    pub sender: bool,
    /// Bytes sent, omitted period included.
    pub bytes_sent: u64,
    /// Bytes sent during the omitted period.
    pub bytes_sent_omit: u64,
    /// Bytes received after the omitted period.
    pub bytes_received: u64,
    /// Whole blocks (`-l`) sent.
    pub blocks_sent: u64,
    /// Bytes of the block being sent that are already out.
    pub block_offset: u32,
    /// `-b RATE/BURST`: blocks of the current burst still to send before the rate is
    /// checked again.
    pub burst_left: u32,
    /// UDP: highest sequence number seen (receiver) or last sent (sender).
    pub packet_count: u64,
    /// UDP: packets lost (iperf3 `cnt_error`).
    pub cnt_error: u64,
    /// UDP: packets that arrived with a lower sequence number than one already seen.
    pub outoforder: u64,
    /// UDP: RFC 1889 interarrival jitter, seconds.
    pub jitter: f64,
    /// UDP: transit time of the previous packet, seconds.
    pub prev_transit: f64,
    /// `packet_count` when the omitted period ended.
    pub omitted_packet_count: u64,
    /// `cnt_error` when the omitted period ended.
    pub omitted_cnt_error: u64,
    /// `outoforder` when the omitted period ended.
    pub omitted_outoforder: u64,
    /// TCP retransmits if the adapter can read them.
    pub retransmits: Option<u64>,
    /// What the peer reported for this stream in the results exchange.
    pub peer: Option<StreamResult>,
    /// Counters at the start of the current reporting interval.
    pub interval_base: IntervalBase,
}

/// Counter values at the start of a reporting interval.
#[derive(Clone, Copy, Debug, Default)]
pub struct IntervalBase {
    /// Bytes (sent or received) at the interval start.
    pub bytes: u64,
    /// `packet_count` at the interval start.
    pub packets: u64,
    /// `cnt_error` at the interval start.
    pub lost: u64,
    /// `outoforder` at the interval start.
    pub outoforder: u64,
}

impl Stream {
    /// A fresh stream.
    pub fn new(id: u32, sender: bool) -> Self {
        Self {
            id,
            sender,
            ..Self::default()
        }
    }

    /// Bytes this side transferred on the stream (sent minus omitted, or received).
    pub fn bytes(&self) -> u64 {
        if self.sender {
            self.bytes_sent.saturating_sub(self.bytes_sent_omit)
        } else {
            self.bytes_received
        }
    }

    /// Bytes counted so far including the omitted period (for interval deltas).
    pub fn bytes_for_interval(&self) -> u64 {
        if self.sender {
            self.bytes_sent
        } else {
            self.bytes_received
        }
    }

    /// Accounts `len` bytes sent; `block_len` is the configured block length.
    pub fn on_sent(&mut self, len: usize, block_len: u32) {
        self.bytes_sent = self.bytes_sent.saturating_add(len as u64);
        let off = u64::from(self.block_offset) + len as u64;
        let block = block_len.max(1);
        // In 32 bits where it fits (always, for a send of a socket buffer): a 64-bit
        // division is a library call on a 32-bit MCU (~100 instructions on the Cortex-M3,
        // once per send).
        let (blocks, rest) = match u32::try_from(off) {
            Ok(off) => (u64::from(off / block), off % block),
            Err(_) => (off / u64::from(block), (off % u64::from(block)) as u32),
        };
        self.blocks_sent = self.blocks_sent.saturating_add(blocks);
        self.block_offset = rest;
    }

    /// Accounts one received UDP datagram exactly as iperf3's `iperf_udp_recv`: sequence
    /// gaps count as loss, a late packet counts as out-of-order and cancels one loss, and
    /// jitter follows RFC 1889 (J += (|D| - J) / 16) on transit times.
    pub fn on_udp_datagram(&mut self, datagram: &[u8], now: Micros, counters_64bit: bool) {
        let first_packet = self.bytes_received == 0;
        self.bytes_received = self.bytes_received.saturating_add(datagram.len() as u64);
        // A datagram too short for a header still counts as bytes, like iperf3 (which
        // reads whatever its buffer holds); it cannot advance the sequence accounting.
        let Some(h) = UdpHeader::parse(datagram, counters_64bit) else {
            return;
        };
        let pcount = h.count;
        if pcount > self.packet_count {
            if pcount > self.packet_count + 1 {
                self.cnt_error = self
                    .cnt_error
                    .saturating_add(pcount - 1 - self.packet_count);
            }
            self.packet_count = pcount;
        } else {
            self.outoforder = self.outoforder.saturating_add(1);
            self.cnt_error = self.cnt_error.saturating_sub(1);
        }
        // iperf_time_diff gives the magnitude of the difference.
        let transit = now.abs_diff(h.micros()) as f64 / 1e6;
        if first_packet {
            self.prev_transit = transit;
        }
        let d = (transit - self.prev_transit).abs();
        self.prev_transit = transit;
        self.jitter += (d - self.jitter) / 16.0;
    }

    /// Ends the omitted period (iperf3 `iperf_reset_stats`).
    pub fn reset_after_omit(&mut self) {
        self.omitted_packet_count = self.packet_count;
        self.omitted_cnt_error = self.cnt_error;
        self.omitted_outoforder = self.outoforder;
        self.jitter = 0.0;
        self.bytes_sent_omit = self.bytes_sent;
        self.bytes_received = 0;
        self.interval_base = IntervalBase {
            bytes: self.bytes_for_interval(),
            packets: self.packet_count,
            lost: self.cnt_error,
            outoforder: self.outoforder,
        };
    }

    /// This stream's entry in our results document.
    pub fn result(&self, elapsed_us: u64) -> StreamResult {
        StreamResult {
            id: self.id,
            bytes: self.bytes(),
            retransmits: match (self.sender, self.retransmits) {
                (true, Some(r)) => r as i64,
                _ => -1,
            },
            jitter: self.jitter,
            errors: self.cnt_error,
            omitted_errors: self.omitted_cnt_error,
            packets: self.packet_count,
            omitted_packets: self.omitted_packet_count,
            start_us: 0,
            end_us: elapsed_us,
        }
    }
}

/// The stream id iperf3 gives the stream at `index` (0-based): 1, then 3, 4, 5, ...
pub fn stream_id(index: usize) -> u32 {
    if index == 0 {
        1
    } else {
        index as u32 + 2
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dgram(count: u64, sent_us: u64) -> [u8; 64] {
        let mut b = [0u8; 64];
        let h = UdpHeader {
            sec: (sent_us / 1_000_000) as u32,
            usec: (sent_us % 1_000_000) as u32,
            count,
        };
        h.write(&mut b, false);
        b
    }

    #[test]
    fn loss_and_out_of_order_like_iperf3() {
        let mut s = Stream::new(1, false);
        for (c, t) in [(1, 0), (2, 10), (5, 20), (4, 30), (6, 40)] {
            s.on_udp_datagram(&dgram(c, t * 1000), t * 1000 + 500, false);
        }
        // 3 and 4 missing at seq 5 (+2), 4 arrives late (-1, ooo +1).
        assert_eq!((s.packet_count, s.cnt_error, s.outoforder), (6, 1, 1));
        assert_eq!(s.bytes_received, 5 * 64);
    }

    #[test]
    fn jitter_rfc1889() {
        let mut s = Stream::new(1, false);
        // Transit 1 ms, then 3 ms: D = 2 ms, J = 2/16 ms.
        s.on_udp_datagram(&dgram(1, 0), 1000, false);
        s.on_udp_datagram(&dgram(2, 10_000), 13_000, false);
        assert!((s.jitter - 0.002 / 16.0).abs() < 1e-12);
        // Same transit again: J -= J/16.
        s.on_udp_datagram(&dgram(3, 20_000), 23_000, false);
        let j = 0.002 / 16.0;
        assert!((s.jitter - (j - j / 16.0)).abs() < 1e-12);
    }

    #[test]
    fn blocks_count_across_partial_writes() {
        let mut s = Stream::new(1, true);
        s.on_sent(100, 128);
        s.on_sent(100, 128);
        s.on_sent(56, 128);
        assert_eq!((s.blocks_sent, s.block_offset, s.bytes_sent), (2, 0, 256));
        assert_eq!((stream_id(0), stream_id(1), stream_id(2)), (1, 3, 4));
    }
}
