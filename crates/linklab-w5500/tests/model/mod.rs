//! A register model of the W5500 for the driver's tests: the SPI frame, socket 0's registers
//! and 16 KB rings in MACRAW, INTn, and a line that takes a frame's time at 100 Mbit/s, with
//! the semantics of `emulators/rp2040js/w5500.mjs` (the model the board runs against; its
//! comments cite the datasheet). In Rust, so the driver's own tests run with `cargo test`
//! alone; the JS model meets the driver in the board's tests.
//!
//! Time is the model's: each SPI byte takes [`BYTE_NS`] (8.5 SCK at 31.25 MHz) and a delay
//! its length; a SEND's frame leaves [`line_ns`] after it starts on the line.

#![allow(dead_code)]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::rc::Rc;

/// One SPI byte at 31.25 MHz in mode 3: 8.5 SCK periods.
pub const BYTE_NS: u64 = 272;
const BUF: usize = 16384;

/// 100BASE-TX line time of a frame without FCS: preamble, padding to 60, FCS, gap.
pub fn line_ns(len: usize) -> u64 {
    (8 + len.max(60) as u64 + 4 + 12) * 80
}

/// What the bus carried, for the tests' counts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transaction {
    pub block: u8,
    pub offset: u16,
    pub write: bool,
    pub data: usize,
    /// Data bytes moved by the async (DMA) calls.
    pub dma_bytes: usize,
}

#[derive(Default)]
pub struct Chip {
    pub now_ns: u64,
    pub common: Vec<u8>,
    pub socket: Vec<u8>,
    pub rx: Vec<u8>,
    pub tx: Vec<u8>,
    /// What RECV last released (RSR counts from it).
    rx_released: u16,
    /// Stored frames' lengths (header included), not yet released.
    rx_frames: VecDeque<u16>,
    /// SEND's cursor and the frames on or waiting for the line: (end pointer, frame, done at).
    tx_cursor: u16,
    pub line: VecDeque<(u16, Vec<u8>, u64)>,
    pub sent: Vec<Vec<u8>>,
    pub send_while_busy: u32,
    pub dropped_full: u32,
    /// Every Nth length header read corrupt; every Mth SEND refused.
    pub corrupt_every: u32,
    pub refuse_every: u32,
    header_reads: u32,
    sends: u32,
    pub corrupted: u32,
    pub refused: u32,
    pub log: Vec<Transaction>,
    /// No chip on the bus: every byte reads 0.
    pub absent: bool,
    frame: Option<Frame>,
}

struct Frame {
    n: usize,
    offset: u16,
    ctrl: u8,
    addr: u16,
    data: usize,
    dma: usize,
    corrupt: Option<[u8; 2]>,
}

fn get16(b: &[u8], o: usize) -> u16 {
    u16::from_be_bytes([b[o], b[o + 1]])
}

fn put16(b: &mut [u8], o: usize, v: u16) {
    b[o..o + 2].copy_from_slice(&v.to_be_bytes());
}

impl Chip {
    pub fn new() -> Chip {
        let mut c = Chip {
            common: vec![0; 0x40],
            socket: vec![0; 0x40],
            rx: vec![0; BUF],
            tx: vec![0; BUF],
            ..Chip::default()
        };
        c.common[0x39] = 0x04;
        c.common[0x2e] = 0xbf;
        c
    }

    pub fn int_low(&self) -> bool {
        self.socket[0x02] & self.socket[0x2c] != 0 && self.common[0x18] & 1 != 0
    }

    fn macraw(&self) -> bool {
        self.socket[0x03] == 0x42
    }

    pub fn rsr(&self) -> u16 {
        get16(&self.socket, 0x2a).wrapping_sub(self.rx_released)
    }

