//! The TCP receive window that keeps a peer from overrunning the RX queue.
//!
//! Niccle found by trial that a TCP receive window of `(9 - 2) * 1460` bytes was the
//! sweet spot for a MAC queue of 9 full frames: large enough to keep the line busy, small
//! enough that a burst never overflows the queue. The formula behind it:
//!
//! ```text
//! window = (F - RESERVED_FRAMES) * MSS
//! F      = guaranteed_frames(capacity, stored length of one full-size TCP segment)
//! ```
//!
//! * `F` is the number of full-size frames the queue accepts in a row from *any* drained
//!   position ([`crate::queue::guaranteed_frames`], exact for bbqueue's wrap rule): a
//!   peer sending a whole window back to back while the main loop is busy lands `window /
//!   MSS` frames in the queue.
//! * The stored length of a segment is `14 + 20 + 20 + MSS` (Ethernet, IPv4, TCP headers)
//!   plus what the PHY hands over around it ([`stored_len`]): preamble, FCS and a shift
//!   byte in raw mode, the FCS in aligned mode.
//! * `RESERVED_FRAMES = 2` full slots stay free for frames that arrive in the same burst
//!   but carry no new window data: one for traffic outside the connection (ARP, a
//!   broadcast, the peer's pure ACK for data we send) and one for a retransmission that
//!   duplicates a segment still queued (Niccle's capture shows exactly such a redundant
//!   retransmission).
//!
//! A queue of 1 or 2 frames gets a window of one segment all the same (zero would stall
//! TCP), and with it less than the full reserve.
//!
//! Assumption: the peer fills the window with full-size segments (bulk transfer, Nagle).
//! Smaller segments carry fewer data bytes per queue slot; a peer sending tiny segments
//! can still overrun the queue, which the counters then show as `rx_missed_errors`.

use crate::deframe::RxFormat;
use crate::frame::{FCS_LEN, HEADER_LEN};
use crate::queue::{guaranteed_frames, FRAME_HEADER_LEN, MIN_QUEUE_CAPACITY};

/// Full-size queue slots kept free for frames that are not new window data.
pub const RESERVED_FRAMES: usize = 2;
/// smoltcp's notion of a maximum segment for `max_burst_size`: MTU 1514 minus IPv4 and
/// TCP headers (it does not subtract the Ethernet header).
pub const SMOLTCP_BURST_SEGMENT: usize = crate::frame::MAX_FRAME_LEN - IP_TCP_HEADERS;

/// IPv4 plus TCP header bytes without options.
pub const IP_TCP_HEADERS: usize = 40;
/// The usual Ethernet MSS (1500 − 40).
pub const ETHERNET_MSS: usize = 1460;

/// Bytes the PHY commits to the queue for a frame of `frame_len` bytes (without FCS), at
/// most.
pub const fn stored_len(format: RxFormat, frame_len: usize) -> usize {
    match format {
        // Preamble+SFD, FCS, one byte of bit shift.
        #[cfg(feature = "soft-framing")]
        RxFormat::Raw => crate::frame::PREAMBLE_SFD_LEN + frame_len + FCS_LEN + 1,
        RxFormat::Aligned { fcs: true } => frame_len + FCS_LEN,
        RxFormat::Aligned { fcs: false } => frame_len,
        // A frame committed from an `RxRun` with buffers behind it fills its buffer; a
        // single grant's takes the tag and 0-3 bytes of padding: the larger.
        RxFormat::Tagged => {
            let single = frame_len + crate::deframe::RX_TAG_LEN + 3;
            if single > crate::run::RUN_SLOT_LEN {
                single
            } else {
                crate::run::RUN_SLOT_LEN
            }
        }
    }
}

/// Full-size TCP segments of `mss` payload bytes a queue of `capacity` bytes always holds.
pub const fn queue_frames(capacity: usize, format: RxFormat, mss: usize) -> usize {
    guaranteed_frames(
        capacity,
        stored_len(format, HEADER_LEN + IP_TCP_HEADERS + mss),
    )
}

/// The TCP receive window (bytes) for a queue of `capacity` bytes: `(F − 2) × MSS`
/// (module documentation), but at least one segment when the queue holds any: a window
/// below one segment stalls TCP, so a queue of 1 or 2 frames keeps less than the full
/// reserve. Use it as the smoltcp TCP socket's RX buffer size.
pub const fn tcp_rx_window(capacity: usize, format: RxFormat, mss: usize) -> usize {
    max_burst_frames(capacity, format, mss) * mss
}

/// Full-size segments a peer may send in one burst: the frames the queue always holds,
/// less the reserve, but at least 1 when it holds any (see [`tcp_rx_window`]).
pub const fn max_burst_frames(capacity: usize, format: RxFormat, mss: usize) -> usize {
    let f = queue_frames(capacity, format, mss);
    if f > RESERVED_FRAMES {
        f - RESERVED_FRAMES
    } else if f > 0 {
        1
    } else {
        0
    }
}

