//! embassy-executor's raw executor in a loop: poll what was woken, then, unless a task was
//! woken meanwhile, the board's sleep (WFI until the GEM's or the timer's line, then the
//! HAL's GEM handler and the timer's alarm, counted as interrupt work). Each pass's work, and
//! embassy-net's runner's and the apps' apart ([`measured`]), in the figures of `/stats`
//! (`cpu.work`: `stack`, `apps`, `main`, `loops`; in nanoseconds awake, instructions under
//! `-icount shift=0`).

use core::cell::Cell;
use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicBool, Ordering};
use core::task::{Context, Poll};

use embassy_executor::raw::Executor;
use embassy_executor::Spawner;
use linklab_firmware::stack::Stack;
use linklab_firmware::stats::{CpuFigures, LayerWork};
use linklab_firmware::ISR_WORK;
use static_cell::StaticCell;

use crate::{wake, GIC, TIMER};

/// Set by the pender (a task was woken): poll again before sleeping.
static PENDED: AtomicBool = AtomicBool::new(false);

/// embassy-executor's pender: a task was woken.
#[export_name = "__pender"]
fn pender(_context: *mut ()) {
    PENDED.store(true, Ordering::Release);
}

/// Work per layer since boot, nanoseconds asleep, the painted stack.
struct Figures {
    stack: Cell<u64>,
    apps: Cell<u64>,
    main: Cell<u64>,
    loops: Cell<u64>,
    idle_ns: Cell<u64>,
    painted: Cell<Option<Stack>>,
}

// SAFETY: one core, no interrupt taken: touched only from the executor's loop and its tasks.
unsafe impl Sync for Figures {}

static FIGURES: Figures = Figures {
    stack: Cell::new(0),
    apps: Cell::new(0),
    main: Cell::new(0),
    loops: Cell::new(0),
    idle_ns: Cell::new(0),
    painted: Cell::new(None),
};

fn add(figure: &Cell<u64>, n: u64) {
    figure.set(figure.get().wrapping_add(n));
}

/// Which layer a task's work belongs to.
#[derive(Clone, Copy)]
pub enum Layer {
    /// embassy-net's runner: smoltcp and the driver.
    Stack,
    /// The apps' tasks.
    Apps,
}

/// A point in the CPU's work, to measure a stretch less the interrupt work in it.
struct Mark {
    ns: u64,
    isr: u32,
}

impl Mark {
    fn now() -> Mark {
        Mark {
            isr: ISR_WORK.load(Ordering::Relaxed),
            ns: TIMER.now_ns(),
        }
    }

    fn net(&self) -> u64 {
        let all = TIMER.now_ns().wrapping_sub(self.ns);
        let isr = ISR_WORK.load(Ordering::Relaxed).wrapping_sub(self.isr);
        all.saturating_sub(u64::from(isr))
    }
}

/// A task's future whose polls are counted to `layer`.
pub struct Measured<F> {
    inner: F,
    layer: Layer,
}

/// Counts `inner`'s polls to `layer`.
pub fn measured<F: Future>(layer: Layer, inner: F) -> Measured<F> {
    Measured { inner, layer }
}

impl<F: Future> Future for Measured<F> {
    type Output = F::Output;

    fn poll(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<F::Output> {
        // SAFETY: structural pinning of `inner`; `layer` is Copy and never moved out.
        let this = unsafe { self.get_unchecked_mut() };
        let mark = Mark::now();
        // SAFETY: `inner` is pinned with `self`.
        let r = unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
        add(
            match this.layer {
                Layer::Stack => &FIGURES.stack,
                Layer::Apps => &FIGURES.apps,
            },
            mark.net(),
        );
        r
    }
}

/// The CPU figures for `/stats`.
pub fn cpu_figures() -> CpuFigures {
    let stack = FIGURES.painted.get();
    CpuFigures {
        uptime_ns: TIMER.now_ns(),
        idle_ns: FIGURES.idle_ns.get(),
        stack_peak_bytes: stack.map_or(0, |s| s.peak()),
        stack_size_bytes: stack.map_or(0, |s| s.size()),
        work: LayerWork {
            isr: u64::from(ISR_WORK.load(Ordering::Relaxed)),
            stack: FIGURES.stack.get(),
            apps: FIGURES.apps.get(),
            main: FIGURES.main.get(),
            loops: FIGURES.loops.get(),
        },
        work_unit: "ns awake",
    }
}

/// Runs the executor forever over the painted stack `painted`: `spawn` starts the tasks.
pub fn run(painted: Stack, spawn: impl FnOnce(Spawner)) -> ! {
    FIGURES.painted.set(Some(painted));
    static EXECUTOR: StaticCell<Executor> = StaticCell::new();
    let executor: &'static Executor = EXECUTOR.init(Executor::new(core::ptr::null_mut()));
    spawn(executor.spawner());
    loop {
        let mark = Mark::now();
        PENDED.store(false, Ordering::Release);
        // SAFETY: polled from this loop only, never re-entered (the pender only sets a flag).
        unsafe { executor.poll() };
        add(&FIGURES.main, mark.net());
        add(&FIGURES.loops, 1);
        if PENDED.load(Ordering::Acquire) {
            continue;
        }
        let before = TIMER.now_ns();
        if !GIC.pending() {
            aarch32_cpu::asm::wfi();
        }
        let start = TIMER.now_ns();
        wake::clear_embassy();
        linklab_firmware::add_isr_work(TIMER.now_ns() - start);
        add(&FIGURES.idle_ns, TIMER.now_ns().saturating_sub(before));
    }
}
