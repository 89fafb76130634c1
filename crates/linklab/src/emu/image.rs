//! Finding (building) a board's firmware image, and its flash and RAM figures from the ELF's
//! section headers.

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use super::board::{Board, Flavour, Profile};

/// The firmware workspace: `$LINKLAB_FIRMWARE_DIR`, else `firmware/` of the source tree this
/// binary was built from.
pub fn firmware_dir() -> PathBuf {
    match std::env::var_os("LINKLAB_FIRMWARE_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../firmware"),
    }
}

/// Which of a board's images.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Image {
    /// The main loop over the board's NIC (the package's own binary).
    Main,
    /// `--serial` ([`super::board::Images::serial`]).
    Serial,
    /// `--embassy` ([`super::board::Images::embassy`]).
    Embassy,
    /// `--phy10-line` ([`super::board::Images::soft_phy`]).
    SoftPhy,
    /// `--image minimal` ([`super::board::Images::minimal`]).
    Minimal,
    /// `--image compact` ([`super::board::Images::compact`]).
    Compact,
}

impl Image {
    /// True for the images without `/stats`, whose console prints the work counters
    /// (`--cost` reads them there).
    pub fn console_work(self) -> bool {
        matches!(self, Image::Minimal | Image::Compact)
    }
}

/// `--image`'s value as one of the board's named images (`minimal`, `compact`: Some), or an ELF
/// file (None; a file named like an image is given with a path, e.g. `./minimal`). A name
/// the board has no image for is one line naming the boards that have it.
pub fn named(board: &Board, value: Option<&Path>) -> anyhow::Result<Option<Image>> {
    let Some(name) = value.and_then(Path::to_str) else {
        return Ok(None);
    };
    let (kind, of): (Image, fn(&Board) -> bool) = match name {
        "minimal" => (Image::Minimal, |b| b.images.minimal.is_some()),
        "compact" => (Image::Compact, |b| b.images.compact.is_some()),
        _ => return Ok(None),
    };
    if !of(board) {
        let with: Vec<&str> = super::board::BOARDS
            .iter()
            .filter(|b| of(b))
            .map(|b| b.name)
            .collect();
        bail!(
            "--image {name}: {} has no {name} image ({} {} one)",
            board.name,
            with.join(", "),
            if with.len() == 1 { "has" } else { "have" }
        );
    }
    Ok(Some(kind))
}

/// The `kind` image of `board`: `image` if given, else built (cargo is a no-op when it is up
/// to date) from the firmware workspace. A board without that image is one line naming it.
pub fn find_or_build(board: &Board, kind: Image, image: Option<&Path>) -> anyhow::Result<PathBuf> {
    let flavour =
        match kind {
            Image::Main => None,
            Image::Serial => Some(board.images.serial.with_context(|| {
                format!(
                    "--serial: {} has no serial image (QEMU's machine has one UART, the console)",
                    board.name
                )
            })?),
            Image::Embassy => Some(
                board
                    .images
                    .embassy
                    .with_context(|| format!("--embassy: {} has no embassy image", board.name))?,
            ),
            Image::SoftPhy => Some(board.images.soft_phy.with_context(|| {
                let with: Vec<&str> = super::board::BOARDS
                    .iter()
                    .filter(|b| b.images.soft_phy.is_some())
                    .map(|b| b.name)
                    .collect();
                format!(
                    "--phy10-line: {} has no soft-PHY image ({} has one)",
                    board.name,
                    with.join(", ")
                )
            })?),
            Image::Minimal => Some(board.images.minimal.with_context(|| {
                format!("--image minimal: {} has no minimal image", board.name)
            })?),
            Image::Compact => Some(board.images.compact.with_context(|| {
                format!("--image compact: {} has no compact image", board.name)
            })?),
        };
    build(board, image, flavour)
}

/// Finds or builds the NIC image, or with `flavour` another one.
fn build(board: &Board, image: Option<&Path>, flavour: Option<Flavour>) -> anyhow::Result<PathBuf> {
    let bin = flavour.map(|f| f.bin);
    let profile = flavour.map_or(Profile::Release, |f| f.profile).name();
    if let Some(path) = image {
        if !path.is_file() {
            bail!("--image: {} is not a file", path.display());
        }
        return Ok(path.to_path_buf());
    }
    let dir = firmware_dir();
    let built = dir
        .join("target")
        .join(board.target)
        .join(profile)
        .join(bin.unwrap_or(board.package));
    if !dir.join("Cargo.toml").is_file() {
        if built.is_file() {
            return Ok(built);
        }
        bail!(
            "no firmware sources at {} and no --image: set LINKLAB_FIRMWARE_DIR to linklab's firmware/ folder",
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
    let mut cargo = Command::new("cargo");
    cargo.current_dir(&dir).args([
        "build",
        "--profile",
        profile,
        "-q",
        "-p",
        board.package,
        "--target",
        board.target,
    ]);
    if let Some(f) = flavour {
        if !f.default_features {
            cargo.arg("--no-default-features");
        }
        cargo.args(["--features", f.feature, "--bin", f.bin]);
    }
    let out = cargo
        .output()
        .context("cannot run cargo to build the firmware image")?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let first = err
            .lines()
            .find(|l| l.starts_with("error"))
            .unwrap_or("cargo build failed");
        bail!("building the {} image failed: {first}", board.name);
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
    fn a_board_without_an_image_is_one_line() {
        let mut board = super::super::board::BOARDS[0];
        board.images.embassy = None;
        let e = find_or_build(&board, Image::Embassy, None)
            .unwrap_err()
            .to_string();
        assert_eq!(e, "--embassy: mps2-an385 has no embassy image");
        let e = find_or_build(&board, Image::SoftPhy, None)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--phy10-line: mps2-an385 has no soft-PHY image (riscv32-virt has one)"
        );
        let riscv = super::super::board::BOARDS[1];
        let e = named(&riscv, Some(Path::new("compact")))
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "--image compact: riscv32-virt has no compact image (mps2-an385 has one)"
        );
        assert_eq!(
            named(&riscv, Some(Path::new("minimal"))).unwrap(),
            Some(Image::Minimal)
        );
        assert_eq!(named(&riscv, Some(Path::new("./compact"))).unwrap(), None);
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
