//! ICMP echo as an rtt transport: each packet is the payload of one echo request, and the
//! echo reply gives it back, so the same packets, histograms and checks as the UDP echo apply.
//!
//! The socket is an unprivileged ICMP "ping" socket (`SOCK_DGRAM`, `IPPROTO_ICMP`: the kernel
//! picks the identifier and hands back only our replies) where `net.ipv4.ping_group_range`
//! allows it, else a raw socket (root or `CAP_NET_RAW`), whose replies are filtered here by
//! identifier. The echo header is written and the reply parsed by smoltcp's wire types
//! (`Icmpv4Packet`, `Ipv4Packet`): no parser of our own. IPv4 only.

use std::io::{self, Read, Write};
use std::net::SocketAddr;
use std::ops::Range;
use std::time::Duration;

use smoltcp::phy::ChecksumCapabilities;
use smoltcp::wire::{Icmpv4Message, Icmpv4Packet, Icmpv4Repr, Ipv4Packet};
use socket2::{Domain, Protocol, Socket, Type};

/// Bytes of the ICMP echo header before the payload.
const ECHO_HEADER_LEN: usize = 8;

/// An ICMPv4 echo socket connected to one peer.
pub struct IcmpSocket {
    sock: Socket,
    raw: bool,
    ident: u16,
    seq: u16,
    out: Vec<u8>,
}

