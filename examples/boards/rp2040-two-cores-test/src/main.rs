//! The test image of emulators/rp2040js's second core: an RP2040 program that launches core 1
//! with embassy-rp's `spawn_core1` (the boot ROM's FIFO protocol) and then, phase by phase,
//! uses what the chip has per core and what the cores share. Each result is a `#[no_mangle]`
//! static the harness's tests (emulators/rp2040js/test) read by its symbol:
//!
//! - `CPUID`: what SIO's CPUID read on each core (0, 1).
//! - FIFO ping-pong: core 0 sends `PING_PONGS` words, core 1 answers each with `3w + 1`
//!   (`FIFO_ROUND_TRIPS`, `FIFO_ERRORS`); then with core 1 not reading, core 0 fills its TX
//!   FIFO (8 words, RDY falls), writes a ninth (dropped, WOF set), reads its empty RX FIFO
//!   (ROE set), clears both (`FIFO_FLAGS`: one bit per check passed), and core 1 drains
//!   exactly the eight (`FIFO_DRAINED`).
//! - A spinlock contended from both cores: each adds 1 `INCREMENTS` times to a counter under
//!   spinlock 7 (`LOCKED_COUNT`: twice `INCREMENTS`), counting the claims that found it
//!   taken (`LOCK_SPINS`), then as often to one without a lock (`RACY_COUNT`: updates lost
//!   while the cores interleave).
//! - Each core's divider and interpolator at once (`DIV_ERRORS`, `INTERP_ACCUM`).
//! - An interrupt on each core: TIMER_IRQ_1 enabled on core 0's NVIC only, TIMER_IRQ_2 on
//!   core 1's only (`TIMER_IRQ_CPU`: the CPUID each handler read, plus one); core 1 writes
//!   its FIFO and core 0's SIO_IRQ_PROC0 takes the word (`SIO_IRQ0_WORD`); core 1 enables
//!   GP10's level-high interrupt in PROC1_INTE, and when the harness raises GP10 embassy-rp's
//!   IO_IRQ_BANK0 handler on core 1 clears it (`GPIO_IRQ_CORE1`; `GPIO_READY` tells the
//!   harness when); core 0 pauses and resumes core 1 with embassy-rp's `pause_core1` /
//!   `resume_core1` (core 1's SIO_IRQ_PROC1 handler answers: `PAUSE_HELD` is 1 if core 1's
//!   loop stood still while paused and `PAUSE_RESUMED` if it ran again after).
//! - `DONE`: 1 when every phase ran; `PANICKED`: 1 on a panic.
#![no_std]
#![no_main]

use core::sync::atomic::{AtomicU32, Ordering::SeqCst};

use defmt_rtt as _;
use embassy_rp::interrupt;
use embassy_rp::interrupt::InterruptExt;
use embassy_rp::multicore::{pause_core1, resume_core1, spawn_core1, Stack};
use embassy_rp::pac;

/// Round trips of the ping-pong.
const PING_PONGS: u32 = 200;
/// Increments each core makes to each counter.
const INCREMENTS: u32 = 2000;
/// Divisions each core checks.
const DIVISIONS: u32 = 300;
/// The spinlock the cores contend for.
const LOCK: usize = 7;
/// The GPIO the harness raises for core 1's interrupt.
const GPIO_PIN: usize = 10;

