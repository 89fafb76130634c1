//! A flat (virtual = physical) map of 1 MiB sections and the caches on, for a board that
//! brings no HAL of its own (sabrelite; zynq7000 uses zynq7000-hal's table): RAM normal
//! write-back cacheable, the DMA region normal non-cacheable (so the CPU and a NIC's DMA see
//! the same bytes without cache maintenance), everything else device memory, never executed.
//!
//! QEMU models no cache: what the caches do is seen only on silicon. The data cache is
//! invalidated by set/way before it is turned on (the A9 does not do it at reset).

use core::cell::UnsafeCell;

/// A region of the map: 1 MiB sections from `start` (1 MiB aligned).
#[derive(Clone, Copy)]
pub struct Region {
    /// First address (a multiple of 1 MiB).
    pub start: u32,
    /// Size in MiB.
    pub mib: u32,
    /// What the region is.
    pub kind: Kind,
}

/// How a region is mapped.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Normal memory, write-back write-allocate cacheable.
    Cached,
    /// Normal memory, not cacheable: what a DMA writes.
    Uncached,
}

/// Section descriptor: section type, full access (AP = 0b11), domain 0.
const SECTION: u32 = 0b10 | (0b11 << 10);
/// Normal memory, inner and outer write-back write-allocate (TEX 001, C, B).
const CACHED: u32 = (0b001 << 12) | (1 << 3) | (1 << 2);
/// Normal memory, not cacheable (TEX 001).
const UNCACHED: u32 = 0b001 << 12;
/// Shareable device (B), never executed (XN).
const DEVICE: u32 = (1 << 2) | (1 << 4);

/// The first-level table: 4096 sections, 16 KiB aligned as TTBR0 wants.
#[repr(C, align(16384))]
struct Table(UnsafeCell<[u32; 4096]>);

// SAFETY: written once by `enable`, before the MMU reads it, on one core.
unsafe impl Sync for Table {}

static TABLE: Table = Table(UnsafeCell::new([0; 4096]));

/// Builds the map (device memory but for `regions`), invalidates the TLBs, the caches and
/// the branch predictor, and turns on the MMU, the caches and branch prediction.
pub fn enable(regions: &[Region]) {
    // SAFETY: the MMU is off and nothing else reads the table yet.
    let table = unsafe { &mut *TABLE.0.get() };
    for (i, entry) in table.iter_mut().enumerate() {
        *entry = ((i as u32) << 20) | SECTION | DEVICE;
    }
    for r in regions {
        let attrs = match r.kind {
            Kind::Cached => CACHED,
            Kind::Uncached => UNCACHED,
        };
        for mib in (r.start >> 20)..(r.start >> 20) + r.mib {
            if let Some(entry) = table.get_mut(mib as usize) {
                *entry = (mib << 20) | SECTION | attrs;
            }
        }
    }
    invalidate_data_cache();
    let base = TABLE.0.get() as u32;
    // SAFETY: CP15 writes that set up and turn on translation over the table built above,
    // which maps every address the firmware uses to itself.
    unsafe {
        core::arch::asm!(
            "dsb",
            "mcr p15, 0, {zero}, c8, c7, 0",  // TLBIALL
            "mcr p15, 0, {zero}, c7, c5, 0",  // ICIALLU
            "mcr p15, 0, {zero}, c7, c5, 6",  // BPIALL
            "mcr p15, 0, {zero}, c2, c0, 2",  // TTBCR: TTBR0 for everything
            "mcr p15, 0, {base}, c2, c0, 0",  // TTBR0
            "mcr p15, 0, {clients}, c3, c0, 0", // DACR: every domain a client
            "dsb",
            "isb",
            "mrc p15, 0, {sctlr}, c1, c0, 0",
            "orr {sctlr}, {sctlr}, #0x1800",  // I (instruction cache), Z (branch prediction)
            "orr {sctlr}, {sctlr}, #0x5",     // C (data cache), M (MMU)
            "mcr p15, 0, {sctlr}, c1, c0, 0",
            "dsb",
            "isb",
            zero = in(reg) 0u32,
            base = in(reg) base,
            clients = in(reg) 0x5555_5555u32,
            sctlr = out(reg) _,
            options(nostack),
        );
    }
}

/// Invalidates the whole L1 data cache by set and way (the A9's: 4 ways of 32-byte lines;
/// the sets read from CCSIDR), without writing anything back.
fn invalidate_data_cache() {
    let ccsidr: u32;
    // SAFETY: selects the L1 data cache in CSSELR and reads its geometry.
    unsafe {
        core::arch::asm!(
            "mcr p15, 2, {zero}, c0, c0, 0",
            "isb",
            "mrc p15, 1, {ccsidr}, c0, c0, 0",
            zero = in(reg) 0u32,
            ccsidr = out(reg) ccsidr,
            options(nostack),
        );
    }
    let sets = ((ccsidr >> 13) & 0x7FFF) + 1;
    let ways = ((ccsidr >> 3) & 0x3FF) + 1;
    let line_shift = (ccsidr & 7) + 4;
    let way_shift = (ways.max(2) - 1).leading_zeros();
    for way in 0..ways {
        for set in 0..sets {
            let operand = (way << way_shift) | (set << line_shift);
            // SAFETY: DCISW on a set and way of the level 1 data cache.
            unsafe {
                core::arch::asm!("mcr p15, 0, {0}, c7, c6, 2", in(reg) operand, options(nostack))
            };
        }
    }
    // SAFETY: a barrier.
    unsafe { core::arch::asm!("dsb", options(nostack)) };
}
