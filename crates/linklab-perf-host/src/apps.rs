//! Buffers sized for a host, for linklab-perf's device apps (`apps::DeviceApps`) on a TAP
//! (`linklab serve`'s soft NIC and its baseline bench), leaked once: the sockets borrow them
//! for the whole run, as firmware keeps its buffers in statics.

use smoltcp::socket::udp;

use linklab_perf::apps::{AppBuffers, DataBuffers, TcpBuffers, UdpBuffers};
use linklab_perf::data_memory::DataPlan;
use linklab_perf::iperf::device::{IperfBuffers, MAX_TCP_SOCKETS};
use linklab_perf::iperf::wire::MAX_JSON_LEN;

/// Send buffer of each HTTP socket: a few segments are enough for a bench download.
pub const HTTP_TX_BUFFER: usize = 32 * 1024;
/// Receive buffer of each HTTP socket: requests are one short head.
pub const HTTP_RX_BUFFER: usize = 2 * 1024;
/// Send buffer of the TCP echo socket (its receive side is the TCP window).
pub const ECHO_TX_BUFFER: usize = 16 * 1024;
/// UDP echo: datagrams buffered each way.
pub const ECHO_UDP_PACKETS: usize = 16;
/// UDP echo: payload bytes buffered each way.
pub const ECHO_UDP_BYTES: usize = 16 * 1024;
/// Send buffer of each iperf3 data socket (what `-R` keeps in flight).
pub const IPERF_TCP_TX_BUFFER: usize = 64 * 1024;
/// Buffers of each iperf3 control socket, each way.
pub const IPERF_CONTROL_BUFFER: usize = 4 * 1024;
/// iperf3 UDP socket: datagrams buffered each way (a `-b 50M` burst; the payload bytes
/// are a data chunk's).
pub const IPERF_UDP_PACKETS: usize = 128;
/// Payload bytes the iperf3 UDP socket receives into (of its data chunk).
pub const IPERF_UDP_BYTES: usize = IPERF_UDP_PACKETS * 1500;

fn leaked(len: usize) -> &'static mut [u8] {
    vec![0; len].leak()
}

fn udp_buffers(packets: usize, bytes: usize) -> UdpBuffers<'static> {
    UdpBuffers {
        rx_meta: vec![udp::PacketMetadata::EMPTY; packets].leak(),
        rx: leaked(bytes),
        tx_meta: vec![udp::PacketMetadata::EMPTY; packets].leak(),
        tx: leaked(bytes),
    }
}

fn tcp_buffers(rx: usize, tx: usize) -> TcpBuffers<'static> {
    TcpBuffers {
        rx: leaked(rx),
        tx: leaked(tx),
    }
}

/// Every buffer for the apps; TCP sockets that receive bulk data get a receive buffer of
/// `tcp_window` bytes (smoltcp advertises its free space as the window), and the iperf
/// servers' data memory a window and a send buffer (or the UDP socket's bytes) for each
/// stream iperf3 can ask for.
pub fn host_buffers(tcp_window: usize) -> AppBuffers<'static> {
    AppBuffers {
        echo_udp: udp_buffers(ECHO_UDP_PACKETS, ECHO_UDP_BYTES),
        echo_tcp: tcp_buffers(tcp_window, ECHO_TX_BUFFER),
        http: [
            tcp_buffers(HTTP_RX_BUFFER, HTTP_TX_BUFFER),
            tcp_buffers(HTTP_RX_BUFFER, HTTP_TX_BUFFER),
        ],
        iperf: IperfBuffers {
            control: [
                tcp_buffers(IPERF_CONTROL_BUFFER, IPERF_CONTROL_BUFFER),
                tcp_buffers(IPERF_CONTROL_BUFFER, IPERF_CONTROL_BUFFER),
            ],
            json_rx: leaked(MAX_JSON_LEN),
            json_tx: leaked(MAX_JSON_LEN),
        },
        data: DataBuffers {
            bytes: leaked(
                (MAX_TCP_SOCKETS - 2) * (tcp_window.max(IPERF_UDP_BYTES) + IPERF_TCP_TX_BUFFER),
            ),
            plan: DataPlan {
                bytes: (MAX_TCP_SOCKETS - 2)
                    * (tcp_window.max(IPERF_UDP_BYTES) + IPERF_TCP_TX_BUFFER),
                window: tcp_window,
                tx: IPERF_TCP_TX_BUFFER,
                udp_rx: IPERF_UDP_BYTES,
                per_stream: 0,
            },
            udp_meta: [
                vec![udp::PacketMetadata::EMPTY; IPERF_UDP_PACKETS].leak(),
                vec![udp::PacketMetadata::EMPTY; IPERF_UDP_PACKETS].leak(),
            ],
        },
    }
}
