//! Every buffer the firmware owns, as statics sized by one [`Sizing`]: the RX queue and the
//! apps' socket buffers. One place to read the RAM budget from, and the knobs to change it.
//!
//! Two presets: [`FULL`], the image with every app and iperf3 mode, and [`MINIMAL`], the
//! iperf3 TCP server alone (feature `minimal`). [`SIZING`] is the one the build uses; the
//! statics below take every size from it, so a board (or a user) with other needs edits a
//! preset or adds one. The linklab-perf README's knob table gives what each knob costs.

use linklab_mac::window::{capacity_for_frames, smoltcp_tcp_rx_buffer, ETHERNET_MSS};
use linklab_mac::RxFormat;
use linklab_perf::data_memory::MIN_RX;

/// The sizes of a firmware image's buffers and the socket counts of its apps.
#[derive(Clone, Copy, Debug)]
pub struct Sizing {
    /// Full-size frames the RX queue always holds. The TCP receive window is derived from
    /// it: (frames − 2) × MSS, so a window's worth of segments never overruns the queue
    /// while the main loop catches up.
    pub queue_frames: usize,
    /// The iperf servers' data memory (iperf3's and iperf 2's, one test at a time across
    /// both: linklab-perf's `data_memory`), in chunks: streams carried at once with the full
    /// window and send buffer each. The streams that receive at once share the queue's
    /// window (`data_memory::stream_share`: `-P 3` gets three two-segment windows, six
    /// segments in all, as one stream has), and a test with more streams than chunks shares
    /// the memory out.
    pub iperf_streams: usize,
    /// iperf3's data sockets: the most streams a test may have (`-P 3`; `-P 2 --bidir`
    /// needs 4), each taking a share of the data memory only while it carries a stream.
    pub iperf_data_sockets: usize,
    /// Send buffer of an iperf3 data socket, in segments: what `-R` keeps in flight.
    pub iperf_tx_segments: usize,
    /// Receive buffer of each of the two iperf3 control sockets: at least two segments
    /// (`data_memory::MIN_RX`), so the client's Linux keeps its MSS whole (it cuts it to half
    /// the largest window offered), which stock iperf3 sizes its UDP datagrams by.
    pub iperf_control_rx: usize,
    /// Send buffer of each iperf3 control socket (control messages are short: one stream's
    /// results ~350 bytes).
    pub iperf_control_tx: usize,
    /// iperf 2's TCP sockets (feature `iperf2`): streams and connect-backs at once, and one
    /// listening for the next stream.
    pub iperf2_sockets: usize,
    /// iperf3 control JSON each way: a stock client's parameters are ~300 bytes, our
    /// results ~350 bytes per stream.
    pub iperf_json: usize,
    /// Datagram records of the iperf3 UDP socket, received and sent (its bytes are a data
    /// chunk's: the window part receives, the send part sends).
    pub iperf_udp_packets: [usize; 2],
    /// HTTP connections served at once.
    pub http_sockets: usize,
    /// HTTP request buffer (a head; what does not fit is refused by the server).
    pub http_rx: usize,
    /// Send buffer of each HTTP socket.
    pub http_tx: usize,
    /// TCP echo buffers, each way.
    pub echo_tcp: usize,
    /// UDP echo: datagrams each way.
    pub echo_udp_packets: usize,
    /// UDP echo: payload bytes each way.
    pub echo_udp: usize,
}

