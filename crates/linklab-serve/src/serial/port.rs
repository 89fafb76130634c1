//! The link on a serial port: moves bytes between the port and a [`Link`] and waits for the
//! next thing to do (port readable or writable, another descriptor readable, a timer).

use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::time::{Duration, Instant};

use anyhow::Context;
use linklab_serial::Link;

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
    pub fn wait(&self, fds: &[RawFd], timeout: Option<Duration>) -> anyhow::Result<()> {
        let mut polls = vec![libc::pollfd {
            fd: self.tty.as_raw_fd(),
            events: libc::POLLIN
                | if self.out_pos < self.out.len() {
                    libc::POLLOUT
                } else {
                    0
                },
            revents: 0,
        }];
        polls.extend(fds.iter().map(|&fd| libc::pollfd {
            fd,
            events: libc::POLLIN,
            revents: 0,
        }));
        let ms = timeout.map_or(-1, |t| t.as_micros().div_ceil(1000).min(60_000) as i32);
        // SAFETY: poll(2) over a slice of pollfd we own, with its length.
        let r = unsafe { libc::poll(polls.as_mut_ptr(), polls.len() as libc::nfds_t, ms) };
        if r < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e).context("waiting for --dev");
            }
        }
        if polls[0].revents & libc::POLLHUP != 0 && polls[0].revents & libc::POLLIN == 0 {
            // A pseudo-terminal whose other side is closed: nothing will ever arrive.
            std::thread::sleep(Duration::from_millis(20));
        }
        Ok(())
    }
}

/// EIO on a terminal means its other side is gone (a pty's master closed, a USB adapter
/// unplugged): say so.
fn hangup(e: io::Error) -> anyhow::Error {
    if e.raw_os_error() == Some(libc::EIO) {
        anyhow::anyhow!("the device hung up (EIO)")
    } else {
        e.into()
    }
}
