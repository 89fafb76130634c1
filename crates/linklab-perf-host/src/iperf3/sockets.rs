//! Sockets with iperf3's options, made with socket2: the client's control and data
//! connections (bound with `-B`/`--cport`/`--bind-dev`, `-w`, `-M`, `-N`, `-S`, `-L`,
//! `--fq-rate`, `-C`, `--snd-timeout`, `--dont-fragment`) and the server's listeners
//! (dual-stack unless `-4`/`-6`/`-B` say otherwise). Failures carry the `i_errno` iperf3
//! reports for them.

use std::io;
use std::net::{Ipv4Addr, Ipv6Addr, SocketAddr, SocketAddrV6, TcpListener, TcpStream, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::Duration;

use socket2::{Domain, Protocol, SockAddr, SockRef, Socket, Type};

use super::error::Error;
use crate::sys;
use linklab_perf::iperf::errors::i_errno;

/// Which address family a test may use (`-4`, `-6`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Family {
    /// Either (the server listens dual-stack).
    #[default]
    Any,
    /// IPv4 only.
    V4,
    /// IPv6 only.
    V6,
}

impl Family {
    /// True if `addr` may be used.
    pub fn allows(self, addr: &SocketAddr) -> bool {
        match self {
            Family::Any => true,
            Family::V4 => addr.is_ipv4(),
            Family::V6 => addr.is_ipv6(),
        }
    }
}

/// The socket options of a test's data streams (and, where iperf3 sets them there, its
/// control connection).
#[derive(Clone, Debug, Default)]
pub struct StreamOptions {
    /// SO_RCVBUF and SO_SNDBUF (`-w`), 0 = system default.
    pub window: u32,
    /// TCP_MAXSEG (`-M`), 0 = system default.
    pub mss: u32,
    /// TCP_NODELAY (`-N`).
    pub nodelay: bool,
    /// IP_TOS / IPV6_TCLASS (`-S`, `--dscp`).
    pub tos: u8,
    /// IPv6 flow label (`-L`), client only.
    pub flowlabel: u32,
    /// SO_MAX_PACING_RATE in bit/s (`--fq-rate`), 0 = none.
    pub fq_rate_bps: u64,
    /// TCP congestion control (`-C`).
    pub congestion: Option<String>,
    /// TCP_USER_TIMEOUT (`--snd-timeout`).
    pub snd_timeout: Option<Duration>,
    /// IP_MTU_DISCOVER = DO on IPv4 UDP streams (`--dont-fragment`).
    pub dont_fragment: bool,
    /// SO_BINDTODEVICE (`--bind-dev`, `-B addr%dev`).
    pub bind_dev: Option<String>,
}

/// The buffer sizes a stream ended up with (iperf3 reports them in `-J`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct BufferSizes {
    /// What `-w` asked for (0: nothing).
    pub requested: u32,
    /// SO_SNDBUF as the kernel set it.
    pub sndbuf: u32,
    /// SO_RCVBUF as the kernel set it.
    pub rcvbuf: u32,
}

/// An error carrying iperf3's `i_errno` and the OS error behind it.
pub(super) fn iperf_err(code: i32, e: &io::Error) -> Error {
    Error::Iperf {
        code,
        errno: e.raw_os_error().unwrap_or(0),
    }
}

fn domain_of(addr: &SocketAddr) -> Domain {
    if addr.is_ipv4() {
        Domain::IPV4
    } else {
        Domain::IPV6
    }
}

/// The wildcard address of `target`'s family with `port`.
fn any_of(target: &SocketAddr, port: u16) -> SocketAddr {
    if target.is_ipv4() {
        SocketAddr::from((Ipv4Addr::UNSPECIFIED, port))
    } else {
        SocketAddr::from((Ipv6Addr::UNSPECIFIED, port))
    }
}

