//! A serial port (or pseudo-terminal) opened raw and non-blocking at a standard baud rate,
//! and the link's [`Line`] over it.

use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use nix::errno::Errno;
use nix::fcntl::{open, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::stat::Mode;
use nix::sys::termios::{self, BaudRate, ControlFlags, SetArg, SpecialCharacterIndices};

/// The rates `--baud` accepts, with their termios constants.
pub const BAUDS: [(u32, BaudRate); 18] = [
    (9_600, BaudRate::B9600),
    (19_200, BaudRate::B19200),
    (38_400, BaudRate::B38400),
    (57_600, BaudRate::B57600),
    (115_200, BaudRate::B115200),
    (230_400, BaudRate::B230400),
    (460_800, BaudRate::B460800),
    (500_000, BaudRate::B500000),
    (576_000, BaudRate::B576000),
    (921_600, BaudRate::B921600),
    (1_000_000, BaudRate::B1000000),
    (1_152_000, BaudRate::B1152000),
    (1_500_000, BaudRate::B1500000),
    (2_000_000, BaudRate::B2000000),
    (2_500_000, BaudRate::B2500000),
    (3_000_000, BaudRate::B3000000),
    (3_500_000, BaudRate::B3500000),
    (4_000_000, BaudRate::B4000000),
];

/// The termios constant of a standard `baud` rate.
pub fn speed_of(baud: u32) -> Option<BaudRate> {
    BAUDS.iter().find(|(b, _)| *b == baud).map(|(_, s)| *s)
}

/// Parses `--baud`: one of the standard rates in [`BAUDS`] (a clap value parser).
pub fn baud(s: &str) -> Result<u32, String> {
    s.parse::<u32>()
        .ok()
        .filter(|&n| speed_of(n).is_some())
        .ok_or_else(|| {
            let list: Vec<String> = BAUDS.iter().map(|(b, _)| b.to_string()).collect();
            format!("not a standard rate (accepted: {})", list.join(", "))
        })
}

/// An open serial port: raw 8N1, no flow control, non-blocking.
pub struct Tty {
    file: File,
}

impl Tty {
    /// Opens `path` and configures it for `baud` (a rate from [`BAUDS`]); one line naming
    /// `--dev` when it is missing, not a terminal, or refuses the settings.
    pub fn open(path: &str, baud: u32) -> anyhow::Result<Tty> {
        let speed = speed_of(baud).ok_or_else(|| anyhow!("--baud {baud}: not a standard rate"))?;
        if path.contains('\0') {
            bail!("--dev: the path contains a NUL byte");
        }
        let flags = OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
        let fd: OwnedFd = open(path, flags, Mode::empty())
            .map_err(|e| anyhow!("--dev {path}: cannot open: {}", io::Error::from(e)))?;
        let mut t = termios::tcgetattr(&fd).map_err(|e| {
            anyhow!(
                "--dev {path}: not a serial port or terminal ({})",
                io::Error::from(e)
            )
        })?;
        termios::cfmakeraw(&mut t);
        termios::cfsetspeed(&mut t, speed)
            .map_err(|e| anyhow!("--dev {path}: refuses {baud} baud ({})", io::Error::from(e)))?;
        t.control_flags |= ControlFlags::CLOCAL | ControlFlags::CREAD;
        t.control_flags &= !(ControlFlags::CRTSCTS | ControlFlags::CSTOPB | ControlFlags::PARENB);
        t.control_chars[SpecialCharacterIndices::VMIN as usize] = 0;
        t.control_chars[SpecialCharacterIndices::VTIME as usize] = 0;
        termios::tcsetattr(&fd, SetArg::TCSANOW, &t).map_err(|e| {
            anyhow!(
                "--dev {path}: refuses raw mode at {baud} baud ({})",
                io::Error::from(e)
            )
        })?;
        // What sat in the port before it was ours is not the link's.
        let _ = termios::tcflush(&fd, termios::FlushArg::TCIOFLUSH);
        Ok(Tty {
            file: File::from(fd),
        })
    }

    /// Reads what is waiting (0 when nothing is).
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        match (&self.file).read(buf) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(0)
            }
            other => other,
        }
    }

    /// Writes what the port takes now (0 when its buffer is full).
    pub fn write(&self, buf: &[u8]) -> io::Result<usize> {
        match (&self.file).write(buf) {
            Err(e)
                if matches!(
                    e.kind(),
                    io::ErrorKind::WouldBlock | io::ErrorKind::Interrupted
                ) =>
            {
                Ok(0)
            }
            other => other,
        }
    }
}

