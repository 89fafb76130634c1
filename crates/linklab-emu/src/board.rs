//! The emulated boards `linklab emu` knows and their images: one table, board × image. A
//! board is one entry of [`BOARDS`] (the QEMU machine, the Rust target and package of its
//! firmware, its NIC and console, where its configuration goes) with its images (how each is
//! built, what its network is attached to, where its work counters are read, the simulator
//! profile counted from it). Every command looks its board and image up here; adding a board
//! is adding one entry.

use linklab_results::bail_usage;

/// One emulated board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Board {
    /// The name users type, also the firmware crate's folder under `firmware/`.
    pub name: &'static str,
    /// The firmware package (cargo `-p`); its binary of the same name is the `main` image.
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
    /// The NIC driver's sources (for a counted profile's fingerprint).
    pub driver_sources: &'static [&'static str],
    /// The images, `main` first.
    pub images: &'static [ImageSpec],
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
    /// `tap,ifname=t0,script=no,downscript=no`), with the MAC address `mac` if given (else
    /// QEMU's default).
    pub fn args(&self, backend: &str, mac: Option<&str>) -> Vec<String> {
        let mac = mac.map(|m| format!(",mac={m}")).unwrap_or_default();
        match self {
            Nic::OnBoard { model } => {
                vec!["-nic".into(), format!("{backend},model={model}{mac}")]
            }
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
                    format!("{device},netdev=n0{mac}"),
                ]);
                v
            }
        }
    }
}

/// One image of a board: what it is, how it is built, how it meets the network.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ImageSpec {
    /// The name users type (`--image NAME`).
    pub name: &'static str,
    /// What it runs, in a few words.
    pub about: &'static str,
    /// The package, when not the board's (a bench image of its own).
    pub package: Option<&'static str>,
    /// The binary (`--bin`); None: the package's own.
    pub bin: Option<&'static str>,
    /// The cargo feature that enables it (`--features`), if any.
    pub feature: Option<&'static str>,
    /// Built with the package's default features (every app) besides `feature`; false for an
    /// image that leaves them out (`--no-default-features`).
    pub default_features: bool,
    /// The cargo profile it is built with.
    pub profile: Profile,
    /// What its network is attached to.
    pub attach: Attach,
    /// Where its work counters are read.
    pub work: Work,
    /// How its apps run: the main loop or embassy's executor.
    pub runtime: Runtime,
    /// The iperf it serves.
    pub iperf: Iperf,
    /// It carries the packet blaster (`linklab emu blast`).
    pub blaster: bool,
    /// The simulator profile counted from it (`linklab emu parts`), if any.
    pub sim_profile: Option<&'static str>,
    /// Sources besides the firmware's, the MAC's, the apps' and the driver's that its counts
    /// measure (a counted profile's fingerprint).
    pub extra_sources: &'static [&'static str],
}

/// A cargo profile of the firmware workspace (firmware/Cargo.toml).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Profile {
    /// `release`: every image but the minimal ones.
    Release,
    /// `minimal`: release with smoltcp optimised for size too, for the minimal images.
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

/// What an image's network is attached to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Attach {
    /// The board's NIC, on a TAP QEMU creates.
    Nic,
    /// No NIC: linklab-serial's link on the board's second UART, which QEMU puts on a
    /// pseudo-terminal; `linklab emu` bridges it to the TAP.
    SerialPty,
    /// The NIC on a unix socket: `linklab emu` is the simulated 10BASE-T line between it and
    /// the TAP (linklab-phy10 decodes line samples on the MCU).
    SoftPhyLine,
    /// No network (a bench image that prints its figures on the console).
    None,
}

/// The iperf an image serves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Iperf {
    /// iperf3 (5201), and iperf 2 (5001) in the images with every app.
    Iperf3,
    /// iperf 2's TCP server alone (5001; one stream, `-R`), as lwIP's images: the compact
    /// image.
    Iperf2Tcp,
}

