//! Choosing a board's firmware image (a name from its table, or an ELF file) and finding or
//! building it.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use super::board::{Attach, Board, ImageSpec, Iperf, Work};
use super::line::{LineOptions, LineSettings};
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
#[derive(Clone, Debug)]
pub struct ImageChoice {
    /// The emulated board.
    pub board: Board,
    /// The image: a name from the board's table, or an ELF file (None: `main`); see
    /// [`choose`].
    pub image: Option<PathBuf>,
    /// With an image name: this ELF file of that image instead of building it.
    pub elf: Option<PathBuf>,
}

impl ImageChoice {
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

    /// The board and image for `verb`, which must accept the image (see
    /// [`ImageChoice::choose_for`]), built, with the line's settings from `line` (a soft-PHY
    /// image only; line options for another image are one usage line).
    pub fn prepare(
        &self,
        verb: &str,
        line: &LineOptions,
        accepts: impl Fn(&ImageSpec) -> Result<(), String>,
    ) -> anyhow::Result<Prepared> {
        let (board, chosen) = self.choose_for(verb, accepts)?;
        let line = line.resolve(chosen.spec.attach == Attach::SoftPhyLine)?;
        let image = chosen.find_or_build(&board)?;
        Ok(Prepared {
            board,
            chosen,
            image,
            line,
        })
    }
}

/// A measuring verb's board and image, ready: the ELF built and the line's settings.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The board.
    pub board: Board,
    /// The image's entry and given ELF.
    pub chosen: Chosen,
    /// The ELF to boot.
    pub image: PathBuf,
    /// The soft-PHY line's settings (a soft-PHY image only).
    pub line: Option<LineSettings>,
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
}
