//! Fuzzes linklab-perf's smoltcp adapters as a device runs them: the iperf3 server, HTTP and
//! echo (`DeviceApps`, with its socket lifetime rules, SYN reclaiming and eviction) and, on
//! port 5002, iperf 2's one-socket server (`iperf2::one_socket`, the compact image's) behind a
//! smoltcp interface, fed fuzzer-built frames; and the frame looks the embassy gate takes
//! (`rules::syn_port`, `rules::udp_port`, `rules::tcp_port`). The harness builds valid Ethernet/IPv4 headers and
//! checksums around fuzzer-chosen TCP flags, sequence numbers, ports and payloads (so the
//! segments reach the sockets), mixed with raw frames and clock steps. Nothing may panic.
#![no_main]

use std::collections::VecDeque;

use libfuzzer_sys::fuzz_target;
use linklab_perf::apps::{AppBuffers, DataBuffers, DeviceApps, TcpBuffers, UdpBuffers};
use linklab_perf::data_memory::DataPlan;
use linklab_perf::http::NoRoutes;
use linklab_perf::iperf::device::IperfBuffers;
use linklab_perf::iperf2::one_socket::OneSocketServer;
use linklab_perf::lifetime::NextFrame;
use linklab_perf::rules::{tcp_port, udp_port};
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::socket::udp::PacketMetadata;
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

const DEVICE_MAC: [u8; 6] = [2, 0, 0, 0, 0, 2];
const DEVICE_IP: [u8; 4] = [198, 18, 0, 2];
const PEER_MAC: [u8; 6] = [2, 0, 0, 0, 0, 1];

struct Wire {
    rx: VecDeque<Vec<u8>>,
    sent: usize,
}

struct Rx(Vec<u8>);
struct Tx<'a>(&'a mut usize);

impl RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        *self.0 += 1;
        let mut buf = vec![0u8; len];
        f(&mut buf)
    }
}

impl Device for Wire {
    type RxToken<'a> = Rx;
    type TxToken<'a> = Tx<'a>;
    fn receive(&mut self, _: Instant) -> Option<(Rx, Tx<'_>)> {
        let frame = self.rx.pop_front()?;
        Some((Rx(frame), Tx(&mut self.sent)))
    }
    fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
        Some(Tx(&mut self.sent))
    }
    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ethernet;
        c.max_transmission_unit = 1514;
        c
    }
}

