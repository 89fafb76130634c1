//! The socket lifetime rules every home of the apps applies, without a stack's types: the
//! timeouts, and the look at an arriving frame that tells a SYN for a service (so a socket
//! can be freed for it before the stack answers). When a connection last made progress and
//! who gives way to a new client are [`crate::evict`]'s. The smoltcp side
//! (`crate::lifetime`, `crate::apps`) and the embassy-net side (`crate::embassy`) use these.

/// Every TCP socket of the apps gets this stack timeout: a connection whose peer sends
/// nothing for this long while we wait for it (SYN-RECEIVED, unacknowledged data,
/// FIN-WAIT) is aborted.
pub const TCP_TIMEOUT_MS: u64 = 10_000;

/// Keep-alive interval of every TCP socket of the apps: a live but quiet peer answers the
/// probes, so the TCP timeout only ends connections to peers that are gone, and quiet live
/// ones are left to the application idle timeout.
pub const TCP_KEEP_ALIVE_MS: u64 = 3_000;

/// The default application idle timeout of HTTP and TCP echo connections: a connection on
/// which nothing moved for this long is reset.
pub const IDLE_TIMEOUT_MS: u64 = 10_000;

/// How long a connection reset for idleness or evicted for a new client may take to get its
/// RST out before its socket is reused anyway (a peer that vanished never gets it).
pub const RST_GRACE_MS: u64 = 500;

/// UDP echo replies that have not left for this long wait for an ARP answer that will not
/// come (a spoofed or vanished requester): they are dropped so they cannot block the
/// socket's send buffer for everyone else.
pub const STUCK_REPLY_MS: u64 = 1_000;

/// Reads a big-endian u16 at `at` of `b`, if it is there.
fn be16(b: &[u8], at: usize) -> Option<u16> {
    b.get(at..at + 2).map(|v| u16::from_be_bytes([v[0], v[1]]))
}

/// The IPv4 protocol number and payload of `frame` if it is an Ethernet II / IPv4 packet's
/// first fragment (a later fragment carries no transport header); None for anything else.
/// Reads the few fields it needs in place, checking every length it relies on.
fn ipv4_payload(frame: &[u8]) -> Option<(u8, &[u8])> {
    const ETHERNET_HEADER: usize = 14;
    if be16(frame, 12)? != 0x0800 {
        return None;
    }
    let ip = frame.get(ETHERNET_HEADER..)?;
    let version_ihl = *ip.first()?;
    let header_len = usize::from(version_ihl & 0x0f) * 4;
    let total_len = usize::from(be16(ip, 2)?);
    if version_ihl >> 4 != 4 || header_len < 20 || total_len < header_len || total_len > ip.len() {
        return None;
    }
    if be16(ip, 6)? & 0x1fff != 0 {
        return None;
    }
    Some((*ip.get(9)?, ip.get(header_len..total_len)?))
}

/// IPv4 protocol numbers of the transports read here.
const TCP: u8 = 6;
const UDP: u8 = 17;
/// The fixed part of each one's header.
const TCP_HEADER: usize = 20;
const UDP_HEADER: usize = 8;

/// The transport header and payload of `frame` if it is an Ethernet II / IPv4 packet of
/// `protocol` (first fragment) with at least `header` bytes; None for anything else.
fn transport(frame: &[u8], protocol: u8, header: usize) -> Option<&[u8]> {
    let (p, payload) = ipv4_payload(frame)?;
    (p == protocol && payload.len() >= header).then_some(payload)
}

