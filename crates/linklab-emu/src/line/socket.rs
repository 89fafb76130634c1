//! The unix socket QEMU's `-netdev stream` connects to.

use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
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