    /// A frame from the line: stored behind its length header, padded to 60, or dropped.
    pub fn receive(&mut self, frame: &[u8]) -> bool {
        if !self.macraw() {
            return false;
        }
        let len = frame.len().max(60);
        let need = (len + 2) as u16;
        if self.rsr() as usize + need as usize > BUF {
            self.dropped_full += 1;
            return false;
        }
        let mut wr = get16(&self.socket, 0x2a);
        let mut put = |b: u8| {
            self.rx[wr as usize % BUF] = b;
            wr = wr.wrapping_add(1);
        };
        put((need >> 8) as u8);
        put(need as u8);
        for i in 0..len {
            put(*frame.get(i).unwrap_or(&0));
        }
        put16(&mut self.socket, 0x2a, wr);
        self.rx_frames.push_back(need);
        if self.socket[0x2c] & 0x04 != 0 {
            self.socket[0x02] |= 0x04;
        }
        true
    }

    /// Writes garbage over the stored header at RX offset `at` (a corrupt ring, not a bus).
    pub fn smash(&mut self, at: u16, value: u16) {
        self.rx[at as usize % BUF] = (value >> 8) as u8;
        self.rx[at.wrapping_add(1) as usize % BUF] = value as u8;
    }

    /// Moves the clock on; frames whose line time is over have left.
    pub fn advance(&mut self, ns: u64) {
        self.now_ns += ns;
        while let Some((end, _, done)) = self.line.front() {
            if *done > self.now_ns {
                break;
            }
            let end = *end;
            let (_, frame, _) = self.line.pop_front().unwrap();
            put16(&mut self.socket, 0x22, end);
            self.sent.push(frame);
            if let Some(next) = self.line.front_mut() {
                next.2 = self.now_ns + line_ns(next.1.len());
            }
        }
    }

    fn is_header(&self, offset: u16) -> bool {
        let mut at = self.rx_released;
        for need in &self.rx_frames {
            if offset == at {
                return true;
            }
            at = at.wrapping_add(*need);
        }
        false
    }

    pub fn select(&mut self) {
        self.frame = Some(Frame {
            n: 0,
            offset: 0,
            ctrl: 0,
            addr: 0,
            data: 0,
            dma: 0,
            corrupt: None,
        });
    }

    pub fn deselect(&mut self) {
        if let Some(f) = self.frame.take() {
            if f.n >= 3 {
                self.log.push(Transaction {
                    block: f.ctrl >> 3,
                    offset: f.offset,
                    write: f.ctrl & 4 != 0,
                    data: f.data,
                    dma_bytes: f.dma,
                });
            }
        }
    }

    /// One byte under SCSn: `mosi` in, the chip's byte out.
    pub fn exchange(&mut self, mosi: u8, dma: bool) -> u8 {
        self.advance(BYTE_NS);
        let Some(mut f) = self.frame.take() else {
            return 0;
        };
        let out = self.step(&mut f, mosi, dma);
        self.frame = Some(f);
        out
    }

    fn step(&mut self, f: &mut Frame, mosi: u8, dma: bool) -> u8 {
        if self.absent {
            return 0;
        }
        f.n += 1;
        match f.n {
            1 | 2 => {
                f.addr = f.addr << 8 | mosi as u16;
                return 0;
            }
            3 => {
                f.ctrl = mosi;
                f.offset = f.addr;
                if mosi >> 3 == 3
                    && mosi & 4 == 0
                    && self.is_header(f.addr)
                    && self.corrupt_every > 0
                {
                    self.header_reads += 1;
                    if self.header_reads.is_multiple_of(self.corrupt_every) {
                        self.corrupted += 1;
                        f.corrupt = Some([0x45, 0xea]);
                    }
                }
                return 0;
            }
            _ => {}
        }
        f.data += 1;
        f.dma += dma as usize;
        let (block, write, a) = (f.ctrl >> 3, f.ctrl & 4 != 0, f.addr);
        f.addr = f.addr.wrapping_add(1);
        if let (Some(c), 1..=2) = (f.corrupt, f.data) {
            return c[f.data - 1];
        }
        match (block, write) {
            (0, false) => self.common[a as usize & 0x3f],
            (0, true) => {
                self.write_common(a, mosi);
                0
            }
            (1, false) => self.read_socket(a),
            (1, true) => {
                self.write_socket(a, mosi);
                0
            }
            (2, false) => self.tx[a as usize % BUF],
            (2, true) => {
                self.tx[a as usize % BUF] = mosi;
                0
            }
            (3, false) => self.rx[a as usize % BUF],
            _ => 0,
        }
    }