/// Binds `s` like iperf3's `create_socket`: to the device, then to the local address
/// and/or port, when given.
fn bind_local(
    s: &Socket,
    target: &SocketAddr,
    local: Option<std::net::IpAddr>,
    port: u16,
    dev: Option<&str>,
) -> Result<(), Error> {
    if let Some(dev) = dev {
        s.bind_device(Some(dev.as_bytes()))
            .map_err(|e| iperf_err(143, &e))?;
    }
    if local.is_some() || port != 0 {
        let addr = match local {
            Some(ip) => SocketAddr::new(ip, port),
            None => any_of(target, port),
        };
        s.bind(&addr.into())
            .map_err(|e| iperf_err(i_errno_connect_for(port), &e))?;
    }
    Ok(())
}

/// iperf3 reports a failed bind of the control connection as "unable to connect to
/// server" and of a data stream as "unable to connect stream".
fn i_errno_connect_for(port: u16) -> i32 {
    if port == 0 {
        103
    } else {
        203
    }
}

/// Sets SO_RCVBUF and SO_SNDBUF to `window` (if any) and reads back what the kernel made
/// of them; fails like iperf3 when the kernel gave less than asked for.
pub(super) fn set_buffers(s: &SockRef<'_>, window: u32) -> Result<BufferSizes, Error> {
    if window != 0 {
        s.set_recv_buffer_size(window as usize)
            .map_err(|e| iperf_err(i_errno::SET_BUF, &e))?;
        s.set_send_buffer_size(window as usize)
            .map_err(|e| iperf_err(i_errno::SET_BUF, &e))?;
    }
    let sizes = BufferSizes {
        requested: window,
        sndbuf: s
            .send_buffer_size()
            .map_err(|e| iperf_err(i_errno::SET_BUF, &e))? as u32,
        rcvbuf: s
            .recv_buffer_size()
            .map_err(|e| iperf_err(i_errno::SET_BUF, &e))? as u32,
    };
    if window > sizes.sndbuf || window > sizes.rcvbuf {
        return Err(Error::Iperf {
            code: i_errno::SET_BUF2,
            errno: 0,
        });
    }
    Ok(sizes)
}

/// `-N`, `-M` and `-w` on a TCP socket before it connects or listens (iperf3's order);
/// returns the buffer sizes the kernel set.
fn set_tcp_options(r: &SockRef<'_>, opts: &StreamOptions) -> Result<BufferSizes, Error> {
    if opts.nodelay {
        r.set_nodelay(true)
            .map_err(|e| iperf_err(i_errno::SET_NODELAY, &e))?;
    }
    if opts.mss != 0 {
        r.set_mss(opts.mss)
            .map_err(|e| iperf_err(i_errno::SET_MSS, &e))?;
    }
    set_buffers(r, opts.window)
}

/// Sets the TOS (IPv4) or traffic class (IPv6) of a connected or bound socket.
pub(super) fn set_tos(s: &SockRef<'_>, tos: u8, ipv6: bool) -> Result<(), Error> {
    if tos == 0 {
        return Ok(());
    }
    if ipv6 {
        s.set_tclass_v6(u32::from(tos))
            .map_err(|e| iperf_err(i_errno::SET_COS, &e))
    } else {
        s.set_tos(u32::from(tos))
            .map_err(|e| iperf_err(i_errno::SET_TOS, &e))
    }
}

/// Asks the kernel to pace the socket at `--fq-rate`; iperf3 only warns when it cannot.
pub(super) fn set_fq_rate(fd: std::os::fd::RawFd, bps: u64, warn: &mut dyn FnMut(&str)) {
    if bps / 8 > 0 && sys::set_max_pacing_rate(fd, bps / 8).is_err() {
        warn("Unable to set socket pacing");
    }
}

/// A connected TCP stream (control or data) and what it reports.
pub(super) struct Connected {
    /// The stream, blocking.
    pub stream: TcpStream,
    /// The buffer sizes the kernel set.
    pub buffers: BufferSizes,
}

