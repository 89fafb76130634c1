//! The soft PHY's receive path end to end, without the event loop: Manchester samples on an
//! impaired line → linklab-phy10's receive interrupt decodes them straight into a
//! linklab-mac grant → `Mac` checks the FCS on the consumer side → smoltcp TCP. The bytes a
//! TCP peer sends arrive intact, and every frame is accounted for.

use linklab_mac::tx::{build, TxFormat};
use linklab_mac::window::capacity_for_frames;
use linklab_mac::{
    BoxedSlice, Clock, Mac, MacAddr, MacConfig, PhyTx, RxFormat, RxProducer, RxQueue,
};
use linklab_phy10::{RxCounters, RxInterrupt};
use linklab_sim::sample_wire::{SampleWire, SampleWireConfig};
use rand::SeedableRng;
use rand_chacha::ChaCha8Rng;
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::phy::Device;
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, HardwareAddress, IpAddress, IpCidr};
use std::cell::Cell;
use std::rc::Rc;

const RATE: u64 = 10_000_000;
const PEER: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 1]);
const DEVICE: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 2]);

#[derive(Clone, Default)]
struct TestClock(Rc<Cell<u64>>);

impl Clock for TestClock {
    fn now_ns(&self) -> u64 {
        self.0.get()
    }
}

/// One direction of the line with the receiver at its end: each transmission is encoded to
/// samples, impaired, and handed to the receiver's interrupt exactly as a board's handler
/// would: grant on entry, decode into it on exit, commit what the PHY says.
struct SoftPhyLink<'q> {
    line: SampleWire,
    isr: RxInterrupt,
    receiver: RxProducer<'q, BoxedSlice>,
    rng: ChaCha8Rng,
    /// Receiver samples the interrupt misses at the start of every transmission.
    late_samples: usize,
}

impl<'q> SoftPhyLink<'q> {
    fn new(cfg: SampleWireConfig, receiver: RxProducer<'q, BoxedSlice>, seed: u64) -> Self {
        let line = SampleWire::new(cfg).expect("valid line");
        SoftPhyLink {
            isr: RxInterrupt::new(line.oversample()),
            line,
            receiver,
            rng: ChaCha8Rng::seed_from_u64(seed),
            late_samples: 0,
        }
    }
}

impl PhyTx for SoftPhyLink<'_> {
    fn transmit(&mut self, wire: &[u8]) {
        // Interrupt entry: the grant, before anything is known about what is coming.
        let grant = self.receiver.grant().ok();
        // The sampler records the line from the entry on.
        let capture = self.line.capture(wire, self.late_samples, &mut self.rng);
        // Interrupt exit.
        match grant {
            Some(mut g) => {
                let n = self.isr.receive(&capture, g.buf());
                g.commit(n);
            }
            None => {
                if self.isr.receive_without_grant(&capture) {
                    self.receiver.record_missed();
                }
            }
        }
    }
}

fn iface_for<D: Device>(dev: &mut D, mac: MacAddr, ip: [u8; 4]) -> Interface {
    let cfg = Config::new(HardwareAddress::Ethernet(EthernetAddress(mac.0)));
    let mut iface = Interface::new(cfg, dev, Instant::from_micros(0));
    iface.update_ip_addrs(|a| {
        a.push(IpCidr::new(IpAddress::v4(ip[0], ip[1], ip[2], ip[3]), 24))
            .unwrap();
    });
    iface
}

fn line(drift_ppm: i32) -> SampleWireConfig {
    SampleWireConfig {
        oversample: 8,
        drift_ppm,
        jitter_samples: 1,
        noise: 0.0,
    }
}

/// The queue the PHY decodes into: the smallest that always holds 9 decoded frames.
fn queue() -> RxQueue<BoxedSlice> {
    RxQueue::boxed(capacity_for_frames(9, RxFormat::Aligned { fcs: true })).unwrap()
}

