//! [`SpidevBus`]: a Linux spidev device as the link's SPI bus, this host its master (a
//! Raspberry Pi's /dev/spidev0.0 with the Pico on SPI0): one SPI_IOC_MESSAGE per transfer at
//! the chosen clock (the `spidev` crate), SPI mode 0, 8-bit words, MSB first; the device's
//! READY and REQUEST pins through the GPIO character device (the `gpiocdev` crate, uAPI v2),
//! edge events waking the master. Not run here (no SPI hardware): its options are checked and
//! the ioctl's transfer struct is held to the kernel header's layout (tests below).

use std::os::fd::{AsFd, BorrowedFd};
use std::time::{Duration, Instant};

use anyhow::{anyhow, bail, Context};
use gpiocdev::line::{EdgeDetection, Value};
use gpiocdev::Request;
use nix::errno::Errno;
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use spidev::{SpiModeFlags, Spidev, SpidevOptions, SpidevTransfer};

use super::spi::{Pins, SpiBus};

/// The highest clock `--spi-hz` takes: a Raspberry Pi 4's SPI0 at its core clock's divider 2
/// is far above what an RP2040 device takes; the emulator's master stops at 31.25 MHz.
pub const MAX_HZ: u32 = 125_000_000;
/// The lowest.
pub const MIN_HZ: u32 = 100_000;
/// How long a transfer waits for READY before it is given up (and counted).
pub const READY_TIMEOUT: Duration = Duration::from_millis(20);

/// Where the device's two pins are: a GPIO chip and two of its line offsets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct GpioPins {
    /// The chip, e.g. /dev/gpiochip0.
    pub chip: String,
    /// READY's line offset.
    pub ready: u32,
    /// REQUEST's line offset.
    pub request: u32,
}

/// A spidev device and the two GPIO lines.
pub struct SpidevBus {
    spi: Spidev,
    lines: Request,
    pins: GpioPins,
    path: String,
    hz: u32,
    started: Instant,
}

impl SpidevBus {
    /// Opens `path` for mode 0 at `hz` and requests the pins as inputs with edge events.
    pub fn open(path: &str, hz: u32, pins: &GpioPins) -> anyhow::Result<SpidevBus> {
        if !(MIN_HZ..=MAX_HZ).contains(&hz) {
            bail!("--spi-hz {hz}: {MIN_HZ}..={MAX_HZ}");
        }
        if pins.ready == pins.request {
            bail!("--ready-line and --request-line: two different lines");
        }
        let mut spi =
            Spidev::open(path).map_err(|e| anyhow!("--spidev {path}: cannot open: {e}"))?;
        let options = SpidevOptions::new()
            .bits_per_word(8)
            .max_speed_hz(hz)
            .mode(SpiModeFlags::SPI_MODE_0)
            .build();
        spi.configure(&options)
            .map_err(|e| anyhow!("--spidev {path}: refuses mode 0 at {hz} Hz: {e}"))?;
        let lines = Request::builder()
            .on_chip(&pins.chip)
            .with_consumer("linklab serial")
            .with_lines(&[pins.ready, pins.request])
            .as_input()
            .with_edge_detection(EdgeDetection::BothEdges)
            .request()
            .map_err(|e| {
                anyhow!(
                    "--gpio-chip {}: cannot request lines {} and {}: {e}",
                    pins.chip,
                    pins.ready,
                    pins.request
                )
            })?;
        Ok(SpidevBus {
            spi,
            lines,
            pins: pins.clone(),
            path: path.to_string(),
            hz,
            started: Instant::now(),
        })
    }

    fn read_pins(&self) -> anyhow::Result<Pins> {
        // Pending edges only woke us: the levels are what count.
        while self.lines.has_edge_event().unwrap_or(false) {
            let _ = self.lines.read_edge_event();
        }
        let high = |line| {
            self.lines
                .value(line)
                .map(|v| v == Value::Active)
                .with_context(|| format!("reading GPIO line {line}"))
        };
        Ok(Pins {
            ready: high(self.pins.ready)?,
            request: high(self.pins.request)?,
        })
    }

    /// Sleeps until the GPIO lines have an edge, one of `fds` is readable, or `timeout`.
    fn sleep(&self, fds: &[BorrowedFd<'_>], timeout: Duration) -> anyhow::Result<bool> {
        let mut polls = vec![PollFd::new(self.lines.as_fd(), PollFlags::POLLIN)];
        polls.extend(fds.iter().map(|fd| PollFd::new(*fd, PollFlags::POLLIN)));
        let ms = timeout.as_micros().div_ceil(1000).min(60_000) as u32;
        match poll(
            &mut polls,
            PollTimeout::try_from(ms).unwrap_or(PollTimeout::MAX),
        ) {
            Ok(_) | Err(Errno::EINTR) => {}
            Err(e) => return Err(std::io::Error::from(e)).context("waiting for the GPIO lines"),
        }
        let seen = |p: &PollFd| !p.revents().unwrap_or(PollFlags::empty()).is_empty();
        Ok(polls[1..].iter().any(seen))
    }
}

impl SpiBus for SpidevBus {
    fn now_us(&self) -> u64 {
        self.started.elapsed().as_micros() as u64
    }

