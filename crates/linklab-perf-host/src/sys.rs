//! The system calls neither std nor socket2 wraps, for iperf3 and iperf 2 alike: Linux
//! `TCP_INFO` (with the fields after `tcpi_total_retrans` that libc leaves out),
//! `SO_MAX_PACING_RATE`, `IP_MTU_DISCOVER` and the IPv6 flow label manager (raw socket
//! options nix does not have: with the stop signals' disposition, the only `unsafe` of the
//! crate, each with its SAFETY line); `ppoll`, CPU affinity, CPU use, `uname` and `daemon`
//! through nix.

use std::io;
use std::net::Ipv6Addr;
use std::os::fd::{AsFd, RawFd};
use std::time::Duration;

use nix::errno::Errno;
use nix::poll::{PollFd, PollFlags};
use nix::sched::{sched_setaffinity, CpuSet};
use nix::sys::resource::{getrusage, UsageWho};
use nix::sys::signal::{SigHandler, Signal};
use nix::sys::time::{TimeSpec, TimeVal};
use nix::sys::utsname::uname;
use nix::unistd::{daemon, Pid};

/// Waits until one of `fds` is ready or `timeout` passes; a signal counts as a timeout.
pub(crate) fn ppoll(fds: &mut [PollFd<'_>], timeout: Duration) -> io::Result<usize> {
    match nix::poll::ppoll(fds, Some(TimeSpec::from_duration(timeout)), None) {
        Ok(n) => Ok(n as usize),
        Err(Errno::EINTR) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

/// Waits until `fd` is ready for `events` or `timeout` passes.
pub(crate) fn wait_fd(fd: impl AsFd, events: PollFlags, timeout: Duration) {
    let _ = ppoll(&mut [PollFd::new(fd.as_fd(), events)], timeout);
}

/// True when `fd` saw any event in the last [`ppoll`].
pub(crate) fn has_events(fd: &PollFd<'_>) -> bool {
    fd.revents().is_some_and(|r| !r.is_empty())
}

/// Linux `struct tcp_info` up to `tcpi_snd_wnd` (kernel 5.19+); older kernels fill less,
/// and the length `getsockopt` returns says how much.
#[repr(C)]
#[derive(Default)]
struct KernelTcpInfo {
    state: u8,
    ca_state: u8,
    retransmits: u8,
    probes: u8,
    backoff: u8,
    options: u8,
    wscale: u8,
    app_limited: u8,
    rto: u32,
    ato: u32,
    snd_mss: u32,
    rcv_mss: u32,
    unacked: u32,
    sacked: u32,
    lost: u32,
    retrans: u32,
    fackets: u32,
    last_data_sent: u32,
    last_ack_sent: u32,
    last_data_recv: u32,
    last_ack_recv: u32,
    pmtu: u32,
    rcv_ssthresh: u32,
    rtt: u32,
    rttvar: u32,
    snd_ssthresh: u32,
    snd_cwnd: u32,
    advmss: u32,
    reordering: u32,
    rcv_rtt: u32,
    rcv_space: u32,
    total_retrans: u32,
    pacing_rate: u64,
    max_pacing_rate: u64,
    bytes_acked: u64,
    bytes_received: u64,
    segs_out: u32,
    segs_in: u32,
    notsent_bytes: u32,
    min_rtt: u32,
    data_segs_in: u32,
    data_segs_out: u32,
    delivery_rate: u64,
    busy_time: u64,
    rwnd_limited: u64,
    sndbuf_limited: u64,
    delivered: u32,
    delivered_ce: u32,
    bytes_sent: u64,
    bytes_retrans: u64,
    dsack_dups: u32,
    reord_seen: u32,
    rcv_ooopack: u32,
    snd_wnd: u32,
}

/// What iperf3 samples from `TCP_INFO` at each interval.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpInfo {
    /// Retransmitted segments over the connection's life.
    pub total_retrans: u64,
    /// Congestion window in bytes (`snd_cwnd * snd_mss`).
    pub snd_cwnd: u64,
    /// The peer's advertised window in bytes (0 on kernels that do not report it).
    pub snd_wnd: u64,
    /// Smoothed round-trip time, µs.
    pub rtt_us: u32,
    /// Round-trip time variance, µs.
    pub rttvar_us: u32,
    /// Path MTU.
    pub pmtu: u32,
}

/// Samples `TCP_INFO` of a TCP socket.
pub(crate) fn tcp_info(fd: RawFd) -> Option<TcpInfo> {
    let mut info = KernelTcpInfo::default();
    let mut len = core::mem::size_of::<KernelTcpInfo>() as libc::socklen_t;
    // SAFETY: KernelTcpInfo is plain old data of `len` bytes; the kernel writes at most
    // `len` bytes and stores how many it wrote in `len`.
    let r = unsafe {
        libc::getsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut KernelTcpInfo).cast(),
            &mut len,
        )
    };
    if r != 0 {
        return None;
    }
    let has_snd_wnd = len as usize >= core::mem::size_of::<KernelTcpInfo>();
    Some(TcpInfo {
        total_retrans: u64::from(info.total_retrans),
        snd_cwnd: u64::from(info.snd_cwnd) * u64::from(info.snd_mss),
        snd_wnd: if has_snd_wnd {
            u64::from(info.snd_wnd)
        } else {
            0
        },
        rtt_us: info.rtt,
        rttvar_us: info.rttvar,
        pmtu: info.pmtu,
    })
}