/// Sends `data` over TCP from the peer to the device, both soft PHYs on lines with ±0.5 %
/// drift and ±1 sample of jitter at 8x, the device's interrupt entering `late_samples` late;
/// returns what the device's socket received and both ends' PHY counters.
fn tcp_transfer(data: &[u8], late_samples: usize) -> (Vec<u8>, RxCounters, RxCounters) {
    let (q_peer, q_device) = (queue(), queue());
    let clock = TestClock::default();
    let mut to_device = SoftPhyLink::new(line(5000), q_device.producer(), 1);
    to_device.late_samples = late_samples;
    let to_peer = SoftPhyLink::new(line(-5000), q_peer.producer(), 2);
    let mut peer = Mac::new(
        q_peer.consumer(),
        to_device,
        clock.clone(),
        MacConfig::decoding_phy(PEER, RATE),
    );
    let mut device = Mac::new(
        q_device.consumer(),
        to_peer,
        clock.clone(),
        MacConfig::decoding_phy(DEVICE, RATE),
    );
    let window = device.tcp_rx_window();
    assert_eq!(window, 7 * 1460);

    let mut ip = iface_for(&mut peer, PEER, [198, 18, 0, 1]);
    let mut id = iface_for(&mut device, DEVICE, [198, 18, 0, 2]);
    let mut sp = SocketSet::new(vec![]);
    let mut sd = SocketSet::new(vec![]);
    let hp = sp.add(tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; 65535]),
        tcp::SocketBuffer::new(vec![0; 65535]),
    ));
    let hd = sd.add(tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; window]),
        tcp::SocketBuffer::new(vec![0; 1024]),
    ));
    sd.get_mut::<tcp::Socket>(hd).listen(5001).unwrap();
    sp.get_mut::<tcp::Socket>(hp)
        .connect(ip.context(), (IpAddress::v4(198, 18, 0, 2), 5001), 49152)
        .unwrap();

    let mut sent = 0;
    let mut received = Vec::with_capacity(data.len());
    for _ in 0..200_000 {
        clock.0.set(clock.0.get() + 100_000);
        let now = Instant::from_micros((clock.0.get() / 1000) as i64);
        peer.poll();
        ip.poll(now, &mut peer, &mut sp);
        let s = sp.get_mut::<tcp::Socket>(hp);
        if s.can_send() && sent < data.len() {
            sent += s.send_slice(&data[sent..]).unwrap();
        }
        ip.poll(now, &mut peer, &mut sp);
        device.poll();
        id.poll(now, &mut device, &mut sd);
        let s = sd.get_mut::<tcp::Socket>(hd);
        while s.can_recv() {
            s.recv(|buf| {
                received.extend_from_slice(buf);
                (buf.len(), ())
            })
            .unwrap();
        }
        id.poll(now, &mut device, &mut sd);
        if received.len() >= data.len() {
            break;
        }
    }
    let (cp, cd) = (peer.counters(), device.counters());
    cp.check_conservation().unwrap();
    cd.check_conservation().unwrap();
    // Every frame the device's interrupt committed reached the MAC; nothing else did.
    let isr = peer.phy().isr.counters();
    assert_eq!(
        isr.frames + isr.truncated,
        cd.rx_committed,
        "{isr:?} {cd:?}"
    );
    assert_eq!(isr.missed, cd.rx_missed_errors);
    assert_eq!(isr.link_pulses, 0);
    // Nothing the MAC delivered failed its FCS check silently: good frames are counted, bad
    // ones are in the error buckets, and TCP resent what was lost.
    assert!(cd.rx_packets > (data.len() / 1460) as u64, "{cd:?}");
    (received, isr, device.phy().isr.counters())
}

#[test]
fn tcp_bytes_arrive_intact_through_the_sample_path() {
    let data: Vec<u8> = (0..60_000u32).map(|i| (i * 31 % 251) as u8).collect();
    let (received, to_device, to_peer) = tcp_transfer(&data, 0);
    assert_eq!(received.len(), data.len(), "transfer incomplete");
    assert!(received == data, "data altered");
    assert!(to_device.frames > 40, "{to_device:?}");
    assert!(to_peer.frames > 10, "{to_peer:?}");
}

#[test]
fn an_interrupt_entering_inside_the_preamble_loses_nothing() {
    // Niccle's 750 ns interrupt latency: 7.5 bit times, 60 samples at 8x.
    let data: Vec<u8> = (0..20_000u32).map(|i| (i * 7 % 253) as u8).collect();
    let (received, to_device, _) = tcp_transfer(&data, 60);
    assert!(received == data, "data altered or incomplete");
    assert_eq!(to_device.empty + to_device.noise, 0, "{to_device:?}");
}

/// An interrupt that enters after the preamble has lost the frame's start: the PHY finds no
/// frame (the grant is cancelled) or decodes garbage that the MAC's FCS check rejects; no
/// good frame ever reaches the stack.
#[test]
fn an_interrupt_entering_after_the_preamble_delivers_no_frame() {
    let q = queue();
    let mut link = SoftPhyLink::new(line(0), q.producer(), 3);
    link.late_samples = 8 * 80; // 80 bit times: past the 64 of preamble and SFD
    let mut receiver = Mac::new(
        q.consumer(),
        |_: &[u8]| {},
        TestClock::default(),
        MacConfig::decoding_phy(DEVICE, RATE),
    );
    for i in 0..50u8 {
        let mut wire = [0u8; 300];
        let (n, ()) = build(&mut wire, TxFormat::Wire, 200, |f| {
            f[0..6].copy_from_slice(&DEVICE.0);
            f[6..12].copy_from_slice(&PEER.0);
            f[12..14].copy_from_slice(&[0x88, 0xB5]);
            f[14..].fill(i);
        })
        .unwrap();
        link.transmit(&wire[..n]);
        assert!(receiver.receive().is_none(), "frame {i} delivered");
    }
    let isr = link.isr.counters();
    let c = receiver.counters();
    c.check_conservation().unwrap();
    // Whatever the decoder made of the rest of a frame (a payload byte can look like the
    // end of a preamble), the MAC's FCS or length check rejected every commit.
    assert_eq!(c.rx_packets, 0);
    assert_eq!(isr.frames + isr.truncated, c.rx_committed, "{isr:?} {c:?}");
    assert_eq!(
        c.rx_crc_errors + c.rx_short_length_errors + c.rx_long_length_errors,
        c.rx_committed
    );
    assert_eq!(
        isr.frames + isr.truncated + isr.empty + isr.noise + isr.link_pulses,
        50
    );
}
