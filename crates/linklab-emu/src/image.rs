//! Finding (building) a board's firmware image, and its flash and RAM figures from the ELF's
//! section headers.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use super::board::{Attach, Board, ImageSpec, Iperf, Work};
use super::line::{LineArgs, LineOptions};
use linklab_results::bail_usage;

/// The firmware workspace: `$LINKLAB_FIRMWARE_DIR`, else `firmware/` of the source tree this
/// binary was built from.
pub fn firmware_dir() -> PathBuf {
    match std::env::var_os("LINKLAB_FIRMWARE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../firmware"),
    }
}

/// The board and image a measuring verb runs.
#[derive(clap::Args, Debug)]
pub struct ImageArgs {
    /// The emulated board, e.g. mps2-an385 (`linklab emu boards` lists them all).
    #[arg(value_name = "BOARD", value_parser = Board::by_name)]
    pub board: Board,
    /// The image: main (the default), embassy, soft-phy, minimal, or an ELF file.
    ///
    /// A name from the board's row of `linklab emu boards`; the image is built from
    /// linklab's firmware/ folder when needed. Any other value is an ELF file taken as the
    /// main image (a file named like an image is given with a path, e.g. `./minimal`).
    #[arg(long, value_name = "NAME|ELF")]
    pub image: Option<PathBuf>,
    /// With --image NAME: this ELF file of that image instead of building it.
    #[arg(long, value_name = "FILE", hide_short_help = true)]
    pub elf: Option<PathBuf>,
}

impl ImageArgs {
    /// The board (its QEMU installed) and the chosen image, which `verb` must accept
    /// (`accepts` says why not: one usage line).
    pub fn choose_for(
        &self,
        verb: &str,
        accepts: impl Fn(&ImageSpec) -> Result<(), String>,
    ) -> anyhow::Result<(Board, Chosen)> {
        let board = self.board;
        let chosen = choose(&board, self.image.as_deref(), self.elf.as_deref())?;
        if let Err(why) = accepts(chosen.spec) {
            bail_usage!("{verb}: {}'s {} image {why}", board.name, chosen.spec.name);
        }
        super::qemu::require(&board)?;
        Ok((board, chosen))
    }
}

/// What every measuring verb takes: the board and image, the soft-PHY line's options (with
/// `--image soft-phy`), and where to write the figures.
#[derive(clap::Args, Debug)]
pub struct Measure {
    /// The board and image.
    #[command(flatten)]
    pub target: ImageArgs,
    #[command(flatten)]
    line: LineOptions,
    /// Write the figures as JSON to FILE too.
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

/// The fixed instruction rate a verb runs the image at.
#[derive(clap::Args, Debug)]
pub struct FixedRate {
    /// The fixed rate: `-icount shift=N`, 1000 / 2^N MIPS (3: 125 MIPS), 0..=10.
    #[arg(long = "icount", value_name = "N", default_value_t = 3,
          value_parser = linklab_results::values::ranged(0u32, 10))]
    pub shift: u32,
}

/// A measuring verb's board and image, ready: the ELF built and the line's settings.
pub struct Prepared {
    /// The board.
    pub board: Board,
    /// The image's entry and given ELF.
    pub chosen: Chosen,
    /// The ELF to boot.
    pub image: PathBuf,
    /// The soft-PHY line's settings (a soft-PHY image only).
    pub line: Option<LineArgs>,
}

impl Measure {
    /// The board and image for `verb`, which must accept the image (see
    /// [`ImageArgs::choose_for`]), built, with its line's settings.
    pub fn prepare(
        &self,
        verb: &str,
        accepts: impl Fn(&ImageSpec) -> Result<(), String>,
    ) -> anyhow::Result<Prepared> {
        let (board, chosen) = self.target.choose_for(verb, accepts)?;
        let line = self
            .line
            .resolve(chosen.spec.attach == Attach::SoftPhyLine)?;
        let image = chosen.find_or_build(&board)?;
        Ok(Prepared {
            board,
            chosen,
            image,
            line,
        })
    }

    /// Prints the figures, and writes them to `--json FILE` if given.
    pub fn report(&self, result: &serde_json::Value) -> anyhow::Result<()> {
        super::report(result, self.json.as_deref())
    }
}

