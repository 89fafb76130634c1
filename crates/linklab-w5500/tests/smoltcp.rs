//! smoltcp answers a ping through linklab-mac over the driver: the request stored by the
//! register model (tests/model), read into the MAC's queue by the runner, answered by
//! smoltcp's interface over the MAC (a `smoltcp::phy::Device`), and the reply built in the
//! driver's TX slot, written to the chip and sent.

mod model;

use std::cell::RefCell;
use std::rc::Rc;

use linklab_mac::{Inline, Mac, MacAddr, MacConfig, NoClock, RxQueue};
use linklab_w5500::{Config, Runner, SharedCounters, TxQueue, W5500};
use model::{block_on, Chip, ModelBus, ModelClock, ModelCs, ModelDelay, ModelInt};
use smoltcp::iface::{Interface, SocketSet};
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::time::Instant;
use smoltcp::wire::{
    EthernetAddress, EthernetFrame, EthernetProtocol, EthernetRepr, HardwareAddress, Icmpv4Packet,
    Icmpv4Repr, IpAddress, IpCidr, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr,
};

const MAC: [u8; 6] = [0x02, 0x4c, 0x4c, 0x00, 0x00, 0x02];
const HOST: [u8; 6] = [0x02, 0, 0, 0, 0, 1];
const QUEUE: usize = linklab_mac::window::capacity_for_frames(4, linklab_w5500::RX_FORMAT);

/// An ICMP echo request from 198.18.0.1 to 198.18.0.2, as a frame.
fn echo_request(ident: u16, seq_no: u16, data: &[u8]) -> Vec<u8> {
    let icmp = Icmpv4Repr::EchoRequest {
        ident,
        seq_no,
        data,
    };
    let ip = Ipv4Repr {
        src_addr: Ipv4Address::new(198, 18, 0, 1),
        dst_addr: Ipv4Address::new(198, 18, 0, 2),
        next_header: IpProtocol::Icmp,
        payload_len: icmp.buffer_len(),
        hop_limit: 64,
    };
    let eth = EthernetRepr {
        src_addr: EthernetAddress(HOST),
        dst_addr: EthernetAddress(MAC),
        ethertype: EthernetProtocol::Ipv4,
    };
    let mut buf = vec![0; eth.buffer_len() + ip.buffer_len() + icmp.buffer_len()];
    let caps = ChecksumCapabilities::default();
    let mut frame = EthernetFrame::new_unchecked(&mut buf);
    eth.emit(&mut frame);
    let mut packet = Ipv4Packet::new_unchecked(frame.payload_mut());
    ip.emit(&mut packet, &caps);
    icmp.emit(
        &mut Icmpv4Packet::new_unchecked(packet.payload_mut()),
        &caps,
    );
    buf
}

#[test]
fn smoltcp_answers_a_ping_through_the_mac_over_the_driver() {
    let chip = Rc::new(RefCell::new(Chip::new()));
    static COUNTERS: SharedCounters = SharedCounters::new();
    let queue: RxQueue<Inline<QUEUE>> = RxQueue::new();
    let tx: TxQueue<2> = TxQueue::new();
    let w = W5500::new(ModelBus(chip.clone()), ModelCs(chip.clone()));
    let up = block_on(w.init::<ModelCs>(None, Config::new(MAC), &mut ModelDelay(chip.clone())))
        .expect("up");
    let mut runner = Runner::new(
        up,
        ModelInt(chip.clone()),
        ModelDelay(chip.clone()),
        ModelClock(chip.clone()),
        queue.producer(),
        &tx,
        &COUNTERS,
        |_| {},
    );
    let mut mac = Mac::new(
        queue.consumer(),
        tx.producer(),
        NoClock,
        MacConfig::tap(MacAddr(MAC)),
    );
    let config = smoltcp::iface::Config::new(HardwareAddress::Ethernet(EthernetAddress(MAC)));
    let mut iface = Interface::new(config, &mut mac, Instant::ZERO);
    iface.update_ip_addrs(|a| {
        a.push(IpCidr::new(IpAddress::v4(198, 18, 0, 2), 24))
            .unwrap();
    });
    let mut sockets = SocketSet::new(vec![]);
    // smoltcp asks who 198.18.0.1 is before it answers: the ARP reply is stored first.
    let mut arp = vec![0u8; 42];
    {
        use smoltcp::wire::{ArpOperation, ArpPacket, ArpRepr};
        let repr = ArpRepr::EthernetIpv4 {
            operation: ArpOperation::Reply,
            source_hardware_addr: EthernetAddress(HOST),
            source_protocol_addr: Ipv4Address::new(198, 18, 0, 1),
            target_hardware_addr: EthernetAddress(MAC),
            target_protocol_addr: Ipv4Address::new(198, 18, 0, 2),
        };
        let mut frame = EthernetFrame::new_unchecked(&mut arp[..]);
        EthernetRepr {
            src_addr: EthernetAddress(HOST),
            dst_addr: EthernetAddress(MAC),
            ethertype: EthernetProtocol::Arp,
        }
        .emit(&mut frame);
        repr.emit(&mut ArpPacket::new_unchecked(frame.payload_mut()));
    }
    let request = echo_request(0x1234, 1, b"linklab-w5500 ping");
    for f in [&arp, &request] {
        assert!(chip.borrow_mut().receive(f));
    }
    for _ in 0..20 {
        block_on(runner.service());
        iface.poll(Instant::ZERO, &mut mac, &mut sockets);
        chip.borrow_mut().advance(200_000);
        if chip
            .borrow()
            .sent
            .iter()
            .any(|f| f.len() >= 42 && f[23] == 1)
        {
            break;
        }
    }
    let sent = chip.borrow().sent.clone();
    let reply = sent
        .iter()
        .find(|f| f.len() >= 42 && f[12..14] == [0x08, 0x00] && f[23] == 1)
        .unwrap_or_else(|| panic!("no ICMP reply among {} frames sent", sent.len()));
    let ip = Ipv4Packet::new_checked(&reply[14..]).expect("IPv4");
    let icmp = Icmpv4Packet::new_checked(ip.payload()).expect("ICMP");
    let repr = Icmpv4Repr::parse(&icmp, &ChecksumCapabilities::default()).expect("checksums right");
    assert_eq!(
        repr,
        Icmpv4Repr::EchoReply {
            ident: 0x1234,
            seq_no: 1,
            data: b"linklab-w5500 ping"
        }
    );
    assert_eq!(&reply[..6], &HOST);
    assert_eq!(COUNTERS.snapshot().rx_frames, 2);
}
