//! An `[[image]]` entry measured: its ELF found (or built), flash and static RAM read from
//! its section headers, then booted `--repeat` times on QEMU's mps2-an385 with the counting
//! plugin for instructions per byte each way and the stack peak, and at a fixed rate for
//! throughput. The lab, the plugin, the ELF reader and the counting are linklab-emu's
//! `counted` lab, the one the lwIP side-by-side bench counts in, so the
//! figures `track` stores are counted the way that bench counts them — but for one thing:
//! the host acknowledges every segment the device sends (`quickack`), which the bench does
//! not ask for (its sent costs are lower and move more).
//!
//! The plugin QEMU loads (QEMU runs as root) is kept in a
//! [`WorkFolder`]: made fresh by this process, mode 0700, so no other user can have made it
//! first or put anything in it.

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context};
use linklab_emu::board::{Attach, Board, Iperf, Runtime, Work};
use linklab_emu::counted::image::{Address, Image, Speaks};
use linklab_emu::counted::measure::{self, Counting};
use linklab_emu::counted::{counter, throughput};
use linklab_emu::elf;
use linklab_results::track::{Better, Figure, Rule};
use sha2::{Digest, Sha256};
use tempfile::TempDir;

use crate::run::EntryResult;
use crate::suite::{ImageEntry, Target};

/// linklab's images' MAC in the lab (the side-by-side bench's).
const LINKLAB_MAC: [u8; 6] = [0x02, 0x4c, 0x4c, 0, 0, 0x02];

/// An image ready to boot (its ELF, how it is measured, its address) and its build profile
/// (`release`, `minimal`; `given` for an ELF named in the suite).
struct Bootable {
    image: Image,
    profile: String,
}

/// A folder of this process's for the counting plugin and the configuration blob: made under
/// the temporary folder with a name no one could guess and mode 0700, refusing one that is
/// there already (tempfile: `mkdir` fails on an existing path), so what QEMU loads from it is
/// what this process put there. Removed with what it holds when dropped.
pub struct WorkFolder {
    dir: TempDir,
    plugin: Option<PathBuf>,
}

impl WorkFolder {
    /// Makes the folder (`linklab-track-` and a random suffix, under the temporary folder).
    pub fn new() -> anyhow::Result<WorkFolder> {
        let dir = tempfile::Builder::new()
            .prefix("linklab-track-")
            .permissions(std::fs::Permissions::from_mode(0o700))
            .tempdir()
            .context("cannot make a work folder under the temporary folder")?;
        Ok(WorkFolder { dir, plugin: None })
    }

    /// The folder.
    pub fn path(&self) -> &Path {
        self.dir.path()
    }

    /// The counting plugin, built into the folder the first time it is asked for.
    pub fn plugin(&mut self) -> anyhow::Result<PathBuf> {
        if let Some(lib) = &self.plugin {
            return Ok(lib.clone());
        }
        let lib = counter::build_plugin(&self.dir)?;
        self.plugin = Some(lib.clone());
        Ok(lib)
    }
}

/// Measures `entry` with `repeat` samples per counted figure, the plugin and the blob in
/// `work`; a failure is the entry's `failed` reason, never the run's end.
pub fn measure(entry: &ImageEntry, repeat: u32, work: &mut WorkFolder) -> EntryResult {
    let mut result = EntryResult::new(&entry.name, "image", &entry.board);
    if let Err(e) = measure_into(entry, repeat, work, &mut result) {
        result.failed = Some(format!("{e:#}"));
    }
    result
}

fn measure_into(
    entry: &ImageEntry,
    repeat: u32,
    work: &mut WorkFolder,
    result: &mut EntryResult,
) -> anyhow::Result<()> {
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
        count(entry, repeat, &b, work, result)?;
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
    work: &mut WorkFolder,
    result: &mut EntryResult,
) -> anyhow::Result<()> {
    let counting = Counting {
        plugin: work.plugin()?,
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

/// The SHA-256 of a file, in hex, or None when it cannot be read.
fn sha256(path: &Path) -> Option<String> {
    let bytes = std::fs::read(path).ok()?;
    Some(hex(&Sha256::digest(bytes)))
}

/// Bytes as lowercase hex.
fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::MetadataExt;

    use super::*;

    /// `nobody`'s user and group id.
    const NOBODY: u32 = 65534;

    /// Another user plants the folder track's counting plugin once went to, for this very
    /// process: `$TMPDIR/linklab-track-PID`, theirs, open to all, holding a `libinsncount.so`
    /// of theirs. Before, track made its work folder with `create_dir_all`, which takes a
    /// folder that is there already, and `build_plugin` found a plugin newer than its source
    /// there and returned it unbuilt: QEMU, run as root, would have loaded the planted
    /// library (the first assertion below would have failed). Now the work folder is one this
    /// process made, 0700, elsewhere; the plugin is the one gcc built in it; the planted folder
    /// and file are left as they were. Needs root (to plant as `nobody`) and gcc.
    #[test]
    fn a_folder_planted_where_the_plugin_once_went_is_not_used() {
        let planted = std::env::temp_dir().join(format!("linklab-track-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&planted);
        std::fs::create_dir(&planted).unwrap();
        let lib = planted.join("libinsncount.so");
        std::fs::write(&lib, "planted").unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).unwrap();
        for p in [&planted, &lib] {
            std::os::unix::fs::chown(p, Some(NOBODY), Some(NOBODY))
                .expect("planting as nobody needs root");
        }

        let mut work = WorkFolder::new().unwrap();
        let plugin = work.plugin().unwrap();
        assert!(!plugin.starts_with(&planted), "{}", plugin.display());
        assert!(plugin.starts_with(work.path()), "{}", plugin.display());
        let me = std::fs::metadata("/proc/self").unwrap().uid();
        let folder = std::fs::metadata(work.path()).unwrap();
        assert_eq!(folder.uid(), me);
        assert_eq!(folder.mode() & 0o777, 0o700);
        let built = std::fs::read(&plugin).unwrap();
        assert!(built.starts_with(b"\x7fELF"), "not what gcc builds");
        assert_eq!(work.plugin().unwrap(), plugin, "built once");

        let kept = work.path().to_path_buf();
        drop(work);
        assert!(!kept.exists(), "the work folder is removed");
        assert_eq!(std::fs::read(&lib).unwrap(), b"planted");
        assert_eq!(std::fs::metadata(&planted).unwrap().uid(), NOBODY);
        std::fs::remove_dir_all(&planted).unwrap();
    }

    #[test]
    fn sha256_as_sha256sum_prints_it() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("abc");
        std::fs::write(&f, "abc").unwrap();
        assert_eq!(
            sha256(&f).unwrap(),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        assert_eq!(sha256(&dir.path().join("missing")), None);
    }
}
