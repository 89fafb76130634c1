//! Every buffer the firmware owns, as statics sized for a small MCU: the 9-frame RX queue
//! and the apps' socket buffers. One place to read the RAM budget from.

use linklab_mac::window::{capacity_for_frames, tcp_rx_window, ETHERNET_MSS};
use linklab_mac::RxFormat;

/// Full-size frames the RX queue always holds, as in Niccle's MAC write-up.
pub const QUEUE_FRAMES: usize = 9;
/// RX queue ring bytes (15 236): the smallest ring that always holds 9 full-size frames with
/// their FCS, so also without (checked by a test).
pub const QUEUE_BYTES: usize = capacity_for_frames(QUEUE_FRAMES, RxFormat::Aligned { fcs: true });
/// The TCP receive window derived from the queue: (9 − 2) × 1460 = 10 220 bytes. Using the
/// FCS format (4 bytes more per frame) makes it safe for either format.
pub const TCP_WINDOW: usize =
    tcp_rx_window(QUEUE_BYTES, RxFormat::Aligned { fcs: true }, ETHERNET_MSS);

/// iperf3 TCP sockets: control, one left listening (to deny a second client), and two data
/// streams: enough for `-P 2` or `--bidir`.
pub const IPERF_TCP_SOCKETS: usize = 4;
/// Send buffer of each iperf3 TCP socket: two full segments in flight for `-R` on a NIC,
/// four on a soft PHY (feature `soft-phy`). Its 10BASE-T line is slow enough that two
/// segments then a wait for their ACK (its trip over the line, its decoding, the next
/// segment's encoding) leave the line idle: `linklab emu --board riscv32-virt
/// --phy10-line --throughput --icount 3` sent at 86.9 % of the 10BASE-T limit with two
/// and 99.4 % with four (firmware README). On the NIC images' links (QEMU's TAP, tens of
/// microseconds per round trip) two cost nothing measurable, and four would cost every
/// image 4 × 2 920 bytes of RAM.
pub const IPERF_TCP_TX: usize = if cfg!(feature = "soft-phy") {
    4 * ETHERNET_MSS
} else {
    2 * ETHERNET_MSS
};
/// iperf3 UDP socket: datagrams and payload bytes received; sent.
pub const IPERF_UDP_RX_PACKETS: usize = 4;
/// Payload bytes of the iperf3 UDP receive side.
pub const IPERF_UDP_RX: usize = 4 * 1500;
/// Datagrams of the iperf3 UDP send side (`-u -R`).
pub const IPERF_UDP_TX_PACKETS: usize = 2;
/// Payload bytes of the iperf3 UDP send side.
pub const IPERF_UDP_TX: usize = 2 * 1500;
/// iperf3 control JSON each way: a stock client's parameters are ~300 bytes, the results
/// for two streams ~700.
pub const IPERF_JSON: usize = 2048;
/// HTTP: request buffer (a head; what does not fit is refused by the server) and send buffer.
pub const HTTP_RX: usize = 1024;
/// Send buffer of each HTTP socket.
pub const HTTP_TX: usize = 2 * ETHERNET_MSS;
/// TCP echo buffers.
pub const ECHO_TCP: usize = 1024;
/// UDP echo: datagrams and payload bytes each way.
pub const ECHO_UDP_PACKETS: usize = 2;
/// Payload bytes of UDP echo, each way.
pub const ECHO_UDP: usize = 1500;
/// Packet blaster (`crate::blast`): request bytes received. Requests are 16 bytes; the
/// buffer holds the largest datagram the link carries so that an oversized one reaches the
/// blaster, which refuses and counts it (smoltcp drops what does not fit, uncounted).
pub const BLAST_RX: usize = 1472;
/// Requests held at once.
pub const BLAST_RX_PACKETS: usize = 4;
/// Packet blaster: one datagram of the stack way (the largest payload) or the report.
pub const BLAST_TX: usize = linklab_perf::blast::MAX_PAYLOAD as usize;
/// Datagrams of the blaster's send side.
pub const BLAST_TX_PACKETS: usize = 1;
/// Sockets in the set: echo UDP + TCP, 2 HTTP, the iperf3 TCP sockets and its UDP socket,
/// the packet blaster's UDP socket.
pub const SOCKETS: usize = 4 + 1 + IPERF_TCP_SOCKETS + 1;

#[cfg(test)]
mod tests {
    use super::*;
    use linklab_mac::window::queue_frames;

    #[test]
    fn the_queue_holds_nine_frames_and_is_the_smallest_that_does() {
        for fcs in [true, false] {
            let f = RxFormat::Aligned { fcs };
            assert_eq!(queue_frames(QUEUE_BYTES, f, ETHERNET_MSS), QUEUE_FRAMES);
        }
        let f = RxFormat::Aligned { fcs: true };
        assert!(queue_frames(QUEUE_BYTES - 4, f, ETHERNET_MSS) < QUEUE_FRAMES);
        assert_eq!(TCP_WINDOW, 7 * 1460);
        assert_eq!(QUEUE_BYTES, 15_236);
    }
}
