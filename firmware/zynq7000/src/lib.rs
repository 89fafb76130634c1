//! Bring-up of QEMU's xilinx-zynq-a9 (a Zynq-7000: Cortex-A9, the Cadence GEM), shared by the
//! images that run on it: the MMU and caches as zynq7000-hal sets them up plus one
//! non-cacheable section for the GEM's descriptor rings ([`init`]), the UART console
//! ([`uart`]), the global timer for time and sleep deadlines ([`TIMER`]), the GIC lines the
//! CPU wakes on ([`wake`]), the Marvell PHY QEMU models ([`phy`]), the GEM through
//! zynq7000-hal's driver ([`gem`]), and the board's services for linklab-firmware
//! ([`Zynq`]). The reset entry, the vectors, the timer's and the GIC's registers are every
//! Cortex-A9's: linklab-cortex-a9.
//!
//! No interrupt is ever taken: the CPU runs with IRQs masked and WFI wakes on any interrupt
//! the GIC signals, masked or not; the main loop then polls the driver, and [`wake::clear`]
//! drops the lines it woke on.
#![no_std]

#[cfg(feature = "embassy")]
pub mod embassy;
pub mod gem;
mod mpcore;
pub mod phy;
pub mod uart;
pub mod wake;

pub use linklab_cortex_a9::halt;
use linklab_firmware::Board;
pub use mpcore::{GIC, PERIPHBASE, TIMER};

/// Where `linklab emu` puts the configuration blob (the last 256 bytes of RAM in
/// `zynq7000.x`).
pub const CONFIG_ADDR: usize = 0x00FF_FF00;

/// The section (1 MiB, `.uncached` in `zynq7000.x`) mapped non-cacheable for the GEM's
/// descriptor rings, which the CPU and the GEM's DMA both write (zynq7000-hal: "declare an
/// array of this structure inside uncached memory").
pub const UNCACHED_SECTION: u32 = 0x0100_0000;

extern "C" {
    /// End of the statics plus the exception stacks: the lowest the stack may reach.
    static _stack_limit: u8;
    /// The initial stack pointer.
    static _stack_top: u8;
}

/// zynq7000-hal's common initialisation (its MMU table with caches on, the L2 cache, the
/// level shifters, the PL out of reset), without its GIC setup, which unmasks IRQs (this
/// firmware takes none: [`wake`]); then the descriptor section made non-cacheable.
pub fn init() -> zynq7000::Peripherals {
    let mut config = zynq7000_hal::Config::default();
    config.interrupt_config = None;
    let periphs = match zynq7000_hal::init(config) {
        Ok(p) => p,
        Err(_) => {
            uart::write("linklab firmware: zynq7000-hal init failed\n");
            halt();
        }
    };
    let uncached = aarch32_cpu::mmu::SectionAttributes {
        memory_attrs: aarch32_cpu::mmu::MemoryRegionAttributes::OuterAndInnerNonCacheable.as_raw(),
        ..zynq7000_hal::mmu::section_attrs::DDR
    };
    if zynq7000_hal::mmu::mmu_l1_table_mut()
        .update(UNCACHED_SECTION, uncached)
        .is_err()
    {
        uart::write("linklab firmware: the descriptor section is not 1 MiB aligned\n");
        halt();
    }
    periphs
}

/// Writes a panic to the console (where, but not in the minimal image:
/// [`linklab_firmware::panic_location`]) and halts.
pub fn report_panic(info: &core::panic::PanicInfo) -> ! {
    linklab_cortex_a9::report_panic(linklab_firmware::panic_location(info))
}

/// The board's services for the main loop.
pub struct Zynq {
    /// The PHY, for the link bit (None until the GEM is up).
    pub phy: Option<phy::Phy>,
}

impl Board for Zynq {
    const NAME: &'static str = "zynq7000";

    fn now_ns(&mut self) -> u64 {
        TIMER.now_ns()
    }

    fn sleep_until(&mut self, deadline_ns: Option<u64>) {
        // IRQs stay masked (CPSR.I): WFI wakes on a signalled interrupt all the same, and the
        // GEM's line stays up until its status is cleared below, so a frame that came in after
        // the main loop's last poll ends the WFI at once.
        match deadline_ns {
            Some(d) => TIMER.arm_at_ns(d),
            None => TIMER.disarm(),
        }
        let due = deadline_ns.is_some_and(|d| TIMER.now_ns() >= d);
        if !(due || GIC.pending()) {
            aarch32_cpu::asm::wfi();
        }
        // What an interrupt handler would do (the HAL's GEM handler, the GIC's acknowledge),
        // counted as the boards' handlers are: `/stats` cpu.work.isr.
        let start = TIMER.now_ns();
        wake::clear();
        linklab_firmware::add_isr_work(TIMER.now_ns() - start);
    }

    fn console(&mut self, text: &str) {
        uart::write(text);
    }

    fn instructions(&mut self) -> Option<u64> {
        None
    }

    fn link_up(&mut self) -> bool {
        self.phy.as_mut().is_some_and(|p| p.link_up())
    }

    fn stack_limit(&self) -> usize {
        core::ptr::addr_of!(_stack_limit) as usize
    }

    fn stack_top(&self) -> Option<usize> {
        Some(core::ptr::addr_of!(_stack_top) as usize)
    }
}
