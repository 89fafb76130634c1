//! A Linux TAP interface opened through `/dev/net/tun` (`IFF_TAP | IFF_NO_PI`): whole Ethernet
//! frames without preamble, FCS or packet-info header, read and written one per syscall.
//!
//! The interface lives as long as the file descriptor unless it was made persistent by someone
//! else beforehand; closing it therefore removes exactly what `open` created.

use std::io;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;

/// An open TAP interface (non-blocking file descriptor).
#[derive(Debug)]
pub struct Tap {
    fd: OwnedFd,
    name: String,
    created: bool,
}

impl Tap {
    /// Opens (creating it if needed) the TAP interface `name` (1..=15 bytes, no NUL).
    pub fn open(name: &str) -> io::Result<Tap> {
        let existed = Path::new("/sys/class/net").join(name).exists();
        // SAFETY: plain open(2) of a constant, NUL-terminated path.
        let raw = unsafe {
            libc::open(
                c"/dev/net/tun".as_ptr(),
                libc::O_RDWR | libc::O_NONBLOCK | libc::O_CLOEXEC,
            )
        };
        if raw < 0 {
            return Err(io::Error::last_os_error());
        }
        // SAFETY: `raw` is a fresh descriptor we own.
        let fd = unsafe { OwnedFd::from_raw_fd(raw) };
        let mut req = ifreq_named(name)?;
        req.ifr_ifru.ifru_flags = (libc::IFF_TAP | libc::IFF_NO_PI) as libc::c_short;
        // SAFETY: TUNSETIFF reads and writes one `ifreq`, which outlives the call.
        if unsafe { libc::ioctl(fd.as_raw_fd(), libc::TUNSETIFF, &mut req) } < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(Tap {
            fd,
            name: name.to_string(),
            created: !existed,
        })
    }

    /// The interface name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Whether this process created the interface (and so removes it on exit).
    pub fn created(&self) -> bool {
        self.created
    }

    /// Reads one frame into `buf`: `Ok(Some(len))`, or `Ok(None)` when no frame is waiting.
    /// A frame longer than `buf` is truncated by the kernel (the caller sees `len == buf.len()`).
    pub fn recv(&self, buf: &mut [u8]) -> io::Result<Option<usize>> {
        loop {
            // SAFETY: read(2) into a buffer we exclusively borrow, bounded by its length.
            let n = unsafe { libc::read(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len()) };
            if n >= 0 {
                return Ok(Some(n as usize));
            }
            let err = io::Error::last_os_error();
            match err.kind() {
                io::ErrorKind::WouldBlock => return Ok(None),
                io::ErrorKind::Interrupted => continue,
                _ => return Err(err),
            }
        }
    }

    /// Writes one frame. Returns `Ok(false)` when the kernel refused it for now (queue full,
    /// interface down); a TAP write is never partial.
    pub fn send(&self, frame: &[u8]) -> io::Result<bool> {
        loop {
            // SAFETY: write(2) from a borrowed buffer, bounded by its length.
            let n = unsafe { libc::write(self.fd.as_raw_fd(), frame.as_ptr().cast(), frame.len()) };
            if n >= 0 {
                return Ok(true);
            }
            let err = io::Error::last_os_error();
            match err.raw_os_error() {
                Some(libc::EINTR) => continue,
                // EAGAIN: queue full; EIO: the kernel side is down (no carrier).
                Some(libc::EAGAIN) | Some(libc::EIO) => return Ok(false),
                _ => return Err(err),
            }
        }
    }
}

impl AsFd for Tap {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl AsRawFd for Tap {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

/// An `ifreq` carrying `name`, zeroed otherwise.
pub(crate) fn ifreq_named(name: &str) -> io::Result<libc::ifreq> {
    // SAFETY: `ifreq` is plain old data; all-zero is a valid value.
    let mut req: libc::ifreq = unsafe { std::mem::zeroed() };
    if name.is_empty() || name.len() >= req.ifr_name.len() || name.contains('\0') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "bad interface name",
        ));
    }
    for (dst, src) in req.ifr_name.iter_mut().zip(name.bytes()) {
        *dst = src as libc::c_char;
    }
    Ok(req)
}
