//! The machines that only count linklab-phy10 on an ISA of their own: QEMU's `microbit`
//! (thumbv6m: the RP2040's Cortex-M0+ instruction set) and `mps2-an505` (thumbv8m.main: the
//! RP2350's Cortex-M33). They have no network image, so they are not in the board table
//! (every command there boots a `main` image); `linklab emu phy10` and `linklab emu chips`
//! take them beside its boards. Both run firmware/phy10-bench built for their target (its
//! build.rs picks the machine by the target), SysTick at the core clock as the counter, and
//! leave through semihosting.

use super::board::{Board, ImageSpec, Nic, BOARDS};

/// QEMU's `microbit` (nRF51822, Cortex-M0, 16 MHz): thumbv6m.
pub const MICROBIT: Board = bench_board(
    "microbit",
    "thumbv6m-none-eabi",
    &[
        "-M",
        "microbit",
        "-semihosting-config",
        "enable=on,target=native",
    ],
    "ARMv6-M (Cortex-M0: the RP2040's Cortex-M0+ ISA)",
    "nRF51 UART0",
);

/// QEMU's `mps2-an505` (Cortex-M33, 20 MHz, booted secure): thumbv8m.main.
pub const MPS2_AN505: Board = bench_board(
    "mps2-an505",
    "thumbv8m.main-none-eabihf",
    &[
        "-M",
        "mps2-an505",
        "-semihosting-config",
        "enable=on,target=native",
    ],
    "ARMv8-M Mainline (Cortex-M33: the RP2350's Arm cores)",
    "CMSDK UART0",
);

/// Their one image: firmware/phy10-bench for the machine's target.
const BENCH_IMAGES: [ImageSpec; 1] = [ImageSpec::phy10_bench("fw-phy10-bench")];

/// The bench-only machines.
pub const BENCH_BOARDS: [Board; 2] = [MICROBIT, MPS2_AN505];

const fn bench_board(
    name: &'static str,
    target: &'static str,
    machine: &'static [&'static str],
    isa: &'static str,
    console: &'static str,
) -> Board {
    Board {
        name,
        package: "fw-phy10-bench",
        target,
        qemu: "qemu-system-arm",
        qemu_package: "qemu-system-arm",
        machine,
        // No configuration blob is loaded into a bench image.
        config_addr: 0,
        isa,
        nic: Nic::OnBoard { model: "none" },
        console,
        driver_sources: &[],
        images: &BENCH_IMAGES,
    }
}

/// The board or bench machine called `name` (a clap value parser for `linklab emu phy10`).
pub fn by_name(name: &str) -> Result<Board, String> {
    BENCH_BOARDS
        .iter()
        .find(|b| b.name == name)
        .copied()
        .ok_or(())
        .or_else(|()| Board::by_name(name))
        .map_err(|_| {
            let names: Vec<&str> = BOARDS
                .iter()
                .chain(BENCH_BOARDS.iter())
                .map(|b| b.name)
                .collect();
            format!("unknown board; expected one of {}", names.join(", "))
        })
}
