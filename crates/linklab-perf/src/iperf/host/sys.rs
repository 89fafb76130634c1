//! The system calls std does not wrap: `ppoll(2)`, socket options, Linux `TCP_INFO`. Every
//! `unsafe` block of the host adapter lives here.

use std::io::{self, ErrorKind};
use std::net::{TcpStream, UdpSocket};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

/// Total retransmitted segments of a TCP socket (Linux `TCP_INFO.tcpi_total_retrans`).
#[cfg(target_os = "linux")]
pub(super) fn tcp_retransmits(t: &TcpStream) -> Option<u64> {
    // SAFETY: tcp_info is plain old data; getsockopt writes at most `len` bytes into it.
    let mut info: libc::tcp_info = unsafe { core::mem::zeroed() };
    let mut len = core::mem::size_of::<libc::tcp_info>() as libc::socklen_t;
    let r = unsafe {
        libc::getsockopt(
            t.as_raw_fd(),
            libc::IPPROTO_TCP,
            libc::TCP_INFO,
            (&mut info as *mut libc::tcp_info).cast(),
            &mut len,
        )
    };
    (r == 0).then_some(u64::from(info.tcpi_total_retrans))
}

/// Retransmits are not available on this platform.
#[cfg(not(target_os = "linux"))]
pub(super) fn tcp_retransmits(_t: &TcpStream) -> Option<u64> {
    None
}

/// Asks for a 4 MiB UDP receive buffer (the kernel caps it at `net.core.rmem_max`) so a
/// scheduling hiccup of the receiving loop does not turn into datagram loss.
pub(super) fn grow_rcvbuf(s: &UdpSocket) {
    let size: libc::c_int = 4 << 20;
    // SAFETY: setsockopt reads `size` (a c_int) for the given length; failure is harmless.
    unsafe {
        libc::setsockopt(
            s.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVBUF,
            (&size as *const libc::c_int).cast(),
            core::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

pub(super) fn pollfd(fd: RawFd, events: libc::c_short) -> libc::pollfd {
    libc::pollfd {
        fd,
        events,
        revents: 0,
    }
}

pub(super) fn ppoll(fds: &mut [libc::pollfd], timeout: Duration) -> io::Result<usize> {
    let ts = libc::timespec {
        tv_sec: timeout.as_secs() as libc::time_t,
        tv_nsec: timeout.subsec_nanos() as libc::c_long,
    };
    // SAFETY: `fds` is a valid slice of pollfd for its length; `ts` lives across the call;
    // a null signal mask means "leave it unchanged".
    let r = unsafe {
        libc::ppoll(
            fds.as_mut_ptr(),
            fds.len() as libc::nfds_t,
            &ts,
            core::ptr::null(),
        )
    };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == ErrorKind::Interrupted {
            return Ok(0);
        }
        return Err(e);
    }
    Ok(r as usize)
}

pub(super) fn wait_fd(fd: RawFd, events: libc::c_short, timeout: Duration) {
    let mut p = [pollfd(fd, events)];
    let _ = ppoll(&mut p, timeout);
}
