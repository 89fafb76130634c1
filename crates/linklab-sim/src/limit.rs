//! The theoretical TCP goodput limit of the link, the yardstick the bench reports against.
//!
//! A bulk TCP transfer with `mss`-byte segments puts per segment on the wire:
//!
//! ```text
//! data frame = preamble+SFD 8 + Ethernet header 14 + IPv4 20 + TCP 20 + mss + FCS 4
//!            + inter-packet gap 12 (96 bit times)            = mss + 78 byte times
//! ACK frame  = 8 + max(14 + 20 + 20, 60) + 4 + 12             = 84 byte times
//! ```
//!
//! In half duplex the receiver's ACKs share the one medium with the data: with one ACK
//! every `k` segments (delayed ACK, RFC 1122/5681 and smoltcp: every second full-size
//! segment, `k = 2`) each segment also costs `84 / k` byte times. In full duplex the ACKs
//! travel on the other pair and cost nothing. Hence
//!
//! ```text
//! limit = mss / ((mss + 78 + h * 84 / k) * 8 / rate)        h = 1 half duplex, 0 full
//! ```
//!
//! At 10 Mbit/s with `mss = 1460`: 1 155 063 B/s in half duplex, 1 186 606 B/s in full
//! duplex (Niccle: "the maximum throughput you can theoretically achieve with a 10BASE-T
//! connection, which is about 1,250 kB/s" is the raw line rate, before framing). Per
//! connection costs (handshake, HTTP head, FIN) are not in the limit: they are part of what
//! the bench measures against it.

use crate::wire::{Duplex, Rate};

/// Framing bytes around a TCP segment's payload on the wire, gap included.
pub const DATA_OVERHEAD: u64 = 8 + 14 + 20 + 20 + 4 + 12;
/// Wire byte times of a pure ACK, gap included.
pub const ACK_WIRE: u64 = 8 + 60 + 4 + 12;
/// Segments per ACK assumed in half duplex.
pub const SEGMENTS_PER_ACK: u64 = 2;

/// The theoretical TCP goodput limit in payload bytes per second.
pub fn tcp_goodput_limit(rate: Rate, duplex: Duplex, mss: u64) -> f64 {
    let ack_share = match duplex {
        Duplex::Half => ACK_WIRE as f64 / SEGMENTS_PER_ACK as f64,
        Duplex::Full => 0.0,
    };
    let byte_times = mss as f64 + DATA_OVERHEAD as f64 + ack_share;
    mss as f64 * rate.bits_per_s() as f64 / 8.0 / byte_times
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ten_megabit_figures() {
        let h = tcp_goodput_limit(Rate::M10, Duplex::Half, 1460);
        let f = tcp_goodput_limit(Rate::M10, Duplex::Full, 1460);
        assert_eq!(h.round() as u64, 1_155_063);
        assert_eq!(f.round() as u64, 1_186_606);
    }
}
