//! [`EmuBus`]: the SPI bus of the emulated Pico (the `spi-link` image of `linklab emu pico`),
//! whose master is the harness's SPI master model (emulators/rp2040js/spi-master.mjs), asked
//! for one transfer at a time over a unix socket, as spidev is asked by SPI_IOC_MESSAGE. The
//! link's clock is the emulated chip's: the harness stamps every answer with it and holds the
//! chip between the answer and the next request, so the host's own time is no part of any
//! figure (the master's gap stands for it).
//!
//! Messages (a 4-byte big-endian length, then the message; emulators/rp2040js/pico-spi.mjs):
//! to the harness `X` u32 hz, u8 flags (1: wait for READY), bytes; `W` u64 until_ns (0: none);
//! from it `D` u64 start_ns, u64 end_ns, u8 pins, bytes; `N` u64 now_ns, u8 pins (READY never
//! came); `E` u64 now_ns, u8 pins (the wait is over). Pins: READY | REQUEST << 1.

use std::io::{Read, Write};
use std::os::fd::{AsFd, BorrowedFd};
use std::os::unix::net::UnixStream;

use anyhow::{bail, Context};
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};

use super::spi::{Pins, SpiBus};

/// The emulated Pico's bus, its master the harness's model.
pub struct EmuBus {
    stream: UnixStream,
    hz: u32,
    /// The chip's clock at the last answer, ns.
    now_ns: u64,
    what: String,
}

/// An answer of the harness.
struct Answer {
    kind: u8,
    at_ns: u64,
    end_ns: u64,
    pins: Pins,
    bytes: Vec<u8>,
}

fn pins_of(bits: u8) -> Pins {
    Pins {
        ready: bits & 1 != 0,
        request: bits & 2 != 0,
    }
}

impl EmuBus {
    /// The bus over the harness's connected `stream`, clocked at `hz`; `what` names the board.
    pub fn new(stream: UnixStream, hz: u32, what: &str) -> anyhow::Result<EmuBus> {
        stream
            .set_nonblocking(false)
            .context("the harness's socket")?;
        Ok(EmuBus {
            stream,
            hz,
            now_ns: 0,
            what: what.to_string(),
        })
    }

    fn send(&mut self, body: &[u8]) -> anyhow::Result<()> {
        let mut msg = Vec::with_capacity(4 + body.len());
        msg.extend_from_slice(&(body.len() as u32).to_be_bytes());
        msg.extend_from_slice(body);
        self.stream
            .write_all(&msg)
            .context("writing to the harness (did it stop?)")
    }

    fn receive(&mut self) -> anyhow::Result<Answer> {
        let mut len = [0u8; 4];
        self.stream
            .read_exact(&mut len)
            .context("the harness closed its socket")?;
        let len = u32::from_be_bytes(len) as usize;
        if !(10..=64 + 4096 * 4).contains(&len) {
            bail!("the harness sent a message of {len} bytes");
        }
        let mut m = vec![0u8; len];
        self.stream
            .read_exact(&mut m)
            .context("the harness closed its socket")?;
        let u64_at = |i: usize| u64::from_be_bytes(m[i..i + 8].try_into().unwrap_or([0; 8]));
        let answer = match m[0] {
            b'D' if len >= 18 => Answer {
                kind: b'D',
                at_ns: u64_at(1),
                end_ns: u64_at(9),
                pins: pins_of(m[17]),
                bytes: m[18..].to_vec(),
            },
            kind @ (b'N' | b'E') if len == 10 => Answer {
                kind,
                at_ns: u64_at(1),
                end_ns: u64_at(1),
                pins: pins_of(m[9]),
                bytes: vec![],
            },
            kind => bail!("the harness sent an unknown message ({kind:#x}, {len} bytes)"),
        };
        self.now_ns = self.now_ns.max(answer.end_ns);
        Ok(answer)
    }
}

impl EmuBus {
    /// A transfer that does not wait for READY: a master that clocks faster than the device
    /// re-arms (the fault tests' host). None never: the bytes are clocked whatever the device.
    pub fn transfer_unready(&mut self, tx: &[u8], rx: &mut [u8]) -> anyhow::Result<Option<Pins>> {
        self.clock(tx, rx, false)
    }

    fn clock(
        &mut self,
        tx: &[u8],
        rx: &mut [u8],
        wait_ready: bool,
    ) -> anyhow::Result<Option<Pins>> {
        let mut body = Vec::with_capacity(6 + tx.len());
        body.push(b'X');
        body.extend_from_slice(&self.hz.to_be_bytes());
        body.push(u8::from(wait_ready));
        body.extend_from_slice(tx);
        self.send(&body)?;
        loop {
            let a = self.receive()?;
            match a.kind {
                b'D' if a.bytes.len() == rx.len() => {
                    rx.copy_from_slice(&a.bytes);
                    let _ = a.at_ns;
                    return Ok(Some(a.pins));
                }
                b'D' => bail!(
                    "the harness answered a transfer of {} bytes with {}",
                    rx.len(),
                    a.bytes.len()
                ),
                b'N' => return Ok(None),
                _ => {} // a wait's answer that crossed this request
            }
        }
    }
}

impl SpiBus for EmuBus {
    fn now_us(&self) -> u64 {
        self.now_ns / 1000
    }

    fn transfer(&mut self, tx: &[u8], rx: &mut [u8]) -> anyhow::Result<Option<Pins>> {
        self.clock(tx, rx, true)
    }

    fn wait(&mut self, fds: &[BorrowedFd<'_>], until_us: Option<u64>) -> anyhow::Result<Pins> {
        let until_ns = until_us.map_or(0, |u| u.saturating_mul(1000).max(1));
        let mut body = vec![b'W'];
        body.extend_from_slice(&until_ns.to_be_bytes());
        self.send(&body)?;
        loop {
            let mut polls = vec![PollFd::new(self.stream.as_fd(), PollFlags::POLLIN)];
            polls.extend(fds.iter().map(|fd| PollFd::new(*fd, PollFlags::POLLIN)));
            match poll(&mut polls, PollTimeout::NONE) {
                Ok(_) | Err(Errno::EINTR) => {}
                Err(e) => return Err(std::io::Error::from(e)).context("waiting for the harness"),
            }
            let seen = |p: &PollFd| !p.revents().unwrap_or(PollFlags::empty()).is_empty();
            if seen(&polls[0]) {
                drop(polls);
                let a = self.receive()?;
                if a.kind == b'E' {
                    return Ok(a.pins);
                }
                continue;
            }
            if polls[1..].iter().any(seen) {
                // The chip runs on meanwhile; the harness drops this wait at the next request.
                return Ok(Pins::default());
            }
        }
    }

    fn hz(&self) -> u32 {
        self.hz
    }

    fn describe(&self) -> String {
        format!(
            "{} over SPI at {} MHz (the harness's master)",
            self.what,
            f64::from(self.hz) / 1e6
        )
    }
}
