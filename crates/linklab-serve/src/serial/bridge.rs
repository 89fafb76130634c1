//! `--tap`: the link bridged to a TAP. Frames the kernel sends to the TAP go over the link;
//! frames from the link go to the kernel. The TAP is read only while the link has a free
//! transmit slot, so a slow line pushes back into the kernel's TAP queue instead of losing
//! frames here.

use std::net::Ipv4Addr;
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};

use anyhow::Context;
use linklab_serial::MAX_PAYLOAD;

use super::counters_line;
use super::port::Port;
use crate::serve::StopSignals;
use linklab_tap::Tap;

/// What stops a mode of `linklab serial`: SIGINT or SIGTERM ([`StopSignals`]), or another
/// thread ([`StopPipe`]); readable when it fires.
pub trait Stop: AsFd {
    /// Why it stopped, once it has (a signal's number, "a stop").
    fn take(&self) -> Option<String>;
}

impl Stop for StopSignals {
    fn take(&self) -> Option<String> {
        StopSignals::take(self).map(|s| format!("signal {s}"))
    }
}

/// A stop another thread gives ([`StopPipe::stop`]): for a bridge run in a thread of its own.
pub struct StopPipe {
    rx: UnixStream,
    tx: UnixStream,
    stopped: AtomicBool,
}

impl StopPipe {
    /// A stop not yet given.
    pub fn new() -> std::io::Result<StopPipe> {
        let (rx, tx) = UnixStream::pair()?;
        rx.set_nonblocking(true)?;
        Ok(StopPipe {
            rx,
            tx,
            stopped: AtomicBool::new(false),
        })
    }

    /// Gives the stop: the mode ends at its next look.
    pub fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        let _ = std::io::Write::write(&mut &self.tx, &[1]);
    }
}

impl AsFd for StopPipe {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.rx.as_fd()
    }
}

impl Stop for StopPipe {
    fn take(&self) -> Option<String> {
        self.stopped
            .load(Ordering::SeqCst)
            .then(|| "a stop".to_string())
    }
}

/// Runs the bridge until `signals` stops it.
pub fn run<S: Stop>(
    port: &mut Port,
    name: &str,
    address: Option<(Ipv4Addr, u8)>,
    signals: &S,
) -> anyhow::Result<()> {
    let tap = Tap::open(name).map_err(|e| {
        anyhow::anyhow!("--tap {name}: cannot open the TAP interface (needs CAP_NET_ADMIN): {e}")
    })?;
    run_on_tap(port, tap, name, address, signals)
}

/// Runs the bridge on `tap` (opened by the caller, named `name`) until `signals` stops it.
pub fn run_on_tap<S: Stop>(
    port: &mut Port,
    tap: Tap,
    name: &str,
    address: Option<(Ipv4Addr, u8)>,
    signals: &S,
) -> anyhow::Result<()> {
    match address {
        Some((ip, prefix)) => {
            linklab_tap::set_ipv4(name, ip, prefix).with_context(|| {
                format!("--tap {name}: cannot set {ip}/{prefix} and bring it up")
            })?;
            println!("linklab serial: bridging {name} ({ip}/{prefix}) to the link");
        }
        None => println!("linklab serial: bridging {name} to the link"),
    }
    let mut frame = vec![0u8; 65536];
    let (mut tap_refused, mut too_long) = (0u64, 0u64);
    let stop = loop {
        if let Some(signal) = signals.take() {
            break signal;
        }
        port.read()?;
        while let Some(f) = port.link.receive() {
            if !f.is_echo_reply() && !tap.send(f.payload()).context("writing the TAP")? {
                tap_refused += 1;
            }
        }
        while port.link.can_send() {
            let Some(n) = tap.recv(&mut frame).context("reading the TAP")? else {
                break;
            };
            if n > MAX_PAYLOAD {
                too_long += 1; // only with a TAP MTU above 1500
                continue;
            }
            let _ = port.link.send(n, |dst| dst.copy_from_slice(&frame[..n]));
        }
        port.write()?;
        let mut fds = vec![signals.as_fd()];
        if port.link.can_send() {
            fds.push(tap.as_fd());
        }
        port.wait(&fds, port.timeout())?;
    };
    println!("linklab serial: stopped by {stop}");
    println!("{}", counters_line(port));
    println!("tap: refused {tap_refused} too_long {too_long}");
    Ok(())
}