/// Where an image's work counters are read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Work {
    /// `GET /stats` (`cpu.work`, the MAC's counters, uptime).
    Stats,
    /// Its console's `linklab work: ...` line, at boot and after each iperf test (an image
    /// without `/stats`).
    Console,
    /// Nowhere.
    None,
}

/// How an image's apps run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Runtime {
    /// firmware/common's main loop over smoltcp.
    MainLoop,
    /// embassy-executor and embassy-net.
    Embassy,
}

impl ImageSpec {
    /// The main-loop image over the board's NIC: every app, `/stats`, the packet blaster.
    const fn main() -> ImageSpec {
        ImageSpec {
            name: "main",
            about: "the main loop over the NIC: iperf3, iperf 2, HTTP with /stats, echo, ICMP",
            package: None,
            bin: None,
            feature: None,
            default_features: true,
            profile: Profile::Release,
            attach: Attach::Nic,
            work: Work::Stats,
            runtime: Runtime::MainLoop,
            iperf: Iperf::Iperf3,
            blaster: true,
            sim_profile: None,
            extra_sources: &[],
        }
    }

    /// An image enabled by cargo feature `feature` with binary `bin`, otherwise as `main`.
    const fn flavour(name: &'static str, feature: &'static str, bin: &'static str) -> ImageSpec {
        ImageSpec {
            name,
            feature: Some(feature),
            bin: Some(bin),
            blaster: false,
            ..ImageSpec::main()
        }
    }

    /// The embassy image: embassy-executor, embassy-net and linklab-perf's embassy apps,
    /// defmt on the console.
    const fn embassy(bin: &'static str) -> ImageSpec {
        ImageSpec {
            about: "embassy-executor and embassy-net running linklab-perf's embassy apps",
            runtime: Runtime::Embassy,
            ..ImageSpec::flavour("embassy", "embassy", bin)
        }
    }

    /// The minimal image: the iperf3 TCP server alone (`-R`, one stream, the results
    /// exchange) and ICMP, built for size, its work on the console.
    const fn minimal(bin: &'static str) -> ImageSpec {
        ImageSpec {
            about: "the iperf3 TCP server alone and ICMP, built for size (no /stats)",
            default_features: false,
            profile: Profile::Minimal,
            work: Work::Console,
            ..ImageSpec::flavour("minimal", "minimal", bin)
        }
    }

    /// The compact image: lwIP's feature set (iperf 2's TCP server both ways, the HTTP
    /// bench-file server, ICMP), built for size like the minimal image, its work on the
    /// console.
    const fn compact(bin: &'static str) -> ImageSpec {
        ImageSpec {
            about: "lwIP's feature set: iperf 2 TCP both ways (no iperf3), HTTP bench files, ICMP; built for size",
            iperf: Iperf::Iperf2Tcp,
            ..ImageSpec::minimal(bin)
        }
        .named("compact", "compact")
    }

    /// The same image under another name and cargo feature.
    const fn named(self, name: &'static str, feature: &'static str) -> ImageSpec {
        ImageSpec {
            name,
            feature: Some(feature),
            ..self
        }
    }

    /// The serial image: the network over linklab-serial's link on the second UART.
    const fn serial(bin: &'static str) -> ImageSpec {
        ImageSpec {
            about: "no NIC: linklab-serial's link on UART1, bridged to the TAP",
            attach: Attach::SerialPty,
            ..ImageSpec::flavour("serial", "serial", bin)
        }
    }

    /// The soft-PHY image: linklab-phy10 decodes line samples on the MCU.
    const fn soft_phy(bin: &'static str) -> ImageSpec {
        ImageSpec {
            about: "linklab-phy10 decoding 10BASE-T line samples; linklab emu is the line",
            attach: Attach::SoftPhyLine,
            extra_sources: &["crates/linklab-phy10/src", "firmware/phy10-bench"],
            ..ImageSpec::flavour("soft-phy", "soft-phy", bin)
        }
    }

