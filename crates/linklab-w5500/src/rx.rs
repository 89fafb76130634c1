//! The receive half of a service: every frame the chip holds into a grant of the MAC's RX
//! queue, each with its length header in one SPI frame, and the headers judged before they
//! are trusted.

use embedded_hal::digital::{InputPin, OutputPin};
use embedded_hal::spi::SpiBus;
use embedded_hal_async::delay::DelayNs;
use embedded_hal_async::digital::Wait;
use embedded_hal_async::spi::SpiBus as AsyncSpiBus;
use linklab_mac::timing::Clock;
use linklab_mac::Storage;

use crate::counters::Counter;
use crate::regs::{self, judge, socket, Block, Header, BUFFER_LEN, HEADER_LEN, MAX_FRAME};
use crate::runner::{Next, Runner};
use crate::BusError;

/// Headers read again within one service before the driver waits a while: a bus that
/// glitches on every read is not worked around by reading faster.
const MAX_GLITCHES: u32 = 4;

/// What reading one frame came to.
enum Read {
    /// A frame of this many bytes (header included) was committed.
    Frame(usize),
    /// The header is for a frame not wholly received yet: stop, look again.
    Beyond,
    /// The header made no sense, then did when read again (a glitch on the bus): read the
    /// frame again.
    Glitch,
    /// The header made no sense twice: the frames from here are given up.
    Lost,
}

impl<S, CS, INT, D, C, P, L, const N: usize> Runner<'_, S, CS, INT, D, C, P, L, N>
where
    S: SpiBus<u8> + AsyncSpiBus<u8>,
    CS: OutputPin,
    INT: InputPin + Wait,
    D: DelayNs,
    C: Clock,
    P: Storage,
    L: FnMut(bool),
{
    /// Clears Sn_IR.RECV if INTn was low (first: a frame arriving from now on sets it
    /// again), reads the pointers once, then reads every frame Sn_RX_RSR counts into the
    /// MAC's queue and releases them with one RECV. Stops early, leaving the rest in the
    /// chip, when the queue has no room, a frame is still arriving, or a frame waits to be
    /// sent (the ACKs of what is received must not wait behind a whole burst).
    pub(crate) async fn receive(&mut self, int_low: bool) -> Next {
        if int_low {
            if let Err(e) = self.bus.write(Block::Socket0, socket::IR, &[regs::IR_RECV]) {
                self.bus_failed(e);
                return Next::Retry;
            }
        }
        let mut left = match self.read_pointers() {
            Ok(rsr) => rsr,
            Err(e) => {
                self.bus_failed(e);
                return Next::Retry;
            }
        };
        if left > BUFFER_LEN as usize - (HEADER_LEN + MAX_FRAME) {
            self.counters.bump(Counter::rx_chip_full);
        }
        self.rx_pending = false;
        let mut read = 0;
        let mut glitches = 0;
        let mut next = Next::Idle;
        while left > 0 {
            if read > 0 && !self.tx.is_empty() {
                self.rx_pending = true;
                next = Next::Again;
                break;
            }
            match self.read_frame(left).await {
                Ok(Some(Read::Frame(n))) => {
                    read += n;
                    left -= n;
                }
                Ok(Some(Read::Beyond)) => {
                    self.rx_pending = true;
                    next = Next::Retry;
                    break;
                }
                Ok(Some(Read::Glitch)) if glitches < MAX_GLITCHES => glitches += 1,
                Ok(Some(Read::Glitch)) => {
                    self.rx_pending = true;
                    next = Next::Retry;
                    break;
                }
                Ok(Some(Read::Lost)) => return Next::Again,
                Ok(None) => {
                    self.counters.bump(Counter::rx_queue_full);
                    self.rx_pending = true;
                    next = Next::Retry;
                    break;
                }
                Err(e) => {
                    self.bus_failed(e);
                    self.rx_pending = true;
                    next = Next::Retry;
                    break;
                }
            }
        }
        if read > 0 {
            self.counters.bump(Counter::rx_bursts);
            if let Err(e) = self.release() {
                self.bus_failed(e);
            }
        }
        next
    }

    /// Sn_RX_RD up to what was read, and RECV: the chip may reuse the space.
    fn release(&mut self) -> Result<(), BusError> {
        let rd = self.rx_rd.to_be_bytes();
        self.bus.write(Block::Socket0, socket::RX_RD, &rd)?;
        self.bus
            .write(Block::Socket0, socket::CR, &[regs::CMD_RECV])
    }

    /// Reads the frame at Sn_RX_RD with `left` bytes received from there: into a grant of
    /// the MAC's queue (None: no grant to be had).
    async fn read_frame(&mut self, left: usize) -> Result<Option<Read>, BusError> {
        let Ok(mut grant) = self.producer.grant() else {
            return Ok(None);
        };
        let mut said = Header::Beyond;
        let (_, n) = self
            .bus
            .read_header_and_frame(self.rx_rd, grant.buf(), |h| {
                said = judge(h, left);
                match said {
                    Header::Frame(n) => Some(n),
                    _ => None,
                }
            })
            .await?;
        match (said, n) {
            (Header::Frame(len), Some(got)) if got == len => {
                grant.commit(len);
                self.counters.bump(Counter::rx_frames);
                self.counters.add(Counter::rx_bytes, len as u32);
                let stored = HEADER_LEN + len;
                self.rx_rd = self.rx_rd.wrapping_add(stored as u16);
                Ok(Some(Read::Frame(stored)))
            }
            (Header::Beyond, _) => Ok(Some(Read::Beyond)),
            (Header::Nonsense(value), _) => {
                drop(grant);
                self.refused_header(value, left).map(Some)
            }
            // A grant shorter than a frame: never (grants are 1536 bytes), but never trusted.
            (Header::Frame(_), _) => {
                drop(grant);
                self.refused_header(0, left).map(Some)
            }
        }
    }

    /// A header that made no sense: counted, and read again on its own (a glitch on the bus
    /// passes); if it still makes no sense the read pointer is out of step with the frames,
    /// and the driver moves it to the chip's write pointer, giving up what lies between.
    fn refused_header(&mut self, value: u16, left: usize) -> Result<Read, BusError> {
        warn!("w5500: length header {:#x} refused", value);
        self.counters.bump(Counter::rx_bad_headers);
        let mut again = [0; 2];
        self.bus.read(Block::RxBuffer, self.rx_rd, &mut again)?;
        match judge(again, left) {
            Header::Frame(_) => Ok(Read::Glitch),
            Header::Beyond => Ok(Read::Beyond),
            Header::Nonsense(_) => {
                let wr = self.bus.read_u16(Block::Socket0, socket::RX_WR)?;
                let dropped = wr.wrapping_sub(self.rx_rd);
                warn!("w5500: resynchronised, {} bytes given up", dropped);
                self.counters.bump(Counter::rx_resyncs);
                self.counters.add(Counter::rx_dropped_bytes, dropped as u32);
                self.rx_rd = wr;
                self.release()?;
                Ok(Read::Lost)
            }
        }
    }
}
