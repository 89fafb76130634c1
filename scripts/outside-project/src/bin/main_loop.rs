//! linklab-perf's apps — the iperf3 server (5201), the iperf 2 server (5001), HTTP with the
//! bench files (80), TCP and UDP echo (7) — in a smoltcp main loop over linklab-mac and the LAN9118: the shape of a
//! bare-metal firmware. Every buffer is a static; nothing is on the heap.
#![no_std]
#![no_main]

use cortex_m_rt::{entry, exception};
use linklab_mac::{Mac, NoClock};
use linklab_perf::apps::{AppBuffers, DataBuffers, DeviceApps, TcpBuffers, UdpBuffers};
use linklab_perf::data_memory::{DataPlan, MIN_RX};
use linklab_perf::http::NoRoutes;
use linklab_perf::iperf::device::IperfBuffers;
use linklab_perf::rules::NextFrame;
use outside_firmware::{lan9118, mac_config, millis, start_clock, tick, DeviceConfig, RX};
use smoltcp::iface::{Config, Interface, SocketSet, SocketStorage};
use smoltcp::socket::udp::PacketMetadata;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};
use static_cell::ConstStaticCell;

/// A full-size TCP segment's payload.
const MSS: usize = 1460;
/// Each iperf3 stream's TCP window: what the 16 KiB RX queue holds, less two frames.
const WINDOW: usize = 8 * MSS;
/// Each iperf3 stream's send buffer (`-R`): four segments in flight.
const SEND: usize = 4 * MSS;
/// The iperf servers' data memory, in streams of a full window and send buffer (`-P 2`, or
/// `--bidir`): a test with more streams shares it out; iperf 2's tests borrow it too, one
/// test at a time across both servers.
const STREAMS: usize = 2;
/// iperf3's data sockets: the most streams a test may have (`-P 4`, `-P 2 --bidir`), each
/// lent a share of the data memory only while it carries one.
const DATA_SOCKETS: usize = 4;
/// UDP datagrams a UDP test (iperf3's or iperf 2's) holds each way.
const UDP_DATAGRAMS: usize = 4;
/// iperf 2's TCP sockets (two streams, or a stream and its `-d` connect-back, and one
/// listening).
const IPERF2_SOCKETS: usize = 3;
/// Sockets: iperf3's two control sockets, its data sockets and UDP socket, iperf 2's TCP
/// and UDP sockets, two HTTP sockets, TCP and UDP echo.
const SOCKETS: usize = 2 + DATA_SOCKETS + 1 + IPERF2_SOCKETS + 1 + 2 + 2;

/// Every byte buffer the apps use, zeroed: one static in `.bss` (word-aligned: the data
/// memory is lent out in words).
#[repr(C, align(4))]
struct Buffers {
    iperf_data: [u8; STREAMS * (WINDOW + SEND)],
    iperf_control: [([u8; MIN_RX], [u8; 512]); 2],
    iperf_json: ([u8; 2048], [u8; 2048]),
    http: [([u8; 1024], [u8; SEND]); 2],
    echo_tcp: ([u8; 1024], [u8; 1024]),
    echo_udp: ([u8; 1500], [u8; 1500]),
}

static BUFFERS: ConstStaticCell<Buffers> = ConstStaticCell::new(Buffers {
    iperf_data: [0; STREAMS * (WINDOW + SEND)],
    iperf_control: [([0; MIN_RX], [0; 512]); 2],
    iperf_json: ([0; 2048], [0; 2048]),
    http: [([0; 1024], [0; SEND]); 2],
    echo_tcp: ([0; 1024], [0; 1024]),
    echo_udp: ([0; 1500], [0; 1500]),
});

