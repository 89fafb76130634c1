//! SIGINT and SIGTERM as a readable file descriptor (`signalfd`), so a main loop can sleep in
//! one `ppoll(2)` on its descriptors and the signals together, without a race and without a
//! handler.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, RawFd};
use std::time::Duration;

use nix::poll::{ppoll, PollFd, PollFlags};
use nix::sys::signal::{SigSet, SigmaskHow, Signal};
use nix::sys::signalfd::{SfdFlags, SignalFd};
use nix::sys::time::TimeSpec;

/// The stop signals, blocked for normal delivery and readable from a descriptor instead.
#[derive(Debug)]
pub struct StopSignals {
    fd: SignalFd,
}

impl StopSignals {
    /// Blocks SIGINT and SIGTERM in this thread (and the threads it starts after) and opens
    /// a signalfd for them.
    pub fn install() -> io::Result<StopSignals> {
        let mut set = SigSet::empty();
        set.add(Signal::SIGINT);
        set.add(Signal::SIGTERM);
        nix::sys::signal::pthread_sigmask(SigmaskHow::SIG_BLOCK, Some(&set), None)?;
        let fd = SignalFd::with_flags(&set, SfdFlags::SFD_NONBLOCK | SfdFlags::SFD_CLOEXEC)?;
        Ok(StopSignals { fd })
    }

    /// The signal number that arrived, if one did (consumes it).
    pub fn take(&self) -> Option<i32> {
        match self.fd.read_signal() {
            Ok(Some(info)) => i32::try_from(info.ssi_signo).ok(),
            Ok(None) | Err(_) => None,
        }
    }
}

impl AsFd for StopSignals {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for StopSignals {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// Sleeps until one of `fds` is readable or `timeout` has passed (`None`: no time limit).
/// Nanoseconds count: pacing deadlines a fraction of a millisecond away (iperf3 -b) are kept,
/// not rounded up to milliseconds. The signal mask stays as it is (the stop signals blocked,
/// read from their signalfd instead).
pub fn wait_readable(fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> io::Result<()> {
    let mut polls: Vec<PollFd<'_>> = fds
        .iter()
        .map(|fd| PollFd::new(*fd, PollFlags::POLLIN))
        .collect();
    let timeout = timeout.map(TimeSpec::from_duration);
    match ppoll(&mut polls, timeout, None) {
        Ok(_) | Err(nix::errno::Errno::EINTR) => Ok(()),
        Err(e) => Err(e.into()),
    }
}
