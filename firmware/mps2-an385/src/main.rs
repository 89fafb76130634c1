//! linklab firmware for QEMU's mps2-an385 (Arm's MPS2 FPGA board with the AN385 Cortex-M3
//! image): the LAN9118 at 0x4020_0000 (NVIC 13) as the NIC, CMSDK UART0 as console, CMSDK
//! timers for time. Everything past bring-up is `linklab_firmware::run`, the same main loop
//! and apps as every linklab device.
#![no_std]
#![no_main]

include!("image.rs");