/// Accepts an image whose traffic stock iperf3 can measure: over the NIC or the soft-PHY
/// line, its work counted (`/stats` or the console).
pub fn carries_traffic(spec: &ImageSpec) -> Result<(), String> {
    match (spec.attach, spec.work) {
        (Attach::Nic | Attach::SoftPhyLine, Work::Stats | Work::Console) => Ok(()),
        (Attach::SerialPty, _) => {
            Err("has no NIC (its network is the serial link: linklab serial measures that)".into())
        }
        _ => Err(format!("has no network ({})", spec.about)),
    }
}

/// [`carries_traffic`], and serves iperf3 (which the measuring verbs move their bytes
/// with).
pub fn serves_iperf3(spec: &ImageSpec) -> Result<(), String> {
    carries_traffic(spec)?;
    if spec.iperf != Iperf::Iperf3 {
        return Err(
            "serves iperf 2 alone, no iperf3 (`linklab emu cost` counts it with iperf 2)".into(),
        );
    }
    Ok(())
}

/// A board's image as chosen on the command line: its entry in the table and, if given, its
/// ELF file (else it is built).
#[derive(Clone, Debug)]
pub struct Chosen {
    /// The image's entry.
    pub spec: &'static ImageSpec,
    /// The ELF file given for it (`--image ELF`, or `--elf` with `--image NAME`).
    pub elf: Option<PathBuf>,
}

/// `--image NAME|ELF` (None: `main`) and `--elf FILE` of `board`: a value without a `/` that
/// is not a file is a name from the board's table (one line naming who has it when the board
/// has none); any other value is an ELF file of the `main` image.
pub fn choose(board: &Board, image: Option<&Path>, elf: Option<&Path>) -> anyhow::Result<Chosen> {
    let name = image
        .and_then(Path::to_str)
        .filter(|v| !v.contains('/') && (is_image_name(v) || !Path::new(v).is_file()));
    let spec = match (image, name) {
        (None, _) => board.main_image(),
        (Some(_), Some(name)) => board.image(name)?,
        (Some(file), None) => {
            if elf.is_some() {
                bail_usage!("--elf: with --image NAME, not with an ELF file as --image");
            }
            return Ok(Chosen {
                spec: board.main_image(),
                elf: Some(file.to_path_buf()),
            });
        }
    };
    Ok(Chosen {
        spec,
        elf: elf.map(Path::to_path_buf),
    })
}

/// True when `v` names an image of some board (a file of that name in the working folder is
/// then given as `./NAME`).
fn is_image_name(v: &str) -> bool {
    super::board::BOARDS
        .iter()
        .any(|b| b.images.iter().any(|i| i.name == v))
}

impl Chosen {
    /// The ELF: the one given, else built (cargo is a no-op when it is up to date) from the
    /// firmware workspace.
    pub fn find_or_build(&self, board: &Board) -> anyhow::Result<PathBuf> {
        match &self.elf {
            Some(path) if !path.is_file() => bail!("--image: {} is not a file", path.display()),
            Some(path) => Ok(path.clone()),
            None => build(board, self.spec),
        }
    }
}

/// Builds `spec` of `board` (or finds it built, where there are no firmware sources).
fn build(board: &Board, spec: &ImageSpec) -> anyhow::Result<PathBuf> {
    let dir = firmware_dir();
    // Where cargo puts it: $CARGO_TARGET_DIR when set (from the firmware folder when
    // relative), else the workspace's own target/.
    let target =
        std::env::var_os("CARGO_TARGET_DIR").map_or_else(|| dir.join("target"), |t| dir.join(t));
    let built = target
        .join(board.target)
        .join(spec.profile.name())
        .join(spec.file_name(board));
    if !dir.join("Cargo.toml").is_file() {
        if built.is_file() {
            return Ok(built);
        }
        bail!(
            "no firmware sources at {} and no --image ELF: set LINKLAB_FIRMWARE_DIR to linklab's firmware/ folder",
            dir.display()
        );
    }
    let installed = Command::new("rustup")
        .args(["target", "list", "--installed"])
        .output();
    if let Ok(out) = installed {
        let list = String::from_utf8_lossy(&out.stdout);
        if out.status.success() && !list.lines().any(|l| l.trim() == board.target) {
            bail!(
                "the Rust target {t} is not installed: run `rustup target add {t}`",
                t = board.target
            );
        }
    }
    let out = Command::new("cargo")
        .current_dir(&dir)
        .args(spec.cargo_args(board))
        .arg("-q")
        .output()
        .context("cannot run cargo to build the firmware image")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| l.starts_with("error"))
            .unwrap_or("cargo build failed");
        bail!(
            "building {}'s {} image failed: {first}",
            board.name,
            spec.name
        );
    }
    Ok(built)
}

