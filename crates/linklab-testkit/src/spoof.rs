//! Spoofed frames from hosts that do not exist: SYNs and UDP datagrams whose sources never
//! answer ARP, built whole (Ethernet, IPv4, TCP/UDP with their checksums) for a device at a
//! given MAC and address, to be written on the kernel side of its TAP
//! ([`super::device::Device::inject`]).

/// The device the frames go to.
#[derive(Clone, Copy, Debug)]
pub struct Target {
    /// Its MAC address.
    pub mac: [u8; 6],
    /// Its IPv4 address.
    pub ip: [u8; 4],
}

/// The Internet checksum of `chunks` laid end to end.
pub fn checksum(chunks: &[&[u8]]) -> u16 {
    let mut sum = 0u32;
    for c in chunks {
        for pair in c.chunks(2) {
            let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
            sum += u32::from(word);
        }
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

/// An Ethernet + IPv4 frame from `src` (an address nobody answers ARP for) to the device.
pub fn ipv4_frame(to: Target, src: [u8; 4], protocol: u8, l4: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    f.extend_from_slice(&to.mac);
    f.extend_from_slice(&[0x02, 0x66, 0x66, src[1], src[2], src[3]]);
    f.extend_from_slice(&[0x08, 0x00]);
    let total = (20 + l4.len()) as u16;
    let mut ip = vec![0x45, 0, 0, 0, 0, 1, 0x40, 0, 64, protocol, 0, 0];
    ip[2..4].copy_from_slice(&total.to_be_bytes());
    ip.extend_from_slice(&src);
    ip.extend_from_slice(&to.ip);
    let c = checksum(&[&ip]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    f.extend_from_slice(&ip);
    f.extend_from_slice(l4);
    f
}

fn pseudo(to: Target, src: [u8; 4], protocol: u8, len: usize) -> Vec<u8> {
    let mut p = src.to_vec();
    p.extend_from_slice(&to.ip);
    p.extend_from_slice(&[0, protocol]);
    p.extend_from_slice(&(len as u16).to_be_bytes());
    p
}

/// A TCP SYN from `src:src_port` to the device's `dst_port`.
pub fn spoofed_syn(to: Target, src: [u8; 4], src_port: u16, dst_port: u16) -> Vec<u8> {
    let mut tcp = vec![0u8; 20];
    tcp[0..2].copy_from_slice(&src_port.to_be_bytes());
    tcp[2..4].copy_from_slice(&dst_port.to_be_bytes());
    tcp[4..8].copy_from_slice(&0x1234_5678u32.to_be_bytes());
    tcp[12] = 5 << 4;
    tcp[13] = 0x02; // SYN
    tcp[14..16].copy_from_slice(&64240u16.to_be_bytes());
    let c = checksum(&[&pseudo(to, src, 6, tcp.len()), &tcp]);
    tcp[16..18].copy_from_slice(&c.to_be_bytes());
    ipv4_frame(to, src, 6, &tcp)
}

/// A UDP datagram from `src:src_port` to the device's `dst_port`.
pub fn spoofed_udp(
    to: Target,
    src: [u8; 4],
    src_port: u16,
    dst_port: u16,
    payload: &[u8],
) -> Vec<u8> {
    let mut udp = vec![0u8; 8];
    udp[0..2].copy_from_slice(&src_port.to_be_bytes());
    udp[2..4].copy_from_slice(&dst_port.to_be_bytes());
    udp[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    udp.extend_from_slice(payload);
    let c = checksum(&[&pseudo(to, src, 17, udp.len()), &udp]);
    udp[6..8].copy_from_slice(&c.to_be_bytes());
    ipv4_frame(to, src, 17, &udp)
}

/// A frame to an IPv6 multicast group (MLDv2 routers, 33:33:00:00:00:16), as a host sends
/// after its link comes up: a device's MAC that joined no group filters it.
pub fn ipv6_multicast() -> Vec<u8> {
    let mut f = vec![0u8; 60];
    f[..6].copy_from_slice(&[0x33, 0x33, 0, 0, 0, 0x16]);
    f[6..12].copy_from_slice(&[0x02, 0x66, 0x66, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x86, 0xdd]);
    f[14] = 0x60; // IPv6
    f
}

/// The TCP flags of `frame` if it is an IPv4 TCP segment from port `from` to port `to`.
pub fn tcp_flags(frame: &[u8], from: u16, to: u16) -> Option<u8> {
    let ip = frame.get(14..)?;
    if frame.get(12..14)? != [0x08, 0x00] || *ip.get(9)? != 6 {
        return None;
    }
    let tcp = ip.get(usize::from(ip[0] & 0x0f) * 4..)?;
    let port = |at: usize| Some(u16::from_be_bytes([*tcp.get(at)?, *tcp.get(at + 1)?]));
    (port(0)? == from && port(2)? == to).then(|| tcp.get(13).copied())?
}
