//! linklab's firmware on emulated MCUs: the boards and their images, the QEMU process, the
//! namespace lab, the measuring verbs and the soft-PHY line — what `linklab emu` runs, as a
//! library the CLI, `linklab track` and the lwIP side-by-side bench share.
//!
//! - [`board`] (with [`phy10_boards`]): the table of boards and their images, which every
//!   verb looks its image up in; [`image`] chooses an image and finds or builds it; [`elf`]
//!   reads its flash, RAM and function symbols.
//! - [`qemu`]: one QEMU process and its console; [`lab`]: an image booted in a network
//!   namespace of its own, free-running, at a fixed instruction rate, or counted by our TCG
//!   plugin ([`counted`]); [`transfer`]: how every verb moves data and reads the device's
//!   clock.
//! - [`boot`]: an image on a TAP, served until a signal (`linklab emu BOARD ...`).
//! - The measuring verbs, each a function from its options to its document
//!   (`linklab_results::emu`): [`cost`], [`parts`], [`throughput`], [`predict`], [`blast`],
//!   [`phy10`], [`chips`].
//! - [`line`](mod@line): the soft 10BASE-T line between a TAP and a device that decodes line samples;
//!   [`pin_line`]: that line for a device emulator of another kind (`linklab emu line`).
//! - [`pin_board`] and [`pin_boot`]: the RP2040 board examples at the pin level in rp2040js
//!   (`linklab emu pico`, `linklab emu w5500-evb-pico`), their table and their boot;
//!   [`pin_throughput`]: their `throughput` document, in the chip's clock.
//!
//! Counting what an image costs per byte received, as `linklab emu cost` does (as root, with
//! QEMU and the stock tools installed):
//!
//! ```no_run
//! use linklab_emu::board::Board;
//! use linklab_emu::cost::{self, CostOptions};
//! use linklab_emu::image::ImageChoice;
//!
//! let options = CostOptions {
//!     image: ImageChoice {
//!         board: Board::by_name("mps2-an385").map_err(anyhow::Error::msg)?,
//!         image: Some("minimal".into()),
//!         elf: None,
//!     },
//!     line: Default::default(),
//!     iperf2: false,
//! };
//! let report = cost::run(&options)?;
//! println!("{} instructions per byte received", report.rx_instr_per_byte);
//! # Ok::<(), anyhow::Error>(())
//! ```

mod bad_checksums;
pub mod blast;
pub mod blob;
pub mod board;
pub mod boot;
pub mod chips;
pub mod cost;
pub mod counted;
mod defmt;
pub mod elf;
pub mod image;
pub mod lab;
pub mod line;
pub mod parts;
pub mod phy10;
pub mod phy10_boards;
pub mod pin_board;
pub mod pin_boot;
pub mod pin_line;
pub mod pin_spi;
pub mod pin_throughput;
pub mod predict;
pub mod qemu;
pub mod scratch;
mod stop;
pub mod throughput;
pub mod transfer;
pub mod usb_port;
