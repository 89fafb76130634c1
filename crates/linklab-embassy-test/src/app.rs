//! The application on embassy-net: linklab-perf's embassy apps, as a firmware runs them —
//! the iperf3 server (5201), HTTP with the bench files (80), TCP and UDP echo (7) — over
//! buffers leaked once (a firmware's statics), until stopped.

use embassy_futures::join::join3;
use embassy_futures::select::select;
use embassy_net::udp::PacketMetadata;
use embassy_net::Stack;
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
use embassy_sync::signal::Signal;
use linklab_perf::data_memory::{DataPlan, MIN_RX};
use linklab_perf::embassy::{
    echo_server, http_server, iperf_server, AppCounters, IperfBuffers, ServiceGate, SharedMemory,
    TcpBuffers, UdpBuffers,
};
use linklab_perf::http::NoRoutes;

/// A stop request from another thread; it wakes the waiting task (nothing polls for it, so
/// every other wake-up of the stack is the driver's or embassy-net's own).
pub type Stop = Signal<CriticalSectionRawMutex, ()>;

/// iperf3 TCP sockets: control, a spare listener, four data sockets (over two streams' worth
/// of data memory, shared out when a test has more).
const IPERF_SOCKETS: usize = 6;
/// Send buffer of an iperf3 data stream.
const IPERF_TX: usize = 4 * 1460;

fn leaked(len: usize) -> &'static mut [u8] {
    vec![0u8; len].leak()
}

fn tcp(rx: usize, tx: usize) -> TcpBuffers<'static> {
    TcpBuffers {
        rx: leaked(rx),
        tx: leaked(tx),
    }
}

fn udp(packets: usize, bytes: usize) -> UdpBuffers<'static> {
    UdpBuffers {
        rx_meta: vec![PacketMetadata::EMPTY; packets].leak(),
        rx: leaked(bytes),
        tx_meta: vec![PacketMetadata::EMPTY; packets].leak(),
        tx: leaked(bytes),
    }
}

/// Serves iperf3, HTTP and echo until `stop` is signalled; `window` is each receiving TCP
/// socket's buffer (the window the stack advertises).
pub async fn serve(
    stack: Stack<'_>,
    window: usize,
    counters: &AppCounters,
    gate: &ServiceGate,
    stop: &Stop,
) {
    // Two streams' window and send buffer, and the 4 bytes each share takes there.
    let chunk = window + IPERF_TX + 4;
    let memory: &'static SharedMemory = Box::leak(Box::new(SharedMemory::new()));
    memory.init(leaked(2 * chunk));
    let iperf = IperfBuffers::<IPERF_SOCKETS> {
        control: [tcp(MIN_RX, 512), tcp(MIN_RX, 512)],
        memory,
        plan: DataPlan {
            bytes: 2 * chunk,
            window,
            tx: IPERF_TX,
            udp_rx: window,
            per_stream: 4,
        },
        udp: udp(16, 16 * 1500),
        json_rx: leaked(8192),
        json_tx: leaked(4096),
    };
    let http = [tcp(1024, 4 * 1460), tcp(1024, 4 * 1460)];
    let mut routes = NoRoutes;
    let apps = join3(
        iperf_server(stack, iperf, counters, Some(gate)),
        http_server(stack, http, &mut routes, counters, Some(gate)),
        echo_server(
            stack,
            tcp(window, 4096),
            udp(4, 4 * 1500),
            counters,
            Some(gate),
        ),
    );
    select(apps, stop.wait()).await;
}
