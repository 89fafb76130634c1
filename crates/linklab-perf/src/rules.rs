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

/// The destination port of `frame` if it is an Ethernet II / IPv4 / TCP segment opening a
/// connection (SYN without ACK or RST, first fragment); None for anything else. Any bytes
/// may be wrong; nothing panics. Reads the few fields it needs in place, checking every
/// length it relies on (so it needs no stack's wire types: the smoltcp 0.14 main loop and
/// an embassy-net driver, smoltcp 0.13 inside, share it).
pub fn syn_port(frame: &[u8]) -> Option<u16> {
    const ETHERNET_HEADER: usize = 14;
    let be16 = |b: &[u8], at: usize| b.get(at..at + 2).map(|v| u16::from_be_bytes([v[0], v[1]]));
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
    // Protocol TCP, fragment offset 0 (a later fragment carries no TCP header).
    if *ip.get(9)? != 6 || be16(ip, 6)? & 0x1fff != 0 {
        return None;
    }
    let tcp = ip.get(header_len..total_len)?;
    let data_offset = usize::from(*tcp.get(12)? >> 4) * 4;
    if data_offset < 20 || data_offset > tcp.len() {
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
}
