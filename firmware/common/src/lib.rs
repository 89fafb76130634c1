//! linklab-firmware: the board-independent part of every linklab firmware image. A board
//! brings up its clocks, console, timer and NIC, starts the NIC's RX interrupt (which moves
//! each frame into a grant of [`RX_QUEUE`]), reads its
//! [`DeviceConfig`](linklab_perf::device_config::DeviceConfig) and calls [`run`]: smoltcp over
//! `linklab_mac::Mac` as its `Device`, running linklab-perf's [`DeviceApps`] (iperf3 5201,
//! HTTP 80 with the bench files and `/stats`, echo 7, ICMP) — the same apps `linklab serve`
//! runs on a TAP. A board whose driver is someone else's (a HAL's smoltcp `Device`) calls
//! [`run_device`] with it instead, through [`NetDevice`].
//!
//! `#![no_std]`, no heap: every buffer is a static ([`memory`]).
#![no_std]
#![deny(missing_docs)]

mod apps;
#[cfg(feature = "blast")]
pub mod blast;
mod board;
mod buffers;
mod config;
pub mod console;
#[cfg(feature = "embassy")]
pub mod embassy;
mod main_loop;
pub mod memory;
mod net_device;
mod run;
#[cfg(feature = "serial")]
pub mod serial;
pub mod stack;
pub mod stats;

pub use board::Board;
pub use config::{config_or_default, read_config};
pub use net_device::NetDevice;
#[cfg(feature = "soft-phy")]
pub use run::run_soft_phy;
pub use run::{run, run_device};

// The images' memcpy (linked in place of compiler_builtins').
use linklab_memcpy as _;
// The minimal and compact images' 64-bit division and memset (linked in place of
// compiler_builtins').
#[cfg(any(feature = "minimal", feature = "compact"))]
use linklab_small_builtins as _;

use core::sync::atomic::{AtomicU32, Ordering};

/// Refuses a reduced image (`minimal`, `compact`) built with an app it leaves out: one list
/// of the full image's apps such an image has none of, each image naming what else it leaves
/// out.
macro_rules! refuse_apps_beyond {
    ($image:literal, [$($also:literal),*], $why:literal) => {
        #[cfg(all(
            feature = $image,
            any(
                $(feature = $also,)*
                feature = "echo",
                feature = "blast",
                feature = "evict",
                feature = "iperf-udp",
                feature = "iperf-parallel",
                feature = "iperf-bidir",
                feature = "iperf-rate",
                feature = "iperf2"
            )
        ))]
        compile_error!($why);
    };
}

refuse_apps_beyond!(
    "minimal",
    ["http"],
    "linklab-firmware: feature `minimal` is the iperf3 TCP server alone; build it with `--no-default-features` (no app features)"
);
refuse_apps_beyond!(
    "compact",
    ["minimal", "stats", "iperf3"],
    "linklab-firmware: feature `compact` is lwIP's feature set (iperf 2 over TCP, HTTP, ICMP); build it with `--no-default-features` (no other app features)"
);

use linklab_mac::{Inline, RxQueue};
#[cfg(doc)]
use linklab_perf::apps::DeviceApps;

use memory::QUEUE_BYTES;

/// The RX queue: the board's NIC interrupt owns its producer (`RX_QUEUE.producer()`),
/// [`run`] its consumer.
pub static RX_QUEUE: RxQueue<Inline<QUEUE_BYTES>> = RxQueue::new();

/// Work done in the NIC's interrupt handler, in the unit of [`Board::work_counter`]
/// (instructions where the CPU counts them, else nanoseconds awake), wrapping: the board's
/// handler adds what each run took, so `/stats` can say what the driver's RX costs.
pub static ISR_WORK: AtomicU32 = AtomicU32::new(0);

/// True when the NIC's interrupt has committed frames the main loop has not read yet. A
/// board's `sleep_until` checks it with interrupts masked, right before WFI: a frame committed
/// after the main loop's last poll must not wait for the next interrupt.
pub fn work_pending() -> bool {
    #[cfg(feature = "serial")]
    if !serial::SERIAL_RX.is_empty() {
        return true;
    }
    RX_QUEUE.occupancy() > 0
}

/// Where a panic happened, for a board's `#[panic_handler]` to print: `None` in the minimal
/// and compact images. Printing the place keeps every panic site's file name and line in flash, and the
/// message machinery behind them: 5.3 KB of mps2-an385's minimal image (`llvm-size`, with and
/// without). The minimal image, sized for flash, says only that it panicked.
pub fn panic_location<'a>(
    info: &'a core::panic::PanicInfo<'_>,
) -> Option<&'a core::panic::Location<'a>> {
    if cfg!(any(feature = "minimal", feature = "compact")) {
        None
    } else {
        info.location()
    }
}

/// Adds one interrupt handler run's work to [`ISR_WORK`].
pub fn add_isr_work(work: u64) {
    ISR_WORK.fetch_add(work as u32, Ordering::Relaxed);
}
