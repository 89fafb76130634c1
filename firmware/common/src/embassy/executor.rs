//! The executor's loop, measured as the main loop is: embassy-executor's raw executor polled
//! until nothing is woken, then the board's idle (WFI unless the pender ran); the work of
//! each pass, and of embassy-net's runner and the apps apart ([`Measured`]), in
//! [`stats::LayerWork`](crate::stats::LayerWork) for `/stats`.

use core::cell::Cell;
use core::future::Future;
use core::pin::Pin;
use core::sync::atomic::{AtomicBool, Ordering};
use core::task::{Context, Poll};

use critical_section::Mutex;
use embassy_executor::raw::Executor;
use embassy_executor::Spawner;
use static_cell::StaticCell;

use super::EmbassyBoard;
use crate::stack::Stack;
use crate::stats::{CpuFigures, LayerWork};
use crate::ISR_WORK;

/// Set by the pender (a task was woken, possibly from an interrupt): poll again before
/// sleeping.
static PENDED: AtomicBool = AtomicBool::new(false);

/// embassy-executor's pender: a task was woken.
#[export_name = "__pender"]
pub fn pender(_context: *mut ()) {
    PENDED.store(true, Ordering::Release);
}

/// The work per layer since boot (`isr` is read from [`ISR_WORK`] when reported), a cell per
/// figure: each pass and each task's poll adds to one or two of them.
struct Work {
    stack: Cell<u64>,
    apps: Cell<u64>,
    main: Cell<u64>,
    loops: Cell<u64>,
}

static WORK: Mutex<Work> = Mutex::new(Work {
    stack: Cell::new(0),
    apps: Cell::new(0),
    main: Cell::new(0),
    loops: Cell::new(0),
});
/// Nanoseconds asleep since boot.
static IDLE_NS: Mutex<Cell<u64>> = Mutex::new(Cell::new(0));
/// The painted stack.
static STACK: Mutex<Cell<Option<Stack>>> = Mutex::new(Cell::new(None));
/// The board's work counter, for the tasks.
static WORK_NOW: Mutex<Cell<fn() -> u64>> = Mutex::new(Cell::new(zero));

/// Which layer a task's work belongs to.
#[derive(Clone, Copy)]
pub enum Layer {
    /// embassy-net's runner: MAC, smoltcp, the driver's TX.
    Stack,
    /// The apps' tasks.
    Apps,
}

/// Adds `n` to `figure`.
fn add(figure: &Cell<u64>, n: u64) {
    figure.set(figure.get().wrapping_add(n));
}

/// A point in the CPU's work, to measure a stretch less the NIC interrupt's share.
struct Mark {
    work: u64,
    isr: u32,
}

impl Mark {
    fn now(work: fn() -> u64) -> Mark {
        Mark {
            isr: ISR_WORK.load(Ordering::Relaxed),
            work: work(),
        }
    }

    fn net(&self, work: fn() -> u64) -> u64 {
        let all = work().wrapping_sub(self.work);
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
        let work = critical_section::with(|cs| WORK_NOW.borrow(cs).get());
        let mark = Mark::now(work);
        // SAFETY: `inner` is pinned with `self`.
        let r = unsafe { Pin::new_unchecked(&mut this.inner) }.poll(cx);
        let spent = mark.net(work);
        let layer = this.layer;
        critical_section::with(|cs| {
            let w = WORK.borrow(cs);
            add(
                match layer {
                    Layer::Stack => &w.stack,
                    Layer::Apps => &w.apps,
                },
                spent,
            )
        });
        r
    }
}

fn zero() -> u64 {
    0
}

/// The CPU figures for `/stats`.
pub fn cpu_figures(board: &EmbassyBoard) -> CpuFigures {
    let (work, idle_ns, stack) = critical_section::with(|cs| {
        let w = WORK.borrow(cs);
        let work = LayerWork {
            isr: 0,
            stack: w.stack.get(),
            apps: w.apps.get(),
            main: w.main.get(),
            loops: w.loops.get(),
        };
        (work, IDLE_NS.borrow(cs).get(), STACK.borrow(cs).get())
    });
    CpuFigures {
        uptime_ns: (board.now_ns)(),
        idle_ns,
        stack_peak_bytes: stack.map_or(0, |s| s.peak()),
        stack_size_bytes: stack.map_or(0, |s| s.size()),
        work: LayerWork {
            isr: u64::from(ISR_WORK.load(Ordering::Relaxed)),
            ..work
        },
        work_unit: if board.counts_instructions {
            "instructions"
        } else {
            "ns awake"
        },
    }
}

/// Runs the executor forever: `spawn` starts the tasks, then each pass polls what was
/// woken and the board idles until an interrupt unless a task was woken meanwhile.
pub fn run(board: EmbassyBoard, stack: Stack, spawn: impl FnOnce(Spawner)) -> ! {
    critical_section::with(|cs| {
        STACK.borrow(cs).set(Some(stack));
        WORK_NOW.borrow(cs).set(board.work);
    });
    static EXECUTOR: StaticCell<Executor> = StaticCell::new();
    let executor: &'static Executor = EXECUTOR.init(Executor::new(core::ptr::null_mut()));
    spawn(executor.spawner());
    loop {
        let mark = Mark::now(board.work);
        PENDED.store(false, Ordering::Release);
        // SAFETY: polled from this loop only, never re-entered (the pender only sets a flag).
        unsafe { executor.poll() };
        let spent = mark.net(board.work);
        critical_section::with(|cs| {
            let w = WORK.borrow(cs);
            add(&w.main, spent);
            add(&w.loops, 1);
        });
        if PENDED.load(Ordering::Acquire) {
            // A task was woken during the pass: the board's idle would return at once.
            continue;
        }
        let before = (board.now_ns)();
        (board.idle)(|| PENDED.load(Ordering::Acquire));
        let slept = (board.now_ns)().saturating_sub(before);
        critical_section::with(|cs| {
            let idle = IDLE_NS.borrow(cs);
            idle.set(idle.get() + slept);
        });
    }
}
