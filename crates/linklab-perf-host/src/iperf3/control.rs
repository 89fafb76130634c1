//! The control connection of either role: flush the session's output, feed it what arrives.

use std::io::{ErrorKind, Read, Write};
use std::net::TcpStream;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use super::error::Error;
use crate::clock::now_us;
use crate::sys;
use linklab_perf::iperf::session::{Failure, Session};
use nix::poll::PollFlags;

/// The control connection and its read buffer.
pub(super) struct Control {
    pub(super) sock: Option<TcpStream>,
}

impl Control {
    pub(super) fn new(s: TcpStream) -> Self {
        Self { sock: Some(s) }
    }

    pub(super) fn fd(&self) -> Option<BorrowedFd<'_>> {
        self.sock.as_ref().map(|s| s.as_fd())
    }

    /// Writes pending control output (blocking briefly: control messages are small).
    pub(super) fn flush(&mut self, session: &mut Session) -> Result<(), Error> {
        let Some(s) = self.sock.as_mut() else {
            return Ok(());
        };
        let deadline = Instant::now() + Duration::from_secs(2);
        while !session.control_output().is_empty() {
            match s.write(session.control_output()) {
                Ok(0) => return Err(Error::Test(Failure::ControlClosed)),
                Ok(n) => session.control_sent(n),
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    if Instant::now() > deadline {
                        return Err(Error::Test(Failure::Timeout));
                    }
                    sys::wait_fd(&*s, PollFlags::POLLOUT, Duration::from_millis(10));
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    session.control_closed(now_us());
                    self.sock = None;
                    return Ok(());
                }
            }
        }
        Ok(())
    }

    /// Reads what the control connection has and feeds it to the session.
    pub(super) fn read(&mut self, session: &mut Session) {
        let Some(s) = self.sock.as_mut() else { return };
        let mut buf = [0u8; 4096];
        loop {
            match s.read(&mut buf) {
                Ok(0) => {
                    session.control_closed(now_us());
                    self.sock = None;
                    return;
                }
                Ok(n) => {
                    let mut used = 0;
                    while used < n && !session.is_finished() {
                        let k = session.control_input(&buf[used..n], now_us());
                        if k == 0 {
                            break;
                        }
                        used += k;
                    }
                    if n < buf.len() {
                        return;
                    }
                }
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    session.control_closed(now_us());
                    self.sock = None;
                    return;
                }
            }
        }
    }
}
