//! The scripted wire under the device and the frames the host's clients send: Ethernet, ARP
//! replies and TCP segments built byte by byte.

use std::collections::VecDeque;

use smoltcp::phy::{self, Device, DeviceCapabilities, Medium};
use smoltcp::time::Instant;
use smoltcp::wire::{
    ArpOperation, ArpPacket, ArpRepr, EthernetAddress, EthernetFrame, EthernetProtocol,
    EthernetRepr, IpAddress, IpProtocol, Ipv4Address, Ipv4Packet, Ipv4Repr, TcpControl, TcpPacket,
    TcpRepr, TcpSeqNumber,
};

pub const DEVICE_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 2]);
pub const HOST_MAC: EthernetAddress = EthernetAddress([2, 0, 0, 0, 0, 1]);
pub const DEVICE_IP: Ipv4Address = Ipv4Address::new(198, 18, 0, 2);
pub const HOST_IP: Ipv4Address = Ipv4Address::new(198, 18, 0, 1);
/// On the device's subnet, never answers ARP.
pub const GHOST_IP: Ipv4Address = Ipv4Address::new(198, 18, 0, 77);

/// Frames queued for the device and frames it sent.
#[derive(Default)]
pub struct Wire {
    pub to_device: VecDeque<Vec<u8>>,
    pub from_device: Vec<Vec<u8>>,
}

pub struct Rx(pub Vec<u8>);
pub struct Tx<'a>(pub &'a mut Vec<Vec<u8>>);

impl phy::RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl phy::TxToken for Tx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0; len];
        let r = f(&mut frame);
        self.0.push(frame);
        r
    }
}

impl Device for Wire {
    type RxToken<'a> = Rx;
    type TxToken<'a> = Tx<'a>;

    fn receive(&mut self, _: Instant) -> Option<(Rx, Tx<'_>)> {
        let frame = self.to_device.pop_front()?;
        Some((Rx(frame), Tx(&mut self.from_device)))
    }

    fn transmit(&mut self, _: Instant) -> Option<Tx<'_>> {
        Some(Tx(&mut self.from_device))
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = 1514;
        caps
    }
}

pub const ISN: u32 = 1000;

pub fn ethernet(
    dst: EthernetAddress,
    src: EthernetAddress,
    ethertype: EthernetProtocol,
    payload_len: usize,
    emit: impl FnOnce(&mut [u8]),
) -> Vec<u8> {
    let repr = EthernetRepr {
        src_addr: src,
        dst_addr: dst,
        ethertype,
    };
    let mut f = vec![0; repr.buffer_len() + payload_len];
    let mut frame = EthernetFrame::new_unchecked(&mut f);
    repr.emit(&mut frame);
    emit(frame.payload_mut());
    f
}

/// A TCP segment from `src:port` to the device's `to_port`.
pub fn segment(
    src: Ipv4Address,
    port: u16,
    to_port: u16,
    control: TcpControl,
    ack: Option<u32>,
) -> Vec<u8> {
    let seq = ISN + u32::from(ack.is_some());
    data_segment(src, port, to_port, control, seq, ack, &[])
}

/// A TCP segment from `src:port` to the device's `to_port` with sequence number `seq` and
/// `payload`.
pub fn data_segment(
    src: Ipv4Address,
    port: u16,
    to_port: u16,
    control: TcpControl,
    seq: u32,
    ack: Option<u32>,
    payload: &[u8],
) -> Vec<u8> {
    let tcp = TcpRepr {
        src_port: port,
        dst_port: to_port,
        control,
        seq_number: TcpSeqNumber(seq as i32),
        ack_number: ack.map(|a| TcpSeqNumber(a as i32)),
        window_len: 64240,
        window_scale: None,
        max_seg_size: None,
        sack_permitted: false,
        sack_ranges: [None; 3],
        timestamp: None,
        payload,
    };
    let ip = Ipv4Repr {
        src_addr: src,
        dst_addr: DEVICE_IP,
        next_header: IpProtocol::Tcp,
        payload_len: tcp.buffer_len(),
        hop_limit: 64,
    };
    ethernet(
        DEVICE_MAC,
        HOST_MAC,
        EthernetProtocol::Ipv4,
        ip.buffer_len() + tcp.buffer_len(),
        |b| {
            let mut packet = Ipv4Packet::new_unchecked(b);
            ip.emit(&mut packet, &Default::default());
            let mut t = TcpPacket::new_unchecked(packet.payload_mut());
            tcp.emit(
                &mut t,
                &IpAddress::Ipv4(src),
                &IpAddress::Ipv4(DEVICE_IP),
                &Default::default(),
            );
        },
    )
}

pub fn arp_reply(to: &ArpRepr) -> Option<Vec<u8>> {
    let ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Request,
        source_hardware_addr,
        source_protocol_addr,
        target_protocol_addr,
        ..
    } = *to
    else {
        return None;
    };
    if target_protocol_addr != HOST_IP {
        return None; // a ghost never answers
    }
    let reply = ArpRepr::EthernetIpv4 {
        operation: ArpOperation::Reply,
        source_hardware_addr: HOST_MAC,
        source_protocol_addr: HOST_IP,
        target_hardware_addr: source_hardware_addr,
        target_protocol_addr: source_protocol_addr,
    };
    Some(ethernet(
        DEVICE_MAC,
        HOST_MAC,
        EthernetProtocol::Arp,
        reply.buffer_len(),
        |b| reply.emit(&mut ArpPacket::new_unchecked(b)),
    ))
}