    fn transfer(&mut self, tx: &[u8], rx: &mut [u8]) -> anyhow::Result<Option<Pins>> {
        let deadline = Instant::now() + READY_TIMEOUT;
        while !self.read_pins()?.ready {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                return Ok(None);
            }
            self.sleep(&[], left)?;
        }
        let mut t = SpidevTransfer::read_write(tx, rx);
        t.speed_hz = self.hz;
        t.bits_per_word = 8;
        self.spi
            .transfer(&mut t)
            .with_context(|| format!("--spidev {}: SPI_IOC_MESSAGE", self.path))?;
        Ok(Some(self.read_pins()?))
    }

    fn wait(&mut self, fds: &[BorrowedFd<'_>], until_us: Option<u64>) -> anyhow::Result<Pins> {
        loop {
            let pins = self.read_pins()?;
            if pins.ready && pins.request {
                return Ok(pins);
            }
            let left = until_us.map_or(Duration::from_secs(60), |u| {
                Duration::from_micros(u.saturating_sub(self.now_us()))
            });
            if left.is_zero() || self.sleep(fds, left)? {
                return self.read_pins();
            }
        }
    }

    fn hz(&self) -> u32 {
        self.hz
    }

    fn describe(&self) -> String {
        format!(
            "{} at {} MHz, READY {}:{}, REQUEST {}:{}",
            self.path,
            f64::from(self.hz) / 1e6,
            self.pins.chip,
            self.pins.ready,
            self.pins.chip,
            self.pins.request
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use spidev::spidevioctl::spi_ioc_transfer;
    use std::mem::{offset_of, size_of};

    /// `struct spi_ioc_transfer` of include/uapi/linux/spi/spidev.h: tx_buf u64 @0, rx_buf
    /// u64 @8, len u32 @16, speed_hz u32 @20, delay_usecs u16 @24, bits_per_word u8 @26,
    /// cs_change u8 @27, tx_nbits u8 @28, rx_nbits u8 @29, word_delay_usecs u8 @30, pad u8 @31:
    /// 32 bytes, which SPI_IOC_MESSAGE(n) sizes as n x 32.
    #[test]
    fn the_transfer_struct_is_the_kernel_headers() {
        assert_eq!(size_of::<spi_ioc_transfer>(), 32);
        assert_eq!(offset_of!(spi_ioc_transfer, speed_hz), 20);
        assert_eq!(offset_of!(spi_ioc_transfer, delay_usecs), 24);
        assert_eq!(offset_of!(spi_ioc_transfer, bits_per_word), 26);
        assert_eq!(offset_of!(spi_ioc_transfer, cs_change), 27);
        assert_eq!(offset_of!(spi_ioc_transfer, pad), 28);
        // When the header is installed, its layout is the one above.
        if let Ok(h) = std::fs::read_to_string("/usr/include/linux/spi/spidev.h") {
            let fields: Vec<&str> = h
                .split("struct spi_ioc_transfer {")
                .nth(1)
                .and_then(|s| s.split("};").next())
                .unwrap_or("")
                .lines()
                .filter(|l| l.trim_start().starts_with("__u"))
                .filter_map(|l| l.trim().strip_suffix(';'))
                .collect();
            let want = [
                "__u64		tx_buf",
                "__u64		rx_buf",
                "__u32		len",
                "__u32		speed_hz",
                "__u16		delay_usecs",
                "__u8		bits_per_word",
                "__u8		cs_change",
                "__u8		tx_nbits",
                "__u8		rx_nbits",
                "__u8		word_delay_usecs",
                "__u8		pad",
            ];
            let norm = |s: &str| s.split_whitespace().collect::<Vec<_>>().join(" ");
            let got: Vec<String> = fields.iter().map(|f| norm(f)).collect();
            let want: Vec<String> = want.iter().map(|f| norm(f)).collect();
            assert_eq!(got, want, "the kernel header's spi_ioc_transfer");
        }
    }

    #[test]
    fn bad_options_are_refused_before_any_device_is_opened() {
        let pins = GpioPins {
            chip: "/dev/gpiochip0".into(),
            ready: 24,
            request: 25,
        };
        let e = SpidevBus::open("/dev/spidev0.0", 10, &pins).err().unwrap();
        assert!(e.to_string().contains("--spi-hz 10"), "{e}");
        let same = GpioPins {
            request: 24,
            ..pins.clone()
        };
        let e = SpidevBus::open("/dev/spidev0.0", 20_000_000, &same)
            .err()
            .unwrap();
        assert!(e.to_string().contains("two different lines"), "{e}");
        let e = SpidevBus::open("/nonexistent/spidev9.9", 20_000_000, &pins)
            .err()
            .unwrap();
        assert!(e.to_string().contains("cannot open"), "{e}");
    }
}
