//! The CLI's tests that boot firmware: images in QEMU (`linklab emu`, the footprint, the
//! measuring verbs, the lwIP peer, `track` on booted images) and the RP2040 board examples at
//! the pin level in rp2040js (node). Root, QEMU and the images `scripts/check` builds.
//!
//! One module per area (a former test file of its own), so a test keeps its name:
//! `cargo nextest run -E 'binary(emu) & test(/^MODULE::/)'` runs one area.

mod emu;
mod emu_blast;
mod emu_cli;
mod emu_measure;
mod emu_rp2040js;
mod emu_rp2040js_harness;
mod emu_rp2040js_two_cores;
mod emu_sabrelite;
mod emu_soft_phy;
mod emu_spi_link;
mod emu_usb;
mod emu_usb_figures;
mod emu_usb_ncm;
mod emu_w5500;
mod emu_w5500_linklab;
mod footprint;
mod hostile_emu;
mod iperf2_emu;
mod probe_lwip;
mod soft_phy_chips;
mod track_emu;