/// smoltcp's socket slots and the UDP sockets' datagram records (not all zero: `.data`).
struct Records {
    sockets: [SocketStorage<'static>; SOCKETS],
    iperf_udp: [[PacketMetadata; UDP_DATAGRAMS]; 2],
    echo_udp: [[PacketMetadata; 2]; 2],
}

static RECORDS: ConstStaticCell<Records> = ConstStaticCell::new(Records {
    sockets: [SocketStorage::EMPTY; SOCKETS],
    iperf_udp: [[PacketMetadata::EMPTY; UDP_DATAGRAMS]; 2],
    echo_udp: [[PacketMetadata::EMPTY; 2]; 2],
});

#[exception]
fn SysTick() {
    tick();
}

fn now() -> Instant {
    Instant::from_millis(millis() as i64)
}

#[entry]
fn main() -> ! {
    let cp = cortex_m::Peripherals::take().expect("taken once, here");
    start_clock(cp.SYST);
    let config = DeviceConfig::DEFAULT; // 198.18.0.2/24
    let Some((mut nic_rx, nic_tx)) = lan9118(&config) else {
        panic!("no LAN9118");
    };
    let (producer, consumer) = RX.split();
    let mut mac = Mac::new(consumer, nic_tx, NoClock, mac_config(&config));

    let mut iface = Interface::new(
        Config::new(EthernetAddress(config.mac).into()),
        &mut mac,
        now(),
    );
    let [a, b, c, d] = config.ip;
    iface.update_ip_addrs(|ips| {
        let _ = ips.push(IpCidr::new(IpAddress::v4(a, b, c, d), config.prefix));
    });

    let (m, r) = (BUFFERS.take(), RECORDS.take());
    let mut sockets = SocketSet::new(&mut r.sockets[..]);
    let [(c0_rx, c0_tx), (c1_rx, c1_tx)] = &mut m.iperf_control;
    let [meta_rx, meta_tx] = &mut r.iperf_udp;
    let [(h0_rx, h0_tx), (h1_rx, h1_tx)] = &mut m.http;
    let [echo_meta_rx, echo_meta_tx] = &mut r.echo_udp;
    let buffers = AppBuffers {
        echo_udp: UdpBuffers {
            rx_meta: echo_meta_rx,
            rx: &mut m.echo_udp.0,
            tx_meta: echo_meta_tx,
            tx: &mut m.echo_udp.1,
        },
        echo_tcp: TcpBuffers {
            rx: &mut m.echo_tcp.0,
            tx: &mut m.echo_tcp.1,
        },
        http: [
            TcpBuffers {
                rx: h0_rx,
                tx: h0_tx,
            },
            TcpBuffers {
                rx: h1_rx,
                tx: h1_tx,
            },
        ],
        iperf: IperfBuffers {
            control: [
                TcpBuffers {
                    rx: c0_rx,
                    tx: c0_tx,
                },
                TcpBuffers {
                    rx: c1_rx,
                    tx: c1_tx,
                },
            ],
            json_rx: &mut m.iperf_json.0,
            json_tx: &mut m.iperf_json.1,
        },
        data: DataBuffers {
            bytes: &mut m.iperf_data,
            plan: DataPlan {
                bytes: STREAMS * (WINDOW + SEND),
                window: WINDOW,
                tx: SEND,
                udp_rx: WINDOW,
                per_stream: 0,
            },
            udp_meta: [meta_rx, meta_tx],
        },
    };
    let mut apps = DeviceApps::<{ 2 + DATA_SOCKETS }, DATA_SOCKETS, 2, IPERF2_SOCKETS>::new(
        &mut sockets,
        buffers,
    );

    loop {
        // The controller's RX FIFO into the MAC's queue (an interrupt handler's work).
        nic_rx.on_interrupt(&producer);
        let t = now();
        apps.poll_ingress(&mut iface, &mut mac, &mut sockets, t, |mac| {
            mac.peek(NextFrame::of).unwrap_or(NextFrame::Empty)
        });
        apps.poll(&mut sockets, &mut NoRoutes, t);
        apps.poll_egress(&mut iface, &mut mac, &mut sockets, t);
    }
}