/// The destination port of `frame` if it is an Ethernet II / IPv4 / TCP segment opening a
/// connection (SYN without ACK or RST, first fragment); None for anything else. Any bytes
/// may be wrong; nothing panics. Reads the few fields it needs in place, checking every
/// length it relies on (so it needs no stack's wire types: the smoltcp 0.14 main loop and
/// an embassy-net driver, smoltcp 0.13 inside, share it).
pub fn syn_port(frame: &[u8]) -> Option<u16> {
    let tcp = transport(frame, TCP, TCP_HEADER)?;
    let data_offset = usize::from(*tcp.get(12)? >> 4) * 4;
    if data_offset < TCP_HEADER || data_offset > tcp.len() {
        return None;
    }
    let flags = *tcp.get(13)?;
    const FIN_RST_SYN_ACK: (u8, u8, u8) = (0x04, 0x02, 0x10);
    let (rst, syn, ack) = FIN_RST_SYN_ACK;
    if flags & syn == 0 || flags & (rst | ack) != 0 {
        return None;
    }
    be16(tcp, 2)
}

/// A device's next received frame as the SYN rule sees it (the look
/// [`crate::apps::DeviceApps::poll_ingress`] takes before each frame it lets in).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NextFrame {
    /// No frame waits: ingress ends for this pass. A frame queued after the look (by an
    /// interrupt) waits for the next pass's look, so no SYN passes the rule unseen: one
    /// did, and got the stack's RST while both HTTP sockets were half-open.
    Empty,
    /// A frame that opens no TCP connection, or a device that cannot show its next frame
    /// (its SYNs then get no socket freed for them).
    Other,
    /// A SYN opening a connection to this port ([`syn_port`]).
    Syn(u16),
}

impl NextFrame {
    /// What `frame`, the next one the stack will receive, is to the SYN rule.
    pub fn of(frame: &[u8]) -> Self {
        syn_port(frame).map_or(NextFrame::Other, NextFrame::Syn)
    }
}

/// The destination port of `frame` if it is an Ethernet II / IPv4 / TCP segment of any kind
/// (first fragment, whole 20-byte header); None for anything else. Any bytes may be wrong;
/// nothing panics.
pub fn tcp_port(frame: &[u8]) -> Option<u16> {
    be16(transport(frame, TCP, TCP_HEADER)?, 2)
}

/// A TCP peer on IPv4: its address and port, as a SYN-ACK to it names them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Peer {
    /// The peer's IPv4 address.
    pub addr: [u8; 4],
    /// The peer's TCP port.
    pub port: u16,
}

/// Our port and the peer if `frame` is an Ethernet II / IPv4 / TCP SYN-ACK (SYN and ACK, no
/// RST; first fragment): the answer to a peer's SYN, leaving. Once it has left, the peer may
/// believe it is connected (its side completes on receipt), so the half-open socket is no
/// longer free to take ([`crate::evict`]). None for anything else; any bytes may be wrong,
/// nothing panics.
pub fn syn_ack(frame: &[u8]) -> Option<(u16, Peer)> {
    let tcp = transport(frame, TCP, TCP_HEADER)?;
    const SYN_ACK: u8 = 0x12;
    const RST: u8 = 0x04;
    if tcp.get(13)? & (SYN_ACK | RST) != SYN_ACK {
        return None;
    }
    // The destination address (the peer's), in the whole IPv4 header ipv4_payload found.
    let addr = frame.get(30..34)?.try_into().ok()?;
    Some((
        be16(tcp, 0)?,
        Peer {
            addr,
            port: be16(tcp, 2)?,
        },
    ))
}

