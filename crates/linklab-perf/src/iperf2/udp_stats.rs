//! What the receiver of an iperf 2 UDP flow counts, exactly as iperf 2.1.8 counts it
//! (`Server::ReadPacketID`, `reporter_handle_packet_server_udp`,
//! `reporter_handle_packet_oneway_transit`, `reporter_transfer_protocol_server_udp`):
//!
//! - only datagrams with an id above 0 count; the FIN counts as `|id|`;
//! - an id above the next expected adds the gap to `lost`; an id below it (a late or
//!   repeated datagram) adds one to `out_of_order`; the highest id seen is never lowered
//!   and is the "datagrams" figure (what the client sent, not what arrived);
//! - the reported loss is `lost - out_of_order`, never below 0;
//! - jitter is RFC 1889's J += (|D| - J) / 16 over transit times (arrival − send stamp) in
//!   seconds — and 2.1.8 does **not** skip the first datagram: the previous transit starts
//!   at 0, so the first D is the first transit itself (harmless between hosts with
//!   synchronised clocks, where transits are small; a device whose clock is not the
//!   sender's wall clock should set [`FirstTransit::Skip`], as iperf3 and zperf do).

use super::wire::report::{ReportInfo, TransitStats};
use super::wire::{flags, UdpDatagram};

/// How the first datagram enters the jitter estimate.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FirstTransit {
    /// As iperf 2.1.8: the previous transit starts at 0, so D of the first datagram is its
    /// whole transit time.
    #[default]
    AsIperf218,
    /// As iperf3 and zperf: the first datagram only sets the previous transit.
    Skip,
}

/// The receive-side counters of one UDP flow.
#[derive(Clone, Copy, Debug, Default)]
pub struct UdpReceiveStats {
    /// Bytes of counted datagrams (the FIN's included).
    pub bytes: u64,
    /// Datagrams counted (ids above 0), as they arrived.
    pub received: u64,
    /// Highest id seen (`PacketID`).
    pub max_id: u64,
    /// Gaps summed (`Lost.current`), before out-of-order datagrams are taken off.
    pub gaps: u64,
    /// Datagrams that came with an id below the next expected.
    pub out_of_order: u64,
    /// RFC 1889 jitter, seconds.
    pub jitter_s: f64,
    /// Transit of the previous datagram, seconds.
    last_transit_s: f64,
    /// Smallest, largest and summed transit (seconds) and how many.
    transit_min_s: f64,
    transit_max_s: f64,
    transit_sum_s: f64,
    transit_count: u64,
    /// The first-datagram rule.
    first: FirstTransit,
}

impl UdpReceiveStats {
    /// Empty counters with the given first-datagram rule.
    pub fn new(first: FirstTransit) -> Self {
        Self {
            first,
            ..Self::default()
        }
    }

    /// Counts one datagram whose id (made positive: a FIN's `|id|`) is `id`, `len` bytes
    /// long, stamped `sent_us` by the sender and received at `arrival_us` (microseconds
    /// on the sender's wall clock, as near as the receiver knows it). Ids of 0 are not
    /// counted, as in 2.1.8.
    pub fn on_datagram(&mut self, id: u64, len: usize, sent_us: u64, arrival_us: u64) {
        if id == 0 {
            return;
        }
        self.bytes = self.bytes.saturating_add(len as u64);
        self.received = self.received.saturating_add(1);
        let expected = self.max_id.saturating_add(1);
        if id != expected {
            if id < expected {
                self.out_of_order = self.out_of_order.saturating_add(1);
            } else {
                self.gaps = self.gaps.saturating_add(id - expected);
            }
        }
        if id > self.max_id {
            self.max_id = id;
        }
        let transit = (arrival_us as i64).wrapping_sub(sent_us as i64) as f64 / 1e6;
        if self.transit_count == 0 && self.first == FirstTransit::Skip {
            self.last_transit_s = transit;
        }
        let d = (transit - self.last_transit_s).abs();
        self.jitter_s += (d - self.jitter_s) / 16.0;
        self.last_transit_s = transit;
        if self.transit_count == 0 || transit < self.transit_min_s {
            self.transit_min_s = transit;
        }
        if self.transit_count == 0 || transit > self.transit_max_s {
            self.transit_max_s = transit;
        }
        self.transit_sum_s += transit;
        self.transit_count = self.transit_count.saturating_add(1);
    }

    /// Counts a datagram from its bytes (the datagram header read with 64- or 32-bit ids);
    /// returns the signed id it carried (negative: a FIN), `None` if it is shorter than a
    /// datagram header (not counted).
    pub fn on_datagram_bytes(
        &mut self,
        datagram: &[u8],
        seqno_64: bool,
        arrival_us: u64,
    ) -> Option<i64> {
        let d = UdpDatagram::new_checked(datagram).ok()?;
        let seq = d.seq(seqno_64);
        self.on_datagram(seq.unsigned_abs(), datagram.len(), d.sent_us(), arrival_us);
        Some(seq)
    }

