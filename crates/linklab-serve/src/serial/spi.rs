//! The link over SPI with this end as the bus master (a Raspberry Pi's spidev, or the SPI
//! master model of the emulated Pico): [`SpiLine`] decides when to clock and how many bytes,
//! an [`SpiBus`] clocks them.
//!
//! The device drives two pins back: READY (armed: its DMA set up for the next transfer; the
//! master waits for it before each transfer) and REQUEST (it has bytes to send; read while
//! READY is high). Every transfer is full duplex: the master clocks as many bytes as it has to
//! send, at least [`MIN_CHUNK`] when the device asks, doubling while the device's bytes fill
//! whole transfers, at most [`MAX_TRANSFER`]; the unfilled rest is 0x00 each way, which
//! COBS's deframer skips. docs/spi.md says why each choice.

use std::os::fd::BorrowedFd;

use super::port::{Line, SerialLink};

/// The most bytes one transfer carries: spidev's default `bufsiz` (Linux
/// drivers/spi/spidev.c), and the device's receive buffer.
pub const MAX_TRANSFER: usize = 4096;
/// Bytes clocked when only the device has something to say: room for a small frame (a ping
/// or a TCP ACK, with the link's 14 bytes and COBS) in one transfer.
pub const MIN_CHUNK: usize = 256;
/// Transfers one call of [`SpiLine::write`] makes at most before the caller looks at its other
/// inputs again.
const BURST: usize = 16;

/// The device's pins as the master last read them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Pins {
    /// Armed for a transfer.
    pub ready: bool,
    /// Has bytes to send.
    pub request: bool,
}

/// An SPI bus this end masters: one transfer per call, as spidev's SPI_IOC_MESSAGE.
pub trait SpiBus {
    /// The link's clock, µs.
    fn now_us(&self) -> u64;
    /// Waits for READY (at most the bus's ready timeout), then clocks `tx` out and `rx` in
    /// (the same length) with CS low throughout. None if READY never came.
    fn transfer(&mut self, tx: &[u8], rx: &mut [u8]) -> anyhow::Result<Option<Pins>>;
    /// Sleeps until READY and REQUEST are both high, one of `fds` is readable, or the clock
    /// reaches `until_us`; the pins then.
    fn wait(&mut self, fds: &[BorrowedFd<'_>], until_us: Option<u64>) -> anyhow::Result<Pins>;
    /// The SPI clock, Hz.
    fn hz(&self) -> u32;
    /// The bus in a few words.
    fn describe(&self) -> String;
}

/// What the master counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SpiCounts {
    /// Transfers made.
    pub transfers: u64,
    /// Bytes clocked (each way).
    pub bytes: u64,
    /// Link bytes sent in them.
    pub link_bytes_out: u64,
    /// Transfers READY never came for (the device not armed within the bus's timeout).
    pub not_ready: u64,
}

/// The link's line over an SPI bus it masters.
pub struct SpiLine<B: SpiBus> {
    bus: B,
    /// Link bytes taken from the link and not yet clocked.
    out: Vec<u8>,
    /// What the master clocks for the device when it has less to send itself.
    chunk: usize,
    /// The device's pins as last read.
    pins: Pins,
    tx: Vec<u8>,
    rx: Vec<u8>,
    /// The counts.
    pub counts: SpiCounts,
    /// LINKLAB_SPI_TRACE set: one line per transfer on stderr.
    trace: bool,
    /// The device's bytes came in since the last wait: the caller has them to look at first.
    news: bool,
}

impl<B: SpiBus> SpiLine<B> {
    /// The line over `bus`.
    pub fn new(bus: B) -> SpiLine<B> {
        SpiLine {
            bus,
            out: Vec::with_capacity(MAX_TRANSFER),
            chunk: MIN_CHUNK,
            pins: Pins::default(),
            tx: vec![0; MAX_TRANSFER],
            rx: vec![0; MAX_TRANSFER],
            counts: SpiCounts::default(),
            trace: std::env::var_os("LINKLAB_SPI_TRACE").is_some(),
            news: false,
        }
    }

    /// The bus.
    pub fn bus(&mut self) -> &mut B {
        &mut self.bus
    }

    /// Takes what the link has for the line, up to one transfer's worth.
    fn fill(&mut self, link: &mut SerialLink) {
        let have = self.out.len();
        if have >= MAX_TRANSFER {
            return;
        }
        self.out.resize(MAX_TRANSFER, 0);
        let n = link.poll_output(self.bus.now_us(), &mut self.out[have..]);
        self.out.truncate(have + n);
    }

    /// How many bytes the next transfer clocks (0: none is due).
    fn length(&self) -> usize {
        let device = if self.pins.request { self.chunk } else { 0 };
        self.out.len().max(device).min(MAX_TRANSFER)
    }

