//! The link on a serial port: moves bytes between the port and a [`Link`] and waits for the
//! next thing to do (port readable or writable, another descriptor readable, a timer).

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
    /// The link (boxed: its stores are ~25 KB).
    pub link: Box<SerialLink>,
    out: Vec<u8>,
    out_pos: usize,
    started: Instant,
}

impl Port {
    /// The link over `tty` with timers and limits `config`.
    pub fn new(tty: Tty, config: linklab_serial::Config) -> Port {
        // A different epoch for every start: the peer must see a restart as one.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() ^ d.as_secs() as u32)
            ^ std::process::id().rotate_left(16);
        Port {
            tty,
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
        let mut buf = [0u8; 4096];
        loop {
            let n = self
                .tty
                .read(&mut buf)
                .map_err(hangup)
                .context("reading --dev")?;
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
            if self.out_pos < self.out.len() {
                let n = self
                    .tty
                    .write(&self.out[self.out_pos..])
                    .map_err(hangup)
                    .context("writing --dev")?;
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
    pub fn wait(&self, fds: &[BorrowedFd<'_>], timeout: Option<Duration>) -> anyhow::Result<()> {
        let mut port = PollFlags::POLLIN;
        if self.out_pos < self.out.len() {
            port |= PollFlags::POLLOUT;
        }
        let mut polls = vec![PollFd::new(self.tty.as_fd(), port)];
        polls.extend(fds.iter().map(|fd| PollFd::new(*fd, PollFlags::POLLIN)));
        let timeout = match timeout {
            None => PollTimeout::NONE,
            Some(t) => PollTimeout::try_from(t.as_micros().div_ceil(1000).min(60_000) as u32)
                .unwrap_or(PollTimeout::MAX),
        };
        match poll(&mut polls, timeout) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(io::Error::from(e)).context("waiting for --dev"),
        }
        let seen = polls[0].revents().unwrap_or(PollFlags::empty());
        if seen.contains(PollFlags::POLLHUP) && !seen.contains(PollFlags::POLLIN) {
            // A pseudo-terminal whose other side is closed: nothing will ever arrive.
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

/// EIO on a terminal means its other side is gone (a pty's master closed, a USB adapter
/// unplugged): say so.
fn hangup(e: io::Error) -> anyhow::Error {
    if e.raw_os_error() == Some(Errno::EIO as i32) {
        anyhow::anyhow!("the device hung up (EIO)")
    } else {
        e.into()
    }
}
