//! The emulated boards `linklab emu` knows, one entry each: the QEMU machine, the Rust target
//! and package of its firmware, its images, its NIC and its console.

/// One emulated board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Board {
    /// The name users type (`--board`), also the firmware crate's folder under `firmware/`.
    pub name: &'static str,
    /// The firmware package (cargo `-p`); its binary of the same name is the main-loop image.
    pub package: &'static str,
    /// The Rust target the images are built for.
    pub target: &'static str,
    /// The QEMU binary.
    pub qemu: &'static str,
    /// The Debian package that ships it.
    pub qemu_package: &'static str,
    /// Machine and CPU options.
    pub machine: &'static [&'static str],
    /// Where the configuration blob goes (the last 256 bytes of the image's RAM region).
    pub config_addr: u64,
    /// The instruction set, for reports.
    pub isa: &'static str,
    /// The NIC and how QEMU attaches it to a network backend.
    pub nic: Nic,
    /// The console: the UART QEMU's first `-serial` carries, for reports.
    pub console: &'static str,
    /// The images besides the main-loop one.
    pub images: Images,
}

/// How QEMU attaches a board's NIC to a network backend (`tap,...` or `stream,...`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Nic {
    /// The machine's own NIC (its first one), given a backend with `-nic BACKEND,model=M`.
    OnBoard {
        /// QEMU's model name.
        model: &'static str,
    },
    /// A device on the machine's bus: `-netdev BACKEND,id=n0 -device DEVICE,netdev=n0`, after
    /// `-global` options for it.
    Device {
        /// QEMU's device name.
        device: &'static str,
        /// `-global` options (e.g. the virtio-mmio transport's version).
        globals: &'static [&'static str],
    },
}

impl Nic {
    /// QEMU's options for this NIC on the network backend `backend` (e.g.
    /// `tap,ifname=t0,script=no,downscript=no`).
    pub fn args(&self, backend: &str) -> Vec<String> {
        match self {
            Nic::OnBoard { model } => vec!["-nic".into(), format!("{backend},model={model}")],
            Nic::Device { device, globals } => {
                let mut v = Vec::new();
                for g in *globals {
                    v.push("-global".into());
                    v.push(g.to_string());
                }
                v.extend([
                    "-netdev".into(),
                    format!("{backend},id=n0"),
                    "-device".into(),
                    format!("{device},netdev=n0"),
                ]);
                v
            }
        }
    }
}

/// One more image of a board's package: a cargo feature and the binary it enables.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Flavour {
    /// The cargo feature (`--features`).
    pub feature: &'static str,
    /// The binary (`--bin`).
    pub bin: &'static str,
    /// Built with the package's default features (every app) besides `feature`; false for
    /// an image that leaves them out (`--no-default-features`).
    pub default_features: bool,
    /// The cargo profile it is built with.
    pub profile: Profile,
}

/// A cargo profile of the firmware workspace (firmware/Cargo.toml).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// `release`: every image but the minimal ones.
    Release,
    /// `minimal`: release with smoltcp optimised for size too, for the minimal and compact
    /// images.
    Minimal,
}

impl Profile {
    /// The name `cargo build --profile` takes, also the folder under `target/<triple>/`.
    pub fn name(self) -> &'static str {
        match self {
            Profile::Release => "release",
            Profile::Minimal => "minimal",
        }
    }
}

/// A board's images besides the main-loop one (None where the board has none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Images {
    /// The serial flavour (`--serial`): the network over linklab-serial's link on the board's
    /// second UART instead of the NIC; None where the machine has a single UART.
    pub serial: Option<Flavour>,
    /// The embassy image (`--embassy`): embassy-executor, embassy-net and linklab-perf's
    /// embassy apps, defmt on the console.
    pub embassy: Option<Flavour>,
    /// The soft-PHY image (`--phy10-line`): linklab-phy10 decodes line samples on the MCU.
    pub soft_phy: Option<Flavour>,
    /// The minimal image (`--image minimal`): the iperf3 TCP server alone (`-R`, one
    /// stream, the results exchange) and ICMP, without `/stats` (its console prints the work
    /// counters after each iperf3 test instead).
    pub minimal: Option<Flavour>,
    /// The compact image (`--image compact`): lwIP's feature set — the iperf3 TCP server both
    /// ways, the HTTP bench-file server, ICMP — without `/stats` (the console's work lines,
    /// as the minimal image).
    pub compact: Option<Flavour>,
}