/// Sets a socket option whose value is the plain-old-data `value`.
fn set_opt<T: Copy>(fd: RawFd, level: libc::c_int, name: libc::c_int, value: &T) -> io::Result<()> {
    // SAFETY: setsockopt reads size_of::<T>() bytes of `value`, a plain-old-data value
    // that lives across the call.
    let r = unsafe {
        libc::setsockopt(
            fd,
            level,
            name,
            (value as *const T).cast(),
            core::mem::size_of::<T>() as libc::socklen_t,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}

/// Fair-queuing socket pacing (`--fq-rate`): at most `bytes_per_s` (Linux
/// `SO_MAX_PACING_RATE`, honoured by the fq qdisc and TCP's internal pacing).
pub(crate) fn set_max_pacing_rate(fd: RawFd, bytes_per_s: u64) -> io::Result<()> {
    let v = bytes_per_s.min(u64::from(u32::MAX)) as u32;
    set_opt(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE, &v)
}

/// Sets IPv4 Don't Fragment on a socket (`IP_MTU_DISCOVER = IP_PMTUDISC_DO`).
pub(crate) fn set_dont_fragment(fd: RawFd) -> io::Result<()> {
    set_opt(
        fd,
        libc::IPPROTO_IP,
        libc::IP_MTU_DISCOVER,
        &libc::IP_PMTUDISC_DO,
    )
}

/// Linux `struct in6_flowlabel_req`.
#[repr(C)]
#[derive(Clone, Copy)]
struct FlowLabelReq {
    dst: [u8; 16],
    label: u32,
    action: u8,
    share: u8,
    flags: u16,
    expires: u16,
    linger: u16,
    pad: u32,
}

/// Reserves IPv6 flow label `label` towards `dst` and makes the socket send it (iperf3's
/// `-L`); returns the label in network byte order for `sin6_flowinfo`.
pub(crate) fn set_flowlabel(fd: RawFd, dst: Ipv6Addr, label: u32) -> io::Result<u32> {
    const IPV6_FL_A_GET: u8 = 0;
    const IPV6_FL_S_ANY: u8 = 255;
    const IPV6_FL_F_CREATE: u16 = 1;
    let req = FlowLabelReq {
        dst: dst.octets(),
        label: (label & 0x000f_ffff).to_be(),
        action: IPV6_FL_A_GET,
        share: IPV6_FL_S_ANY,
        flags: IPV6_FL_F_CREATE,
        expires: 0,
        linger: 0,
        pad: 0,
    };
    set_opt(fd, libc::IPPROTO_IPV6, libc::IPV6_FLOWLABEL_MGR, &req)?;
    set_opt(
        fd,
        libc::IPPROTO_IPV6,
        libc::IPV6_FLOWINFO_SEND,
        &1 as &libc::c_int,
    )?;
    Ok(req.label)
}

/// Pins the calling process to CPU `cpu` (iperf3's `-A`).
pub fn set_cpu_affinity(cpu: usize) -> io::Result<()> {
    let mut set = CpuSet::new();
    set.set(cpu)?;
    sched_setaffinity(Pid::from_raw(0), &set)?;
    Ok(())
}

/// CPU time this process used so far: (user, system), µs (`getrusage(RUSAGE_SELF)`).
pub(crate) fn cpu_times_us() -> (u64, u64) {
    let Ok(usage) = getrusage(UsageWho::RUSAGE_SELF) else {
        return (0, 0);
    };
    let us = |t: TimeVal| (t.tv_sec() as u64) * 1_000_000 + t.tv_usec() as u64;
    (us(usage.user_time()), us(usage.system_time()))
}

/// The `uname -a`-like line iperf3 prints as system information.
pub fn system_info() -> String {
    let Ok(u) = uname() else {
        return String::new();
    };
    format!(
        "{} {} {} {} {}",
        u.sysname().to_string_lossy(),
        u.nodename().to_string_lossy(),
        u.release().to_string_lossy(),
        u.version().to_string_lossy(),
        u.machine().to_string_lossy()
    )
}

/// Detaches from the terminal (iperf3's `-D`): fork, new session, stdio to /dev/null. Call
/// before any thread is started (the child has only the calling thread).
pub fn daemonize() -> io::Result<()> {
    daemon(false, false)?;
    Ok(())
}

/// A server started from a script may inherit SIGINT ignored (SIG_IGN survives exec): stop
/// on SIGINT and SIGTERM alike, as iperf3 does.
pub fn default_stop_signals() {
    for signal in [Signal::SIGINT, Signal::SIGTERM] {
        // SAFETY: the default disposition installs no handler, so nothing of ours runs in
        // signal context (what makes `signal` unsafe in general).
        let _ = unsafe { nix::sys::signal::signal(signal, SigHandler::SigDfl) };
    }
}