fn checksum(chunks: &[&[u8]]) -> u16 {
    let mut sum = 0u32;
    for c in chunks {
        for pair in c.chunks(2) {
            sum += u32::from(u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]));
        }
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet/IPv4 frame from 198.18.0.`host` carrying `l4` (protocol 6 or 17) with a valid
/// checksum at `csum_at` in `l4`.
fn frame(host: u8, protocol: u8, mut l4: Vec<u8>, csum_at: usize) -> Vec<u8> {
    let src = [198, 18, 0, host];
    let mut pseudo = src.to_vec();
    pseudo.extend_from_slice(&DEVICE_IP);
    pseudo.extend_from_slice(&[0, protocol]);
    pseudo.extend_from_slice(&(l4.len() as u16).to_be_bytes());
    let c = checksum(&[&pseudo, &l4]);
    l4[csum_at..csum_at + 2].copy_from_slice(&c.to_be_bytes());
    let mut ip = vec![0x45, 0, 0, 0, 0, 0, 0x40, 0, 64, protocol, 0, 0];
    ip[2..4].copy_from_slice(&((20 + l4.len()) as u16).to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&DEVICE_IP);
    let c = checksum(&[&ip]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let mut f = DEVICE_MAC.to_vec();
    f.extend_from_slice(&PEER_MAC);
    f.extend_from_slice(&[0x08, 0x00]);
    f.extend_from_slice(&ip);
    f.extend_from_slice(&l4);
    f
}

fuzz_target!(|data: &[u8]| {
    let mut wire = Wire {
        rx: VecDeque::new(),
        sent: 0,
    };
    let mut now = Instant::from_secs(1);
    let mut config = Config::new(EthernetAddress(DEVICE_MAC).into());
    config.random_seed = 1;
    let mut iface = Interface::new(config, &mut wire, now);
    iface.update_ip_addrs(|a| {
        let _ = a.push(IpCidr::new(IpAddress::v4(198, 18, 0, 2), 24));
    });
    // Small buffers owned by this run (a leak check runs after each input).
    let mut bytes = vec![0u8; 18 * 4096 + 2 * 8192];
    let mut meta = vec![PacketMetadata::EMPTY; 16];
    let (meta_a, meta_b) = meta.split_at_mut(8);
    let (m0, m1) = meta_a.split_at_mut(4);
    let (m2, m3) = meta_b.split_at_mut(4);
    let (json, tcp_bytes) = bytes.split_at_mut(2 * 8192);
    let (json_rx, json_tx) = json.split_at_mut(8192);
    // The iperf servers' data memory: three chunks of a 2 KiB window and a 2 KiB send buffer.
    let (data_bytes, tcp_bytes) = tcp_bytes.split_at_mut(3 * 4096);
    let mut chunks = tcp_bytes.chunks_mut(4096);
    let mut next = || chunks.next().unwrap_or_default();
    let echo_udp = UdpBuffers {
        rx_meta: m0,
        rx: next(),
        tx_meta: m1,
        tx: next(),
    };
    let echo_tcp = TcpBuffers {
        rx: next(),
        tx: next(),
    };
    let http = [
        TcpBuffers {
            rx: next(),
            tx: next(),
        },
        TcpBuffers {
            rx: next(),
            tx: next(),
        },
    ];
    let control = [
        TcpBuffers {
            rx: next(),
            tx: next(),
        },
        TcpBuffers {
            rx: next(),
            tx: next(),
        },
    ];
    let buffers = AppBuffers {
        echo_udp,
        echo_tcp,
        http,
        iperf: IperfBuffers {
            control,
            json_rx,
            json_tx,
        },
        data: DataBuffers {
            plan: DataPlan {
                bytes: data_bytes.len(),
                window: 2048,
                tx: 2048,
                udp_rx: 2048,
                per_stream: 0,
            },
            bytes: data_bytes,
            udp_meta: [m2, m3],
        },
    };
    // As the compact image's: the apps' socket lifetime rules.
    let one_socket = linklab_perf::lifetime::tcp_socket(TcpBuffers {
        rx: next(),
        tx: next(),
    });
    let mut sockets = SocketSet::new(vec![]);
    let mut apps: DeviceApps<'_> = DeviceApps::new(&mut sockets, buffers);
    let one_handle = sockets.add(one_socket);
    let mut one = OneSocketServer::new(5002);
    let ports = [80u16, 7, 5201, 5002];

    let mut rest = data;
    let mut steps = 0;
    while rest.len() >= 12 && steps < 64 {
        steps += 1;
        let (h, tail) = rest.split_at(12);
        let len = usize::from(h[1]).min(tail.len());
        let (payload, tail) = tail.split_at(len);
        rest = tail;
        match h[0] % 4 {
            0 => {
                let mut tcp = vec![0u8; 20];
                tcp[0..2].copy_from_slice(&(40000 + u16::from(h[2] % 4)).to_be_bytes());
                tcp[2..4].copy_from_slice(&ports[usize::from(h[3]) % 4].to_be_bytes());
                tcp[4..8].copy_from_slice(&h[4..8]);
                tcp[8..12].copy_from_slice(&h[8..12]);
                tcp[12] = 5 << 4;
                tcp[13] = h[2] >> 2;
                tcp[14..16].copy_from_slice(&4096u16.to_be_bytes());
                tcp.extend_from_slice(payload);
                wire.rx.push_back(frame(1 + h[2] % 3, 6, tcp, 16));
            }
            1 => {
                let mut udp = vec![0u8; 8];
                udp[0..2].copy_from_slice(&5000u16.to_be_bytes());
                udp[2..4].copy_from_slice(&ports[1 + usize::from(h[3]) % 2].to_be_bytes());
                udp[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
                udp.extend_from_slice(payload);
                wire.rx.push_back(frame(1 + h[2] % 3, 17, udp, 6));
            }
            2 => wire.rx.push_back(payload.to_vec()),
            _ => now += Duration::from_millis(u64::from(u32::from_le_bytes([h[4], h[5], h[6], 0]))),
        }
        let micros = now.total_micros() as u64;
        // As DeviceApps runs the compact image's: listening again before the frames come in.
        one.listen_if_closed(
            sockets.get_mut::<smoltcp::socket::tcp::Socket>(one_handle),
            micros,
        );
        apps.poll_interface(&mut iface, &mut wire, &mut sockets, now, |w| {
            let Some(front) = w.rx.front() else {
                return NextFrame::Empty;
            };
            // The embassy gate's other looks at a frame (it holds UDP echo requests, and
            // wakes the iperf3 server for a segment to its port).
            let _ = udp_port(front);
            let _ = tcp_port(front);
            NextFrame::of(front)
        });
        apps.poll(&mut sockets, &mut NoRoutes, now);
        one.serve(sockets.get_mut::<smoltcp::socket::tcp::Socket>(one_handle), micros);
        let _ = one.poll_at();
        // Every test it took is running, done or failed.
        let c = one.counters();
        assert_eq!(
            c.tests,
            c.tests_done + c.tests_failed + one.open_streams() as u32,
            "{c:?}"
        );
        let _ = apps.poll_at();
        let _ = apps.counters();
    }
    apps.abort_all(&mut sockets);
    iface.poll(now, &mut wire, &mut sockets);
});
