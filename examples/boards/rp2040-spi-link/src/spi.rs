//! The RP2040 as an SPI device, its bytes carried by PIO and DMA, the CPU touching the line
//! once per transfer (never per byte):
//!
//! - PIO0's state machine 0 is the shifter (SPI mode 0, MSB first): it takes each byte to send
//!   from DMA channel 1, puts its bits on MISO right after each rising edge of SCK (so the
//!   host has almost a whole period to sample them), samples MOSI on the rising edges and hands
//!   each byte to DMA channel 0. While it waits for CS it holds READY high (side-set): the
//!   device is armed, the host may clock.
//! - State machine 1 watches CS and raises PIO IRQ flag 0 when it rises: the transfer is over.
//!   [`on_transfer_end`] (PIO0_IRQ_1) stops the shifter, counts what arrived, and re-arms at
//!   once when bytes wait to go out; otherwise the task re-arms after it has taken what came
//!   in, so a reply rides in the very next transfer.
//! - REQUEST (GP21, SIO) is high while the device has bytes to send: the host then clocks.
//!
//! Full duplex: every transfer moves as many bytes each way. What the link has not filled is
//! 0x00, COBS's delimiter, which the far end's deframer skips; a transfer the host cuts short
//! leaves the rest of the device's bytes for the next one (nothing is lost on the way out).

use core::cell::{RefCell, UnsafeCell};
use core::future::poll_fn;
use core::task::Poll;

use critical_section::Mutex;
use embassy_futures::select::select;
use embassy_rp::pac;
use embassy_rp::pac::dma::regs::CtrlTrig;
use embassy_rp::pac::dma::vals::{DataSize, TreqSel};
use embassy_rp::peripherals::PIO0;
use embassy_rp::pio::program::pio_asm;
use embassy_rp::pio::{
    Common, Config, Direction, LoadedProgram, Pin, ShiftConfig, ShiftDirection, StateMachine,
};
use embassy_sync::waitqueue::AtomicWaker;
use embassy_time::{Instant, Timer};
use linklab_serial::embassy::SharedLink;

/// The most bytes one transfer carries each way: Linux spidev's default `bufsiz` (4096), the
/// most a host's single SPI_IOC_MESSAGE transfer may be.
pub const BUF: usize = 4096;
/// REQUEST's GPIO (README, "Wiring"; CS is GP17 and SCK GP18 in the programs).
pub const REQUEST_GPIO: usize = 21;
/// DMA channels: the bytes in, the bytes out, and the idle line after them (chained to the
/// bytes out, so the shifter never runs dry whatever the host clocks).
const DMA_RX: usize = 0;
const DMA_TX: usize = 1;
const DMA_IDLE: usize = 2;
/// DREQs of PIO0's state machine 0 (RP2040 datasheet, DMA: DREQ_PIO0_TX0 0, _RX0 4).
const DREQ_TX0: u8 = 0;
const DREQ_RX0: u8 = 4;

/// A buffer the DMA reads or writes.
#[repr(C, align(4))]
struct Buf(UnsafeCell<[u8; BUF]>);
// SAFETY: each buffer is owned by the DMA (while armed) or by the task (otherwise), handed
// over under the critical section of `SHARED`.
unsafe impl Sync for Buf {}

impl Buf {
    const fn new() -> Self {
        Buf(UnsafeCell::new([0; BUF]))
    }
    fn addr(&self) -> u32 {
        self.0.get() as u32
    }
}

static RX: [Buf; 2] = [Buf::new(), Buf::new()];
static TX: [Buf; 2] = [Buf::new(), Buf::new()];
/// What goes out when the device has nothing to say: idle line, 0x00.
static ZEROS: Buf = Buf::new();

