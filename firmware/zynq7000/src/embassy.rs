//! The embassy image's glue on this board (feature `embassy`): defmt on the console
//! ([`logger`]), embassy-time on the global timer ([`time`]), and embassy-executor's raw
//! executor in a loop that measures its work and sleeps as the main loop does ([`executor`]).
//! The same jobs as linklab-firmware's embassy module does for the linklab-mac images, which
//! is built around linklab-mac's driver; here the driver is zynq7000-hal's.

pub mod executor;
pub mod logger;
pub mod time;
