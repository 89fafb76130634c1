//! What the seed tool reads from a capture: classic pcap records (Ethernet), and from them
//! the TCP byte streams each way of every connection (reassembled in sequence order,
//! retransmissions dropped) and the UDP datagrams, parsed with smoltcp's `wire` views.

use std::collections::BTreeMap;

use smoltcp::wire::{
    EthernetFrame, EthernetProtocol, IpProtocol, Ipv4Packet, TcpPacket, UdpPacket,
};

/// One captured frame: when (µs since the capture began) and its bytes (no FCS: tshark on a
/// TAP or veth sees none).
pub struct Record {
    /// Microseconds since the first record.
    pub at_us: u64,
    /// Destination MAC through the payload.
    pub frame: Vec<u8>,
}

/// The records of a classic pcap file (either timestamp resolution, little-endian, as tshark
/// `-F pcap` writes it); None if it is not one.
pub fn read_pcap(bytes: &[u8]) -> Option<Vec<Record>> {
    let magic = u32::from_le_bytes(bytes.get(..4)?.try_into().ok()?);
    let ns = match magic {
        0xa1b2_c3d4 => false,
        0xa1b2_3c4d => true,
        _ => return None,
    };
    let linktype = u32::from_le_bytes(bytes.get(20..24)?.try_into().ok()?);
    if linktype != 1 {
        return None;
    }
    let mut records = Vec::new();
    let mut rest = bytes.get(24..)?;
    let mut first = None;
    while rest.len() >= 16 {
        let word = |i: usize| u64::from(u32::from_le_bytes(rest[i..i + 4].try_into().unwrap()));
        let at_us = word(0) * 1_000_000 + if ns { word(4) / 1000 } else { word(4) };
        let len = word(8) as usize;
        let frame = rest.get(16..16 + len)?.to_vec();
        rest = &rest[16 + len..];
        let first = *first.get_or_insert(at_us);
        records.push(Record {
            at_us: at_us.saturating_sub(first),
            frame,
        });
    }
    Some(records)
}

/// One end of a connection: IPv4 address and port.
pub type End = ([u8; 4], u16);

/// A TCP segment or UDP datagram of a record, as the seeds need it.
pub struct Segment<'a> {
    /// Source.
    pub src: End,
    /// Destination.
    pub dst: End,
    /// 6 (TCP) or 17 (UDP).
    pub protocol: u8,
    /// TCP: sequence number, acknowledgment number, flags byte; UDP: zeros.
    pub seq: u32,
    /// TCP acknowledgment number.
    pub ack: u32,
    /// TCP flags (FIN 0x01, SYN 0x02, RST 0x04, PSH 0x08, ACK 0x10, URG 0x20).
    pub flags: u8,
    /// The transport payload.
    pub payload: &'a [u8],
}

/// The IPv4 TCP or UDP segment in `frame`, if it holds one.
pub fn segment(frame: &[u8]) -> Option<Segment<'_>> {
    let eth = EthernetFrame::new_checked(frame).ok()?;
    if eth.ethertype() != EthernetProtocol::Ipv4 {
        return None;
    }
    let ip = Ipv4Packet::new_checked(&frame[14..]).ok()?;
    let (src, dst) = (ip.src_addr().octets(), ip.dst_addr().octets());
    let header = usize::from(ip.header_len());
    let total = usize::from(ip.total_len());
    let l4 = frame.get(14 + header..14 + total)?;
    match ip.next_header() {
        IpProtocol::Tcp => {
            let tcp = TcpPacket::new_checked(l4).ok()?;
            let offset = usize::from(tcp.header_len());
            Some(Segment {
                src: (src, tcp.src_port()),
                dst: (dst, tcp.dst_port()),
                protocol: 6,
                seq: u32::from_be_bytes(l4[4..8].try_into().ok()?),
                ack: u32::from_be_bytes(l4[8..12].try_into().ok()?),
                flags: l4[13],
                payload: l4.get(offset..)?,
            })
        }
        IpProtocol::Udp => {
            let udp = UdpPacket::new_checked(l4).ok()?;
            Some(Segment {
                src: (src, udp.src_port()),
                dst: (dst, udp.dst_port()),
                protocol: 17,
                seq: 0,
                ack: 0,
                flags: 0,
                payload: l4.get(8..usize::from(udp.len()))?,
            })
        }
        _ => None,
    }
}

/// One TCP connection: to whom, and the bytes each way.
pub struct Connection {
    /// The end that answered the SYN.
    pub server: End,
    /// Client to server, in sequence order.
    pub upstream: Vec<u8>,
    /// Server to client, in sequence order.
    pub downstream: Vec<u8>,
}

/// A byte stream being reassembled: its first sequence number and the bytes by offset.
#[derive(Default)]
struct Stream {
    isn: Option<u32>,
    bytes: BTreeMap<u32, Vec<u8>>,
}

impl Stream {
    fn take(&mut self, seg: &Segment<'_>) {
        if seg.flags & 0x02 != 0 {
            self.isn = Some(seg.seq.wrapping_add(1));
        }
        if let (Some(isn), false) = (self.isn, seg.payload.is_empty()) {
            let offset = seg.seq.wrapping_sub(isn);
            // A window's worth past the start at most: anything else is a stray segment.
            if offset < 1 << 30 {
                let kept = self.bytes.entry(offset).or_default();
                if seg.payload.len() > kept.len() {
                    *kept = seg.payload.to_vec();
                }
            }
        }
    }

    /// The bytes from the start, up to the first gap.
    fn contiguous(&self) -> Vec<u8> {
        let mut out = Vec::new();
        for (&offset, bytes) in &self.bytes {
            let offset = offset as usize;
            if offset > out.len() {
                break;
            }
            if offset + bytes.len() > out.len() {
                out.extend_from_slice(&bytes[out.len() - offset..]);
            }
        }
        out
    }
}

/// The TCP connections of `records` that began in the capture (their SYN is in it), in the
/// order they began.
pub fn connections(records: &[Record]) -> Vec<Connection> {
    let mut order: Vec<(End, End)> = Vec::new();
    let mut streams: BTreeMap<(End, End), (Stream, Stream)> = BTreeMap::new();
    for r in records {
        let Some(seg) = segment(&r.frame) else {
            continue;
        };
        if seg.protocol != 6 {
            continue;
        }
        let (fwd, back) = ((seg.src, seg.dst), (seg.dst, seg.src));
        if seg.flags & 0x12 == 0x02 && !streams.contains_key(&fwd) {
            order.push(fwd);
            streams.insert(fwd, Default::default());
        }
        if let Some((up, _)) = streams.get_mut(&fwd) {
            up.take(&seg);
        } else if let Some((_, down)) = streams.get_mut(&back) {
            down.take(&seg);
        }
    }
    order
        .into_iter()
        .map(|key| {
            let (up, down) = &streams[&key];
            Connection {
                server: key.1,
                upstream: up.contiguous(),
                downstream: down.contiguous(),
            }
        })
        .collect()
}
