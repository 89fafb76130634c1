//! linklab firmware for QEMU's mps2-an385, serial image: the same board code as the NIC
//! image (image.rs), built with feature `serial`: no NIC, the network is linklab-serial's
//! reliable link on CMSDK UART1 (0x4000_5000, receive interrupt NVIC 2), with smoltcp and the
//! device apps over it. `linklab emu mps2-an385 --image serial` boots it.
#![no_std]
#![no_main]

include!("image.rs");