    /// The loss iperf 2 reports: gaps minus out-of-order datagrams, never below 0.
    pub fn lost(&self) -> u64 {
        self.gaps.saturating_sub(self.out_of_order)
    }

    /// The "datagrams" iperf 2 reports: the highest id seen.
    pub fn datagrams(&self) -> u64 {
        self.max_id
    }

    /// Transit statistics (seconds), once a datagram was counted.
    pub fn transit(&self) -> Option<TransitStats> {
        (self.transit_count > 0).then(|| TransitStats {
            min_s: self.transit_min_s,
            max_s: self.transit_max_s,
            mean_s: self.transit_sum_s / self.transit_count as f64,
            count: self.transit_count.min(u64::from(u32::MAX)) as u32,
        })
    }

    /// The server report of these counters over `duration_s`, flags as 2.1.8 sets them
    /// (`VERSION1 | SEQNO64B`, and `EXTEND` with transit statistics when `extended`).
    pub fn report(&self, duration_s: f64, extended: bool) -> ReportInfo {
        let mut f = flags::VERSION1 | flags::SEQNO64B;
        if extended {
            f |= flags::EXTEND;
        }
        ReportInfo {
            flags: f,
            bytes: self.bytes,
            duration_s,
            lost: self.lost(),
            out_of_order: self.out_of_order,
            datagrams: self.datagrams(),
            jitter_s: self.jitter_s,
            transit: if extended { self.transit() } else { None },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loss_and_order_by_hand() {
        let mut s = UdpReceiveStats::new(FirstTransit::AsIperf218);
        // ids 1 2 5 4 6, then the FIN as 7: gap of 2 at 5; 4 is late.
        for id in [1, 2, 5, 4, 6, 7] {
            s.on_datagram(id, 100, 0, 0);
        }
        assert_eq!(
            (s.gaps, s.out_of_order, s.lost(), s.datagrams()),
            (2, 1, 1, 7)
        );
        assert_eq!((s.bytes, s.received), (600, 6));
        // A repeat of an old id is out of order too; loss floors at 0.
        s.on_datagram(3, 100, 0, 0);
        s.on_datagram(3, 100, 0, 0);
        assert_eq!((s.out_of_order, s.lost()), (3, 0));
        // Id 0 is not counted.
        s.on_datagram(0, 100, 0, 0);
        assert_eq!(s.received, 8);
    }

    #[test]
    fn jitter_by_hand_first_packet_counts() {
        // Transits 1 ms, 3 ms, 3 ms. As 2.1.8: D1 = 1 ms (from 0), J1 = 1/16 ms;
        // D2 = 2 ms, J2 = J1 + (2 - J1)/16; D3 = 0, J3 = J2 - J2/16.
        let mut s = UdpReceiveStats::new(FirstTransit::AsIperf218);
        s.on_datagram(1, 10, 0, 1_000);
        assert!((s.jitter_s - 0.001 / 16.0).abs() < 1e-12);
        s.on_datagram(2, 10, 10_000, 13_000);
        let j2 = 0.001 / 16.0 + (0.002 - 0.001 / 16.0) / 16.0;
        assert!((s.jitter_s - j2).abs() < 1e-12);
        s.on_datagram(3, 10, 20_000, 23_000);
        assert!((s.jitter_s - (j2 - j2 / 16.0)).abs() < 1e-12);
        // Skipping the first: J = 2/16 ms after the second.
        let mut k = UdpReceiveStats::new(FirstTransit::Skip);
        k.on_datagram(1, 10, 0, 1_000);
        assert_eq!(k.jitter_s, 0.0);
        k.on_datagram(2, 10, 10_000, 13_000);
        assert!((k.jitter_s - 0.002 / 16.0).abs() < 1e-12);
        let t = k.transit().unwrap();
        assert_eq!(t.count, 2);
        assert!((t.min_s - 0.001).abs() < 1e-12 && (t.max_s - 0.003).abs() < 1e-12);
    }

    #[test]
    fn hostile_ids_never_overflow() {
        let mut s = UdpReceiveStats::new(FirstTransit::Skip);
        s.on_datagram(u64::MAX, 1, u64::MAX, 0);
        s.on_datagram(1, 1, 0, u64::MAX);
        s.on_datagram(i64::MIN.unsigned_abs(), 1, 0, 0);
        assert_eq!(s.max_id, u64::MAX);
        assert_eq!(s.gaps, u64::MAX - 1);
        assert_eq!(s.out_of_order, 2);
        assert!(s.jitter_s.is_finite());
    }
}
