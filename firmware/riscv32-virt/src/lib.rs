//! Machine-mode bring-up of QEMU's riscv32 `virt` machine, shared by the images that run on it
//! (the linklab firmware in `main.rs`, and firmware/phy10-bench): the reset entry and trap
//! vector (`entry.S`: stack, `.bss`, `mtvec`, then `main_entry`), the hart's CSRs, the
//! NS16550 UART, the ACLINT timer and the PLIC; for the images that network, the NIC
//! (`nic`: virtio-net, its statics and interrupt) and the board's services (`board`).
//!
//! An image linking this crate defines `extern "C" fn main_entry() -> !` (called once after
//! reset) and `extern "C" fn trap_handler()` (called from the trap vector), and links with
//! this crate's `link.x`.
#![no_std]

pub mod board;
pub mod cpu;
#[cfg(feature = "embassy")]
mod critical_section_impl;
pub mod nic;
pub mod plic;
pub mod timer;
pub mod uart;

core::arch::global_asm!(include_str!("entry.S"));
