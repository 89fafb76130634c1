//! The SPI bus to the W5500 and its chip select, the driver's own (not an `SpiDevice`): a
//! frame header and what follows it go under one SCSn, with the CPU deciding in between
//! (how long a received frame is), and each transfer picks its way: polled for a few bytes,
//! DMA (the HAL's async transfer) for a frame.
//!
//! Why polled for small ones: embassy-net-wiznet's async transfers on an RP2040 (two DMA
//! channels set up, an interrupt, the task woken) held SCSn low 12–17 µs for a register
//! access that clocks in 1–2 µs at 31.25 MHz (docs/w5500.md, "Where the time goes"); esphome
//! keeps W5500 transfers on polled SPI for the same reason ("the busy-wait is cheaper than
//! an interrupt round trip", esphome PR #16596). How far: measured here, embassy-rp's polled
//! transfer moves one byte at a time (462 ns a byte at 31.25 MHz, 272 of them on the bus)
//! and a DMA transfer from this driver's task costs about 4 µs more to start and finish, so
//! they break even near 21 bytes: [`POLLED_MAX`] keeps the registers (at most 6 bytes)
//! polled and sends every frame (at least 60) by DMA. (At 64, as esphome's, an ACK's
//! 60-byte frame took 30 µs polled.)

use embedded_hal::digital::OutputPin;
use embedded_hal::spi::SpiBus;
use embedded_hal_async::spi::SpiBus as AsyncSpiBus;

use crate::regs::{frame_header, Block};

/// The most data bytes a transfer moves polled; longer ones go by DMA: 16 (see the module's
/// notes).
pub const POLLED_MAX: usize = 16;

/// A transfer on the bus failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum BusError {
    /// The SPI bus reported an error.
    Spi,
    /// The chip select pin could not be driven.
    Pin,
}

/// The bus: an SPI bus that transfers both blocking and async (`embedded-hal` and
/// `embedded-hal-async` `SpiBus`, e.g. embassy-rp's `Spi<'_, _, Async>`), and the W5500's SCSn
/// as an output pin.
pub struct Bus<S, CS> {
    spi: S,
    cs: CS,
}

impl<S, CS> Bus<S, CS>
where
    S: SpiBus<u8> + AsyncSpiBus<u8>,
    CS: OutputPin,
{
    /// The bus over `spi` with SCSn on `cs` (driven high now: no frame open).
    pub fn new(spi: S, mut cs: CS) -> Self {
        let _ = cs.set_high();
        Bus { spi, cs }
    }

    /// SCSn low, and the frame header for `offset` of `block`, polled.
    fn open(&mut self, block: Block, offset: u16, write: bool) -> Result<(), BusError> {
        self.cs.set_low().map_err(|_| BusError::Pin)?;
        let header = frame_header(block, offset, write);
        SpiBus::write(&mut self.spi, &header).map_err(|_| BusError::Spi)
    }

    /// The last byte out, then SCSn high.
    fn close(&mut self) -> Result<(), BusError> {
        let flushed = SpiBus::flush(&mut self.spi).map_err(|_| BusError::Spi);
        self.cs.set_high().map_err(|_| BusError::Pin)?;
        flushed
    }

    /// Closes the frame whatever `result` was, and answers `result` (or the close's error).
    fn closed<T>(&mut self, result: Result<T, BusError>) -> Result<T, BusError> {
        let close = self.close();
        let value = result?;
        close.map(|()| value)
    }

    /// Reads `buf.len()` bytes from `offset` of `block`, polled: one SPI frame.
    pub fn read(&mut self, block: Block, offset: u16, buf: &mut [u8]) -> Result<(), BusError> {
        self.open(block, offset, false)?;
        let r = SpiBus::read(&mut self.spi, buf).map_err(|_| BusError::Spi);
        self.closed(r)
    }

    /// Writes `data` at `offset` of `block`, polled: one SPI frame.
    pub fn write(&mut self, block: Block, offset: u16, data: &[u8]) -> Result<(), BusError> {
        self.open(block, offset, true)?;
        let r = SpiBus::write(&mut self.spi, data).map_err(|_| BusError::Spi);
        self.closed(r)
    }

    /// A 16-bit register (big-endian), polled.
    pub fn read_u16(&mut self, block: Block, offset: u16) -> Result<u16, BusError> {
        let mut b = [0; 2];
        self.read(block, offset, &mut b)?;
        Ok(u16::from_be_bytes(b))
    }

    /// Writes `data` at `offset` of `block` in one SPI frame: polled up to [`POLLED_MAX`]
    /// bytes, else the header polled and the data by DMA.
    pub async fn write_frame(
        &mut self,
        block: Block,
        offset: u16,
        data: &[u8],
    ) -> Result<(), BusError> {
        self.open(block, offset, true)?;
        let r = if data.len() <= POLLED_MAX {
            SpiBus::write(&mut self.spi, data).map_err(|_| BusError::Spi)
        } else {
            let r = AsyncSpiBus::write(&mut self.spi, data).await;
            let f = AsyncSpiBus::flush(&mut self.spi).await;
            r.and(f).map_err(|_| BusError::Spi)
        };
        self.closed(r)
    }

    /// One SPI frame from `offset` of the RX buffer: a frame's 2-byte length header, polled,
    /// shown to `judge`; if it answers `Some(n)` the `n` bytes after the header are read into
    /// `buf[..n]` in the same frame (polled up to [`POLLED_MAX`], else by DMA). Returns the
    /// header and what `judge` said. `n` is capped at `buf.len()`.
    pub async fn read_header_and_frame(
        &mut self,
        offset: u16,
        buf: &mut [u8],
        judge: impl FnOnce([u8; 2]) -> Option<usize>,
    ) -> Result<([u8; 2], Option<usize>), BusError> {
        self.open(Block::RxBuffer, offset, false)?;
        let mut header = [0; 2];
        if SpiBus::read(&mut self.spi, &mut header).is_err() {
            return self.closed(Err(BusError::Spi));
        }
        let n = judge(header).map(|n| n.min(buf.len()));
        let r = match n {
            None => Ok(()),
            Some(n) if n <= POLLED_MAX => {
                SpiBus::read(&mut self.spi, &mut buf[..n]).map_err(|_| BusError::Spi)
            }
            Some(n) => AsyncSpiBus::read(&mut self.spi, &mut buf[..n])
                .await
                .map_err(|_| BusError::Spi),
        };
        self.closed(r.map(|()| (header, n)))
    }

    /// The SPI bus and the pin back.
    pub fn release(self) -> (S, CS) {
        (self.spi, self.cs)
    }
}