/// The transport's counters (`/stats`: `spi`).
#[derive(Clone, Copy, Default, defmt::Format)]
pub struct SpiCounters {
    /// Transfers the device was armed for and saw end.
    pub transfers: u64,
    /// Bytes in (and as many out).
    pub bytes: u64,
    /// Transfers whose bytes the device sent in part (the host clocked fewer than it had).
    pub tx_partial: u64,
    /// CS pulses while the device was not armed (a host that did not wait for READY): their
    /// bytes were not taken.
    pub unarmed: u64,
    /// Transfers longer than [`BUF`]: the bytes past it were not taken.
    pub rx_overruns: u64,
    /// Transfers during which the shifter ran out of bytes to send (never, with the idle
    /// line chained behind the bytes; counted to show it): its MISO and MOSI bits stalled.
    pub tx_underruns: u64,
    /// Times the transfer-end interrupt armed the next transfer itself.
    pub armed_at_once: u64,
    /// Times the task armed it.
    pub armed_by_task: u64,
}

/// What the DMA is set up for.
#[derive(Clone, Copy)]
struct Armed {
    rx: usize,
    /// The TX buffer and the offset its bytes start at, or None: zeros.
    tx: Option<(usize, usize)>,
}

/// A TX buffer's state.
#[derive(Clone, Copy, Default)]
struct TxSlot {
    /// Committed: bytes `sent..len` wait to go out.
    committed: bool,
    len: usize,
    sent: usize,
    /// Bytes at and past this are zero.
    dirty: usize,
}

struct Shared {
    /// The shifter's program origin (for the re-arm's jump).
    origin: u8,
    armed: Option<Armed>,
    /// RX buffers holding a finished transfer: (its length, its sequence number).
    rx_full: [Option<(usize, u32)>; 2],
    tx: [TxSlot; 2],
    /// Committed TX buffers, oldest first.
    tx_queue: [usize; 2],
    tx_count: usize,
    seq: u32,
    counters: SpiCounters,
}

static SHARED: Mutex<RefCell<Shared>> = Mutex::new(RefCell::new(Shared {
    origin: 0,
    armed: None,
    rx_full: [None; 2],
    tx: [TxSlot {
        committed: false,
        len: 0,
        sent: 0,
        dirty: 0,
    }; 2],
    tx_queue: [0; 2],
    tx_count: 0,
    seq: 0,
    counters: SpiCounters {
        transfers: 0,
        bytes: 0,
        tx_partial: 0,
        unarmed: 0,
        rx_overruns: 0,
        tx_underruns: 0,
        armed_at_once: 0,
        armed_by_task: 0,
    },
}));

/// The task's waker: a transfer ended.
static WAKER: AtomicWaker = AtomicWaker::new();

/// The transport's counters now.
pub fn counters() -> SpiCounters {
    critical_section::with(|cs| SHARED.borrow_ref(cs).counters)
}

