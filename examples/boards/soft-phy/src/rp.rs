//! The RP2040/RP2350 line (embassy-rp, feature `rp`), sampled and driven by PIO0 with DMA,
//! the CPU never timing a sample:
//!
//! - RX: state machine 0 runs `in pins, 1` at 40 MHz (4x) with autopush every 32 samples
//!   ([`start_rx_sm`]), or decodes the line itself at clk_sys, re-synchronising on every
//!   mid-bit edge, and pushes 2-bit symbols (linklab-phy10's `symbols`, [`start_rx_sm_symbols`]);
//!   DMA channel `rx` copies its FIFO into a 16 KB ring (the write address wraps in hardware:
//!   `RING_SEL`), and channel `rearm`, chained to it, restarts it whenever its count runs out,
//!   so the ring fills for ever without the CPU. [`RingReader`] hands the PHY's core what
//!   arrived since it last looked, or says it fell more than a ring behind (an overrun).
//! - TX: state machine 1 takes a frame's bit count, then its wire bytes, and Manchester-
//!   encodes them on the TX pin (10 Mbit/s, 4 cycles a bit at 40 MHz) with the driver-enable
//!   pin high (side-set), then TP_IDL, the enable low again when idle; two DMA channels feed
//!   it from [`TxLine`]'s two frame buffers, the second chained behind the first, so frames
//!   leave back to back and the CPU only copies bytes. State machine 2 shifts out link
//!   pulses (NLPs, FLP bursts: not Manchester data) as samples at 20 MHz from a third
//!   channel, while no frame is in flight.
//!
//! clk_sys must be a multiple of 40 MHz (the examples run at 120 MHz: divider 3), else the
//! fractional divider jitters every sample.

use core::cell::UnsafeCell;
use core::sync::atomic::{compiler_fence, Ordering};

use embassy_rp::pac;
use embassy_rp::pac::dma::regs::CtrlTrig;
use embassy_rp::pac::dma::vals::{DataSize, TreqSel};
use embassy_rp::peripherals::PIO0;
use embassy_rp::pio::program::{pio_asm, Assembler, InSource, JmpCondition, SetDestination};
use embassy_rp::pio::{
    Common, Config, Direction, FifoJoin, Pin, ShiftConfig, ShiftDirection, StateMachine,
};
use fixed::types::extra::U8;
use fixed::FixedU32;
use linklab_phy10::SamplerTiming;

/// Words of the RX ring: 16 KB, 3.3 ms of line at 40 MHz.
pub const RING_WORDS: usize = 4096;
/// The ring's size as DMA's `RING_SIZE` (log2 of its bytes).
const RING_SIZE_LOG2: u8 = 14;
/// Transfers per run of the RX channel before `rearm` restarts it (the RP2350's count field
/// has 28 bits): 107 s of line.
const RX_RUN: u32 = 1 << 27;
/// Words the reader leaves to the DMA (a write may still be in flight).
const READ_LAG: u32 = 2;
/// Sample rate of the RX state machine.
pub const RX_HZ: u32 = 40_000_000;
/// DREQ of PIO0's state machine `sm`, TX side (RX is 4 above).
const fn pio0_dreq(sm: u8, rx: bool) -> u8 {
    sm + if rx { 4 } else { 0 }
}
/// TREQ_SEL's "no pacing" value.
const TREQ_PERMANENT: u8 = 0x3f;

/// The ring, aligned to its size as DMA's ring mode needs.
#[repr(C, align(16384))]
pub struct Ring(UnsafeCell<[u32; RING_WORDS]>);
// SAFETY: written by the DMA only, read by the one RingReader.
unsafe impl Sync for Ring {}

impl Ring {
    /// An empty ring (for a `static`).
    pub const fn new() -> Self {
        Ring(UnsafeCell::new([0; RING_WORDS]))
    }
}

impl Default for Ring {
    fn default() -> Self {
        Self::new()
    }
}