/// Flash and RAM an image takes, from its allocated sections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ImageSize {
    /// Bytes stored in flash: code, read-only data and the initial values of `.data`.
    pub flash_bytes: u64,
    /// Bytes of RAM taken by statics: `.data` and `.bss` (buffers included), no stack.
    pub static_ram_bytes: u64,
}

/// Reads the section headers of a 32-bit little-endian ELF file.
pub fn image_size(path: &Path) -> anyhow::Result<ImageSize> {
    let elf = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    elf_size(&elf).with_context(|| format!("{} is not a 32-bit little-endian ELF", path.display()))
}

fn elf_size(elf: &[u8]) -> Option<ImageSize> {
    const SHF_WRITE: u32 = 1;
    const SHF_ALLOC: u32 = 2;
    const SHT_NOBITS: u32 = 8;
    let u16_at = |o: usize| elf.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        elf.get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    if elf.get(..6)? != b"\x7fELF\x01\x01" {
        return None;
    }
    let shoff = u32_at(0x20)? as usize;
    let shentsize = u16_at(0x2E)? as usize;
    let shnum = u16_at(0x30)? as usize;
    if shentsize < 40 {
        return None;
    }
    let mut size = ImageSize::default();
    for i in 0..shnum {
        let h = shoff.checked_add(i.checked_mul(shentsize)?)?;
        let kind = u32_at(h + 4)?;
        let flags = u32_at(h + 8)?;
        let bytes = u64::from(u32_at(h + 20)?);
        if flags & SHF_ALLOC == 0 {
            continue;
        }
        if kind != SHT_NOBITS {
            size.flash_bytes += bytes;
        }
        if flags & SHF_WRITE != 0 {
            size.static_ram_bytes += bytes;
        }
    }
    Some(size)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_image_is_a_name_or_a_file() {
        let board = super::super::board::BOARDS[0];
        let main = choose(&board, None, None).unwrap();
        assert_eq!((main.spec.name, main.elf), ("main", None));
        let minimal = choose(&board, Some(Path::new("minimal")), None).unwrap();
        assert_eq!(minimal.spec.name, "minimal");
        let file = choose(&board, Some(Path::new("./minimal")), None).unwrap();
        assert_eq!(file.spec.name, "main");
        assert_eq!(file.elf.as_deref(), Some(Path::new("./minimal")));
        let e = choose(&board, Some(Path::new("soft-phy")), None).unwrap_err();
        assert!(
            e.to_string()
                .starts_with("--image soft-phy: mps2-an385 has no soft-phy image"),
            "{e}"
        );
        let given = choose(&board, Some(Path::new("embassy")), Some(Path::new("e.elf"))).unwrap();
        assert_eq!(given.spec.name, "embassy");
        assert_eq!(given.elf.as_deref(), Some(Path::new("e.elf")));
    }

    #[test]
    fn garbage_is_not_an_elf() {
        assert_eq!(elf_size(b""), None);
        assert_eq!(elf_size(b"\x7fELF\x01\x01\0\0"), None);
        let mut hdr = vec![0u8; 0x34];
        hdr[..6].copy_from_slice(b"\x7fELF\x01\x01");
        hdr[0x20..0x24].copy_from_slice(&u32::MAX.to_le_bytes());
        hdr[0x2E..0x30].copy_from_slice(&40u16.to_le_bytes());
        hdr[0x30..0x32].copy_from_slice(&5u16.to_le_bytes());
        assert_eq!(elf_size(&hdr), None);
    }
}
