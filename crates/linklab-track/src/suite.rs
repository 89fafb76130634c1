//! A suite file: what `linklab track run` measures (TOML; see docs/track.md).
//!
//! `[[image]]`: a firmware image booted on an emulated board, either one of linklab's own
//! (`image = "main"`, built from its firmware/ folder, or `elf = ...` of that image) or any
//! ELF (`elf = ...` alone: another stack's firmware, with its `address`, `mac` and `iperf`).
//! `[[device]]`: a live device at an address, measured by `linklab probe` with the options in
//! `args`. `[[sim]]`: `linklab bench` with the options in `args`. A top-level `build` names the
//! command that builds the tree (run by `track walk` in each commit's worktree). An unknown
//! key or a missing field is one line with its line number; a relative path is taken from
//! the suite file's folder.

use std::path::{Path, PathBuf};

use anyhow::Context;
use serde::Deserialize;
use toml::Spanned;

/// The figures an image entry can measure, and the ones it measures unless told.
pub const IMAGE_FIGURES: [&str; 5] = ["flash", "static_ram", "stack", "cost", "throughput"];
const DEFAULT_FIGURES: [&str; 4] = ["flash", "static_ram", "stack", "cost"];
/// The only address the counting lab serves a device at for now (host side: .1 of its /24).
pub const LAB_ADDRESS: &str = "198.18.9.2";
/// The board the counting lab boots (the counting plugin's QEMU machine).
pub const LAB_BOARD: &str = "mps2-an385";
/// QEMU's own default MAC, for an ELF the suite gives none for.
const QEMU_MAC: &str = "52:54:00:12:34:56";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSuite {
    build: Option<String>,
    #[serde(default)]
    image: Vec<Spanned<RawImage>>,
    #[serde(default)]
    device: Vec<Spanned<RawDevice>>,
    #[serde(default)]
    sim: Vec<Spanned<RawSim>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawDevice {
    name: String,
    address: String,
    #[serde(default)]
    args: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawImage {
    name: String,
    board: String,
    image: Option<String>,
    elf: Option<String>,
    address: Option<String>,
    mac: Option<String>,
    iperf: Option<IperfValue>,
    figures: Option<Vec<String>>,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum IperfValue {
    Version(i64),
    Word(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSim {
    name: String,
    #[serde(default)]
    args: Vec<String>,
}

/// How an image entry's bytes are moved and its instructions counted.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Target {
    /// One of linklab's images by name (`main`, `compact`, `minimal`), built unless `elf`
    /// gives that image's ELF.
    Linklab {
        /// The image's name on its board.
        image: String,
        /// That image's ELF, instead of building it.
        elf: Option<PathBuf>,
    },
    /// Any ELF serving iperf 2 the lwiperf way (TCP, both ways through `-r`, a console line
    /// `iperf-done:` after each test), at [`LAB_ADDRESS`] with `mac`.
    Foreign {
        /// The ELF.
        elf: PathBuf,
        /// Its NIC's MAC (QEMU loads it into the LAN9118).
        mac: String,
    },
}

/// One `[[image]]` entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageEntry {
    /// The entry's name (unique in the suite).
    pub name: String,
    /// The emulated board.
    pub board: String,
    /// What to boot.
    pub target: Target,
    /// Which of [`IMAGE_FIGURES`] to measure.
    pub figures: Vec<String>,
    /// The entry's line in the suite file.
    pub line: usize,
}

impl ImageEntry {
    /// Whether the entry measures `figure`.
    pub fn wants(&self, figure: &str) -> bool {
        self.figures.iter().any(|f| f == figure)
    }
}

/// One `[[device]]` entry: `linklab probe ADDRESS ARGS`, a live device's figures.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DeviceEntry {
    /// The entry's name (unique in the suite).
    pub name: String,
    /// The device's address (or host name), as probe takes it.
    pub address: String,
    /// `linklab probe`'s other options (not `--json` nor `--repeat`: track sets them).
    pub args: Vec<String>,
}

/// Options of probe that track sets itself for a `[[device]]`.
const PROBE_OPTIONS_TRACK_SETS: [&str; 2] = ["--json", "--repeat"];

/// One `[[sim]]` entry: `linklab bench ARGS`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SimEntry {
    /// The entry's name (unique in the suite).
    pub name: String,
    /// `linklab bench`'s options.
    pub args: Vec<String>,
}

/// A parsed suite.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Suite {
    /// The file it was read from.
    pub path: PathBuf,
    /// The command that builds the tree (for `track walk`), run from the tree's root.
    pub build: Option<String>,
    /// The images.
    pub images: Vec<ImageEntry>,
    /// The live devices.
    pub devices: Vec<DeviceEntry>,
    /// The simulator runs.
    pub sims: Vec<SimEntry>,
}

/// Reads and checks the suite file at `path`.
pub fn load(path: &Path) -> anyhow::Result<Suite> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("suite {}: cannot read", path.display()))?;
    parse(&text, path)
}

