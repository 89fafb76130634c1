//! linklab firmware for QEMU's riscv32-virt, minimal image: the same board code as the NIC image
//! (image.rs), built with linklab-firmware's feature `minimal`: the iperf3 TCP server alone
//! (`-R`, one stream, the results exchange) and ICMP, sized by `memory::MINIMAL`.
//! `linklab emu riscv32-virt --image minimal` boots it.
#![no_std]
#![no_main]

include!("image.rs");