fn ctrl(treq: u8, incr_read: bool, incr_write: bool, chain_to: u8) -> CtrlTrig {
    let mut c = CtrlTrig(0);
    c.set_en(true);
    c.set_data_size(DataSize::SIZE_WORD);
    c.set_incr_read(incr_read);
    c.set_incr_write(incr_write);
    c.set_treq_sel(TreqSel::from(treq));
    c.set_chain_to(chain_to);
    c.set_irq_quiet(true);
    c
}

/// Writes a channel's transfer count (a plain count on both chips: the RP2350's mode bits 0).
fn set_count(ch: usize, count: u32) {
    let reg = pac::DMA.ch(ch).trans_count().as_ptr().cast::<u32>();
    // SAFETY: the channel's TRANS_COUNT register.
    unsafe { reg.write_volatile(count) };
}

fn count_left(ch: usize) -> u32 {
    let reg = pac::DMA
        .ch(ch)
        .trans_count()
        .as_ptr()
        .cast::<u32>()
        .cast_const();
    // SAFETY: the channel's TRANS_COUNT register; the RP2350's mode bits masked off.
    unsafe { reg.read_volatile() & 0x0FFF_FFFF }
}

/// The value `rearm` writes into the RX channel's count-and-trigger alias.
static RX_RUN_WORD: u32 = RX_RUN;

/// Starts the RX DMA: channel `rx` from PIO0 SM0's RX FIFO into `ring`, restarted by
/// `rearm` for ever. The channels are the caller's (taken from embassy-rp's peripherals).
pub fn start_rx_dma(ring: &'static Ring, rx: u8, rearm: u8) {
    let (rx_ch, rearm_ch) = (pac::DMA.ch(rx as usize), pac::DMA.ch(rearm as usize));
    // rearm: one word, unpaced, into rx's AL1_TRANS_COUNT_TRIG; chained to itself (no chain).
    rearm_ch
        .read_addr()
        .write_value(&RX_RUN_WORD as *const u32 as u32);
    rearm_ch
        .write_addr()
        .write_value(rx_ch.al1_trans_count_trig().as_ptr() as u32);
    set_count(rearm as usize, 1);
    rearm_ch
        .al1_ctrl()
        .write_value(ctrl(TREQ_PERMANENT, false, false, rearm).0);
    // rx: paced by the state machine's RX DREQ, the write address wrapping on the ring.
    rx_ch
        .read_addr()
        .write_value(pac::PIO0.rxf(0).as_ptr() as u32);
    rx_ch.write_addr().write_value(ring.0.get() as u32);
    set_count(rx as usize, RX_RUN);
    let mut c = ctrl(pio0_dreq(0, true), false, true, rearm);
    c.set_ring_size(RING_SIZE_LOG2);
    c.set_ring_sel(true);
    compiler_fence(Ordering::SeqCst);
    rx_ch.ctrl_trig().write_value(c);
}

/// Reads the ring behind the RX DMA, on the PHY's core.
pub struct RingReader {
    ring: &'static Ring,
    ch: u8,
    /// Next word to read.
    read: usize,
    /// The channel's count left when last looked at.
    last_left: u32,
    /// Words written and not yet read.
    pending: u32,
}

impl RingReader {
    /// A reader of `ring`, filled by channel `ch` (started by [`start_rx_dma`]).
    pub fn new(ring: &'static Ring, ch: u8) -> Self {
        RingReader {
            ring,
            ch,
            read: 0,
            last_left: RX_RUN,
            pending: 0,
        }
    }

