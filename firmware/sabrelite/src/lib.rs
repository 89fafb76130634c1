//! Bring-up of QEMU's sabrelite (Boundary Devices' SABRE Lite: an i.MX6 Quad, of which the
//! images use one Cortex-A9), shared by the images that run on it: the MMU with caches on
//! and one non-cacheable section for what the ENET's DMA writes ([`init`]), the UART1
//! console ([`uart`]), the global timer for time and sleep deadlines ([`TIMER`]), the GIC
//! ([`GIC`]), the ENET through linklab-imx-enet ([`nic`]), and the board's services for
//! linklab-firmware ([`Sabrelite`]). The reset entry, the vectors, the timer's and the GIC's
//! registers are every Cortex-A9's: linklab-cortex-a9.
//!
//! Interrupts are taken: the ENET's receive interrupt moves frames into the RX queue as on
//! the other boards over linklab's own drivers; the timer's interrupt ends a sleep.
#![no_std]

pub mod nic;
pub mod uart;

use linklab_cortex_a9::gic::{Gic, SPURIOUS};
use linklab_cortex_a9::gtimer::{self, GlobalTimer};
use linklab_cortex_a9::mmu::{self, Kind, Region};
use linklab_firmware::Board;

pub use linklab_cortex_a9::halt;

// The embassy image's critical section (IRQs masked on the one core): aarch32-cpu's.
#[cfg(feature = "embassy")]
use aarch32_cpu as _;

/// Where `linklab emu` puts the configuration blob (the last 256 bytes of RAM in
/// `sabrelite.x`).
pub const CONFIG_ADDR: usize = 0x10EF_FF00;
/// The Cortex-A9 MPCore's private region (GIC, timers) on the i.MX6.
pub const PERIPHBASE: usize = 0x00A0_0000;
/// The global timer: time and sleep deadlines.
pub const TIMER: GlobalTimer = GlobalTimer::at(PERIPHBASE);
/// The GIC.
pub const GIC: Gic = Gic::at(PERIPHBASE);

/// The memory the images use: 15 MiB of code, data and stack, cached; the section of what
/// the ENET's DMA writes, not cached (sabrelite.x). Everything else is device memory.
const MAP: [Region; 2] = [
    Region {
        start: 0x1000_0000,
        mib: 15,
        kind: Kind::Cached,
    },
    Region {
        start: 0x10F0_0000,
        mib: 1,
        kind: Kind::Uncached,
    },
];

extern "C" {
    /// End of the statics plus the exception stacks: the lowest the stack may reach.
    static _stack_limit: u8;
    /// The initial stack pointer.
    static _stack_top: u8;
}

/// The console, fault and panic lines on it, the MMU and caches, the timer, the GIC, and
/// `irq` as the handler of every interrupt (IRQs stay masked until the image unmasks them).
pub fn init(irq: fn()) {
    uart::init();
    linklab_cortex_a9::set_console(uart::write);
    mmu::enable(&MAP);
    TIMER.init();
    GIC.init();
    linklab_cortex_a9::set_irq_handler(irq);
    GIC.enable(gtimer::IRQ);
}

/// Acknowledges every interrupt the GIC signals, hands each ID to `serve`, ends it.
pub fn serve_interrupts(mut serve: impl FnMut(u32)) {
    loop {
        let id = GIC.acknowledge();
        if id == SPURIOUS {
            return;
        }
        serve(id);
        GIC.end(id);
    }
}

/// The lowest address the stack may reach.
pub fn stack_limit() -> usize {
    core::ptr::addr_of!(_stack_limit) as usize
}

/// Where the stack starts.
pub fn stack_top() -> usize {
    core::ptr::addr_of!(_stack_top) as usize
}

/// Nanoseconds since boot (for `fn` fields).
pub fn now_ns() -> u64 {
    TIMER.now_ns()
}

/// The board's services for the main loop.
pub struct Sabrelite;

impl Board for Sabrelite {
    const NAME: &'static str = "sabrelite";

    fn now_ns(&mut self) -> u64 {
        TIMER.now_ns()
    }

    fn sleep_until(&mut self, deadline_ns: Option<u64>) {
        linklab_cortex_a9::disable_irqs();
        match deadline_ns {
            Some(d) => TIMER.arm_at_ns(d),
            None => TIMER.disarm(),
        }
        // With IRQs masked a signalled interrupt still ends WFI, and is taken right after.
        let due = deadline_ns.is_some_and(|d| TIMER.now_ns() >= d);
        if !(due || GIC.pending() || linklab_firmware::work_pending()) {
            linklab_cortex_a9::wfi();
        }
        linklab_cortex_a9::enable_irqs();
    }

    fn console(&mut self, text: &str) {
        uart::write(text);
    }

    fn instructions(&mut self) -> Option<u64> {
        None
    }

    fn link_up(&mut self) -> bool {
        nic::link_up()
    }

    fn stack_limit(&self) -> usize {
        stack_limit()
    }

    fn stack_top(&self) -> Option<usize> {
        Some(stack_top())
    }
}