/// Parses suite text read from `path` (relative paths are taken from its folder): one line
/// `FILE:LINE: what is wrong` for the first error.
pub fn parse(text: &str, path: &Path) -> anyhow::Result<Suite> {
    let at = |offset: usize| format!("{}:{}", path.display(), line_of(text, offset));
    let raw: RawSuite = toml::from_str(text).map_err(|e| {
        let offset = e.span().map_or(0, |s| s.start);
        anyhow::anyhow!("{}: {}", at(offset), e.message().trim())
    })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let mut names: Vec<String> = Vec::new();
    let mut unique = |name: &str, offset: usize| {
        if names.iter().any(|n| n == name) {
            anyhow::bail!("{}: a second entry named {name:?}", at(offset));
        }
        if name.is_empty() {
            anyhow::bail!("{}: an entry's name is empty", at(offset));
        }
        names.push(name.into());
        Ok(())
    };
    let mut images = Vec::new();
    for spanned in &raw.image {
        let offset = spanned.span().start;
        let r = spanned.get_ref();
        unique(&r.name, offset)?;
        let entry = image_entry(r, dir, line_of(text, offset))
            .map_err(|why| anyhow::anyhow!("{}: [[image]] {:?}: {why}", at(offset), r.name))?;
        images.push(entry);
    }
    let mut devices = Vec::new();
    for spanned in &raw.device {
        let offset = spanned.span().start;
        let r = spanned.get_ref();
        unique(&r.name, offset)?;
        let entry = device_entry(r)
            .map_err(|why| anyhow::anyhow!("{}: [[device]] {:?}: {why}", at(offset), r.name))?;
        devices.push(entry);
    }
    let mut sims = Vec::new();
    for spanned in &raw.sim {
        let r = spanned.get_ref();
        unique(&r.name, spanned.span().start)?;
        sims.push(SimEntry {
            name: r.name.clone(),
            args: r.args.clone(),
        });
    }
    if images.is_empty() && devices.is_empty() && sims.is_empty() {
        anyhow::bail!(
            "{}: no [[image]], [[device]] or [[sim]]: nothing to measure",
            at(0)
        );
    }
    Ok(Suite {
        path: path.to_path_buf(),
        build: raw.build,
        images,
        devices,
        sims,
    })
}

/// Checks one `[[image]]` table: the reason when it cannot be measured.
fn image_entry(r: &RawImage, dir: &Path, line: usize) -> Result<ImageEntry, String> {
    if r.board != LAB_BOARD {
        return Err(format!(
            "board {:?}: the counting lab boots {LAB_BOARD} only for now",
            r.board
        ));
    }
    if let Some(a) = &r.address {
        if a != LAB_ADDRESS {
            return Err(format!(
                "address {a:?}: the counting lab serves the device at {LAB_ADDRESS} only for now"
            ));
        }
    }
    if let Some(m) = &r.mac {
        linklab_results::values::mac_address(m).map_err(|e| format!("mac {m:?}: {e}"))?;
    }
    let iperf = match &r.iperf {
        None => None,
        Some(IperfValue::Version(n @ (2 | 3))) => Some(*n),
        Some(IperfValue::Word(w)) if w == "auto" => None,
        Some(IperfValue::Version(n)) => return Err(format!("iperf = {n}: 2, 3 or \"auto\"")),
        Some(IperfValue::Word(w)) => return Err(format!("iperf = {w:?}: 2, 3 or \"auto\"")),
    };
    let elf = r.elf.as_ref().map(|e| dir.join(e));
    let target = match (&r.image, elf) {
        (Some(image), elf) => {
            if r.mac.is_some() || r.address.is_some() || iperf.is_some() {
                return Err("one of linklab's images has its own address, mac and iperf".into());
            }
            Target::Linklab {
                image: image.clone(),
                elf,
            }
        }
        (None, Some(elf)) => {
            if iperf == Some(3) {
                return Err(
                    "iperf = 3 for an ELF that is not one of linklab's images: not measured yet (iperf = 2, the lwiperf way)"
                        .into(),
                );
            }
            Target::Foreign {
                elf,
                mac: r.mac.clone().unwrap_or_else(|| QEMU_MAC.into()),
            }
        }
        (None, None) => return Err("missing field `image` or `elf`".into()),
    };
    let figures = match &r.figures {
        None => DEFAULT_FIGURES.map(String::from).to_vec(),
        Some(list) => {
            if let Some(bad) = list.iter().find(|f| !IMAGE_FIGURES.contains(&f.as_str())) {
                return Err(format!(
                    "figures: unknown {bad:?} (one of {})",
                    IMAGE_FIGURES.join(", ")
                ));
            }
            list.clone()
        }
    };
    Ok(ImageEntry {
        name: r.name.clone(),
        board: r.board.clone(),
        target,
        figures,
        line,
    })
}

/// Checks one `[[device]]` table: the reason when it cannot be measured.
fn device_entry(r: &RawDevice) -> Result<DeviceEntry, String> {
    if r.address.trim().is_empty() {
        return Err("address is empty".into());
    }
    let set_by_track = r.args.iter().find(|a| {
        PROBE_OPTIONS_TRACK_SETS
            .iter()
            .any(|o| a.as_str() == *o || a.starts_with(&format!("{o}=")))
    });
    if let Some(a) = set_by_track {
        return Err(format!(
            "args: {a:?} is set by track (its JSON; --repeat comes from `track run --repeat`)"
        ));
    }
    Ok(DeviceEntry {
        name: r.name.clone(),
        address: r.address.clone(),
        args: r.args.clone(),
    })
}

/// The 1-based line of byte `offset` in `text`.
fn line_of(text: &str, offset: usize) -> usize {
    text.get(..offset.min(text.len()))
        .map_or(1, |s| s.matches('\n').count() + 1)
}