/// Loads both programs and configures the state machines (not yet running): the shifter on
/// `mosi` (in), `miso` (out) and `ready` (side-set), the CS watcher. The pins must be GP16,
/// GP19 and GP20 with CS on GP17 and SCK on GP18 (the programs name those).
pub fn setup(
    common: &mut Common<'static, PIO0>,
    shifter: &mut StateMachine<'static, PIO0, 0>,
    watcher: &mut StateMachine<'static, PIO0, 1>,
    pins: [&Pin<'static, PIO0>; 5],
) {
    let [mosi, cs, sck, miso, ready] = pins;
    let shift = pio_asm!(
        ".side_set 1 opt",
        "    pull block     side 0", // the first byte to send
        "    out pins, 1    side 0", // its MSB on MISO before the transfer starts
        "    wait 0 gpio 17 side 1", // armed: READY high until CS falls
        ".wrap_target",
        "    wait 1 gpio 18 side 0", // a rising edge: the host samples MISO; READY low
        "    in pins, 1",            // MOSI (autopush every 8 bits)
        "    out pins, 1",           // the next bit on MISO (autopull every 8 bits)
        "    wait 0 gpio 18",        // the falling edge
        ".wrap",
    );
    let watch = pio_asm!(
        ".wrap_target",
        "    wait 0 gpio 17",
        "    wait 1 gpio 17",
        "    irq nowait 0", // the transfer is over
        ".wrap",
    );
    let loaded: LoadedProgram<'static, PIO0> = common.load_program(&shift.program);
    let mut cfg = Config::default();
    cfg.use_program(&loaded, &[ready]);
    cfg.set_in_pins(&[mosi]);
    cfg.set_out_pins(&[miso]);
    let bytes = ShiftConfig {
        auto_fill: true,
        threshold: 8,
        direction: ShiftDirection::Left,
    };
    cfg.shift_in = bytes;
    cfg.shift_out = bytes;
    shifter.set_config(&cfg);
    shifter.set_pin_dirs(Direction::Out, &[miso, ready]);
    shifter.set_pin_dirs(Direction::In, &[mosi, cs, sck]);
    // READY low until the first arming.
    shifter.set_pins(embassy_rp::gpio::Level::Low, &[ready]);
    let watched = common.load_program(&watch.program);
    let mut wcfg = Config::default();
    wcfg.use_program(&watched, &[]);
    watcher.set_config(&wcfg);
    watcher.set_enable(true);
    critical_section::with(|c| SHARED.borrow_ref_mut(c).origin = loaded.origin);
    // PIO IRQ flag 0 (set by the watcher) to PIO0_IRQ_1.
    pac::PIO0.irqs(1).inte().modify(|w| w.set_sm0(true));
}

fn dma_ctrl(treq: u8, incr_read: bool, incr_write: bool, chain_to: u8) -> CtrlTrig {
    let mut c = CtrlTrig(0);
    c.set_en(true);
    c.set_data_size(DataSize::SIZE_BYTE);
    c.set_incr_read(incr_read);
    c.set_incr_write(incr_write);
    c.set_treq_sel(TreqSel::from(treq));
    c.set_chain_to(chain_to);
    c.set_irq_quiet(true);
    c
}

fn count_left(ch: usize) -> u32 {
    pac::DMA.ch(ch).trans_count().read()
}

/// Stops the shifter and both channels; empties its FIFOs and shift counters.
fn stop() {
    pac::PIO0
        .ctrl()
        .modify(|w| w.set_sm_enable(w.sm_enable() & !1));
    let all = (1 << DMA_RX) | (1 << DMA_TX) | (1 << DMA_IDLE);
    pac::DMA.chan_abort().write(|w| w.set_chan_abort(all));
    while pac::DMA.chan_abort().read().chan_abort() & all != 0 {}
    // Changing FJOIN flushes both FIFOs (RP2040 datasheet, SHIFTCTRL); set it back.
    let sm = pac::PIO0.sm(0);
    sm.shiftctrl().modify(|w| w.set_fjoin_rx(true));
    sm.shiftctrl().modify(|w| w.set_fjoin_rx(false));
    pac::PIO0.ctrl().modify(|w| w.set_sm_restart(1));
}

/// Sets the channels and starts the shifter at its first instruction for `a`.
fn start(origin: u8, a: Armed, tx: &[TxSlot; 2]) {
    let rx = pac::DMA.ch(DMA_RX);
    rx.read_addr().write_value(pac::PIO0.rxf(0).as_ptr() as u32);
    rx.write_addr().write_value(RX[a.rx].addr());
    rx.trans_count().write_value(BUF as u32);
    rx.ctrl_trig()
        .write_value(dma_ctrl(DREQ_RX0, false, true, DMA_RX as u8));
    let (from, count) = match a.tx {
        Some((slot, off)) => (TX[slot].addr() + off as u32, BUF - off),
        None => (ZEROS.addr(), BUF),
    };
    let _ = tx;
    // The idle line after the bytes: the same 0x00 read again and again, started by the
    // bytes' channel when it ends (written through a non-triggering alias).
    let idle = pac::DMA.ch(DMA_IDLE);
    idle.read_addr().write_value(ZEROS.addr());
    idle.write_addr()
        .write_value(pac::PIO0.txf(0).as_ptr() as u32);
    idle.trans_count().write_value(BUF as u32);
    idle.al1_ctrl()
        .write_value(dma_ctrl(DREQ_TX0, false, false, DMA_IDLE as u8).0);
    let t = pac::DMA.ch(DMA_TX);
    t.read_addr().write_value(from);
    t.write_addr().write_value(pac::PIO0.txf(0).as_ptr() as u32);
    t.trans_count().write_value(count as u32);
    t.ctrl_trig()
        .write_value(dma_ctrl(DREQ_TX0, true, false, DMA_IDLE as u8));
    // `jmp origin`, then run: it pulls the first byte and raises READY.
    pac::PIO0
        .sm(0)
        .instr()
        .write(|w| w.set_instr(u16::from(origin)));
    pac::PIO0
        .ctrl()
        .modify(|w| w.set_sm_enable(w.sm_enable() | 1));
}

/// Arms the next transfer if an RX buffer is free: the oldest committed TX bytes, or zeros.
fn arm(s: &mut Shared) -> bool {
    if s.armed.is_some() {
        return true;
    }
    let Some(rx) = (0..2).find(|&i| s.rx_full[i].is_none()) else {
        return false;
    };
    let tx = (s.tx_count > 0).then(|| {
        let slot = s.tx_queue[0];
        (slot, s.tx[slot].sent)
    });
    let a = Armed { rx, tx };
    start(s.origin, a, &s.tx);
    s.armed = Some(a);
    true
}

/// REQUEST high while committed bytes wait.
fn update_request(s: &Shared) {
    let bit = 1 << REQUEST_GPIO;
    if s.tx_count > 0 {
        pac::SIO.gpio_out(0).value_set().write_value(bit);
    } else {
        pac::SIO.gpio_out(0).value_clr().write_value(bit);
    }
}

/// PIO0_IRQ_1: CS rose. Counts the transfer, hands its bytes to the task, re-arms at once
/// when bytes wait to go out.
pub fn on_transfer_end() {
    critical_section::with(|cs| {
        let mut shared = SHARED.borrow_ref_mut(cs);
        let s = &mut *shared;
        pac::PIO0.irq().write(|w| w.set_irq(1));
        let Some(a) = s.armed.take() else {
            s.counters.unarmed += 1;
            return;
        };
        stop();
        let fdebug = pac::PIO0.fdebug().read();
        if fdebug.rxstall() & 1 != 0 {
            s.counters.rx_overruns += 1;
        }
        if fdebug.txstall() & 1 != 0 {
            s.counters.tx_underruns += 1;
        }
        pac::PIO0.fdebug().write(|w| {
            w.set_rxstall(1);
            w.set_txstall(1);
        });
        let n = BUF - count_left(DMA_RX) as usize;
        s.counters.transfers += 1;
        s.counters.bytes += n as u64;
        s.seq = s.seq.wrapping_add(1);
        s.rx_full[a.rx] = Some((n, s.seq));
        if let Some((slot, off)) = a.tx {
            let t = &mut s.tx[slot];
            t.sent = (off + n).min(t.len);
            if t.sent == t.len {
                t.committed = false;
                s.tx_queue[0] = s.tx_queue[1];
                s.tx_count -= 1;
            } else {
                s.counters.tx_partial += 1;
            }
        }
        if s.tx_count > 0 && arm(s) {
            s.counters.armed_at_once += 1;
        }
        update_request(s);
    });
    WAKER.wake();
}

/// The oldest finished transfer's RX buffer and length, if any.
fn next_received() -> Option<(usize, usize)> {
    critical_section::with(|cs| {
        let s = SHARED.borrow_ref(cs);
        (0..2)
            .filter_map(|i| s.rx_full[i].map(|(n, seq)| (i, n, seq)))
            .min_by_key(|&(_, _, seq)| seq)
            .map(|(i, n, _)| (i, n))
    })
}

/// `bytes` without the idle line after the host's last byte: one delimiter closes whatever
/// came before it, the rest is 0x00 the deframer would only skip, one call per byte.
fn without_idle_tail(bytes: &[u8]) -> &[u8] {
    let end = bytes.iter().rposition(|&b| b != 0).map_or(0, |k| k + 2);
    &bytes[..end.min(bytes.len())]
}

fn now_us() -> u64 {
    Instant::now().as_micros()
}

/// Moves the link's bytes through the transfers for ever: what came in to the link, what the
/// link has for the line into free TX buffers; arms the next transfer whenever nothing is.
pub async fn run(link: &SharedLink<8>) -> ! {
    loop {
        while let Some((i, n)) = next_received() {
            // SAFETY: a finished transfer's buffer is the task's until it frees it below.
            let bytes = unsafe { &(&*RX[i].0.get())[..n] };
            link.handle_input(now_us(), without_idle_tail(bytes));
            critical_section::with(|cs| SHARED.borrow_ref_mut(cs).rx_full[i] = None);
        }
        fill(link);
        critical_section::with(|cs| {
            let mut s = SHARED.borrow_ref_mut(cs);
            if s.armed.is_none() && arm(&mut s) {
                s.counters.armed_by_task += 1;
            }
            update_request(&s);
        });
        wait(link).await;
    }
}

/// The most bytes of one encoded frame on the line (COBS of the largest frame and its two
/// delimiters).
const MAX_WIRE: usize = linklab_serial::wire::MAX_WIRE;

/// The start of a frame the last fill took from the link but could not end in its buffer:
/// it leads the next buffer, so every committed buffer ends on a frame's delimiter and the
/// idle bytes after it never fall inside a frame.
struct Carry {
    bytes: [u8; MAX_WIRE],
    len: usize,
}

static CARRY: Mutex<RefCell<Carry>> = Mutex::new(RefCell::new(Carry {
    bytes: [0; MAX_WIRE],
    len: 0,
}));

/// Commits what the link has for the line into the free TX buffers, each ending on a
/// frame's last byte (0x00, COBS's delimiter: no other byte of an encoded frame is 0).
fn fill(link: &SharedLink<8>) {
    loop {
        let free = critical_section::with(|cs| {
            let s = SHARED.borrow_ref(cs);
            (0..2)
                .find(|&i| !s.tx[i].committed)
                .map(|i| (i, s.tx[i].dirty))
        });
        let Some((slot, dirty)) = free else { return };
        // SAFETY: an uncommitted TX buffer is the task's: no DMA reads it.
        let buf = unsafe { &mut *TX[slot].0.get() };
        let carried = critical_section::with(|cs| {
            let c = CARRY.borrow_ref(cs);
            buf[..c.len].copy_from_slice(&c.bytes[..c.len]);
            c.len
        });
        let n = carried + link.poll_output(now_us(), &mut buf[carried..]);
        // The buffer ends on a delimiter; what follows the last one is a frame's start.
        let end = buf[..n].iter().rposition(|&b| b == 0).map_or(0, |k| k + 1);
        critical_section::with(|cs| {
            let mut c = CARRY.borrow_ref_mut(cs);
            let rest = n - end;
            let keep = rest.min(MAX_WIRE);
            c.bytes[..keep].copy_from_slice(&buf[end..end + keep]);
            c.len = keep;
        });
        if dirty > end {
            buf[end..dirty.max(n)].fill(0);
        } else if n > end {
            buf[end..n].fill(0);
        }
        if end == 0 {
            return;
        }
        critical_section::with(|cs| {
            let mut s = SHARED.borrow_ref_mut(cs);
            s.tx[slot] = TxSlot {
                committed: true,
                len: end,
                sent: 0,
                dirty: end,
            };
            let k = s.tx_count;
            s.tx_queue[k] = slot;
            s.tx_count += 1;
            update_request(&s);
        });
    }
}

/// Waits for a transfer's end, or for the link to have bytes for the line (a frame from the
/// stack, a freed slot, its timer) while a TX buffer is free.
async fn wait(link: &SharedLink<8>) {
    // Looked at once; any wake after that ends the wait (the loop looks again): the link's
    // timers are not recomputed at every poll.
    let mut first = true;
    let woken = poll_fn(|cx| {
        if !core::mem::take(&mut first) {
            return Poll::Ready(());
        }
        WAKER.register(cx.waker());
        link.register_line(cx.waker());
        let (received, tx_free) = critical_section::with(|cs| {
            let s = SHARED.borrow_ref(cs);
            (
                s.rx_full.iter().any(Option::is_some),
                s.tx.iter().any(|t| !t.committed),
            )
        });
        let now = now_us();
        let due = tx_free && link.poll_at(now).is_some_and(|t| t <= now);
        if received || due {
            Poll::Ready(())
        } else {
            Poll::Pending
        }
    });
    match link.poll_at(now_us()) {
        Some(at) => {
            select(woken, Timer::at(Instant::from_micros(at))).await;
        }
        None => woken.await,
    }
}
