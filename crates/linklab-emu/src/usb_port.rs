//! The host end of the emulated Pico's USB port: a pseudo-terminal a program opens as it would
//! open /dev/ttyACM0, relayed to the harness's model of Linux's cdc-acm
//! (emulators/rp2040js/pico-usb.mjs) over the harness's unix socket.
//!
//! What a program sees is what cdc-acm gives it, with the same backpressure:
//! - opening the port (the pty's slave) raises DTR|RTS on the device; closing it drops them
//!   (cdc-acm's open and close, HUPCL), after the writes in flight are done;
//! - `write` hands the bytes to cdc-acm's write URBs, 1 280 bytes each, at most 16 in flight:
//!   with all 16 on the bus the relay stops reading the pty and a writer faster than the bus
//!   blocks once the pty's own buffer is full;
//! - what the device sends is written into the pty as the reader takes it: while more than
//!   n_tty's 4 096 bytes wait here, the harness's cdc-acm is throttled and issues no IN token,
//!   so a program that does not read stops the device;
//! - a termios change that alters the line coding (rate, stop bits, parity, data bits) becomes
//!   SET_LINE_CODING;
//! - a USB reset hangs the port up (cdc-acm's post-reset): the relay hangs the pty's slave up
//!   (TIOCVHANGUP) and the program must open it again.
//!
//! Nothing is dropped without a counter: bytes from the device that arrive while the port is
//! closed (a read URB that completed as the program closed it) are counted in
//! `from_device_dropped_closed`, and `from_device = to_pty + from_device_dropped_closed +
//! pending` holds.

mod relay;

use std::os::fd::{AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use anyhow::{bail, Context};
use nix::fcntl::{fcntl, FcntlArg, OFlag};
use nix::pty::openpty;

pub use relay::Counters;

/// A pseudo-terminal made for the port, not yet relayed.
pub struct UsbPort {
    master: OwnedFd,
    path: PathBuf,
    link: Option<PathBuf>,
}

impl UsbPort {
    /// Makes the pseudo-terminal; with `link`, a symbolic link to its slave there (replacing
    /// a symbolic link already at that path, never another file).
    pub fn make(link: Option<&Path>) -> anyhow::Result<UsbPort> {
        let pty = openpty(None, None).context("cannot make a pseudo-terminal")?;
        let path = std::fs::read_link(format!("/proc/self/fd/{}", pty.slave.as_raw_fd()))
            .context("cannot find the pseudo-terminal's name")?;
        // The slave is the program's: with no descriptor of ours open on it, the master sees
        // the program's opens and closes (POLLHUP while nobody has it open).
        drop(pty.slave);
        let flags = OFlag::from_bits_truncate(fcntl(&pty.master, FcntlArg::F_GETFL)?);
        fcntl(&pty.master, FcntlArg::F_SETFL(flags | OFlag::O_NONBLOCK))?;
        if let Some(link) = link {
            match std::fs::symlink_metadata(link) {
                Ok(m) if m.file_type().is_symlink() => std::fs::remove_file(link)
                    .with_context(|| format!("--pty {}: cannot replace it", link.display()))?,
                Ok(_) => bail!(
                    "--pty {}: a file that is not a symbolic link is there",
                    link.display()
                ),
                Err(_) => {}
            }
            std::os::unix::fs::symlink(&path, link)
                .with_context(|| format!("--pty {}: cannot make the link", link.display()))?;
        }
        Ok(UsbPort {
            master: pty.master,
            path,
            link: link.map(Path::to_path_buf),
        })
    }

    /// The path a program opens (the symbolic link if one was asked for).
    pub fn path(&self) -> &Path {
        self.link.as_deref().unwrap_or(&self.path)
    }

    /// The pseudo-terminal's own name (/dev/pts/N).
    pub fn pts(&self) -> &Path {
        &self.path
    }

    /// Relays the port to the harness on `stream` in a thread of its own until [`Relay::stop`]
    /// or until the harness closes the socket.
    pub fn relay(self, stream: UnixStream) -> anyhow::Result<Relay> {
        let stop = Arc::new(AtomicBool::new(false));
        let broken = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Mutex::new(Counters::default()));
        let state = relay::State::new(self.master, self.path.clone(), stream)?;
        let thread = {
            let (stop, broken, counters) = (stop.clone(), broken.clone(), counters.clone());
            std::thread::spawn(move || relay::run(state, &stop, &broken, &counters))
        };
        Ok(Relay {
            stop,
            broken,
            counters,
            thread: Some(thread),
            link: self.link,
        })
    }
}

/// The port relayed to the harness.
pub struct Relay {
    stop: Arc<AtomicBool>,
    broken: Arc<AtomicBool>,
    counters: Arc<Mutex<Counters>>,
    thread: Option<JoinHandle<anyhow::Result<()>>>,
    link: Option<PathBuf>,
}

impl Relay {
    /// True once the harness closed the socket (or the relay failed).
    pub fn broken(&self) -> bool {
        self.broken.load(Ordering::Relaxed)
    }

    /// The relay's counters as they are now.
    pub fn counters(&self) -> Counters {
        self.counters.lock().map(|c| c.clone()).unwrap_or_default()
    }

    /// Stops the relay; its counters' summary line (and the relay's error, if it failed).
    pub fn stop(mut self) -> String {
        self.stop.store(true, Ordering::Relaxed);
        let outcome = match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Err(e))) => format!(" (the relay failed: {e:#})"),
            Some(Err(_)) => " (the relay panicked)".to_string(),
            _ => String::new(),
        };
        format!("{}{outcome}", self.counters().summary())
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        if let Some(link) = &self.link {
            let _ = std::fs::remove_file(link);
        }
    }
}
