//! linklab firmware for QEMU's riscv32 `virt` machine (riscv32imac, the ESP32-C6's ISA):
//! virtio-net on virtio-mmio as the NIC, the NS16550 UART as console, the ACLINT timer
//! (10 MHz) for time, machine mode without an SBI (`-bios none`). Everything past bring-up is
//! `linklab_firmware::run`, the same main loop and apps as every linklab device. The
//! bring-up itself (entry, CSRs, UART, timer, PLIC, the NIC, the board's services) is this
//! package's library.
#![no_std]
#![no_main]

include!("image.rs");