/// Every app and mode (the default images). Nine frames, as in Niccle's MAC write-up and
/// the FreeRTOS+TCP peer, and a window of six segments (Niccle's seven, less what smoltcp's
/// cap cuts off: [`TCP_WINDOW`]); two streams (`-P 2`, `--bidir`) in two chunks of 16 060
/// bytes that the UDP socket borrows during UDP tests, and that more streams share (four
/// data sockets: `-P 3`, `-P 2 --bidir`; iperf 2's tests borrow the same memory); control
/// sockets that receive two segments (the client's MSS); five segments in flight for `-R`
/// (lwIP's perf configuration sends from eight: each main-loop pass sends what the ACKs it
/// took in freed, and the fewer passes per segment the less each segment costs — on
/// mps2-an385, `linklab emu --cost` sent 4.31 instructions per byte from two, 3.49–3.56 from
/// four, 3.38 from five, 3.24–3.25 from six, and the lwip_side_by_side bench, whose 10 MiB
/// move with the host's ACKs, 3.62–3.88 from four, 3.40–3.49 from five, 3.18–3.21 from six;
/// five is what the full image's 96 KiB of RAM holds, with its stack; a soft PHY's 10BASE-T
/// line needs four); two
/// HTTP sockets with three segments to send each (with two, a curl download waited for the
/// host's ACK: at 125 MIPS the embassy image sent 11.6 MB/s, busy 80 % of its clock; three
/// give 13.3 MB/s for 2 920 bytes: `linklab emu predict riscv32-virt --image embassy
/// --icount 3`); echo's small buffers.
pub const FULL: Sizing = Sizing {
    queue_frames: 9,
    iperf_streams: 2,
    iperf_data_sockets: 4,
    iperf_tx_segments: 5,
    iperf_control_rx: MIN_RX,
    iperf_control_tx: 512,
    iperf2_sockets: 3,
    iperf_json: 2048,
    iperf_udp_packets: [6, 2],
    http_sockets: 2,
    http_rx: 1024,
    http_tx: 3 * ETHERNET_MSS,
    echo_tcp: 1024,
    echo_udp_packets: 2,
    echo_udp: 1500,
};

/// The iperf3 TCP server alone (`-R`, one stream, the results exchange) and ICMP: the
/// FreeRTOS+TCP peer's feature set. Eight frames and a window of five segments (7 300
/// bytes, [`TCP_WINDOW`]): with six frames the device sent an ACK per three segments and
/// received at 4.5–4.8 instructions per byte; eight frames halve the ACKs, 3.9–4.0
/// (`linklab emu cost mps2-an385 --image minimal`), for 6 KB more RAM. One stream,
/// 1 KiB of control JSON each way (one stream's results are ~350 bytes).
pub const MINIMAL: Sizing = Sizing {
    queue_frames: 8,
    iperf_streams: 1,
    iperf_data_sockets: 1,
    iperf_tx_segments: 2,
    // No UDP test, so the client's MSS on the control connection sizes nothing: 512 bytes,
    // not MIN_RX (4 816 bytes of RAM less across the two).
    iperf_control_rx: 512,
    iperf_control_tx: 512,
    iperf2_sockets: 0,
    iperf_json: 1024,
    iperf_udp_packets: [0, 0],
    http_sockets: 0,
    http_rx: 0,
    http_tx: 0,
    echo_tcp: 0,
    echo_udp_packets: 0,
    echo_udp: 0,
};

/// lwIP's feature set (feature `compact`): iperf 2's TCP server on one socket (one stream,
/// received or sent back with `-R`: lwiperf's set), the HTTP bench-file server on one
/// socket, ICMP, sized as the lwIP peer's perf configuration: nine frames and a window of six
/// segments (lwIP's `TCP_WND`, 8 760 bytes), six segments in flight (`-R`; lwIP sends from
/// eight; the lwip_side_by_side bench sent at 3.10–3.12 instructions per byte from four,
/// 2.90–3.00 from six, with iperf3), one HTTP socket sending from three segments. iperf 2's
/// socket takes its window and send buffer from the data memory (one chunk); no iperf3.
pub const COMPACT: Sizing = Sizing {
    queue_frames: 9,
    iperf_streams: 1,
    iperf_data_sockets: 0,
    iperf_tx_segments: 6,
    iperf_control_rx: 0,
    iperf_control_tx: 0,
    iperf2_sockets: 1,
    iperf_json: 0,
    iperf_udp_packets: [0, 0],
    http_sockets: 1,
    http_rx: 1024,
    http_tx: 3 * ETHERNET_MSS,
    echo_tcp: 0,
    echo_udp_packets: 0,
    echo_udp: 0,
};