    /// One transfer of `len` bytes: the link's bytes out, the device's in. False if READY
    /// never came (the bytes wait for the next try).
    fn transfer(&mut self, link: &mut SerialLink, len: usize) -> anyhow::Result<bool> {
        let mine = self.out.len().min(len);
        self.tx[..mine].copy_from_slice(&self.out[..mine]);
        self.tx[mine..len].fill(0);
        let Some(pins) = self.bus.transfer(&self.tx[..len], &mut self.rx[..len])? else {
            self.counts.not_ready += 1;
            return Ok(false);
        };
        self.out.drain(..mine);
        self.counts.transfers += 1;
        self.counts.bytes += len as u64;
        self.counts.link_bytes_out += mine as u64;
        self.pins = pins;
        if self.trace {
            let used = self.rx[..len]
                .iter()
                .rposition(|&b| b != 0)
                .map_or(0, |k| k + 1);
            eprintln!(
                "spi: t={}us len={len} mine={mine} device={used} ready={} request={}",
                self.bus.now_us(),
                pins.ready,
                pins.request
            );
        }
        // The idle line after the device's last byte: one delimiter closes what came before,
        // the rest the deframer would only skip.
        let used = self.rx[..len]
            .iter()
            .rposition(|&b| b != 0)
            .map_or(0, |k| k + 2);
        self.news |= used > 0;
        link.handle_input(self.bus.now_us(), &self.rx[..used.min(len)]);
        let rx = &self.rx[..len];
        // The device's bytes ran to the end: it may have more, so ask for more next time.
        self.chunk = if rx.last().is_some_and(|&b| b != 0) {
            (self.chunk * 2).min(MAX_TRANSFER)
        } else {
            MIN_CHUNK
        };
        Ok(true)
    }
}

impl<B: SpiBus> Line for SpiLine<B> {
    fn now_us(&self) -> u64 {
        self.bus.now_us()
    }

    /// The device's bytes come in with the master's transfers: those `write` makes, and one
    /// here when the device asks and the link has nothing to send.
    fn read(&mut self, link: &mut SerialLink) -> anyhow::Result<()> {
        if self.pins.request && self.out.is_empty() {
            self.transfer(link, self.chunk)?;
        }
        Ok(())
    }

    fn write(&mut self, link: &mut SerialLink) -> anyhow::Result<()> {
        for _ in 0..BURST {
            self.fill(link);
            let len = self.length();
            if len == 0 || !self.transfer(link, len)? {
                return Ok(());
            }
        }
        Ok(())
    }

    fn wait(&mut self, fds: &[BorrowedFd<'_>], until_us: Option<u64>) -> anyhow::Result<()> {
        if std::mem::take(&mut self.news) || self.pins.request || !self.out.is_empty() {
            return Ok(()); // the device's bytes to look at, or a transfer due now
        }
        self.pins = self.bus.wait(fds, until_us)?;
        Ok(())
    }

    fn describe(&self) -> String {
        self.bus.describe()
    }

    fn bytes_per_s(&self) -> u64 {
        u64::from(self.bus.hz()) / 8
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use linklab_serial::{Config, Link, State};

    /// A device end on the bus: a link whose bytes ride the transfers, armed after each.
    struct LoopBus {
        device: Box<SerialLink>,
        now: u64,
        lens: Vec<usize>,
    }

    impl SpiBus for LoopBus {
        fn now_us(&self) -> u64 {
            self.now
        }
        fn transfer(&mut self, tx: &[u8], rx: &mut [u8]) -> anyhow::Result<Option<Pins>> {
            self.now += 10 + tx.len() as u64 / 2;
            self.lens.push(tx.len());
            let n = self.device.poll_output(self.now, rx);
            rx[n..].fill(0);
            self.device.handle_input(self.now, tx);
            Ok(Some(self.pins()))
        }
        fn wait(&mut self, _: &[BorrowedFd<'_>], until_us: Option<u64>) -> anyhow::Result<Pins> {
            self.now = until_us.unwrap_or(self.now).max(self.now);
            Ok(self.pins())
        }
        fn hz(&self) -> u32 {
            20_000_000
        }
        fn describe(&self) -> String {
            "a loop".into()
        }
    }

    impl LoopBus {
        fn pins(&self) -> Pins {
            let due = self.device.poll_at(self.now).is_some_and(|t| t <= self.now);
            Pins {
                ready: true,
                request: due,
            }
        }
    }

    fn config() -> Config {
        Config {
            line_bytes_per_s: 0,
            ..Config::for_line_rate(2_500_000)
        }
    }

    #[test]
    fn frames_cross_both_ways_and_the_master_clocks_only_what_is_due() {
        let bus = LoopBus {
            device: Box::new(Link::new(config(), 1)),
            now: 0,
            lens: vec![],
        };
        let mut line = SpiLine::new(bus);
        let mut host: Box<SerialLink> = Box::new(Link::new(config(), 2));
        for _ in 0..50 {
            line.write(&mut host).unwrap();
            line.read(&mut host).unwrap();
            let until = host.poll_at(line.now_us());
            line.wait(&[], until).unwrap();
        }
        assert_eq!(host.state(), State::Established);
        host.send(1000, |b| b.fill(7)).unwrap();
        line.bus().device.send(600, |b| b.fill(9)).unwrap();
        for _ in 0..20 {
            line.write(&mut host).unwrap();
            line.read(&mut host).unwrap();
        }
        let got = line.bus().device.receive().map(|f| f.payload().to_vec());
        assert_eq!(got, Some(vec![7u8; 1000]));
        assert_eq!(host.receive().map(|f| f.payload().len()), Some(600));
        assert!(line.counts.transfers > 0 && line.counts.not_ready == 0);
        assert!(line.bus().lens.iter().all(|&l| l <= MAX_TRANSFER && l > 0));
        host.counters().check_conservation().unwrap();
        line.bus().device.counters().check_conservation().unwrap();
    }
}