/// Connects a TCP socket to `target` the way iperf3's `iperf_tcp_connect` does: bound as
/// asked, with the stream options set before `connect` (so the SYN carries them).
pub(super) fn connect_tcp(
    target: SocketAddr,
    local: Option<std::net::IpAddr>,
    port: u16,
    opts: &StreamOptions,
    timeout: Option<Duration>,
    warn: &mut dyn FnMut(&str),
) -> Result<Connected, Error> {
    let code = i_errno_connect_for(port);
    let s = Socket::new(domain_of(&target), Type::STREAM, Some(Protocol::TCP))
        .map_err(|e| iperf_err(code, &e))?;
    bind_local(&s, &target, local, port, opts.bind_dev.as_deref())?;
    let r = SockRef::from(&s);
    let buffers = set_tcp_options(&r, opts)?;
    if let Some(t) = opts.snd_timeout {
        r.set_tcp_user_timeout(Some(t))
            .map_err(|e| iperf_err(i_errno::SET_USER_TIMEOUT, &e))?;
    }
    let mut target = target;
    if opts.flowlabel != 0 {
        let SocketAddr::V6(v6) = target else {
            return Err(Error::Iperf {
                code: i_errno::SET_FLOW,
                errno: 0,
            });
        };
        let label = sys::set_flowlabel(s.as_raw_fd(), *v6.ip(), opts.flowlabel)
            .map_err(|e| iperf_err(i_errno::SET_FLOW, &e))?;
        target = SocketAddr::V6(SocketAddrV6::new(
            *v6.ip(),
            v6.port(),
            u32::from_be(label),
            v6.scope_id(),
        ));
    }
    set_fq_rate(s.as_raw_fd(), opts.fq_rate_bps, warn);
    let addr = SockAddr::from(target);
    match timeout {
        Some(t) => s.connect_timeout(&addr, t),
        None => s.connect(&addr),
    }
    .map_err(|e| iperf_err(code, &e))?;
    Ok(Connected {
        stream: s.into(),
        buffers,
    })
}

/// Sets TCP congestion control `name` on a stream (client: any failure is fatal, as in
/// iperf3) and returns the algorithm in use.
pub(super) fn client_congestion(t: &TcpStream, name: Option<&str>) -> Result<String, Error> {
    let r = SockRef::from(t);
    if let Some(name) = name {
        r.set_tcp_congestion(name.as_bytes())
            .map_err(|e| iperf_err(i_errno::SET_CONGESTION, &e))?;
    }
    Ok(congestion_in_use(t))
}

/// The TCP congestion control algorithm a stream uses, "unknown" if it cannot be read.
pub(super) fn congestion_in_use(t: &TcpStream) -> String {
    SockRef::from(t)
        .tcp_congestion()
        .ok()
        .map(|b| {
            let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
            String::from_utf8_lossy(&b[..end]).into_owned()
        })
        .unwrap_or_else(|| "unknown".to_string())
}

/// A UDP socket connected to `target` with the stream options (iperf3's
/// `iperf_udp_connect` up to the hello).
pub(super) fn connect_udp(
    target: SocketAddr,
    local: Option<std::net::IpAddr>,
    port: u16,
    opts: &StreamOptions,
    block_len: usize,
    warn: &mut dyn FnMut(&str),
) -> Result<(UdpSocket, BufferSizes), Error> {
    let s = Socket::new(domain_of(&target), Type::DGRAM, Some(Protocol::UDP))
        .map_err(|e| iperf_err(203, &e))?;
    bind_local(&s, &target, local, port, opts.bind_dev.as_deref())?;
    let r = SockRef::from(&s);
    let mut buffers = set_buffers(&r, opts.window)?;
    if opts.window == 0
        && (block_len > buffers.sndbuf as usize || block_len > buffers.rcvbuf as usize)
    {
        let size = block_len + 8192;
        warn(&format!("Increasing socket buffer size to {size}"));
        buffers = set_buffers(&r, size as u32)?;
    }
    set_fq_rate(s.as_raw_fd(), opts.fq_rate_bps, warn);
    s.connect(&target.into()).map_err(|e| iperf_err(203, &e))?;
    Ok((s.into(), buffers))
}