    /// Hands `f` the words written since the last call (one or two slices: the ring wraps).
    /// Returns false if more than a ring was written meanwhile (an overrun: the reader skips
    /// to the newest samples and `f` is not called).
    pub fn poll(&mut self, mut f: impl FnMut(&[u32])) -> bool {
        let left = count_left(self.ch as usize);
        // The count restarts at RX_RUN when `rearm` fires.
        let advanced = if left <= self.last_left {
            self.last_left - left
        } else {
            self.last_left + (RX_RUN - left)
        };
        self.last_left = left;
        self.pending = self.pending.saturating_add(advanced);
        if self.pending > RING_WORDS as u32 - READ_LAG {
            let written = pac::DMA.ch(self.ch as usize).write_addr().read();
            self.read = (written.wrapping_sub(self.ring.0.get() as u32) / 4) as usize % RING_WORDS;
            self.pending = 0;
            return false;
        }
        compiler_fence(Ordering::Acquire);
        let mut ready = self.pending.saturating_sub(READ_LAG) as usize;
        while ready > 0 {
            let n = ready.min(RING_WORDS - self.read);
            // SAFETY: words the DMA wrote and will not write again before a ring's worth more
            // (checked above); read-only here.
            let words = unsafe {
                core::slice::from_raw_parts((self.ring.0.get() as *const u32).add(self.read), n)
            };
            f(words);
            self.read = (self.read + n) % RING_WORDS;
            self.pending -= n as u32;
            ready -= n;
        }
        true
    }
}

/// The divider that runs a state machine at `hz` from clk_sys.
fn divider(hz: u32) -> FixedU32<U8> {
    let sys = embassy_rp::clocks::clk_sys_freq() as u64;
    FixedU32::from_bits(((sys << 8) / hz as u64) as u32)
}

/// Loads the RX program into state machine 0: `in pins, 1` at 40 MHz, autopush every 32
/// samples (shifting right: the first sample ends in bit 0), the FIFOs joined for RX.
pub fn start_rx_sm(
    common: &mut Common<'static, PIO0>,
    sm: &mut StateMachine<'static, PIO0, 0>,
    rx_pin: &Pin<'static, PIO0>,
) {
    let prg = pio_asm!(".wrap_target", "in pins, 1", ".wrap");
    let loaded = common.load_program(&prg.program);
    let mut cfg = Config::default();
    cfg.use_program(&loaded, &[]);
    cfg.set_in_pins(&[rx_pin]);
    cfg.shift_in = ShiftConfig {
        threshold: 32,
        direction: ShiftDirection::Right,
        auto_fill: true,
    };
    cfg.fifo_join = FifoJoin::RxOnly;
    cfg.clock_divider = divider(RX_HZ);
    sm.set_config(&cfg);
    sm.set_pin_dirs(Direction::In, &[rx_pin]);
    sm.set_enable(true);
}

/// Loads the resynchronising sampler into state machine 0 (linklab-phy10's `symbols`: its
/// program and timing): at clk_sys (divider 1; clk_sys a multiple of 10 MHz from 120 to 240
/// MHz), reading `rx_pin` as its `in` and `jmp` pin, autopush every 16 symbols (shifting
/// right: the first symbol ends in bits 0-1), the FIFOs joined for RX. False (nothing
/// started) if clk_sys is not such a multiple.
pub fn start_rx_sm_symbols(
    common: &mut Common<'static, PIO0>,
    sm: &mut StateMachine<'static, PIO0, 0>,
    rx_pin: &Pin<'static, PIO0>,
) -> bool {
    let sys = embassy_rp::clocks::clk_sys_freq();
    let Some(t) = (sys % 10_000_000 == 0)
        .then(|| SamplerTiming::new(sys / 10_000_000))
        .flatten()
    else {
        return false;
    };
    let mut a = Assembler::<32>::new();
    let (mut high, mut h_poll, mut edge, mut low, mut l_poll, mut h_wait) = (
        a.label(),
        a.label(),
        a.label(),
        a.label(),
        a.label(),
        a.label(),
    );
    a.set(SetDestination::X, 1);
    a.bind(&mut high);
    a.set(SetDestination::Y, t.timeout_polls);
    a.bind(&mut h_poll);
    a.jmp(JmpCondition::PinHigh, &mut h_wait);
    a.bind(&mut edge);
    a.r#in(InSource::X, 1);
    a.in_with_delay(InSource::PINS, 1, t.delay);
    a.jmp(JmpCondition::PinHigh, &mut high);
    a.bind(&mut low);
    a.set(SetDestination::Y, t.timeout_polls);
    a.bind(&mut l_poll);
    a.jmp(JmpCondition::PinHigh, &mut edge);
    a.jmp(JmpCondition::YDecNonZero, &mut l_poll);
    a.r#in(InSource::NULL, 2);
    a.jmp(JmpCondition::Always, &mut low);
    a.bind(&mut h_wait);
    a.jmp(JmpCondition::YDecNonZero, &mut h_poll);
    a.r#in(InSource::NULL, 2);
    a.jmp(JmpCondition::Always, &mut high);
    let prg = a.assemble_program();
    let loaded = common.load_program(&prg);
    let mut cfg = Config::default();
    cfg.use_program(&loaded, &[]);
    cfg.set_in_pins(&[rx_pin]);
    cfg.set_jmp_pin(rx_pin);
    cfg.shift_in = ShiftConfig {
        threshold: 32,
        direction: ShiftDirection::Right,
        auto_fill: true,
    };
    cfg.fifo_join = FifoJoin::RxOnly;
    cfg.clock_divider = FixedU32::from_num(1);
    sm.set_config(&cfg);
    sm.set_pin_dirs(Direction::In, &[rx_pin]);
    sm.set_enable(true);
    true
}

