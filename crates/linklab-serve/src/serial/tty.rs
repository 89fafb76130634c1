//! A serial port (or pseudo-terminal) opened raw and non-blocking at a standard baud rate.

use std::ffi::CString;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};

use anyhow::{anyhow, bail};

/// The rates `--baud` accepts, with their termios constants.
pub const BAUDS: [(u32, libc::speed_t); 18] = [
    (9_600, libc::B9600),
    (19_200, libc::B19200),
    (38_400, libc::B38400),
    (57_600, libc::B57600),
    (115_200, libc::B115200),
    (230_400, libc::B230400),
    (460_800, libc::B460800),
    (500_000, libc::B500000),
    (576_000, libc::B576000),
    (921_600, libc::B921600),
    (1_000_000, libc::B1000000),
    (1_152_000, libc::B1152000),
    (1_500_000, libc::B1500000),
    (2_000_000, libc::B2000000),
    (2_500_000, libc::B2500000),
    (3_000_000, libc::B3000000),
    (3_500_000, libc::B3500000),
    (4_000_000, libc::B4000000),
];

/// The termios constant of a standard `baud` rate.
pub fn speed_of(baud: u32) -> Option<libc::speed_t> {
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
    fd: OwnedFd,
}

impl Tty {
    /// Opens `path` and configures it for `baud` (a rate from [`BAUDS`]); one line naming
    /// `--dev` when it is missing, not a terminal, or refuses the settings.
    pub fn open(path: &str, baud: u32) -> anyhow::Result<Tty> {
        let speed = speed_of(baud).ok_or_else(|| anyhow!("--baud {baud}: not a standard rate"))?;
        let c = CString::new(path).map_err(|_| anyhow!("--dev: the path contains a NUL byte"))?;
        // SAFETY: open(2) of a NUL-terminated path.
        let raw = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDWR | libc::O_NOCTTY | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            bail!("--dev {path}: cannot open: {}", io::Error::last_os_error());
        }
        // SAFETY: a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        // SAFETY: termios is plain old data; tcgetattr fills it.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        // SAFETY: tcgetattr on our descriptor into a termios we own.
        if unsafe { libc::tcgetattr(fd.as_raw_fd(), &mut t) } != 0 {
            bail!(
                "--dev {path}: not a serial port or terminal ({})",
                io::Error::last_os_error()
            );
        }
        // SAFETY: the termios functions only modify the struct we pass.
        unsafe {
            libc::cfmakeraw(&mut t);
            libc::cfsetispeed(&mut t, speed);
            libc::cfsetospeed(&mut t, speed);
        }
        t.c_cflag |= libc::CLOCAL | libc::CREAD;
        t.c_cflag &= !(libc::CRTSCTS | libc::CSTOPB | libc::PARENB);
        t.c_cc[libc::VMIN] = 0;
        t.c_cc[libc::VTIME] = 0;
        // SAFETY: tcsetattr/tcflush on our descriptor with a termios we own.
        unsafe {
            if libc::tcsetattr(fd.as_raw_fd(), libc::TCSANOW, &t) != 0 {
                bail!(
                    "--dev {path}: refuses raw mode at {baud} baud ({})",
                    io::Error::last_os_error()
                );
            }
            libc::tcflush(fd.as_raw_fd(), libc::TCIOFLUSH);
        }
        Ok(Tty { fd })
    }

    /// Reads what is waiting (0 when nothing is).
    pub fn read(&self, buf: &mut [u8]) -> io::Result<usize> {
        // SAFETY: read(2) into a buffer we exclusively borrow, bounded by its length.
        let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::WouldBlock
                || e.kind() == io::ErrorKind::Interrupted =>
            {
                Ok(0)
            }
            e => Err(e),
        }
    }

    /// Writes what the port takes now (0 when its buffer is full).
    pub fn write(&self, buf: &[u8]) -> io::Result<usize> {
        // SAFETY: write(2) from a borrowed buffer, bounded by its length.
        let n = unsafe { libc::write(self.fd.as_raw_fd(), buf.as_ptr().cast(), buf.len()) };
        if n >= 0 {
            return Ok(n as usize);
        }
        match io::Error::last_os_error() {
            e if e.kind() == io::ErrorKind::WouldBlock
                || e.kind() == io::ErrorKind::Interrupted =>
            {
                Ok(0)
            }
            e => Err(e),
        }
    }
}

impl AsRawFd for Tty {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}
