//! A serial port (or pseudo-terminal) opened raw and non-blocking at a standard baud rate.

use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};

use anyhow::{anyhow, bail};
use nix::fcntl::{open, OFlag};
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
