//! An image under test in the counted lab: its ELF, what it speaks, how it gets its address;
//! and its boot on QEMU's mps2-an385 in a lab of its own (198.18.9.0/24: the lwIP peer's image
//! has 198.18.9.2 built in), counted by the plugin or at a fixed instruction rate.

use std::path::{Path, PathBuf};

use anyhow::Context;

use crate::board::Board;
use crate::lab::{Clock, Lab, LabBoot, Subnet, UpLine};
use crate::transfer::iperf3_report;
use serde_json::Value;

/// The device's address in the counted lab.
pub const DEVICE: &str = "198.18.9.2";
/// The board every counted image runs on.
const BOARD: &str = "mps2-an385";
/// Console lines the console's reader reads the counter at, as they arrive (lwiperf's end of
/// a test).
const MARKED_PREFIX: &str = "iperf-done:";

/// What the image under test speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Speaks {
    /// lwIP's peer image: lwiperf (iperf 2, port 5001), its console reports each test.
    Lwip,
    /// A linklab image: iperf3 (5201), or `iperf2` alone (5001: the compact image); `stats`
    /// if it serves `/stats` (else its console prints work lines with the stack's peak);
    /// `defmt` if its console is defmt frames (the embassy image: the lab waits for its
    /// ping alone).
    Linklab {
        /// It serves `/stats`.
        stats: bool,
        /// Its console is defmt frames.
        defmt: bool,
        /// It serves iperf 2 alone.
        iperf2: bool,
    },
}

impl Speaks {
    /// The console line that says the image is up.
    fn up_line(self) -> UpLine<'static> {
        match self {
            Speaks::Lwip => UpLine::Containing("lwip peer up"),
            Speaks::Linklab { defmt: false, .. } => UpLine::Containing("linklab firmware:"),
            Speaks::Linklab { defmt: true, .. } => UpLine::None,
        }
    }
}

/// How the image gets its address on the lab's link.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Address {
    /// A linklab image: the configuration blob (198.18.9.2/24) with this NIC address.
    Blob([u8; 6]),
    /// A peer image with 198.18.9.2 built in, which takes its NIC address from the NIC: QEMU
    /// gives it this one (`aa:bb:...`).
    BuiltIn(String),
}

/// One image to count.
#[derive(Clone, Debug)]
pub struct Image {
    /// Its ELF file.
    pub elf: PathBuf,
    /// What it speaks.
    pub speaks: Speaks,
    /// How it gets its address.
    pub address: Address,
}

/// Boots `image` in a new counted lab with `clock` (`marked`: the counter read at lwiperf's
/// report lines) and waits until it answers ping.
pub(super) fn boot(image: &Image, clock: Clock, ack_every_segment: bool) -> anyhow::Result<Lab> {
    let board = Board::by_name(BOARD).map_err(anyhow::Error::msg)?;
    let (config, nic_mac) = match &image.address {
        Address::Blob(mac) => (Some(Subnet::COUNTED.device_config(*mac)), None),
        Address::BuiltIn(mac) => (None, Some(mac.as_str())),
    };
    let counted = matches!(clock, Clock::Counted { .. });
    Lab::start(&LabBoot {
        board: &board,
        image: &image.elf,
        subnet: Subnet::COUNTED,
        config,
        nic_mac,
        clock,
        up_line: image.speaks.up_line(),
        marked_lines: counted.then_some(MARKED_PREFIX),
        ack_every_segment,
        monitor: image.speaks == Speaks::Lwip,
    })
    .with_context(|| format!("booting {}", image.elf.display()))
}

/// The path of the profile files of run `tag` in `dir`.
pub(super) fn profile_path(dir: &Path, tag: &str) -> PathBuf {
    dir.join(format!("{tag}.prof"))
}

/// Stock `iperf3 -c DEVICE -J` with `extra`, killed after `timeout` seconds; its report.
pub(super) fn iperf3(emu: &Lab, timeout: &str, extra: &[&str]) -> anyhow::Result<Value> {
    let mut argv = vec!["timeout", timeout, "iperf3", "-c", DEVICE, "-J"];
    argv.extend_from_slice(extra);
    let out = emu
        .command(&argv)
        .output()
        .context("cannot run iperf3 (Debian's iperf3 package)")?;
    iperf3_report(&out.stdout, &extra.join(" "))
}