/// The destination port of `frame` if it is an Ethernet II / IPv4 / UDP datagram (first
/// fragment, whole UDP header); None for anything else. Any bytes may be wrong; nothing
/// panics.
pub fn udp_port(frame: &[u8]) -> Option<u16> {
    be16(transport(frame, UDP, UDP_HEADER)?, 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn segment(flags: u8, port: u16) -> [u8; 54] {
        let mut f = [0u8; 54];
        f[12..14].copy_from_slice(&[0x08, 0x00]);
        f[14] = 0x45; // IPv4, 20-byte header
        f[16..18].copy_from_slice(&40u16.to_be_bytes()); // total length
        f[23] = 6;
        f[46] = 5 << 4; // TCP data offset: 20 bytes
        f[36..38].copy_from_slice(&port.to_be_bytes());
        f[47] = flags;
        f
    }

    #[test]
    fn only_a_connection_opening_syn_names_its_port() {
        assert_eq!(syn_port(&segment(0x02, 80)), Some(80));
        assert_eq!(syn_port(&segment(0x12, 80)), None); // SYN-ACK
        assert_eq!(syn_port(&segment(0x10, 80)), None); // ACK
        assert_eq!(syn_port(&segment(0x06, 80)), None); // SYN+RST
        let mut udp = segment(0x02, 80);
        udp[23] = 17;
        assert_eq!(syn_port(&udp), None);
        let mut frag = segment(0x02, 80);
        frag[21] = 1;
        assert_eq!(syn_port(&frag), None);
        let mut options = segment(0x02, 80);
        options[46] = 6 << 4; // data offset past the segment's end
        assert_eq!(syn_port(&options), None);
        for len in 0..54 {
            assert_eq!(syn_port(&segment(0x02, 80)[..len]), None, "{len}");
        }
        // Trailing Ethernet padding after the IPv4 total length is fine.
        let mut padded = [0u8; 64];
        padded[..54].copy_from_slice(&segment(0x02, 7));
        assert_eq!(syn_port(&padded), Some(7));
    }

    #[test]
    fn every_whole_tcp_header_names_its_port() {
        for flags in [0x02, 0x10, 0x11, 0x18, 0x04] {
            assert_eq!(tcp_port(&segment(flags, 5201)), Some(5201), "{flags:#x}");
        }
        let mut udp = segment(0x10, 5201);
        udp[23] = 17;
        assert_eq!(tcp_port(&udp), None);
        let mut frag = segment(0x10, 5201);
        frag[21] = 1;
        assert_eq!(tcp_port(&frag), None);
        let mut short = segment(0x10, 5201);
        short[16..18].copy_from_slice(&39u16.to_be_bytes()); // 19 bytes of TCP header
        assert_eq!(tcp_port(&short), None);
        for len in 0..54 {
            assert_eq!(tcp_port(&segment(0x10, 5201)[..len]), None, "{len}");
        }
    }

    #[test]
    fn only_a_syn_ack_names_its_peer() {
        let mut f = segment(0x12, 80);
        f[34..36].copy_from_slice(&80u16.to_be_bytes()); // source port: ours
        f[36..38].copy_from_slice(&40000u16.to_be_bytes()); // destination: the peer's
        f[30..34].copy_from_slice(&[198, 18, 0, 1]);
        let peer = Peer {
            addr: [198, 18, 0, 1],
            port: 40000,
        };
        assert_eq!(syn_ack(&f), Some((80, peer)));
        for flags in [0x02, 0x10, 0x16, 0x14, 0x11] {
            let mut g = f;
            g[47] = flags;
            assert_eq!(syn_ack(&g), None, "{flags:#x}");
        }
        // The FIN on a SYN-ACK changes nothing: the peer was still answered.
        let mut fin = f;
        fin[47] = 0x13;
        assert_eq!(syn_ack(&fin), Some((80, peer)));
        for len in 0..54 {
            assert_eq!(syn_ack(&f[..len]), None, "{len}");
        }
        let mut udp = f;
        udp[23] = 17;
        assert_eq!(syn_ack(&udp), None);
    }

    #[test]
    fn only_a_whole_udp_header_names_its_port() {
        let mut udp = segment(0, 7);
        udp[23] = 17;
        udp[16..18].copy_from_slice(&28u16.to_be_bytes()); // IPv4 + 8-byte UDP header
        assert_eq!(udp_port(&udp), Some(7));
        assert_eq!(syn_port(&udp), None);
        assert_eq!(udp_port(&segment(0x02, 7)), None); // TCP
        let mut frag = udp;
        frag[21] = 1;
        assert_eq!(udp_port(&frag), None);
        let mut short = udp;
        short[16..18].copy_from_slice(&27u16.to_be_bytes());
        assert_eq!(udp_port(&short), None);
        for len in 0..42 {
            assert_eq!(udp_port(&udp[..len]), None, "{len}");
        }
    }
}