macro_rules! results {
    ($($(#[$doc:meta])* $name:ident: $n:literal;)*) => {
        $($(#[$doc])* #[no_mangle] #[used] static $name: [AtomicU32; $n] = [const { AtomicU32::new(0) }; $n];)*
    };
}

results! {
    /// CPUID as each core read it.
    CPUID: 2;
    /// Ping-pong round trips answered right.
    FIFO_ROUND_TRIPS: 1;
    /// Ping-pong answers that were wrong.
    FIFO_ERRORS: 1;
    /// FIFO_ST checks passed, one bit each.
    FIFO_FLAGS: 1;
    /// Words core 1 drained after core 0 filled the FIFO.
    FIFO_DRAINED: 1;
    /// The counter under the spinlock.
    LOCKED_COUNT: 1;
    /// The counter without it.
    RACY_COUNT: 1;
    /// Claims of the spinlock that found it taken, per core.
    LOCK_SPINS: 2;
    /// Wrong hardware divisions, per core.
    DIV_ERRORS: 2;
    /// Each core's interpolator 0 ACCUM0 read back after both wrote theirs.
    INTERP_ACCUM: 2;
    /// CPUID + 1 as read in TIMER_IRQ_1's and TIMER_IRQ_2's handlers.
    TIMER_IRQ_CPU: 2;
    /// Handler entries of TIMER_IRQ_1 and TIMER_IRQ_2.
    TIMER_IRQ_COUNT: 2;
    /// The word core 0's SIO_IRQ_PROC0 handler read, and CPUID + 1 there.
    SIO_IRQ0_WORD: 2;
    /// 1 once core 1 has enabled GP10's interrupt: the harness raises GP10 then.
    GPIO_READY: 1;
    /// 1 once core 1's IO_IRQ_BANK0 handler has taken GP10's interrupt.
    GPIO_IRQ_CORE1: 1;
    /// 1 if core 1's loop stood still while paused.
    PAUSE_HELD: 1;
    /// 1 if it ran again after the resume.
    PAUSE_RESUMED: 1;
    /// 1 when every phase ran.
    DONE: 1;
    /// 1 after a panic.
    PANICKED: 1;
}

/// The phase both cores are in (core 0 moves it on).
static PHASE: AtomicU32 = AtomicU32::new(0);
/// Set by core 1 when it has finished a phase's part (the phase's number).
static CORE1_DONE: AtomicU32 = AtomicU32::new(0);
/// Core 1's idle loop's count, for pause and resume.
static CORE1_LOOPS: AtomicU32 = AtomicU32::new(0);

static mut CORE1_STACK: Stack<4096> = Stack::new();

fn sio() -> pac::sio::Sio {
    pac::SIO
}

fn cpuid() -> u32 {
    sio().cpuid().read()
}

fn fifo_write(value: u32) {
    while !sio().fifo().st().read().rdy() {}
    sio().fifo().wr().write_value(value);
    cortex_m::asm::sev();
}

fn fifo_read() -> u32 {
    while !sio().fifo().st().read().vld() {
        cortex_m::asm::wfe();
    }
    sio().fifo().rd().read()
}

fn wait_phase(phase: u32) {
    while PHASE.load(SeqCst) != phase {}
}

fn wait_core1(phase: u32) {
    while CORE1_DONE.load(SeqCst) != phase {}
}

/// Adds 1 to `counter` without any lock: a load, an add, a store, as any plain increment.
fn racy_increment(counter: &AtomicU32) {
    let v = counter.load(SeqCst);
    counter.store(v + 1, SeqCst);
}

/// Both cores' part of the contended spinlock.
fn contend(core: usize) {
    for _ in 0..INCREMENTS {
        while sio().spinlock(LOCK).read() == 0 {
            LOCK_SPINS[core].fetch_add_plain();
        }
        racy_increment(&LOCKED_COUNT[0]);
        sio().spinlock(LOCK).write_value(1);
    }
    for _ in 0..INCREMENTS {
        racy_increment(&RACY_COUNT[0]);
    }
}

/// `fetch_add` for the M0+ (no atomic read-modify-write): for counters only one core writes.
trait PlainAdd {
    fn fetch_add_plain(&self);
}

impl PlainAdd for AtomicU32 {
    fn fetch_add_plain(&self) {
        self.store(self.load(SeqCst) + 1, SeqCst);
    }
}

/// Both cores' part of the divider and interpolator checks.
fn divide_and_interpolate(core: usize) {
    let div = sio().div();
    for i in 0..DIVISIONS {
        let (n, d) = (
            0x9E37_79B9u32.wrapping_mul(i + 1) ^ core as u32,
            3 + i * (core as u32 + 7),
        );
        div.udividend().write_value(n);
        div.udivisor().write_value(d);
        // Eight cycles until the result is ready (CSR.READY).
        while !div.csr().read().ready() {}
        let (r, q) = (div.remainder().read(), div.quotient().read());
        if q != n / d || r != n % d {
            DIV_ERRORS[core].fetch_add_plain();
        }
    }
    let interp = sio().interp(0);
    interp.accum0().write_value(0x1000 + core as u32);
    // The other core writes its own now; each reads its own back.
    for _ in 0..50 {
        cortex_m::asm::nop();
    }
    INTERP_ACCUM[core].store(interp.accum0().read(), SeqCst);
}

#[interrupt]
fn TIMER_IRQ_1() {
    pac::TIMER.intr().write(|w| w.set_alarm(1, true));
    TIMER_IRQ_CPU[0].store(cpuid() + 1, SeqCst);
    TIMER_IRQ_COUNT[0].fetch_add_plain();
}

#[interrupt]
fn TIMER_IRQ_2() {
    pac::TIMER.intr().write(|w| w.set_alarm(2, true));
    TIMER_IRQ_CPU[1].store(cpuid() + 1, SeqCst);
    TIMER_IRQ_COUNT[1].fetch_add_plain();
}

#[interrupt]
fn SIO_IRQ_PROC0() {
    while sio().fifo().st().read().vld() {
        SIO_IRQ0_WORD[0].store(sio().fifo().rd().read(), SeqCst);
        SIO_IRQ0_WORD[1].store(cpuid() + 1, SeqCst);
    }
}

fn core1_main() -> ! {
    // embassy-rp enabled SIO_IRQ_PROC1 here for pause_core1; the ping-pong reads the FIFO
    // itself until the pause phase.
    interrupt::SIO_IRQ_PROC1.disable();
    CPUID[1].store(cpuid(), SeqCst);
    CORE1_DONE.store(1, SeqCst);

    wait_phase(2);
    for _ in 0..PING_PONGS {
        let w = fifo_read();
        fifo_write(w.wrapping_mul(3).wrapping_add(1));
    }

    wait_phase(3);
    let mut drained = 0;
    while sio().fifo().st().read().vld() {
        if sio().fifo().rd().read() == drained {
            drained += 1;
        }
    }
    FIFO_DRAINED[0].store(drained, SeqCst);
    CORE1_DONE.store(3, SeqCst);

    wait_phase(4);
    contend(1);
    CORE1_DONE.store(4, SeqCst);

    wait_phase(5);
    divide_and_interpolate(1);
    CORE1_DONE.store(5, SeqCst);

    wait_phase(6);
    // SAFETY: the handler is this image's; enabling an interrupt on this core's NVIC.
    unsafe { interrupt::TIMER_IRQ_2.enable() };
    // GP10: input enabled at the pad, its level-high interrupt enabled for core 1 only.
    pac::PADS_BANK0.gpio(GPIO_PIN).modify(|w| w.set_ie(true));
    pac::IO_BANK0
        .int_proc(1)
        .inte(GPIO_PIN / 8)
        .modify(|w| w.set_level_high(GPIO_PIN % 8, true));
    fifo_write(0xC0DE_0001);
    // embassy-rp's SIO_IRQ_PROC1 handler answers pause_core1 / resume_core1.
    // SAFETY: as above.
    unsafe { interrupt::SIO_IRQ_PROC1.enable() };
    GPIO_READY[0].store(1, SeqCst);
    CORE1_DONE.store(6, SeqCst);
    loop {
        let inte = pac::IO_BANK0.int_proc(1).inte(GPIO_PIN / 8).read();
        if GPIO_IRQ_CORE1[0].load(SeqCst) == 0 && !inte.level_high(GPIO_PIN % 8) {
            GPIO_IRQ_CORE1[0].store(1, SeqCst);
        }
        CORE1_LOOPS.fetch_add_plain();
    }
}

#[cortex_m_rt::entry]
fn main() -> ! {
    let p = embassy_rp::init(Default::default());
    CPUID[0].store(cpuid(), SeqCst);

    // SAFETY: the stack is core 1's alone from here on.
    let stack = unsafe { &mut *core::ptr::addr_of_mut!(CORE1_STACK) };
    spawn_core1(p.CORE1, stack, core1_main);
    wait_core1(1);

    PHASE.store(2, SeqCst);
    for i in 0..PING_PONGS {
        let w = 0x5A5A_0000 ^ i;
        fifo_write(w);
        if fifo_read() == w.wrapping_mul(3).wrapping_add(1) {
            FIFO_ROUND_TRIPS[0].fetch_add_plain();
        } else {
            FIFO_ERRORS[0].fetch_add_plain();
        }
    }

    // Core 1 is waiting for phase 3 and reads nothing: fill its FIFO.
    let st = || sio().fifo().st().read();
    let mut flags = 0;
    for i in 0..8 {
        if st().rdy() {
            flags |= 1 << i;
        }
        sio().fifo().wr().write_value(i);
    }
    if !st().rdy() && !st().wof() {
        flags |= 1 << 8;
    }
    sio().fifo().wr().write_value(99);
    if st().wof() {
        flags |= 1 << 9;
    }
    if !st().vld() && sio().fifo().rd().read() == 0 && st().roe() {
        flags |= 1 << 10;
    }
    sio().fifo().st().write(|w| {
        w.set_wof(true);
        w.set_roe(true);
    });
    if !st().wof() && !st().roe() {
        flags |= 1 << 11;
    }
    FIFO_FLAGS[0].store(flags, SeqCst);
    PHASE.store(3, SeqCst);
    cortex_m::asm::sev();
    wait_core1(3);

    PHASE.store(4, SeqCst);
    contend(0);
    wait_core1(4);

    PHASE.store(5, SeqCst);
    divide_and_interpolate(0);
    wait_core1(5);

    // SAFETY: this image's handlers; enabling interrupts on this core's NVIC.
    unsafe {
        interrupt::TIMER_IRQ_1.enable();
        interrupt::SIO_IRQ_PROC0.enable();
    }
    PHASE.store(6, SeqCst);
    wait_core1(6);
    let now = pac::TIMER.timerawl().read();
    pac::TIMER.inte().modify(|w| {
        w.set_alarm(1, true);
        w.set_alarm(2, true);
    });
    pac::TIMER.alarm(1).write_value(now.wrapping_add(50));
    pac::TIMER.alarm(2).write_value(now.wrapping_add(60));
    while TIMER_IRQ_COUNT[0].load(SeqCst) == 0 || TIMER_IRQ_COUNT[1].load(SeqCst) == 0 {}
    while SIO_IRQ0_WORD[1].load(SeqCst) == 0 {}
    // pause_core1 reads core 1's answers from the FIFO itself.
    interrupt::SIO_IRQ_PROC0.disable();

    pause_core1();
    let held = CORE1_LOOPS.load(SeqCst);
    for _ in 0..2000 {
        cortex_m::asm::nop();
    }
    PAUSE_HELD[0].store((CORE1_LOOPS.load(SeqCst) == held) as u32, SeqCst);
    resume_core1();
    let resumed = CORE1_LOOPS.load(SeqCst);
    while CORE1_LOOPS.load(SeqCst) == resumed {}
    PAUSE_RESUMED[0].store(1, SeqCst);

    DONE[0].store(1, SeqCst);
    loop {
        cortex_m::asm::wfi();
    }
}

#[panic_handler]
fn panic(_: &core::panic::PanicInfo) -> ! {
    PANICKED[0].store(1, SeqCst);
    loop {
        cortex_m::asm::wfi();
    }
}
