//! SIGINT and SIGTERM as a readable file descriptor (`signalfd`), so the main loop can sleep in
//! one `poll(2)` on the TAP and the signals together, without a race and without a handler.

use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::time::Duration;

/// The stop signals, blocked for normal delivery and readable from a descriptor instead.
#[derive(Debug)]
pub struct StopSignals {
    fd: OwnedFd,
}

impl StopSignals {
    /// Blocks SIGINT and SIGTERM in this (single) thread and opens a signalfd for them.
    pub fn install() -> io::Result<StopSignals> {
        // SAFETY: sigset manipulation on a local set, then sigprocmask/signalfd with it.
        unsafe {
            let mut set: libc::sigset_t = std::mem::zeroed();
            libc::sigemptyset(&mut set);
            libc::sigaddset(&mut set, libc::SIGINT);
            libc::sigaddset(&mut set, libc::SIGTERM);
            if libc::sigprocmask(libc::SIG_BLOCK, &set, std::ptr::null_mut()) < 0 {
                return Err(io::Error::last_os_error());
            }
            let raw = libc::signalfd(-1, &set, libc::SFD_NONBLOCK | libc::SFD_CLOEXEC);
            if raw < 0 {
                return Err(io::Error::last_os_error());
            }
            Ok(StopSignals {
                fd: OwnedFd::from_raw_fd(raw),
            })
        }
    }

    /// The signal number that arrived, if one did (consumes it).
    pub fn take(&self) -> Option<i32> {
        // SAFETY: signalfd_siginfo is plain old data; read(2) fills at most its size.
        let mut info: libc::signalfd_siginfo = unsafe { std::mem::zeroed() };
        let size = std::mem::size_of::<libc::signalfd_siginfo>();
        // SAFETY: read(2) from our signalfd into `info`, which is ours, at most its size.
        let n = unsafe {
            libc::read(
                self.fd.as_raw_fd(),
                (&mut info as *mut libc::signalfd_siginfo).cast(),
                size,
            )
        };
        (n as usize == size).then_some(info.ssi_signo as i32)
    }
}

impl AsRawFd for StopSignals {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Sleeps until one of `fds` is readable or `timeout` has passed (`None`: no time limit).
pub fn wait_readable(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<()> {
    let mut polls = [libc::pollfd {
        fd: -1,
        events: 0,
        revents: 0,
    }; 4];
    let count = fds.len().min(polls.len());
    for (p, fd) in polls.iter_mut().zip(fds) {
        *p = libc::pollfd {
            fd: *fd,
            events: libc::POLLIN,
            revents: 0,
        };
    }
    // ppoll(2) takes nanoseconds: pacing deadlines a fraction of a millisecond away (iperf3
    // -b) are kept, not rounded up to poll(2)'s milliseconds.
    let ts = timeout.map(|t| libc::timespec {
        tv_sec: t.as_secs().min(i64::MAX as u64) as libc::time_t,
        tv_nsec: libc::c_long::from(t.subsec_nanos() as i32),
    });
    let ts_ptr = ts
        .as_ref()
        .map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: ppoll(2) on a local array of `count` pollfd entries and an optional local
    // timespec; a null signal mask keeps the current one (SIGINT/SIGTERM blocked, read from
    // their signalfd instead).
    let n = unsafe {
        libc::ppoll(
            polls.as_mut_ptr(),
            count as libc::nfds_t,
            ts_ptr,
            std::ptr::null(),
        )
    };
    if n < 0 {
        let err = io::Error::last_os_error();
        if err.kind() != io::ErrorKind::Interrupted {
            return Err(err);
        }
    }
    Ok(())
}