    /// The phy10 bench image (`linklab emu phy10`): linklab-phy10's decoder counted on the
    /// console, no network.
    pub(crate) const fn phy10_bench(package: &'static str) -> ImageSpec {
        ImageSpec {
            name: "phy10-bench",
            about: "linklab-phy10's decoder counted per bit, no network",
            package: Some(package),
            attach: Attach::None,
            work: Work::None,
            blaster: false,
            ..ImageSpec::main()
        }
    }

    /// The same image, counted into simulator profile `p`.
    const fn counted(self, p: &'static str) -> ImageSpec {
        ImageSpec {
            sim_profile: Some(p),
            ..self
        }
    }

    /// The same image, without the packet blaster.
    const fn without_blaster(self) -> ImageSpec {
        ImageSpec {
            blaster: false,
            ..self
        }
    }

    /// The `cargo` arguments that build it (in the firmware workspace).
    pub fn cargo_args(&self, board: &Board) -> Vec<&'static str> {
        let mut c = vec![
            "build",
            "--profile",
            self.profile.name(),
            "-p",
            self.package.unwrap_or(board.package),
        ];
        if !self.default_features {
            c.push("--no-default-features");
        }
        if let Some(f) = self.feature {
            c.extend(["--features", f]);
        }
        if let Some(b) = self.bin {
            c.extend(["--bin", b]);
        }
        c.extend(["--target", board.target]);
        c
    }

    /// The cargo command that builds it (from the firmware workspace), as a user types it.
    pub fn build_command(&self, board: &Board) -> String {
        format!("cargo {}", self.cargo_args(board).join(" "))
    }

    /// The ELF's file name under `target/<triple>/<profile>/`.
    pub fn file_name(&self, board: &Board) -> &'static str {
        self.bin.or(self.package).unwrap_or(board.package)
    }

    /// Has a network to serve on (a TAP, through the NIC, the serial link or the line).
    pub fn serves(&self) -> bool {
        self.attach != Attach::None
    }
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
        driver_sources: &["crates/linklab-lan9118/src", "crates/linklab-mmio/src"],
        images: &[
            ImageSpec::main().counted("mps2-measured"),
            ImageSpec::embassy("fw-mps2-an385-embassy"),
            ImageSpec::serial("fw-mps2-an385-serial"),
            ImageSpec::minimal("fw-mps2-an385-minimal"),
            ImageSpec::compact("fw-mps2-an385-compact"),
        ],
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
        driver_sources: &["crates/linklab-virtio-net/src"],
        images: &[
            ImageSpec::main().counted("riscv32-measured"),
            ImageSpec::embassy("fw-riscv32-virt-embassy").counted("riscv32-embassy-measured"),
            // The soft PHY's MAC checks the FCS itself: the feature brings linklab-mac's
            // fast FCS.
            ImageSpec::soft_phy("fw-riscv32-virt-phy10-line").counted("riscv32-soft-phy"),
            ImageSpec::minimal("fw-riscv32-virt-minimal"),
            ImageSpec::phy10_bench("fw-phy10-bench"),
        ],
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
        driver_sources: &[],
        images: &[
            // zynq7000-hal's driver is a smoltcp Device of its own: no raw way for the blaster.
            ImageSpec::main().without_blaster(),
            ImageSpec::embassy("fw-zynq7000-embassy"),
            ImageSpec::minimal("fw-zynq7000-minimal"),
        ],
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
        driver_sources: &[
            "crates/linklab-imx-enet/src",
            "crates/linklab-mmio/src",
            "firmware/cortex-a9",
        ],
        images: &[
            ImageSpec::main().counted("sabrelite-measured"),
            ImageSpec::embassy("fw-sabrelite-embassy"),
            ImageSpec::minimal("fw-sabrelite-minimal"),
        ],
    },
];

/// The names of every board, for messages.
pub fn board_names() -> String {
    BOARDS.iter().map(|b| b.name).collect::<Vec<_>>().join(", ")
}

impl Board {
    /// The board called `name`, or an error listing the known ones (a clap value parser).
    pub fn by_name(name: &str) -> Result<Board, String> {
        if crate::pin_board::PinBoard::by_name(name).is_some() {
            return Err(format!(
                "{name} runs at the pin level in rp2040js: `linklab emu {name}` boots it; this verb takes the QEMU boards: {}",
                board_names()
            ));
        }
        BOARDS
            .iter()
            .find(|b| b.name == name)
            .copied()
            .ok_or_else(|| format!("unknown board; expected one of {}", board_names()))
    }