    fn write_common(&mut self, a: u16, v: u8) {
        if a == 0 && v & 0x80 != 0 {
            // A software reset: every register as at power-on; the test's settings stay.
            let was = std::mem::replace(self, Chip::new());
            self.log = was.log;
            self.now_ns = was.now_ns;
            self.corrupt_every = was.corrupt_every;
            self.refuse_every = was.refuse_every;
            self.absent = was.absent;
            return;
        }
        if a != 0x39 {
            self.common[a as usize & 0x3f] = v;
        }
    }

    fn read_socket(&mut self, a: u16) -> u8 {
        let used = get16(&self.socket, 0x24).wrapping_sub(get16(&self.socket, 0x22));
        put16(&mut self.socket, 0x20, BUF as u16 - used);
        let rsr = self.rsr();
        put16(&mut self.socket, 0x26, rsr);
        self.socket[a as usize & 0x3f]
    }

    fn write_socket(&mut self, a: u16, v: u8) {
        match a {
            0x01 => self.command(v),
            0x02 => self.socket[0x02] &= !v,
            0x03 | 0x20..=0x23 | 0x26 | 0x27 | 0x2a | 0x2b => {}
            _ => self.socket[a as usize & 0x3f] = v,
        }
    }

    fn command(&mut self, cmd: u8) {
        match cmd {
            0x01 if self.socket[0] & 0x0f == 0x04 => {
                self.socket[0x03] = 0x42;
                for o in [0x22, 0x24, 0x28, 0x2a] {
                    put16(&mut self.socket, o, 0);
                }
                self.rx_released = 0;
                self.tx_cursor = 0;
                self.line.clear();
                self.rx_frames.clear();
            }
            0x10 => self.socket[0x03] = 0,
            0x20 => self.send(),
            0x40 => self.recv(),
            _ => {}
        }
    }

    fn send(&mut self) {
        self.sends += 1;
        if self.refuse_every > 0 && self.sends.is_multiple_of(self.refuse_every) {
            self.refused += 1;
            return;
        }
        if !self.line.is_empty() {
            self.send_while_busy += 1;
        }
        let wr = get16(&self.socket, 0x24);
        let len = wr.wrapping_sub(self.tx_cursor) as usize;
        let frame: Vec<u8> = (0..len)
            .map(|i| self.tx[(self.tx_cursor as usize + i) % BUF])
            .collect();
        self.tx_cursor = wr;
        let done = self.now_ns + line_ns(len);
        self.line.push_back((wr, frame, done));
    }

    fn recv(&mut self) {
        let rd = get16(&self.socket, 0x28);
        let mut released = rd.wrapping_sub(self.rx_released);
        self.rx_released = rd;
        while let Some(&n) = self.rx_frames.front() {
            if released < n {
                break;
            }
            released -= n;
            self.rx_frames.pop_front();
        }
    }
}

/// The chip shared by the bus, the pins and the delay.
pub type Shared = Rc<RefCell<Chip>>;

/// The SPI bus: blocking and async transfers, each byte through the chip.
pub struct ModelBus(pub Shared);
/// SCSn.
pub struct ModelCs(pub Shared);
/// INTn.
pub struct ModelInt(pub Shared);
/// A delay that moves the chip's clock.
pub struct ModelDelay(pub Shared);
/// The chip's clock as the MAC's `Clock`.
pub struct ModelClock(pub Shared);

impl embedded_hal::spi::ErrorType for ModelBus {
    type Error = Infallible;
}

