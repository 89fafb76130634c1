//! Addresses and listening sockets as iperf3 and iperf 2 both have them: IPv4-mapped
//! addresses written as IPv4, and a socket bound dual-stack unless an address is given.

use std::io;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};

use socket2::{Domain, Socket, Type};

/// `ip` as iperf prints it: an IPv4-mapped IPv6 address as plain IPv4.
pub fn plain(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(IpAddr::V6(v6), IpAddr::V4),
        v4 => v4,
    }
}

/// The address of `addr` as iperf prints it ([`plain`]).
pub fn plain_ip(addr: &SocketAddr) -> IpAddr {
    plain(addr.ip())
}

/// A socket of type `ty` bound to `bind` (or dual-stack `[::]`) at `port`; a stream
/// socket reuses the address, as iperf's listeners do.
pub fn bound(bind: Option<IpAddr>, port: u16, ty: Type) -> io::Result<Socket> {
    let addr = SocketAddr::new(bind.unwrap_or(IpAddr::V6(Ipv6Addr::UNSPECIFIED)), port);
    let s = Socket::new(Domain::for_address(addr), ty, None)?;
    if bind.is_none() {
        s.set_only_v6(false)?;
    }
    if ty == Type::STREAM {
        s.set_reuse_address(true)?;
    }
    s.bind(&addr.into())?;
    Ok(s)
}
