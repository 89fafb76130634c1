//! An `[[image]]` entry measured: its ELF found (or built), flash and static RAM read from
//! its section headers, then booted `--repeat` times on QEMU's mps2-an385 with the counting
//! plugin for instructions per byte each way and the stack peak, and at a fixed rate for
//! throughput. The lab, the plugin, the ELF reader and the counting are linklab-emu's
//! `counted` lab, the one the lwIP side-by-side bench counts in, so the
//! figures `track` stores are counted the way that bench counts them — but for one thing:
//! the host acknowledges every segment the device sends (`quickack`), which the bench does
//! not ask for (its sent costs are lower and move more).

use std::path::Path;

use anyhow::{bail, Context};

use super::figure::{Better, EntryResult, Figure, Rule};
use super::stamp::sha256;
use super::suite::{ImageEntry, Target};
use linklab_emu::board::{Attach, Board, Iperf, Runtime, Work};
use linklab_emu::counted::image::{Address, Image, Speaks};
use linklab_emu::counted::measure::{self, Counting};
use linklab_emu::counted::{counter, throughput};
use linklab_emu::elf;
use tempfile::TempDir;

/// linklab's images' MAC in the lab (the side-by-side bench's).
const LINKLAB_MAC: [u8; 6] = [0x02, 0x4c, 0x4c, 0, 0, 0x02];

/// An image ready to boot: its ELF, how it is measured, its NIC; and its build profile
/// (`release`, `minimal`; `given` for an ELF named in the suite).
struct Bootable {
    image: Image,
    profile: String,
}

/// Measures `entry` with `repeat` samples per counted figure; a failure is the entry's
/// `failed` reason, never the run's end.
pub fn measure(entry: &ImageEntry, repeat: u32) -> EntryResult {
    let mut result = EntryResult::new(&entry.name, "image", &entry.board);
    if let Err(e) = measure_into(entry, repeat, &mut result) {
        result.failed = Some(format!("{e:#}"));
    }
    result
}

fn measure_into(entry: &ImageEntry, repeat: u32, result: &mut EntryResult) -> anyhow::Result<()> {
    let work = work_dir()?;
    let b = bootable(entry)?;
    result.elf = Some(b.image.elf.display().to_string());
    result.elf_sha256 = sha256(&b.image.elf);
    result.profile = Some(b.profile.clone());
    let size = elf::size(&b.image.elf)?;
    let exact =
        |name: &str, v: u64| Figure::new(name, "B", Better::Lower, Rule::Exact, vec![v as f64]);
    if entry.wants("flash") {
        result.figures.push(exact("flash_bytes", size.flash));
    }
    if entry.wants("static_ram") {
        result
            .figures
            .push(exact("static_ram_bytes", size.static_ram));
    }
    if entry.wants("cost") || entry.wants("stack") {
        count(entry, repeat, &b, &work, result)?;
    }
    if entry.wants("throughput") {
        let (mut rx, mut tx) = (Vec::new(), Vec::new());
        for _ in 0..repeat {
            let (r, t) = throughput::measure(&b.image)?;
            rx.push(r);
            tx.push(t);
        }
        let rate = |n: &str, s| Figure::new(n, "Mbit/s", Better::Higher, Rule::Rate, s);
        result.figures.push(rate("rx_mbit_s", rx));
        result.figures.push(rate("tx_mbit_s", tx));
    }
    Ok(())
}

/// `repeat` counted boots: instructions per byte received and sent, and the stack peak.
fn count(
    entry: &ImageEntry,
    repeat: u32,
    b: &Bootable,
    work: &TempDir,
    result: &mut EntryResult,
) -> anyhow::Result<()> {
    let counting = Counting {
        plugin: counter::build_plugin(work)?,
        profiles: None,
        // The host's delayed ACKs moved the sent cost up to 3.7 % from boot to boot; an ACK
        // per segment takes them out (docs/track.md, Noise).
        ack_every_segment: true,
    };
    let (mut rx, mut tx, mut stack) = (Vec::new(), Vec::new(), Vec::new());
    for round in 0..repeat {
        let tag = format!("c{round}");
        let counted = measure::count(&tag, &b.image, &counting)
            .with_context(|| format!("counting run {}", round + 1))?;
        rx.push(counted.receive.per_byte);
        tx.push(counted.send.per_byte);
        if let Ok(peak) = counted.stack_peak {
            stack.push(peak as f64);
        }
    }
    let per_byte = |n: &str, s| Figure::new(n, "instr/B", Better::Lower, Rule::Count, s);
    if entry.wants("cost") {
        result.figures.push(per_byte("rx_instr_per_byte", rx));
        result.figures.push(per_byte("tx_instr_per_byte", tx));
    }
    if entry.wants("stack") && !stack.is_empty() {
        let f = Figure::new("stack_peak_bytes", "B", Better::Lower, Rule::Count, stack);
        result.figures.push(f);
    }
    Ok(())
}

/// The ELF of `entry` and how to measure it (linklab's images built when not given).
fn bootable(entry: &ImageEntry) -> anyhow::Result<Bootable> {
    match &entry.target {
        Target::Foreign { elf, mac } => {
            if !elf.is_file() {
                bail!("{} is not a file", elf.display());
            }
            Ok(Bootable {
                image: Image {
                    elf: elf.clone(),
                    speaks: Speaks::Lwip,
                    address: Address::BuiltIn(mac.clone()),
                },
                profile: "given".into(),
            })
        }
        Target::Linklab { image, elf } => {
            let board = Board::by_name(&entry.board).map_err(anyhow::Error::msg)?;
            let chosen =
                linklab_emu::image::choose(&board, Some(Path::new(image)), elf.as_deref())?;
            let spec = chosen.spec;
            let counted = spec.attach == Attach::Nic
                && spec.runtime == Runtime::MainLoop
                && spec.work != Work::None;
            if !counted {
                bail!(
                    "{}'s {} image is not counted by track (a main-loop image on the NIC: main, minimal, compact)",
                    board.name,
                    spec.name
                );
            }
            let built = chosen.find_or_build(&board)?;
            Ok(Bootable {
                image: Image {
                    elf: built,
                    speaks: Speaks::Linklab {
                        stats: spec.work == Work::Stats,
                        defmt: false,
                        iperf2: spec.iperf == Iperf::Iperf2Tcp,
                    },
                    address: Address::Blob(LINKLAB_MAC),
                },
                profile: if elf.is_some() {
                    "given".into()
                } else {
                    spec.profile.name().into()
                },
            })
        }
    }
}

/// Nothing to remove: the plugin's folder goes with the measurement that made it.
pub fn clean_up() {}

/// Where track builds the counting plugin QEMU loads: a folder of its own, created anew and
/// private (mode 0700), removed when dropped.
fn work_dir() -> anyhow::Result<TempDir> {
    tempfile::Builder::new()
        .prefix("linklab-track-")
        .tempdir()
        .context("cannot create the counting plugin's folder")
}
