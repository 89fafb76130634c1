//! [`TcpOps`] and [`UdpOps`] on smoltcp 0.14's sockets (feature `smoltcp`).

use smoltcp::socket::tcp;
#[cfg(feature = "udp")]
use smoltcp::socket::udp;
use smoltcp::time::Instant;
use smoltcp::wire::IpAddress;
#[cfg(feature = "udp")]
use smoltcp::wire::IpEndpoint;

#[cfg(feature = "udp")]
use super::UdpOps;
use super::{TcpOps, TcpState};
use crate::rules::Peer;
use crate::time::Micros;

/// A time on smoltcp's clock in the apps' microseconds (one before the clock's 0 is 0).
pub(crate) fn micros(t: Instant) -> Micros {
    t.total_micros().max(0) as Micros
}

/// The apps' microseconds on smoltcp's clock (past its largest: its largest).
pub(crate) fn instant(t: Micros) -> Instant {
    Instant::from_micros(t.min(i64::MAX as u64) as i64)
}

impl From<tcp::State> for TcpState {
    fn from(s: tcp::State) -> TcpState {
        match s {
            tcp::State::Closed => TcpState::Closed,
            tcp::State::Listen => TcpState::Listen,
            tcp::State::SynSent => TcpState::SynSent,
            tcp::State::SynReceived => TcpState::SynReceived,
            tcp::State::Established => TcpState::Established,
            tcp::State::FinWait1 => TcpState::FinWait1,
            tcp::State::FinWait2 => TcpState::FinWait2,
            tcp::State::CloseWait => TcpState::CloseWait,
            tcp::State::Closing => TcpState::Closing,
            tcp::State::LastAck => TcpState::LastAck,
            tcp::State::TimeWait => TcpState::TimeWait,
        }
    }
}

impl TcpOps for tcp::Socket<'_> {
    fn state(&self) -> TcpState {
        tcp::Socket::state(self).into()
    }
    fn can_recv(&self) -> bool {
        tcp::Socket::can_recv(self)
    }
    fn may_recv(&self) -> bool {
        tcp::Socket::may_recv(self)
    }
    fn can_send(&self) -> bool {
        tcp::Socket::can_send(self)
    }
    fn may_send(&self) -> bool {
        tcp::Socket::may_send(self)
    }
    fn queues(&self) -> (usize, usize) {
        (self.recv_queue(), self.send_queue())
    }
    fn send_room(&self) -> usize {
        self.send_capacity() - self.send_queue()
    }
    fn recv(&mut self, f: impl FnOnce(&[u8]) -> usize) -> usize {
        tcp::Socket::recv(self, |buf| {
            let n = f(buf);
            (n, n)
        })
        .unwrap_or(0)
    }
    fn send(&mut self, f: impl FnOnce(&mut [u8]) -> usize) -> usize {
        tcp::Socket::send(self, |buf| {
            let n = f(buf);
            (n, n)
        })
        .unwrap_or(0)
    }
    fn recv_slice(&mut self, buf: &mut [u8]) -> usize {
        tcp::Socket::recv_slice(self, buf).unwrap_or(0)
    }
    fn send_slice(&mut self, data: &[u8]) -> usize {
        tcp::Socket::send_slice(self, data).unwrap_or(0)
    }
    fn listen(&mut self, port: u16) -> bool {
        tcp::Socket::listen(self, port).is_ok()
    }
    fn close(&mut self) {
        tcp::Socket::close(self)
    }
    fn abort(&mut self) {
        tcp::Socket::abort(self)
    }
    fn rst_pending(&self) -> bool {
        tcp::Socket::state(self) == tcp::State::Closed && self.remote_endpoint().is_some()
    }
    fn remote_is_ipv6(&self) -> bool {
        self.remote_endpoint()
            .is_some_and(|e| !matches!(e.addr, IpAddress::Ipv4(_)))
    }
    fn peer(&self) -> Option<Peer> {
        let e = self.remote_endpoint()?;
        #[allow(irrefutable_let_patterns)]
        let IpAddress::Ipv4(a) = e.addr
        else {
            return None;
        };
        Some(Peer {
            addr: a.octets(),
            port: e.port,
        })
    }
    fn congestion_control(&self) -> &'static str {
        let cc = tcp::Socket::congestion_control(self);
        if cc == tcp::CongestionControl::None {
            // Always, without smoltcp's reno/cubic features (a device image): what follows
            // is then dead code, and its formatting (0.6 KB on a Cortex-M) is left out.
            return "none";
        }
        // The variants other than None exist only with smoltcp's reno/cubic features: name
        // them by their Debug text, so this compiles either way.
        let mut name = heapless::String::<16>::new();
        let _ = core::fmt::write(&mut name, format_args!("{cc:?}"));
        match name.as_str() {
            "None" => "none",
            "Reno" => "reno",
            "Cubic" => "cubic",
            _ => "unknown",
        }
    }
}

#[cfg(feature = "udp")]
impl UdpOps for udp::Socket<'_> {
    type Endpoint = IpEndpoint;
    fn is_open(&self) -> bool {
        udp::Socket::is_open(self)
    }
    fn bind(&mut self, port: u16) -> bool {
        udp::Socket::bind(self, port).is_ok()
    }
    fn recv(&mut self, f: impl FnOnce(&[u8], IpEndpoint)) -> bool {
        match udp::Socket::recv(self) {
            Ok((data, meta)) => {
                f(data, meta.endpoint);
                true
            }
            Err(_) => false,
        }
    }
    fn send(&mut self, len: usize, to: IpEndpoint, f: impl FnOnce(&mut [u8]) -> usize) -> bool {
        self.send_with(len, to, f).is_ok()
    }
}