/// Every board.
pub const BOARDS: [Board; 4] = [
    Board {
        name: "mps2-an385",
        package: "fw-mps2-an385",
        target: "thumbv7m-none-eabi",
        qemu: "qemu-system-arm",
        qemu_package: "qemu-system-arm",
        machine: &["-M", "mps2-an385"],
        config_addr: 0x203F_FF00,
        isa: "ARMv7-M (Cortex-M3)",
        nic: Nic::OnBoard { model: "lan9118" },
        console: "CMSDK UART0",
        images: Images {
            serial: Some(Flavour {
                feature: "serial",
                bin: "fw-mps2-an385-serial",
                default_features: true,
                profile: Profile::Release,
            }),
            embassy: Some(Flavour {
                feature: "embassy",
                bin: "fw-mps2-an385-embassy",
                default_features: true,
                profile: Profile::Release,
            }),
            soft_phy: None,
            minimal: Some(Flavour {
                feature: "minimal",
                bin: "fw-mps2-an385-minimal",
                default_features: false,
                profile: Profile::Minimal,
            }),
            compact: Some(Flavour {
                feature: "compact",
                bin: "fw-mps2-an385-compact",
                default_features: false,
                profile: Profile::Minimal,
            }),
        },
    },
    Board {
        name: "riscv32-virt",
        package: "fw-riscv32-virt",
        target: "riscv32imac-unknown-none-elf",
        qemu: "qemu-system-riscv32",
        qemu_package: "qemu-system-misc",
        machine: &["-M", "virt", "-bios", "none", "-m", "16M"],
        config_addr: 0x803F_FF00,
        isa: "riscv32imac",
        nic: Nic::Device {
            device: "virtio-net-device",
            globals: &["virtio-mmio.force-legacy=false"],
        },
        console: "NS16550 UART",
        images: Images {
            serial: None,
            embassy: Some(Flavour {
                feature: "embassy",
                bin: "fw-riscv32-virt-embassy",
                default_features: true,
                profile: Profile::Release,
            }),
            // The soft PHY's MAC checks the FCS itself: the feature brings linklab-mac's
            // fast FCS.
            soft_phy: Some(Flavour {
                feature: "soft-phy",
                bin: "fw-riscv32-virt-phy10-line",
                default_features: true,
                profile: Profile::Release,
            }),
            minimal: Some(Flavour {
                feature: "minimal",
                bin: "fw-riscv32-virt-minimal",
                default_features: false,
                profile: Profile::Minimal,
            }),
            compact: None,
        },
    },
    Board {
        name: "zynq7000",
        package: "fw-zynq7000",
        target: "armv7a-none-eabi",
        qemu: "qemu-system-arm",
        qemu_package: "qemu-system-arm",
        machine: &["-M", "xilinx-zynq-a9"],
        config_addr: 0x00FF_FF00,
        isa: "ARMv7-A (Cortex-A9)",
        nic: Nic::OnBoard {
            model: "cadence_gem",
        },
        console: "Cadence UART0",
        images: Images {
            serial: None,
            embassy: Some(Flavour {
                feature: "embassy",
                bin: "fw-zynq7000-embassy",
                default_features: true,
                profile: Profile::Release,
            }),
            soft_phy: None,
            minimal: Some(Flavour {
                feature: "minimal",
                bin: "fw-zynq7000-minimal",
                default_features: false,
                profile: Profile::Minimal,
            }),
            compact: None,
        },
    },
    // The i.MX6 FEC iperf study's board: one core of its i.MX6 Quad, the ENET (QEMU's
    // imx.enet, its PHY at MDIO address 6 as on the real board) through linklab-imx-enet.
    Board {
        name: "sabrelite",
        package: "fw-sabrelite",
        target: "armv7a-none-eabi",
        qemu: "qemu-system-arm",
        qemu_package: "qemu-system-arm",
        machine: &["-M", "sabrelite", "-smp", "1"],
        config_addr: 0x10EF_FF00,
        isa: "ARMv7-A (Cortex-A9)",
        // The SoC's own ENET takes the first NIC whatever the model says; named for the reader.
        nic: Nic::OnBoard { model: "imx.enet" },
        console: "i.MX UART1",
        images: Images {
            serial: None,
            embassy: Some(Flavour {
                feature: "embassy",
                bin: "fw-sabrelite-embassy",
                default_features: true,
                profile: Profile::Release,
            }),
            soft_phy: None,
            minimal: Some(Flavour {
                feature: "minimal",
                bin: "fw-sabrelite-minimal",
                default_features: false,
                profile: Profile::Minimal,
            }),
            compact: None,
        },
    },
];

impl Board {
    /// The board called `name`, or an error listing the known ones (a clap value parser).
    pub fn by_name(name: &str) -> Result<Board, String> {
        BOARDS
            .iter()
            .find(|b| b.name == name)
            .copied()
            .ok_or_else(|| {
                let known: Vec<&str> = BOARDS.iter().map(|b| b.name).collect();
                format!("unknown board; expected one of {}", known.join(", "))
            })
    }

    /// QEMU's options for the NIC on TAP `tap`.
    pub fn tap_args(&self, tap: &str) -> Vec<String> {
        self.nic
            .args(&format!("tap,ifname={tap},script=no,downscript=no"))
    }

    /// QEMU's options for the NIC on a `-netdev stream` unix socket QEMU connects to at
    /// `path` (each message a 4-byte big-endian length, then the bytes).
    pub fn stream_args(&self, path: &std::path::Path) -> Vec<String> {
        self.nic.args(&format!(
            "stream,server=off,addr.type=unix,addr.path={}",
            path.display()
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_board_names_the_known_ones() {
        let e = Board::by_name("esp32").unwrap_err();
        assert!(
            e.contains("mps2-an385")
                && e.contains("riscv32-virt")
                && e.contains("zynq7000")
                && e.contains("sabrelite"),
            "{e}"
        );
        assert_eq!(
            Board::by_name("riscv32-virt").unwrap().qemu,
            "qemu-system-riscv32"
        );
    }

    #[test]
    fn nic_options_are_the_ones_qemu_takes() {
        let mps2 = Board::by_name("mps2-an385").unwrap();
        assert_eq!(
            mps2.tap_args("t0"),
            [
                "-nic",
                "tap,ifname=t0,script=no,downscript=no,model=lan9118"
            ]
        );
        let virt = Board::by_name("riscv32-virt").unwrap();
        assert_eq!(
            virt.stream_args(std::path::Path::new("/tmp/s")),
            [
                "-global",
                "virtio-mmio.force-legacy=false",
                "-netdev",
                "stream,server=off,addr.type=unix,addr.path=/tmp/s,id=n0",
                "-device",
                "virtio-net-device,netdev=n0"
            ]
        );
        let zynq = Board::by_name("zynq7000").unwrap();
        assert_eq!(
            zynq.tap_args("t0")[1],
            "tap,ifname=t0,script=no,downscript=no,model=cadence_gem"
        );
    }
}
