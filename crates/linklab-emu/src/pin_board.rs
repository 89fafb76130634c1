//! The boards that run at the pin level in rp2040js (emulators/rp2040js) rather than in QEMU:
//! linklab's RP2040 board examples, built as they are from `examples/boards/`, with what the
//! board has outside the chip modelled by the harness (the 10BASE-T line on the soft-PHY
//! example's pins; the W5500-EVB-Pico's W5500 on SPI0; the host's SPI master on the Pico's
//! pins; the Pico's USB port on a full-speed bus to a modelled Linux host, its cdc-acm or its
//! cdc_ncm). One table, board × image, as
//! [`crate::board`] is for QEMU; `linklab emu BOARD` boots both ([`crate::pin_boot`]).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};
use linklab_results::bail_usage;

/// One board of the pin-level harness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinBoard {
    /// The name users type.
    pub name: &'static str,
    /// What it is, in a few words.
    pub about: &'static str,
    /// The images, the default first.
    pub images: &'static [PinImage],
}

/// One image of a pin-level board: the example built with some features.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PinImage {
    /// The name users type (`--image NAME`).
    pub name: &'static str,
    /// What it runs, in a few words.
    pub about: &'static str,
    /// The example's folder under `examples/boards/` (also its package and binary): images of
    /// one board may be different examples (the Pico's soft PHY, its USB).
    pub example: &'static str,
    /// The harness's `--board`: what it models outside the chip for this image.
    pub harness_board: &'static str,
    /// Whether the example is built with the examples' profile's debug info (kept for a
    /// build the check makes that way, so it is found and not rebuilt).
    pub debug_info: bool,
    /// The example's cargo features (comma-separated; empty: its defaults).
    pub features: &'static str,
    /// What crosses between the harness and the TAP.
    pub carry: PinCarry,
}

/// What the harness and `linklab emu line` carry for an image.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PinCarry {
    /// Line samples on the soft PHY's pins, unpaced (the chip's clock is not real time), at
    /// this many samples per bit unless `--oversample` says otherwise.
    Samples {
        /// The default oversampling: what the image's RX decoder is made for.
        oversample: u8,
    },
    /// Whole frames to and from a modelled Ethernet chip (or the modelled host's network
    /// interface of a USB network device).
    Frames,
    /// SPI transfers: the harness's master model asks the host's end of linklab-serial's link
    /// (linklab-serve's SPI line) for each one ([`crate::pin_spi`]).
    Spi,
    /// The USB port: the harness models the bus and the host's cdc-acm, linklab makes the
    /// pseudo-terminal a program opens as /dev/ttyACM0 ([`crate::usb_port`]).
    Usb,
}