/// The `max_burst_size` to give smoltcp: smoltcp caps the advertised window at
/// `max_burst_size × 1474` ([`SMOLTCP_BURST_SEGMENT`]), so this is the largest burst
/// whose cap stays within [`tcp_rx_window`] (at least 1).
pub const fn smoltcp_max_burst_size(capacity: usize, format: RxFormat) -> usize {
    let b = tcp_rx_window(capacity, format, ETHERNET_MSS) / SMOLTCP_BURST_SEGMENT;
    if b == 0 {
        1
    } else {
        b
    }
}

/// The cap smoltcp puts on the window it advertises behind this MAC (bytes):
/// [`smoltcp_max_burst_size`] × 1474 ([`SMOLTCP_BURST_SEGMENT`]).
pub const fn smoltcp_window_cap(capacity: usize, format: RxFormat) -> usize {
    smoltcp_max_burst_size(capacity, format) * SMOLTCP_BURST_SEGMENT
}

/// The TCP receive buffer (bytes) for a smoltcp socket behind this MAC's burst cap: the
/// largest whole number of `mss` segments within both [`tcp_rx_window`] and the cap smoltcp
/// puts on the window it advertises ([`smoltcp_window_cap`]). Every window the
/// socket advertises then ends on a segment boundary, so a peer that fills it sends whole
/// segments. A buffer past the cap is never advertised, and a cap that is not a whole number
/// of segments leaves a short segment in every window the peer fills: a 10 220-byte buffer
/// under an 8 844-byte cap (six segments and 84 bytes) got 1 252 payload bytes per frame on
/// `linklab emu cost mps2-an385`, about 8 844 / 7, against 1 444 with this buffer.
pub const fn smoltcp_tcp_rx_buffer(capacity: usize, format: RxFormat, mss: usize) -> usize {
    let cap = smoltcp_window_cap(capacity, format);
    let window = tcp_rx_window(capacity, format, mss);
    let whole = match cap.checked_div(mss) {
        Some(segments) => segments * mss,
        None => 0,
    };
    if window < whole {
        window
    } else {
        whole
    }
}

/// The smallest queue capacity (bytes) that always holds `frames` full-size TCP segments
/// (MSS 1460) in `format`: [`queue_frames`] of the result is `frames` (for `frames >= 1`),
/// and one byte less holds fewer. The first frame takes a whole grant's worth of the
/// capacity rule, every further one its stored length plus the 2-byte header.
pub const fn capacity_for_frames(frames: usize, format: RxFormat) -> usize {
    let segment = stored_len(format, HEADER_LEN + IP_TCP_HEADERS + ETHERNET_MSS);
    MIN_QUEUE_CAPACITY + frames.saturating_sub(1) * (segment + FRAME_HEADER_LEN)
}

#[cfg(test)]
mod tests {
    use super::*;

    const FORMATS: &[RxFormat] = &[
        #[cfg(feature = "soft-framing")]
        RxFormat::Raw,
        RxFormat::Aligned { fcs: true },
        RxFormat::Aligned { fcs: false },
    ];

    #[test]
    fn capacity_for_frames_is_the_smallest_that_holds_them() {
        for &format in FORMATS {
            for frames in 1..=1024 {
                let c = capacity_for_frames(frames, format);
                assert_eq!(queue_frames(c, format, ETHERNET_MSS), frames, "{format:?}");
                assert!(
                    queue_frames(c - 1, format, ETHERNET_MSS) < frames,
                    "{format:?}"
                );
            }
        }
    }

    #[test]
    fn niccle_queue_gives_niccle_window() {
        for &format in FORMATS {
            let c = capacity_for_frames(9, format);
            assert_eq!(tcp_rx_window(c, format, ETHERNET_MSS), (9 - 2) * 1460);
        }
        assert_eq!(
            capacity_for_frames(9, RxFormat::Aligned { fcs: true }),
            15_236
        );
    }

    #[test]
    fn the_rx_buffer_is_whole_segments_under_the_cap() {
        for &format in FORMATS {
            for frames in 1..=64 {
                let c = capacity_for_frames(frames, format);
                let buffer = smoltcp_tcp_rx_buffer(c, format, ETHERNET_MSS);
                let cap = smoltcp_window_cap(c, format);
                assert_eq!(buffer % ETHERNET_MSS, 0, "{frames} frames, {format:?}");
                assert!(
                    (ETHERNET_MSS..=cap).contains(&buffer),
                    "{frames}, {format:?}"
                );
                assert!(buffer <= tcp_rx_window(c, format, ETHERNET_MSS));
                // The largest such: one more segment would pass the cap or the window.
                let more = buffer + ETHERNET_MSS;
                assert!(more > cap || more > tcp_rx_window(c, format, ETHERNET_MSS));
            }
        }
        // Nine frames: a 7-segment window under a 6 × 1474 cap gives six segments.
        let c = capacity_for_frames(9, RxFormat::Aligned { fcs: true });
        assert_eq!(
            smoltcp_tcp_rx_buffer(c, RxFormat::Aligned { fcs: true }, 1460),
            8_760
        );
    }
}