    /// Its image called `name`, or one line naming its images and the boards that have one.
    pub fn image(&self, name: &str) -> anyhow::Result<&'static ImageSpec> {
        if let Some(i) = self.images.iter().find(|i| i.name == name) {
            return Ok(i);
        }
        let with: Vec<&str> = BOARDS
            .iter()
            .filter(|b| b.images.iter().any(|i| i.name == name))
            .map(|b| b.name)
            .collect();
        let own: Vec<&str> = self.images.iter().map(|i| i.name).collect();
        if with.is_empty() {
            bail_usage!(
                "--image {name}: no board has such an image ({}'s: {})",
                self.name,
                own.join(", ")
            );
        }
        bail_usage!(
            "--image {name}: {} has no {name} image ({} {} one; {}'s: {})",
            self.name,
            with.join(", "),
            if with.len() == 1 { "has" } else { "have" },
            self.name,
            own.join(", ")
        )
    }

    /// The `main` image.
    pub fn main_image(&self) -> &'static ImageSpec {
        &self.images[0]
    }

    /// QEMU's options for the NIC on TAP `tap`, with the MAC address `mac` if given.
    pub fn tap_args(&self, tap: &str, mac: Option<&str>) -> Vec<String> {
        self.nic
            .args(&format!("tap,ifname={tap},script=no,downscript=no"), mac)
    }

    /// QEMU's options for the NIC on a `-netdev stream` unix socket QEMU connects to at
    /// `path` (each message a 4-byte big-endian length, then the bytes).
    pub fn stream_args(&self, path: &std::path::Path) -> Vec<String> {
        self.nic.args(
            &format!(
                "stream,server=off,addr.type=unix,addr.path={}",
                path.display()
            ),
            None,
        )
    }
}

/// The board × image table as text (`linklab emu boards`).
pub fn table() -> String {
    let mut out = String::new();
    for b in &BOARDS {
        let nic = match b.nic {
            Nic::OnBoard { model } => model,
            Nic::Device { device, .. } => device,
        };
        out.push_str(&format!(
            "{}: {}, NIC {nic}, console {}; {} {}; config blob at {:#x}\n",
            b.name,
            b.isa,
            b.console,
            b.qemu,
            b.machine.join(" "),
            b.config_addr
        ));
        for i in b.images {
            let profile = i
                .sim_profile
                .map(|p| format!(" [profile {p}]"))
                .unwrap_or_default();
            out.push_str(&format!("  {:<12} {}{profile}\n", i.name, i.about));
            out.push_str(&format!("  {:<12}   {}\n", "", i.build_command(b)));
        }
    }
    out.push_str(
        "(cargo builds run in linklab's firmware/ folder; linklab emu runs them itself.)\n",
    );
    out.push_str(&crate::pin_board::table());
    out
}

/// A board `linklab emu BOARD` boots: in QEMU, or at the pin level in rp2040js.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bootable {
    /// A board of [`BOARDS`].
    Qemu(Board),
    /// A board of [`crate::pin_board::PIN_BOARDS`].
    PinLevel(crate::pin_board::PinBoard),
}

impl Bootable {
    /// The board called `name`, or an error listing them all (a clap value parser).
    pub fn by_name(name: &str) -> Result<Bootable, String> {
        if let Some(b) = crate::pin_board::PinBoard::by_name(name) {
            return Ok(Bootable::PinLevel(b));
        }
        let pins: Vec<_> = crate::pin_board::PIN_BOARDS
            .iter()
            .map(|b| b.name)
            .collect();
        Board::by_name(name).map(Bootable::Qemu).map_err(|_| {
            format!(
                "unknown board; expected one of {}, {}",
                board_names(),
                pins.join(", ")
            )
        })
    }
}

#[cfg(test)]
mod tests;
