//! linklab firmware for QEMU's xilinx-zynq-a9 (a Zynq-7000's Cortex-A9 and Cadence GEM):
//! the GEM through zynq7000-hal's driver from crates.io, unmodified, as the smoltcp device of
//! `linklab_firmware::run_device`, the same main loop and apps as every linklab device. The
//! bring-up (entry, MMU and caches, UART, global timer, GIC, PHY, GEM) is this package's
//! library.
#![no_std]
#![no_main]

include!("image.rs");
