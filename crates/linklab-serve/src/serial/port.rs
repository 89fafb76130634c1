//! The link on a serial port: moves bytes between the port and a [`Link`] and waits for the
//! next thing to do (port readable or writable, another descriptor readable, a timer).
//!
//! A port that hangs up (a USB serial device reset or re-plugged: Linux's cdc-acm hangs its
//! tty up; a pseudo-terminal whose other side closed) is opened again at the same path as
//! soon as it is there, with the same link: the link's retransmissions carry what was lost
//! in between, and its epoch tells the other end it is the same link, not a restarted one.

use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use anyhow::Context;
use linklab_serial::Link;
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::tty::Tty;

/// The window of the link in frames (the crate's default).
pub type SerialLink = Link<8>;

/// A serial port carrying a link.
pub struct Port {
    /// The port.
    pub tty: Tty,
    /// Its path and rate, to open it again after a hang-up.
    dev: String,
    baud: u32,
    /// Times it hung up and was opened again.
    pub reopens: u64,
    /// It hung up and is not open again yet.
    hung: bool,
    /// The link (boxed: its stores are ~25 KB).
    pub link: Box<SerialLink>,
    out: Vec<u8>,
    out_pos: usize,
    started: Instant,
}

impl Port {
    /// The link over `tty` (opened at `dev` with `baud`) with timers and limits `config`.
    pub fn new(tty: Tty, dev: &str, baud: u32, config: linklab_serial::Config) -> Port {
        // A different epoch for every start: the peer must see a restart as one.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() ^ d.as_secs() as u32)
            ^ std::process::id().rotate_left(16);
        Port {
            tty,
            dev: dev.to_string(),
            baud,
            reopens: 0,
            hung: false,
            link: Box::new(Link::new(config, seed)),
            out: Vec::with_capacity(4096),
            out_pos: 0,
            started: Instant::now(),
        }
    }

    /// Microseconds since the port was opened (the link's clock).
    pub fn now(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    /// Feeds everything the port has received to the link.
    pub fn read(&mut self) -> anyhow::Result<()> {
        if self.hung {
            return Ok(());
        }
        let mut buf = [0u8; 4096];
        loop {
            let n = match self.tty.read(&mut buf) {
                Err(e) if is_hangup(&e) => {
                    self.hung = true;
                    return Ok(());
                }
                other => other.context("reading --dev")?,
            };
            if n == 0 {
                return Ok(());
            }
            let now = self.now();
            self.link.handle_input(now, &buf[..n]);
        }
    }

    /// Writes what the link has to send until the port's buffer is full or nothing is left.
    pub fn write(&mut self) -> anyhow::Result<()> {
        loop {
            if self.hung {
                return Ok(());
            }
            if self.out_pos < self.out.len() {
                let n = match self.tty.write(&self.out[self.out_pos..]) {
                    Err(e) if is_hangup(&e) => {
                        // What the hung-up port did not take is lost: the link sends it again.
                        self.out.clear();
                        self.out_pos = 0;
                        self.hung = true;
                        return Ok(());
                    }
                    other => other.context("writing --dev")?,
                };
                if n == 0 {
                    return Ok(());
                }
                self.out_pos += n;
                continue;
            }
            self.out.resize(4096, 0);
            let now = self.now();
            let n = self.link.poll_output(now, &mut self.out);
            self.out.truncate(n);
            self.out_pos = 0;
            if n == 0 {
                return Ok(());
            }
        }
    }

    /// How long until the link's next timer (zero when it has something to send now).
    pub fn timeout(&self) -> Option<Duration> {
        let now = self.now();
        self.link
            .poll_at(now)
            .map(|at| Duration::from_micros(at.saturating_sub(now)))
    }

    /// Sleeps until the port is readable (or writable, when bytes wait), one of `fds` is
    /// readable, or `timeout` passes.
    /// A port that hung up is opened again here when it is back.
    pub fn wait(
        &mut self,
        fds: &[BorrowedFd<'_>],
        timeout: Option<Duration>,
    ) -> anyhow::Result<()> {
        let mut port = PollFlags::POLLIN;
        if self.out_pos < self.out.len() {
            port |= PollFlags::POLLOUT;
        }
        let timeout = match timeout {
            None => PollTimeout::NONE,
            Some(t) => PollTimeout::try_from(t.as_micros().div_ceil(1000).min(60_000) as u32)
                .unwrap_or(PollTimeout::MAX),
        };
        let seen = {
            let mut polls = vec![PollFd::new(self.tty.as_fd(), port)];
            polls.extend(fds.iter().map(|fd| PollFd::new(*fd, PollFlags::POLLIN)));
            match poll(&mut polls, timeout) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(io::Error::from(e)).context("waiting for --dev"),
            }
            polls[0].revents().unwrap_or(PollFlags::empty())
        };
        if seen.contains(PollFlags::POLLHUP) && !seen.contains(PollFlags::POLLIN) {
            self.hung = true;
        }
        if self.hung {
            self.reopen();
        }
        Ok(())
    }

    /// The port hung up: opens it again at its path if it is there (else waits a moment, to
    /// try again on the next wait).
    fn reopen(&mut self) {
        match Tty::open(&self.dev, self.baud) {
            Ok(tty) => {
                self.tty = tty;
                self.hung = false;
                self.reopens += 1;
                eprintln!(
                    "linklab serial: --dev {} hung up; opened it again (the link resumes)",
                    self.dev
                );
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

/// EIO on a terminal means it hung up (a USB serial device reset, a pty's master closed).
fn is_hangup(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::EIO as i32)
}
