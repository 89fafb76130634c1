//! The Cortex-A9 MPCore's private region on the Zynq-7000: its global timer and its GIC, which
//! the main loop's sleep, the wake-up sources ([`crate::wake`]) and the embassy image's time
//! driver share.

use linklab_cortex_a9::gic::Gic;
use linklab_cortex_a9::gtimer::GlobalTimer;

/// The Cortex-A9 MPCore's private region (GIC, timers) on the Zynq-7000.
pub const PERIPHBASE: usize = 0xF8F0_0000;
/// The global timer: time and sleep deadlines.
pub const TIMER: GlobalTimer = GlobalTimer::at(PERIPHBASE);
/// The GIC.
pub const GIC: Gic = Gic::at(PERIPHBASE);