/// Settings common to a stream once it is connected (iperf3's `iperf_init_stream`): TOS
/// and, for IPv4 UDP, Don't Fragment.
pub(super) fn init_stream(
    r: &SockRef<'_>,
    opts: &StreamOptions,
    ipv6: bool,
    udp: bool,
) -> Result<(), Error> {
    set_tos(r, opts.tos, ipv6)?;
    if udp && opts.dont_fragment && !ipv6 {
        sys::set_dont_fragment(r.as_raw_fd())
            .map_err(|e| iperf_err(i_errno::SET_DONT_FRAGMENT, &e))?;
    }
    Ok(())
}

/// Where and how a server listens.
#[derive(Clone, Debug, Default)]
pub struct ListenConfig {
    /// `-B`: the local address to listen on (none: the wildcard of the family).
    pub bind: Option<std::net::IpAddr>,
    /// `-4` / `-6`.
    pub family: Family,
    /// `--bind-dev`.
    pub bind_dev: Option<String>,
    /// The port (`-p`).
    pub port: u16,
}

impl ListenConfig {
    /// The address to bind and whether it is an IPv6 socket that accepts IPv4 too.
    fn address(&self) -> (SocketAddr, bool) {
        match (self.bind, self.family) {
            (Some(ip), _) => (SocketAddr::new(ip, self.port), false),
            (None, Family::V4) => (SocketAddr::from((Ipv4Addr::UNSPECIFIED, self.port)), false),
            (None, Family::V6) => (SocketAddr::from((Ipv6Addr::UNSPECIFIED, self.port)), false),
            // Like iperf3's netannounce: an IPv6 socket that also takes IPv4.
            (None, Family::Any) => (SocketAddr::from((Ipv6Addr::UNSPECIFIED, self.port)), true),
        }
    }
}

/// A socket of `ty` bound as `cfg` says (dual-stack when no family or address is given).
fn bound(cfg: &ListenConfig, ty: Type, port: u16) -> io::Result<Socket> {
    let (mut addr, dual) = cfg.address();
    addr.set_port(port);
    let s = Socket::new(domain_of(&addr), ty, None)?;
    if addr.is_ipv6() {
        s.set_only_v6(!dual)?;
    }
    if ty == Type::STREAM {
        s.set_reuse_address(true)?;
    }
    if let Some(dev) = &cfg.bind_dev {
        s.bind_device(Some(dev.as_bytes()))?;
    }
    s.bind(&addr.into())?;
    Ok(s)
}

/// The server's TCP listener, with the stream options a test asked for (accepted sockets
/// inherit them, so the SYN-ACK already carries `-M` and the window of `-w`).
pub(super) fn listen_tcp(
    cfg: &ListenConfig,
    port: u16,
    opts: &StreamOptions,
) -> Result<(TcpListener, BufferSizes), Error> {
    let s = bound(cfg, Type::STREAM, port).map_err(|e| iperf_err(102, &e))?;
    let buffers = set_tcp_options(&SockRef::from(&s), opts)?;
    s.listen(1024).map_err(|e| iperf_err(102, &e))?;
    s.set_nonblocking(true).map_err(|e| iperf_err(102, &e))?;
    Ok((s.into(), buffers))
}

/// The server's UDP socket on the same address and port as its listener.
pub(super) fn listen_udp(cfg: &ListenConfig, port: u16) -> io::Result<UdpSocket> {
    let s = bound(cfg, Type::DGRAM, port)?;
    // A 4 MiB receive buffer (capped at net.core.rmem_max) so a scheduling hiccup of the
    // receiving loop does not turn into datagram loss.
    let _ = s.set_recv_buffer_size(4 << 20);
    s.set_nonblocking(true)?;
    Ok(s.into())
}