impl AsFd for Tty {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.file.as_fd()
    }
}

impl AsRawFd for Tty {
    fn as_raw_fd(&self) -> RawFd {
        self.file.as_raw_fd()
    }
}

/// A serial port as the link's [`Line`](super::port::Line), real time as its clock.
///
/// A port that hangs up (a USB serial device reset or re-plugged: Linux's cdc-acm hangs its
/// tty up; a pseudo-terminal whose other side closed) is opened again at the same path as
/// soon as it is there, under the same link: the link's retransmissions carry what was lost
/// in between, and its epoch tells the other end it is the same link, not a restarted one.
pub struct TtyLine {
    tty: Tty,
    path: String,
    baud: u32,
    /// It hung up and is not open again yet.
    hung: bool,
    out: Vec<u8>,
    out_pos: usize,
    started: Instant,
}

impl TtyLine {
    /// The line over `tty`, opened at `path` at `baud`.
    pub fn new(tty: Tty, path: &str, baud: u32) -> TtyLine {
        TtyLine {
            tty,
            path: path.to_string(),
            baud,
            hung: false,
            out: Vec::with_capacity(4096),
            out_pos: 0,
            started: Instant::now(),
        }
    }

    /// The port hung up: opens it again at its path if it is there (else waits a moment, to
    /// try again on the next wait).
    fn reopen(&mut self) {
        match Tty::open(&self.path, self.baud) {
            Ok(tty) => {
                self.tty = tty;
                self.hung = false;
                eprintln!(
                    "linklab serial: --dev {} hung up; opened it again (the link resumes)",
                    self.path
                );
            }
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
}

impl super::port::Line for TtyLine {
    fn now_us(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    fn read(&mut self, link: &mut super::port::SerialLink) -> anyhow::Result<()> {
        let mut buf = [0u8; 4096];
        while !self.hung {
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
            link.handle_input(self.now_us(), &buf[..n]);
        }
        Ok(())
    }

    fn write(&mut self, link: &mut super::port::SerialLink) -> anyhow::Result<()> {
        while !self.hung {
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
            let now = self.now_us();
            let n = link.poll_output(now, &mut self.out);
            self.out.truncate(n);
            self.out_pos = 0;
            if n == 0 {
                return Ok(());
            }
        }
        Ok(())
    }

    fn wait(&mut self, fds: &[BorrowedFd<'_>], until_us: Option<u64>) -> anyhow::Result<()> {
        let mut port = PollFlags::POLLIN;
        if self.out_pos < self.out.len() {
            port |= PollFlags::POLLOUT;
        }
        let timeout = match until_us {
            None => PollTimeout::NONE,
            Some(at) => {
                let t = Duration::from_micros(at.saturating_sub(self.now_us()));
                PollTimeout::try_from(t.as_micros().div_ceil(1000).min(60_000) as u32)
                    .unwrap_or(PollTimeout::MAX)
            }
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

    fn describe(&self) -> String {
        format!("{} at {} baud", self.path, self.baud)
    }

    fn bytes_per_s(&self) -> u64 {
        u64::from(self.baud) / 10
    }
}

/// EIO on a terminal means it hung up (a USB serial device reset, a pty's master closed).
fn is_hangup(e: &io::Error) -> bool {
    e.raw_os_error() == Some(Errno::EIO as i32)
}
