//! The unix socket QEMU's `-netdev stream` connects to, and its framing: each message a
//! 4-byte big-endian length, then the bytes.

use std::io::Read;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};

/// The socket QEMU connects to, removed when dropped.
pub struct Socket {
    listener: UnixListener,
    path: PathBuf,
}

impl Socket {
    /// Listens at `line.sock` in `dir`, a private folder of the caller's (a socket at a
    /// name known beforehand in a shared folder could be swapped for another's before QEMU
    /// connects).
    pub fn bind_in(dir: &Path) -> anyhow::Result<Socket> {
        Socket::bind_at(dir.join("line.sock"))
    }

    /// Listens at `path` (for a device emulator told where: `linklab emu line --socket`).
    pub fn bind_at(path: PathBuf) -> anyhow::Result<Socket> {
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)
            .with_context(|| format!("cannot listen on {}", path.display()))?;
        Ok(Socket { listener, path })
    }

    /// Its path, for QEMU.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits up to `timeout` for QEMU (or another device emulator) to connect.
    pub fn accept(&self, timeout: Duration) -> anyhow::Result<UnixStream> {
        self.listener.set_nonblocking(true)?;
        let deadline = Instant::now() + timeout;
        loop {
            match self.listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false)?;
                    return Ok(s);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        bail!(
                            "the emulator did not connect to the line's socket within {} s",
                            timeout.as_secs()
                        );
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e).context("accept on the line's socket"),
            }
        }
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Sets the socket's send buffer (best effort: the default is only larger).
pub fn set_send_buffer(stream: &UnixStream, bytes: usize) {
    let _ = nix::sys::socket::setsockopt(stream, nix::sys::socket::sockopt::SndBuf, &bytes);
}

/// Reads the next message (a 4-byte big-endian length, then the bytes) into `buf`, for both
/// lines' device → TAP threads. `Ok(Some(n))`: the message is `buf[..n]`; `Ok(None)`: nothing
/// came within the stream's read timeout (look at the stop flag, then ask again); `Err`: the
/// line ends (the device closed or failed, it stopped mid-message, or a length over
/// `buf.len()`: not this framing, so nothing after it can be trusted).
pub(super) fn read_message(
    stream: &mut UnixStream,
    buf: &mut [u8],
    stop: &AtomicBool,
) -> std::io::Result<Option<usize>> {
    let mut len = [0u8; 4];
    match stream.read(&mut len[..1]) {
        Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
        Ok(_) => {}
        Err(e) if timed_out(&e) => return Ok(None),
        Err(e) => return Err(e),
    }
    read_exact_unless_stopped(stream, &mut len[1..], stop)?;
    let n = u32::from_be_bytes(len) as usize;
    if n > buf.len() {
        return Err(std::io::ErrorKind::InvalidData.into());
    }
    read_exact_unless_stopped(stream, &mut buf[..n], stop)?;
    Ok(Some(n))
}

fn timed_out(e: &std::io::Error) -> bool {
    matches!(
        e.kind(),
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
    )
}

/// Reads exactly `buf`, riding out read timeouts unless stopping.
fn read_exact_unless_stopped(
    stream: &mut UnixStream,
    buf: &mut [u8],
    stop: &AtomicBool,
) -> std::io::Result<()> {
    let mut done = 0;
    while done < buf.len() {
        match stream.read(&mut buf[done..]) {
            Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => done += n,
            Err(e) if timed_out(&e) => {
                if stop.load(Ordering::Relaxed) {
                    return Err(e);
                }
            }
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;
    use std::time::Duration;

    #[test]
    fn a_message_is_read_whole_silence_is_none_and_an_overlong_length_ends_the_line() {
        let (mut device, mut line) = UnixStream::pair().unwrap();
        line.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let stop = AtomicBool::new(false);
        let mut buf = [0u8; 8];
        assert!(read_message(&mut line, &mut buf, &stop).unwrap().is_none());
        device.write_all(&[0, 0, 0, 3, 7, 8, 9]).unwrap();
        assert_eq!(read_message(&mut line, &mut buf, &stop).unwrap(), Some(3));
        assert_eq!(buf[..3], [7, 8, 9]);
        device.write_all(&[0, 0, 0, 9]).unwrap();
        assert!(read_message(&mut line, &mut buf, &stop).is_err());
        drop(device);
        assert!(read_message(&mut line, &mut buf, &stop).is_err());
    }

    #[test]
    fn a_message_cut_short_ends_the_line_once_stopping() {
        let (mut device, mut line) = UnixStream::pair().unwrap();
        line.set_read_timeout(Some(Duration::from_millis(20)))
            .unwrap();
        let stop = AtomicBool::new(true);
        device.write_all(&[0, 0, 0, 4, 1]).unwrap();
        let mut buf = [0u8; 8];
        let e = read_message(&mut line, &mut buf, &stop).unwrap_err();
        assert!(timed_out(&e), "{e}");
    }
}
