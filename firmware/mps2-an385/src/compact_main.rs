//! linklab firmware for QEMU's mps2-an385, compact image: the same board code as the NIC
//! image (image.rs), built with linklab-firmware's feature `compact`: lwIP's feature set —
//! the iperf3 TCP server both ways (one stream, the results exchange), the HTTP bench-file
//! server on one socket, ICMP — sized by `memory::COMPACT`.
//! `linklab emu mps2-an385 --image compact` boots it.
#![no_std]
#![no_main]

include!("image.rs");