/// Loads the frame transmitter into state machine 1: a bit count, then that many bits + 1
/// (LSB first, autopull) Manchester-encoded on `tx_pin` at 10 Mbit/s (40 MHz, 4 cycles a
/// bit: the first half `!bit`, the second `bit`), then TP_IDL (the pin high for 12 cycles,
/// 300 ns), with `enable_pin` (the line driver's enable) high from the first bit to the end
/// of TP_IDL, then the inter-frame gap (the enable low, 96 bit times from the last bit)
/// before it takes the next frame. PIO does the Manchester encoding and keeps the gap:
/// the CPU hands it the wire bytes, frames queued back to back.
pub fn start_tx_sm(
    common: &mut Common<'static, PIO0>,
    sm: &mut StateMachine<'static, PIO0, 1>,
    tx_pin: &Pin<'static, PIO0>,
    enable_pin: &Pin<'static, PIO0>,
) {
    let prg = pio_asm!(
        ".side_set 1 opt",
        "start:",
        "pull block side 0",
        "out x, 32",
        ".wrap_target",
        "out y, 1 side 1",
        "mov pins, !y",
        "jmp x-- second",
        "mov pins, y [1]",
        "set pins, 1 [7]",
        "nop [3]",
        // The inter-frame gap, the driver off: 96 bit times from here (384 cycles, TP_IDL's
        // 3.25 included), whatever the MAC queued behind.
        "set x, 31 side 0",
        "gap_long:",
        "jmp x-- gap_long [7]",
        "set x, 14",
        "gap_short:",
        "jmp x-- gap_short [7]",
        "jmp start",
        "second:",
        "mov pins, y",
        ".wrap"
    );
    let loaded = common.load_program(&prg.program);
    let mut cfg = Config::default();
    cfg.use_program(&loaded, &[enable_pin]);
    cfg.set_out_pins(&[tx_pin]);
    cfg.set_set_pins(&[tx_pin]);
    cfg.shift_out = ShiftConfig {
        threshold: 32,
        direction: ShiftDirection::Right,
        auto_fill: true,
    };
    cfg.fifo_join = FifoJoin::TxOnly;
    cfg.clock_divider = divider(4 * 10_000_000);
    sm.set_config(&cfg);
    sm.set_pin_dirs(Direction::Out, &[tx_pin, enable_pin]);
    sm.set_enable(true);
}

