//! The unix socket QEMU's `-netdev stream` connects to.

use std::os::fd::AsRawFd;
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
    /// Listens at a fresh path in the temporary directory.
    pub fn bind() -> anyhow::Result<Socket> {
        Socket::bind_at(
            std::env::temp_dir().join(format!("linklab-line-{}.sock", std::process::id())),
        )
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

/// Sets the socket's send buffer.
pub fn set_send_buffer(stream: &UnixStream, bytes: libc::c_int) {
    // SAFETY: setsockopt with a pointer to an int that outlives the call.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}