impl IcmpSocket {
    /// Opens a ping socket to `peer` (a raw one when ping sockets are not allowed).
    pub fn open(peer: SocketAddr) -> anyhow::Result<IcmpSocket> {
        if !peer.is_ipv4() {
            anyhow::bail!("ICMP echo over IPv6 is not supported");
        }
        let (sock, raw) = match Socket::new(Domain::IPV4, Type::DGRAM, Some(Protocol::ICMPV4)) {
            Ok(s) => (s, false),
            Err(_) => match Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4)) {
                Ok(s) => (s, true),
                Err(e) => anyhow::bail!(
                    "cannot open an ICMP socket ({e}): needs root (CAP_NET_RAW) or a group in net.ipv4.ping_group_range"
                ),
            },
        };
        sock.connect(&SocketAddr::new(peer.ip(), 0).into())?;
        Ok(IcmpSocket {
            sock,
            raw,
            ident: std::process::id() as u16 ^ 0x4c4c,
            seq: 0,
            out: Vec::new(),
        })
    }

    /// Another handle on the same socket (the sender's).
    pub fn try_clone(&self) -> io::Result<IcmpSocket> {
        Ok(IcmpSocket {
            sock: self.sock.try_clone()?,
            raw: self.raw,
            ident: self.ident,
            seq: self.seq,
            out: Vec::new(),
        })
    }

    /// Sets how long one receive waits.
    pub fn set_read_timeout(&self, t: Option<Duration>) -> io::Result<()> {
        self.sock.set_read_timeout(t)
    }

    /// Sends `payload` as one echo request.
    pub fn send(&mut self, payload: &[u8]) -> io::Result<()> {
        let repr = Icmpv4Repr::EchoRequest {
            ident: self.ident,
            seq_no: self.seq,
            data: payload,
        };
        self.seq = self.seq.wrapping_add(1);
        self.out.clear();
        self.out.resize(repr.buffer_len(), 0);
        let mut packet = Icmpv4Packet::new_unchecked(&mut self.out[..]);
        repr.emit(&mut packet, &ChecksumCapabilities::default());
        (&self.sock).write(&self.out).map(|_| ())
    }

    /// Receives one datagram into `buf`; returns where the payload of an echo reply to us
    /// lies in it (`None` for anything else: other ICMP messages, other pingers' replies).
    pub fn recv(&mut self, buf: &mut [u8]) -> io::Result<Option<Range<usize>>> {
        let n = (&self.sock).read(buf)?;
        Ok(self.echo_payload(&buf[..n]))
    }

    /// The payload range of an echo reply for this socket in a received datagram.
    fn echo_payload(&self, datagram: &[u8]) -> Option<Range<usize>> {
        let (icmp, offset) = if self.raw {
            let ip = Ipv4Packet::new_checked(datagram).ok()?;
            let start = usize::from(ip.header_len());
            let end = usize::from(ip.total_len()).min(datagram.len());
            (datagram.get(start..end)?, start)
        } else {
            (datagram, 0)
        };
        let packet = Icmpv4Packet::new_checked(icmp).ok()?;
        if packet.msg_type() != Icmpv4Message::EchoReply
            || (self.raw && (packet.echo_ident() != self.ident || !packet.verify_checksum()))
        {
            return None;
        }
        Some(offset + ECHO_HEADER_LEN..offset + icmp.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn socket(raw: bool) -> IcmpSocket {
        let sock = Socket::new(Domain::IPV4, Type::DGRAM, None).unwrap();
        IcmpSocket {
            sock,
            raw,
            ident: 7,
            seq: 0,
            out: Vec::new(),
        }
    }

    fn echo(kind: Icmpv4Repr<'_>) -> Vec<u8> {
        let mut out = vec![0; kind.buffer_len()];
        kind.emit(
            &mut Icmpv4Packet::new_unchecked(&mut out[..]),
            &ChecksumCapabilities::default(),
        );
        out
    }

    #[test]
    fn finds_the_payload_of_our_replies_only() {
        let reply = echo(Icmpv4Repr::EchoReply {
            ident: 7,
            seq_no: 1,
            data: b"LLpayload",
        });
        assert_eq!(socket(false).echo_payload(&reply), Some(8..17));
        // Raw: behind an IPv4 header, and only with our identifier and a good checksum.
        let mut ip = vec![
            0x45, 0, 0, 0, 0, 0, 0, 0, 64, 1, 0, 0, 198, 18, 0, 2, 198, 18, 0, 1,
        ];
        let total = (ip.len() + reply.len()) as u16;
        ip[2..4].copy_from_slice(&total.to_be_bytes());
        let datagram = [ip.clone(), reply.clone()].concat();
        assert_eq!(socket(true).echo_payload(&datagram), Some(28..37));
        let other = echo(Icmpv4Repr::EchoReply {
            ident: 8,
            seq_no: 1,
            data: b"LLpayload",
        });
        assert_eq!(
            socket(true).echo_payload(&[ip.clone(), other].concat()),
            None
        );
        let mut bad = datagram.clone();
        bad[30] ^= 1;
        assert_eq!(socket(true).echo_payload(&bad), None);
        // A request (ours, looped back) and garbage are not replies.
        let request = echo(Icmpv4Repr::EchoRequest {
            ident: 7,
            seq_no: 1,
            data: b"x",
        });
        assert_eq!(socket(false).echo_payload(&request), None);
        assert_eq!(socket(false).echo_payload(b"\x00"), None);
        assert_eq!(socket(true).echo_payload(&datagram[..10]), None);
    }

    proptest::proptest! {
        /// Whatever arrives — truncated headers, lengths that lie, any type — the parser
        /// never panics, and a payload it finds lies inside the datagram, after an echo
        /// header.
        #[test]
        fn any_datagram_is_parsed_without_panic(
            raw: bool,
            datagram in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..96),
        ) {
            if let Some(r) = socket(raw).echo_payload(&datagram) {
                proptest::prop_assert!(r.start >= ECHO_HEADER_LEN && r.start <= r.end);
                proptest::prop_assert!(r.end <= datagram.len());
            }
        }

        /// A good raw reply with bytes changed and its tail cut: the same, and nothing is
        /// taken for our reply unless its identifier and checksum still say so.
        #[test]
        fn damaged_raw_replies_are_parsed_without_panic(
            flips in proptest::collection::vec((0usize..37, 1u8..=255), 0..4),
            keep in 0usize..=37,
        ) {
            let reply = echo(Icmpv4Repr::EchoReply { ident: 7, seq_no: 1, data: b"LLpayload" });
            let mut ip = vec![0x45, 0, 0, 37, 0, 0, 0, 0, 64, 1, 0, 0, 198, 18, 0, 2, 198, 18, 0, 1];
            ip.extend_from_slice(&reply);
            for (at, x) in flips {
                ip[at] ^= x;
            }
            ip.truncate(keep);
            if let Some(r) = socket(true).echo_payload(&ip) {
                proptest::prop_assert!(r.end <= ip.len() && r.start <= r.end);
                let icmp = Icmpv4Packet::new_checked(&ip[r.start - ECHO_HEADER_LEN..r.end]).unwrap();
                proptest::prop_assert!(icmp.echo_ident() == 7 && icmp.verify_checksum());
            }
        }
    }
}
