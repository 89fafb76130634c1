//! smoltcp over two MACs joined by an impaired raw "wire": TCP data arrives intact, the
//! receiver's queue is never overrun when its TCP window comes from `tcp_rx_window`, and
//! the counters balance.
// Its MACs are joined by a raw wire (`MacConfig::raw_phy`).
#![cfg(all(feature = "smoltcp", feature = "soft-framing"))]

mod common;

use common::*;
use linklab_mac::impair::shift_into;
use linklab_mac::queue::RxProducer;
use linklab_mac::{Inline, Mac, MacConfig, PhyTx, RxQueue};
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::phy::Device;
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr};

const N: usize = 16384;
const RATE: u64 = 10_000_000;

/// The wire: each transmission lands in the peer's RX queue as a raw capture, shifted by a
/// varying number of bits, on an inverted pair.
struct ToPeer<'q> {
    peer: RxProducer<'q, Inline<N>>,
    sent: usize,
}

impl PhyTx for ToPeer<'_> {
    fn transmit(&mut self, wire: &[u8]) {
        let mut raw = [0u8; 1600];
        let n = shift_into(&mut raw, wire, self.sent % 8, true);
        self.sent += 1;
        self.peer.push(&raw[..n]);
    }
}

fn iface_for<D: Device>(dev: &mut D, mac: [u8; 6], ip: [u8; 4]) -> Interface {
    let cfg = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac)));
    let mut iface = Interface::new(cfg, dev, Instant::from_micros(0));
    iface.update_ip_addrs(|a| {
        a.push(IpCidr::new(IpAddress::v4(ip[0], ip[1], ip[2], ip[3]), 24))
            .unwrap();
    });
    iface
}

#[test]
fn tcp_bulk_transfer_without_overrun() {
    let qa: RxQueue<Inline<N>> = RxQueue::new();
    let qb: RxQueue<Inline<N>> = RxQueue::new();
    let clock = ManualClock::default();
    let mut a = Mac::new(
        qa.consumer(),
        ToPeer {
            peer: qb.producer(),
            sent: 0,
        },
        clock.clone(),
        MacConfig::raw_phy(PEER, RATE),
    );
    let mut b = Mac::new(
        qb.consumer(),
        ToPeer {
            peer: qa.producer(),
            sent: 3,
        },
        clock.clone(),
        MacConfig::raw_phy(ME, RATE),
    );
    let window = b.tcp_rx_window();
    assert!(window >= 3 * 1460, "window {window}");
    let caps = b.capabilities();
    assert_eq!(caps.max_transmission_unit, 1514);
    let burst = caps.max_burst_size.expect("a burst cap by default");
    assert!(burst * 1474 <= window);
    // Lifting the cap (to advertise a larger window on purpose) and restoring it.
    b.set_burst_cap(false);
    assert_eq!(b.capabilities().max_burst_size, None);
    b.set_burst_cap(true);
    assert_eq!(b.capabilities().max_burst_size, Some(burst));

    let mut ia = iface_for(&mut a, PEER.0, [198, 18, 0, 1]);
    let mut ib = iface_for(&mut b, ME.0, [198, 18, 0, 2]);
    let mut sa = SocketSet::new(vec![]);
    let mut sb = SocketSet::new(vec![]);
    let ha = sa.add(tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; 65535]),
        tcp::SocketBuffer::new(vec![0; 65535]),
    ));
    // The receiver's socket buffer, hence its advertised window, is the computed window.
    let hb = sb.add(tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; window]),
        tcp::SocketBuffer::new(vec![0; 1024]),
    ));
    sb.get_mut::<tcp::Socket>(hb).listen(5001).unwrap();
    // The sender fills whatever window it is given: no congestion control, whichever one
    // smoltcp would default to under the workspace's unified features (CUBIC, when another
    // crate enables it, backs off and never fills the queue).
    sa.get_mut::<tcp::Socket>(ha)
        .set_congestion_control(tcp::CongestionControl::None);
    sa.get_mut::<tcp::Socket>(ha)
        .connect(ia.context(), (IpAddress::v4(198, 18, 0, 2), 5001), 49152)
        .unwrap();

    let total = 60_000usize;
    let data: Vec<u8> = (0..total).map(|i| (i * 31 % 251) as u8).collect();
    let mut sent = 0;
    let mut received = Vec::with_capacity(total);
    let mut max_fill = 0;
    let step_ns = 20_000u64;
    for step in 0..2_000_000u64 {
        clock.advance(step_ns);
        let now = Instant::from_micros((clock.0.get() / 1000) as i64);
        a.poll();
        ia.poll(now, &mut a, &mut sa);
        {
            let s = sa.get_mut::<tcp::Socket>(ha);
            if s.can_send() && sent < total {
                sent += s.send_slice(&data[sent..]).unwrap();
            }
        }
        ia.poll(now, &mut a, &mut sa);
        max_fill = max_fill.max(qb.occupancy());
        // The receiver's main loop is slow: it runs every 20 ms, long enough for a
        // sender at line rate to fill the queue many times over.
        if step % 1000 == 0 {
            b.poll();
            ib.poll(now, &mut b, &mut sb);
            let s = sb.get_mut::<tcp::Socket>(hb);
            while s.can_recv() {
                s.recv(|buf| {
                    received.extend_from_slice(buf);
                    (buf.len(), ())
                })
                .unwrap();
            }
            ib.poll(now, &mut b, &mut sb);
        }
        if received.len() == total {
            break;
        }
    }
    assert_eq!(received.len(), total, "transfer incomplete");
    assert!(received == data, "data altered");
    let cb = b.counters();
    let ca = a.counters();
    assert_eq!(cb.rx_missed_errors, 0, "{cb:?}");
    assert_eq!(cb.rx_crc_errors + cb.rx_frame_errors, 0);
    // The queue was really under pressure: more than half full at some point.
    assert!(max_fill > N / 2, "max fill {max_fill}");
    assert!(cb.rx_packets > (total / 1460) as u64);
    cb.check_conservation().unwrap();
    ca.check_conservation().unwrap();
    assert_eq!(ca.tx_packets, cb.rx_transmissions);
}

#[test]
fn a_full_transmit_ring_holds_the_stack_s_frames_back_instead_of_losing_them() {
    let q: RxQueue<Inline<N>> = RxQueue::new();
    let ring = Ring::default();
    ring.free.set(1);
    let mut mac = Mac::new(
        q.consumer(),
        ring.clone(),
        ManualClock::default(),
        MacConfig::raw_phy(ME, 0),
    );
    let now = Instant::from_micros(0);
    let t = Device::transmit(&mut mac, now).expect("a buffer is free");
    smoltcp::phy::TxToken::consume(t, 60, |f: &mut [u8]| f.fill(1));
    // Full: no token for a frame (it would be dropped), nor for a received frame's reply.
    assert!(Device::transmit(&mut mac, now).is_none());
    let wire = {
        let mut f = [0u8; 60];
        common::fill_frame(&mut f, ME, PEER, b"x");
        let mut w = linklab_mac::fcs::fcs_bytes(&f).to_vec();
        let mut out = vec![0x55; 7];
        out.push(0xD5);
        out.extend_from_slice(&f);
        out.append(&mut w);
        out
    };
    q.producer().push(&wire);
    assert!(Device::receive(&mut mac, now).is_none());
    ring.free.set(1);
    assert!(Device::receive(&mut mac, now).is_some());
    assert_eq!(ring.sent.borrow().len(), 1);
    assert_eq!(ring.dropped.get(), 0);
}
