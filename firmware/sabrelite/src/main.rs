//! linklab firmware for QEMU's sabrelite (an i.MX6's Cortex-A9 and ENET): the ENET through
//! linklab-imx-enet, its receive interrupt filling linklab-mac's RX queue, under
//! `linklab_firmware::run`, the same main loop and apps as every linklab device. The
//! bring-up (MMU and caches, UART, global timer, GIC, ENET and PHY) is this package's
//! library.
#![no_std]
#![no_main]

include!("image.rs");