/// Loads the link pulse shifter into state machine 2: a sample count, then that many
/// samples + 1 on `tx_pin` at 20 MHz (2x: `out pins, 1` + `jmp x--`, two 40 MHz cycles
/// each) with `enable_pin` high, low when idle: normal link pulses and FLP bursts, which
/// are not Manchester data.
pub fn start_pulse_sm(
    common: &mut Common<'static, PIO0>,
    sm: &mut StateMachine<'static, PIO0, 2>,
    tx_pin: &Pin<'static, PIO0>,
    enable_pin: &Pin<'static, PIO0>,
) {
    let prg = pio_asm!(
        ".side_set 1 opt",
        ".wrap_target",
        "pull block side 0",
        "out x, 32",
        "samples:",
        "out pins, 1 side 1",
        "jmp x-- samples",
        ".wrap"
    );
    let loaded = common.load_program(&prg.program);
    let mut cfg = Config::default();
    cfg.use_program(&loaded, &[enable_pin]);
    cfg.set_out_pins(&[tx_pin]);
    cfg.shift_out = ShiftConfig {
        threshold: 32,
        direction: ShiftDirection::Right,
        auto_fill: true,
    };
    cfg.fifo_join = FifoJoin::TxOnly;
    // Two cycles a sample: 20 MHz.
    cfg.clock_divider = divider(2 * 20_000_000);
    sm.set_config(&cfg);
    sm.set_pin_dirs(Direction::Out, &[tx_pin, enable_pin]);
    sm.set_enable(true);
}

/// Words of a frame buffer: the bit count, then the longest frame on the wire (preamble,
/// SFD, 1 514 bytes, FCS: 1 526 bytes) packed LSB first.
pub const FRAME_WORDS: usize = 1 + 1526usize.div_ceil(4);
/// Words of the link pulse buffer: the sample count, then an FLP burst (the longest:
/// 1 251 words at 2x).
pub const PULSE_WORDS: usize = 1 + crate::link_pulses::FLP_BURST_WORDS;

/// The buffers the transmitter owns (statics of the board).
pub struct TxBuffers {
    /// Two frame buffers: one on the line, the next queued behind it.
    pub frames: [&'static mut [u32; FRAME_WORDS]; 2],
    /// The link pulse buffer.
    pub pulses: &'static mut [u32; PULSE_WORDS],
}

/// The transmitter: frames to state machine 1 (PIO encodes them) through two buffers, each
/// with its DMA channel, the second chained behind the first so the frames leave back to
/// back; link pulses to state machine 2 through a third channel, only while no frame is in
/// flight. A buffer is in flight from its frame's hand-over until its channel has read it
/// all (its read address at the buffer's end, the channel idle): the read address says
/// whether a queued channel has started, where the transfer count (a reload value when
/// written) cannot.
pub struct TxLine {
    bufs: TxBuffers,
    /// The frame buffers' channels, and the pulse buffer's.
    frame_ch: [u8; 2],
    pulse_ch: u8,
    /// Words handed to each frame buffer's channel (0: never used).
    frame_words: [usize; 2],
    /// The frame buffer the next frame goes into.
    next: usize,
    /// Frames refused (lost): both buffers were in flight, or a link pulse was going out.
    /// The MAC asks [`TxLine::ready`] first, so this stays 0 unless a caller does not.
    pub frames_refused: u64,
    /// Link pulses put off because a frame or a pulse was going out (sent later).
    pub pulses_deferred: u64,
}

impl TxLine {
    /// The transmitter over `bufs`, fed by DMA channels `frame_ch` and `pulse_ch`.
    pub fn new(bufs: TxBuffers, frame_ch: [u8; 2], pulse_ch: u8) -> Self {
        TxLine {
            bufs,
            frame_ch,
            pulse_ch,
            frame_words: [0; 2],
            next: 0,
            frames_refused: 0,
            pulses_deferred: 0,
        }
    }

    fn busy_ch(ch: u8) -> bool {
        pac::DMA.ch(ch as usize).ctrl_trig().read().busy()
    }

    fn read_addr(ch: u8) -> u32 {
        pac::DMA.ch(ch as usize).read_addr().read()
    }

    fn frame_start(&self, k: usize) -> u32 {
        self.bufs.frames[k].as_ptr() as u32
    }

    /// True once frame buffer `k`'s channel has read all it was given (or was never used).
    fn frame_done(&self, k: usize) -> bool {
        let words = self.frame_words[k];
        let ch = self.frame_ch[k];
        words == 0
            || (!Self::busy_ch(ch) && Self::read_addr(ch) == self.frame_start(k) + 4 * words as u32)
    }