/// The pin-level boards.
pub static PIN_BOARDS: [PinBoard; 2] = [
    PinBoard {
        name: "pico",
        about: "Raspberry Pi Pico: RP2040 (two Cortex-M0+), the 10BASE-T soft PHY on GP2-GP4, an SPI device on GP16-GP21, or its own USB port",
        images: &[
            PinImage {
                name: "soft-phy",
                about: "the PHY on core 1 (PIO decodes the bits), embassy-net and the apps on core 0",
                example: "rp2040-soft-phy",
                harness_board: "rp2040-soft-phy",
                debug_info: true,
                features: "",
                carry: PinCarry::Samples { oversample: 8 },
            },
            PinImage {
                name: "soft-phy-one-core",
                about: "PHY (CPU decoder on 40 MHz samples) and stack on core 0, for comparison",
                example: "rp2040-soft-phy",
                harness_board: "rp2040-soft-phy",
                debug_info: true,
                features: "one-core,cpu-decoder",
                carry: PinCarry::Samples { oversample: 4 },
            },
            PinImage {
                name: "spi-link",
                about: "an SPI device (PIO and DMA) to the host's master: linklab-serial's link, embassy-net and the apps, 125 MHz",
                example: "rp2040-spi-link",
                harness_board: "pico-spi",
                debug_info: false,
                features: "",
                carry: PinCarry::Spi,
            },
            PinImage {
                name: "spi-link-240",
                about: "the same at clk_sys 240 MHz (CBA's link speed tests' clock)",
                example: "rp2040-spi-link",
                harness_board: "pico-spi",
                debug_info: false,
                features: "sys-240mhz",
                carry: PinCarry::Spi,
            },
            PinImage {
                name: "usb-serial",
                about: "its USB port as the network: CDC-ACM carrying linklab-serial, embassy-net and the apps",
                example: "rp2040-usb",
                harness_board: "pico-usb",
                debug_info: true,
                features: "",
                carry: PinCarry::Usb,
            },
            PinImage {
                name: "usb-serial-dbuf",
                about: "usb-serial with the example's own USB driver: both buffers of each bulk endpoint",
                example: "rp2040-usb",
                harness_board: "pico-usb",
                debug_info: true,
                features: "double-buffered",
                carry: PinCarry::Usb,
            },
            PinImage {
                name: "usb-echo",
                about: "a plain CDC-ACM echo on its USB port (raw bytes, CBA's USB test)",
                example: "rp2040-usb",
                harness_board: "pico-usb",
                debug_info: true,
                features: "echo",
                carry: PinCarry::Usb,
            },
            PinImage {
                name: "usb-ncm",
                about: "its USB port as a network interface: CDC-NCM (Linux's cdc_ncm binds it), embassy-net and the apps",
                example: "rp2040-usb",
                harness_board: "pico-usb-ncm",
                debug_info: true,
                features: "ncm",
                carry: PinCarry::Frames,
            },
            PinImage {
                name: "usb-ncm-dbuf",
                about: "usb-ncm with the example's own USB driver: both buffers of each bulk endpoint",
                example: "rp2040-usb",
                harness_board: "pico-usb-ncm",
                debug_info: true,
                features: "ncm,double-buffered",
                carry: PinCarry::Frames,
            },
            PinImage {
                name: "usb-serial-240mhz",
                about: "usb-serial with clk_sys at 240 MHz (CBA's overclocked run)",
                example: "rp2040-usb",
                harness_board: "pico-usb",
                debug_info: true,
                features: "sys-240mhz",
                carry: PinCarry::Usb,
            },
            PinImage {
                name: "usb-echo-240mhz",
                about: "usb-echo with clk_sys at 240 MHz",
                example: "rp2040-usb",
                harness_board: "pico-usb",
                debug_info: true,
                features: "echo,sys-240mhz",
                carry: PinCarry::Usb,
            },
        ],
    },
    PinBoard {
        name: "w5500-evb-pico",
        about: "WIZnet W5500-EVB-Pico: RP2040 and a W5500 (modelled) on SPI0 at 31.25 MHz",
        images: &[
            PinImage {
                name: "main",
                about: "the example as it is: embassy-net-wiznet, embassy-net and the apps",
                example: "w5500-evb-pico",
                harness_board: "w5500-evb-pico",
                debug_info: false,
                features: "",
                carry: PinCarry::Frames,
            },
            PinImage {
                name: "linklab",
                about: "linklab-w5500 through linklab-mac instead, SPI mode 3",
                example: "w5500-evb-pico",
                harness_board: "w5500-evb-pico",
                debug_info: false,
                features: "linklab-driver",
                carry: PinCarry::Frames,
            },
            PinImage {
                name: "linklab-62m",
                about: "the same with SPI at 62.5 MHz (clk_peri / 2, the PL022's fastest)",
                example: "w5500-evb-pico",
                harness_board: "w5500-evb-pico",
                debug_info: false,
                features: "linklab-driver,spi-62m5",
                carry: PinCarry::Frames,
            },
        ],
    },
];

impl PinBoard {
    /// The board called `name`, if the harness runs it.
    pub fn by_name(name: &str) -> Option<PinBoard> {
        PIN_BOARDS.iter().find(|b| b.name == name).copied()
    }

    /// The image called `name` (None: the default), or one usage line naming them.
    pub fn image(&self, name: Option<&str>) -> anyhow::Result<&'static PinImage> {
        let Some(name) = name else {
            return Ok(&self.images[0]);
        };
        match self.images.iter().find(|i| i.name == name) {
            Some(i) => Ok(i),
            None => {
                let names: Vec<_> = self.images.iter().map(|i| i.name).collect();
                bail_usage!(
                    "--image {name}: {}'s images are {}",
                    self.name,
                    names.join(", ")
                )
            }
        }
    }

    /// The cargo command that builds `image`, for the table.
    pub fn build_command(&self, image: &PinImage) -> String {
        let features = if image.features.is_empty() {
            String::new()
        } else {
            format!(" --features {}", image.features)
        };
        format!(
            "cd examples/boards/{} && cargo build --release{features}",
            image.example
        )
    }
}

/// The board examples' workspace: `$LINKLAB_EXAMPLES_DIR`, else `examples/boards/` of the
/// source tree this binary was built from.
pub fn examples_dir() -> PathBuf {
    match std::env::var_os("LINKLAB_EXAMPLES_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/boards"),
    }
}