/// The sizes this build uses.
pub const SIZING: Sizing = if cfg!(feature = "minimal") {
    MINIMAL
} else if cfg!(feature = "compact") {
    COMPACT
} else {
    FULL
};

/// Full-size frames the RX queue always holds.
pub const QUEUE_FRAMES: usize = SIZING.queue_frames;
/// RX queue ring bytes: the smallest ring that always holds [`QUEUE_FRAMES`] full-size
/// frames in the format that stores the most of each (`RxFormat::Tagged`: a frame from
/// linklab-virtio-net's receive runs fills a 1534-byte buffer), so in every format the
/// boards give the MAC (15 364 for nine; checked by a test).
pub const QUEUE_BYTES: usize = capacity_for_frames(QUEUE_FRAMES, RxFormat::Tagged);
/// The TCP receive window derived from the queue: (frames − 2) × 1460 segments, as many
/// of them as fit under the cap smoltcp puts on the advertised window (linklab-mac's
/// `smoltcp_tcp_rx_buffer`: 8 760 bytes, six segments, for nine frames), so a peer that
/// fills the window sends whole segments. Using the format that stores the most per frame
/// makes it safe for every format.
pub const TCP_WINDOW: usize = smoltcp_tcp_rx_buffer(QUEUE_BYTES, RxFormat::Tagged, ETHERNET_MSS);

/// Streams the data memory carries at once with the full window and send buffer (chunks).
pub const IPERF_STREAMS: usize = SIZING.iperf_streams;
/// iperf3's data sockets: the most streams a test may have.
pub const IPERF_DATA_SOCKETS: usize = SIZING.iperf_data_sockets;
/// iperf3 TCP sockets: the data sockets, a control one, a spare to deny a second client
/// (none in the compact image, which has no iperf3).
pub const IPERF_TCP_SOCKETS: usize = if cfg!(feature = "iperf3") {
    IPERF_DATA_SOCKETS + 2
} else {
    0
};
/// iperf 2's TCP sockets (1 in a build without it: a count its type needs).
pub const IPERF2_TCP_SOCKETS: usize = if cfg!(feature = "iperf2") {
    SIZING.iperf2_sockets
} else {
    1
};
/// Send buffer of an iperf3 data socket.
pub const IPERF_TCP_TX: usize = SIZING.iperf_tx_segments * ETHERNET_MSS;
/// One chunk of the data memory: a window and a send buffer.
pub const IPERF_CHUNK: usize = TCP_WINDOW + IPERF_TCP_TX;
/// The iperf servers' data memory.
pub const IPERF_DATA: usize = IPERF_STREAMS * IPERF_CHUNK;
/// Receive buffer of an iperf3 control socket.
pub const IPERF_CONTROL_RX: usize = SIZING.iperf_control_rx;
/// Send buffer of an iperf3 control socket.
pub const IPERF_CONTROL_TX: usize = SIZING.iperf_control_tx;
/// iperf3 control JSON each way.
pub const IPERF_JSON: usize = SIZING.iperf_json;
/// Datagrams the iperf3 UDP socket receives.
pub const IPERF_UDP_RX_PACKETS: usize = SIZING.iperf_udp_packets[0];
/// Datagrams the iperf3 UDP socket sends.
pub const IPERF_UDP_TX_PACKETS: usize = SIZING.iperf_udp_packets[1];
/// The embassy image's data memory: [`IPERF_DATA`] and the 4 bytes each full chunk's share
/// takes beyond its buffers there (its iperf3 receive rings start 3 mod 4).
pub const EMBASSY_IPERF_DATA: usize = IPERF_DATA + 4 * IPERF_STREAMS;
/// Payload bytes of the embassy image's iperf3 UDP socket, received (its apps take one
/// buffer pair per socket; the main loop's UDP socket borrows a data chunk instead).
pub const EMBASSY_IPERF_UDP_RX: usize = 4 * 1500;
/// Payload bytes of the embassy image's iperf3 UDP socket, sent.
pub const EMBASSY_IPERF_UDP_TX: usize = 2 * 1500;
/// HTTP sockets.
pub const HTTP_SOCKETS: usize = SIZING.http_sockets;
/// HTTP request buffer.
pub const HTTP_RX: usize = SIZING.http_rx;
/// Send buffer of each HTTP socket.
pub const HTTP_TX: usize = SIZING.http_tx;
/// TCP echo buffers.
pub const ECHO_TCP: usize = SIZING.echo_tcp;
/// UDP echo: datagrams each way.
pub const ECHO_UDP_PACKETS: usize = SIZING.echo_udp_packets;
/// Payload bytes of UDP echo, each way.
pub const ECHO_UDP: usize = SIZING.echo_udp;
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
/// Sockets in the set: the iperf3 server's TCP sockets (and its UDP socket), iperf 2's TCP
/// and UDP sockets (the compact image's one TCP socket), echo's two, the HTTP sockets, the
/// packet blaster's.
pub const SOCKETS: usize = IPERF_TCP_SOCKETS
    + cfg!(feature = "iperf-udp") as usize
    + if cfg!(feature = "iperf2") {
        IPERF2_TCP_SOCKETS + 1
    } else if cfg!(feature = "compact") {
        1
    } else {
        0
    }
    + 2 * cfg!(feature = "echo") as usize
    + if cfg!(feature = "http") {
        HTTP_SOCKETS
    } else {
        0
    }
    + cfg!(feature = "blast") as usize;