impl ModelBus {
    fn xfer(&mut self, read: &mut [u8], write: &[u8], dma: bool) {
        let mut chip = self.0.borrow_mut();
        for i in 0..read.len().max(write.len()) {
            let b = chip.exchange(write.get(i).copied().unwrap_or(0), dma);
            if let Some(r) = read.get_mut(i) {
                *r = b;
            }
        }
    }
}

impl embedded_hal::spi::SpiBus for ModelBus {
    fn read(&mut self, words: &mut [u8]) -> Result<(), Infallible> {
        self.xfer(words, &[], false);
        Ok(())
    }
    fn write(&mut self, words: &[u8]) -> Result<(), Infallible> {
        self.xfer(&mut [], words, false);
        Ok(())
    }
    fn transfer(&mut self, read: &mut [u8], write: &[u8]) -> Result<(), Infallible> {
        self.xfer(read, write, false);
        Ok(())
    }
    fn transfer_in_place(&mut self, words: &mut [u8]) -> Result<(), Infallible> {
        let w = words.to_vec();
        self.xfer(words, &w, false);
        Ok(())
    }
    fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

impl embedded_hal_async::spi::SpiBus for ModelBus {
    async fn read(&mut self, words: &mut [u8]) -> Result<(), Infallible> {
        self.xfer(words, &[], true);
        Ok(())
    }
    async fn write(&mut self, words: &[u8]) -> Result<(), Infallible> {
        self.xfer(&mut [], words, true);
        Ok(())
    }
    async fn transfer(&mut self, read: &mut [u8], write: &[u8]) -> Result<(), Infallible> {
        self.xfer(read, write, true);
        Ok(())
    }
    async fn transfer_in_place(&mut self, words: &mut [u8]) -> Result<(), Infallible> {
        let w = words.to_vec();
        self.xfer(words, &w, true);
        Ok(())
    }
    async fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

impl embedded_hal::digital::ErrorType for ModelCs {
    type Error = Infallible;
}

impl embedded_hal::digital::OutputPin for ModelCs {
    fn set_low(&mut self) -> Result<(), Infallible> {
        self.0.borrow_mut().select();
        Ok(())
    }
    fn set_high(&mut self) -> Result<(), Infallible> {
        self.0.borrow_mut().deselect();
        Ok(())
    }
}

impl embedded_hal::digital::ErrorType for ModelInt {
    type Error = Infallible;
}

impl embedded_hal::digital::InputPin for ModelInt {
    fn is_high(&mut self) -> Result<bool, Infallible> {
        Ok(!self.0.borrow().int_low())
    }
    fn is_low(&mut self) -> Result<bool, Infallible> {
        Ok(self.0.borrow().int_low())
    }
}

impl embedded_hal_async::digital::Wait for ModelInt {
    async fn wait_for_high(&mut self) -> Result<(), Infallible> {
        unreachable!("the tests call service(), which never waits on INTn")
    }
    async fn wait_for_low(&mut self) -> Result<(), Infallible> {
        unreachable!("the tests call service(), which never waits on INTn")
    }
    async fn wait_for_rising_edge(&mut self) -> Result<(), Infallible> {
        unreachable!()
    }
    async fn wait_for_falling_edge(&mut self) -> Result<(), Infallible> {
        unreachable!()
    }
    async fn wait_for_any_edge(&mut self) -> Result<(), Infallible> {
        unreachable!()
    }
}

impl embedded_hal_async::delay::DelayNs for ModelDelay {
    async fn delay_ns(&mut self, ns: u32) {
        self.0.borrow_mut().advance(ns as u64);
    }
}

impl linklab_mac::timing::Clock for ModelClock {
    fn now_ns(&self) -> u64 {
        self.0.borrow().now_ns
    }
}

/// Runs a future that never waits on anything outside the model to its end.
pub fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    for _ in 0..1_000_000 {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
    panic!("the future never finished: it waited on something the model does not wake");
}
