//! The emulated boards `linklab emu` knows: how to build each firmware image and how to boot
//! it in QEMU with its NIC on a TAP and its configuration blob in RAM.

/// One emulated board.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Board {
    /// The name users type (`--board`), also the firmware crate's folder under `firmware/`.
    pub name: &'static str,
    /// The firmware package (cargo `-p`).
    pub package: &'static str,
    /// The Rust target the image is built for.
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
    /// The binary of the serial flavour (built with `--features serial`): the network over
    /// linklab-serial's link on the board's second UART instead of the NIC. None where the
    /// machine has a single UART (the console).
    pub serial_bin: Option<&'static str>,
    /// The binary of the embassy image (built with `--features embassy`): embassy-executor,
    /// embassy-net over linklab-mac and linklab-perf's embassy apps, defmt on the console.
    pub embassy_bin: Option<&'static str>,
}

/// Every board.
pub const BOARDS: [Board; 2] = [
    Board {
        name: "mps2-an385",
        package: "fw-mps2-an385",
        target: "thumbv7m-none-eabi",
        qemu: "qemu-system-arm",
        qemu_package: "qemu-system-arm",
        machine: &["-M", "mps2-an385"],
        config_addr: 0x203F_FF00,
        isa: "ARMv7-M (Cortex-M3)",
        serial_bin: Some("fw-mps2-an385-serial"),
        embassy_bin: Some("fw-mps2-an385-embassy"),
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
        serial_bin: None,
        embassy_bin: Some("fw-riscv32-virt-embassy"),
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
    pub fn nic_args(&self, tap: &str) -> Vec<String> {
        match self.name {
            "mps2-an385" => vec![
                "-nic".into(),
                format!("tap,ifname={tap},script=no,downscript=no,model=lan9118"),
            ],
            _ => vec![
                "-global".into(),
                "virtio-mmio.force-legacy=false".into(),
                "-netdev".into(),
                format!("tap,id=n0,ifname={tap},script=no,downscript=no"),
                "-device".into(),
                "virtio-net-device,netdev=n0".into(),
            ],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_board_names_the_known_ones() {
        let e = Board::by_name("esp32").unwrap_err();
        assert!(
            e.contains("mps2-an385") && e.contains("riscv32-virt"),
            "{e}"
        );
        assert_eq!(
            Board::by_name("riscv32-virt").unwrap().qemu,
            "qemu-system-riscv32"
        );
    }
}