    /// True if a frame can be handed over now: the next buffer is free and no link pulse is
    /// going out (an FLP burst holds the line for 2 ms; a frame handed over then would be
    /// refused, so the MAC holds it back until the burst is over).
    pub fn ready(&self) -> bool {
        self.frame_done(self.next) && !Self::busy_ch(self.pulse_ch)
    }

    /// True while anything is being sent or queued (frames or pulses).
    pub fn busy(&self) -> bool {
        !self.frame_done(0) || !self.frame_done(1) || Self::busy_ch(self.pulse_ch)
    }

    /// Queues `wire` (preamble, SFD, frame, FCS) behind the frame on the line, if any: false
    /// if both buffers are in flight, or a link pulse is going out, or `wire` is longer than
    /// a buffer holds.
    pub fn send_frame(&mut self, wire: &[u8]) -> bool {
        let k = self.next;
        let bytes = wire.len();
        if !self.ready()
            || Self::busy_ch(self.pulse_ch)
            || bytes == 0
            || bytes > 4 * (FRAME_WORDS - 1)
        {
            self.frames_refused += 1;
            return false;
        }
        let buf = &mut *self.bufs.frames[k];
        buf[0] = 8 * bytes as u32 - 1;
        // The words are little-endian, LSB first on the wire: a plain copy into their bytes.
        let data = &mut buf[1..];
        // SAFETY: the words' own bytes, `4 * data.len()` of them (>= `bytes`, checked above).
        let data = unsafe {
            core::slice::from_raw_parts_mut(data.as_mut_ptr().cast::<u8>(), 4 * data.len())
        };
        data[..bytes].copy_from_slice(wire);
        let words = 1 + bytes.div_ceil(4);
        let start = buf.as_ptr() as u32;
        self.frame_words[k] = words;
        let (this, other) = (self.frame_ch[k], self.frame_ch[1 - k]);
        let ch = pac::DMA.ch(this as usize);
        ch.read_addr().write_value(start);
        ch.write_addr()
            .write_value(pac::PIO0.txf(1).as_ptr() as u32);
        set_count(this as usize, words as u32);
        compiler_fence(Ordering::SeqCst);
        // Armed, not started: the frame on the line, if any, starts it when it ends.
        ch.al1_ctrl()
            .write_value(ctrl(pio0_dreq(1, false), true, false, this).0);
        if Self::busy_ch(other) {
            pac::DMA
                .ch(other as usize)
                .al1_ctrl()
                .write_value(ctrl(pio0_dreq(1, false), true, false, this).0);
        }
        compiler_fence(Ordering::SeqCst);
        // Not started by a chain (the other channel was idle, or ended before the chain was
        // set): start it here.
        if !Self::busy_ch(other) && !Self::busy_ch(this) && Self::read_addr(this) == start {
            pac::DMA
                .multi_chan_trigger()
                .write_value(pac::dma::regs::MultiChanTrigger(1 << this));
        }
        self.next = 1 - k;
        true
    }

    /// Sends the link pulse samples `fill` writes (it returns how many, or None for
    /// nothing): false while a frame or a pulse is in flight.
    pub fn send_pulses(&mut self, fill: impl FnOnce(&mut [u32]) -> Option<usize>) -> bool {
        if self.busy() {
            self.pulses_deferred += 1;
            return false;
        }
        let buf = &mut *self.bufs.pulses;
        let Some(samples) = fill(&mut buf[1..]).filter(|&n| n > 0) else {
            return false;
        };
        buf[0] = samples as u32 - 1;
        let words = 1 + samples.div_ceil(32);
        let ch = pac::DMA.ch(self.pulse_ch as usize);
        ch.read_addr().write_value(buf.as_ptr() as u32);
        ch.write_addr()
            .write_value(pac::PIO0.txf(2).as_ptr() as u32);
        set_count(self.pulse_ch as usize, words as u32);
        compiler_fence(Ordering::SeqCst);
        ch.ctrl_trig()
            .write_value(ctrl(pio0_dreq(2, false), true, false, self.pulse_ch));
        true
    }
}