/// The pin-level harness: `$LINKLAB_RP2040JS_DIR`, else `emulators/rp2040js/` of the source
/// tree this binary was built from.
pub fn harness_dir() -> PathBuf {
    match std::env::var_os("LINKLAB_RP2040JS_DIR") {
        Some(dir) => PathBuf::from(dir),
        None => Path::new(env!("CARGO_MANIFEST_DIR")).join("../../emulators/rp2040js"),
    }
}

/// Builds `image` (cargo finds it built when nothing changed) and copies the ELF
/// to a name of its own (`EXAMPLE-IMAGE` beside it): the images of one example share the
/// path cargo links to. See [`build_example`].
pub fn build(image: &PinImage) -> anyhow::Result<PathBuf> {
    build_example(image.example, image.features, image.name, image.debug_info)
}

/// Builds the board example `example` (a folder of `examples/boards/`) in release with
/// `features` (with its debug info or without), and copies the ELF to `EXAMPLE-VARIANT`
/// beside it, so variants built one after another do not overwrite each other. Holds an
/// exclusive lock on a file beside the ELFs from the build to the copy, so builds of other
/// images (another `linklab emu`, a test) wait.
pub fn build_example(
    example: &str,
    features: &str,
    variant: &str,
    debug_info: bool,
) -> anyhow::Result<PathBuf> {
    let release = examples_dir().join("target/thumbv6m-none-eabi/release");
    std::fs::create_dir_all(&release)
        .with_context(|| format!("cannot create {}", release.display()))?;
    let lock = std::fs::File::create(release.join(BUILD_LOCK))
        .with_context(|| format!("cannot create the build lock in {}", release.display()))?;
    lock.lock().context("cannot lock the examples' ELFs")?;
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let mut cmd = Command::new(cargo);
    cmd.args(["build", "--release"])
        .current_dir(examples_dir().join(example));
    let mut command = format!("cd examples/boards/{example} && cargo build --release");
    if !features.is_empty() {
        cmd.args(["--features", features]);
        command.push_str(&format!(" --features {features}"));
    }
    if !debug_info {
        cmd.env("CARGO_PROFILE_RELEASE_DEBUG", "0");
    }
    let status = cmd
        .status()
        .with_context(|| format!("cannot run cargo for examples/boards/{example}"))?;
    if !status.success() {
        bail!("examples/boards/{example}: `{command}` failed ({status})");
    }
    let built = release.join(example);
    let copy = release.join(format!("{example}-{variant}"));
    std::fs::copy(&built, &copy)
        .with_context(|| format!("cannot copy {} to {}", built.display(), copy.display()))?;
    Ok(std::fs::canonicalize(&copy).unwrap_or(copy))
}

/// The file beside the examples' ELFs that builds lock (see [`build`]).
pub const BUILD_LOCK: &str = "linklab-build.lock";

/// The pin-level boards' part of `linklab emu boards`.
pub fn table() -> String {
    let mut out = String::from(
        "\nAt the pin level in rp2040js (emulators/rp2040js), the board examples as they are:\n",
    );
    for b in &PIN_BOARDS {
        out.push_str(&format!("{}: {}\n", b.name, b.about));
        for i in b.images {
            out.push_str(&format!("  {:<18} {}\n", i.name, i.about));
            out.push_str(&format!("  {:<18}   {}\n", "", b.build_command(i)));
        }
    }
    out.push_str(
        "(their address is built in: --ip 198.18.0.2/24; usb-ncm's TAP is the host's cdc_ncm interface; the other usb images have a USB port instead of a TAP: --pty PATH, then linklab serial --dev PATH; figures in the emulated chip's clock.)\n",
    );
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_board_has_a_default_image_and_unique_names() {
        for b in &PIN_BOARDS {
            assert_eq!(b.image(None).unwrap(), &b.images[0]);
            for i in b.images {
                assert_eq!(b.image(Some(i.name)).unwrap(), i);
            }
            for i in b.images {
                assert!(examples_dir().join(i.example).join("Cargo.toml").exists());
            }
        }
        assert!(PinBoard::by_name("pico").is_some());
        let e = PIN_BOARDS[0].image(Some("nope")).unwrap_err().to_string();
        assert!(
            e.contains("soft-phy, soft-phy-one-core, spi-link, spi-link-240, usb-serial"),
            "{e}"
        );
    }
}
