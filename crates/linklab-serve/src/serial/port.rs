//! The link on a line: moves bytes between a [`Line`] (a serial port, an SPI bus) and a
//! [`Link`], and waits for the next thing to do (the line has news, another descriptor is
//! readable, the link's timer).

use std::os::fd::BorrowedFd;
use std::time::Duration;

use linklab_serial::Link;

/// The window of the link in frames (the crate's default).
pub type SerialLink = Link<8>;

/// What carries the link's bytes: a serial port (`TtyLine`, which reopens a port that hung
/// up) or an SPI bus whose master is this end ([`super::spi::SpiLine`]). It also keeps the
/// link's clock: real time for a port or spidev, the emulated chip's for the emulator's SPI
/// master.
pub trait Line {
    /// The link's clock, in µs.
    fn now_us(&self) -> u64;
    /// Feeds the link what the line brought.
    fn read(&mut self, link: &mut SerialLink) -> anyhow::Result<()>;
    /// Hands the line what the link has to send, as far as the line takes it.
    fn write(&mut self, link: &mut SerialLink) -> anyhow::Result<()>;
    /// Sleeps until the line has news, one of `fds` is readable, or the link's clock reaches
    /// `until_us`.
    fn wait(&mut self, fds: &[BorrowedFd<'_>], until_us: Option<u64>) -> anyhow::Result<()>;
    /// The line in a few words, e.g. `/dev/ttyUSB0 at 3000000 baud`.
    fn describe(&self) -> String;
    /// Its raw byte rate each way (8N1 baud / 10; SPI clock / 8).
    fn bytes_per_s(&self) -> u64;
}

/// A line carrying a link.
pub struct Port {
    /// The line.
    pub line: Box<dyn Line>,
    /// The link (boxed: its stores are ~25 KB).
    pub link: Box<SerialLink>,
}

impl Port {
    /// The link over `line` with timers and limits `config`.
    pub fn new(line: Box<dyn Line>, config: linklab_serial::Config) -> Port {
        // A different epoch for every start: the peer must see a restart as one.
        let seed = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos() ^ d.as_secs() as u32)
            ^ std::process::id().rotate_left(16);
        Port {
            line,
            link: Box::new(Link::new(config, seed)),
        }
    }

    /// The link's clock, µs.
    pub fn now(&self) -> u64 {
        self.line.now_us()
    }

    /// Feeds everything the line has brought to the link.
    pub fn read(&mut self) -> anyhow::Result<()> {
        self.line.read(&mut self.link)
    }

    /// Hands the line what the link has to send.
    pub fn write(&mut self) -> anyhow::Result<()> {
        self.line.write(&mut self.link)
    }

    /// How long until the link's next timer (zero when it has something to send now).
    pub fn timeout(&self) -> Option<Duration> {
        let now = self.now();
        self.link
            .poll_at(now)
            .map(|at| Duration::from_micros(at.saturating_sub(now)))
    }

    /// Sleeps until the line has news, one of `fds` is readable, or `timeout` passes (on the
    /// link's clock).
    pub fn wait(
        &mut self,
        fds: &[BorrowedFd<'_>],
        timeout: Option<Duration>,
    ) -> anyhow::Result<()> {
        let until = timeout.map(|t| self.now().saturating_add(t.as_micros() as u64));
        self.line.wait(fds, until)
    }
}