#[cfg(test)]
mod tests {
    use super::*;
    use linklab_mac::window::{queue_frames, smoltcp_window_cap};

    #[test]
    fn the_queue_holds_its_frames_and_is_the_smallest_that_does() {
        for f in [
            RxFormat::Aligned { fcs: true },
            RxFormat::Aligned { fcs: false },
            RxFormat::Tagged,
        ] {
            assert!(
                queue_frames(QUEUE_BYTES, f, ETHERNET_MSS) >= QUEUE_FRAMES,
                "{f:?}"
            );
        }
        let t = RxFormat::Tagged;
        assert_eq!(queue_frames(QUEUE_BYTES, t, ETHERNET_MSS), QUEUE_FRAMES);
        assert!(queue_frames(QUEUE_BYTES - 4, t, ETHERNET_MSS) < QUEUE_FRAMES);
        let f = RxFormat::Aligned { fcs: true };
        // Whole segments under the cap of every RX format the boards give the MAC.
        assert_eq!(TCP_WINDOW % ETHERNET_MSS, 0);
        for format in [f, RxFormat::Aligned { fcs: false }, RxFormat::Tagged] {
            let cap = smoltcp_window_cap(QUEUE_BYTES, format);
            assert!(
                TCP_WINDOW <= cap && TCP_WINDOW + ETHERNET_MSS > cap,
                "{format:?}"
            );
        }
        if !cfg!(feature = "minimal") {
            assert_eq!(QUEUE_BYTES, 15_364);
        }
    }

    /// The full image serves iperf3's `-P 3` (each way) and every socket that receives a
    /// client's segments offers two of them: the client keeps its MSS whole.
    #[test]
    fn the_full_image_serves_three_streams_and_keeps_the_mss() {
        use linklab_perf::data_memory::stream_share;
        if cfg!(feature = "minimal") {
            return;
        }
        assert!(IPERF_DATA_SOCKETS >= 3);
        for (rx, tx) in [(true, false), (false, true)] {
            let share = stream_share(IPERF_DATA, 3, rx, tx, TCP_WINDOW, IPERF_TCP_TX).unwrap();
            assert!(share.rx >= MIN_RX, "{share:?}");
        }
        assert!(IPERF_CONTROL_RX >= MIN_RX);
    }
}
