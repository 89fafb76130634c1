//! `linklab emu`: linklab's firmware on an emulated MCU (QEMU), over linklab-emu.
//!
//! `linklab emu BOARD [--image NAME|ELF] --tap NAME --ip ADDR/PREFIX` boots an image with its
//! network on a TAP and leaves it to the user's stock ping, curl and iperf3 ([`boot`]). The
//! measuring jobs are verbs of their own, each booting the image in a network namespace of
//! its own: `cost`, `parts`, `throughput`, `predict`, `blast`, `phy10`, `chips`; `boards`
//! prints the table of boards and their images; `line` is the soft-PHY line alone, for a
//! device emulator of another kind than QEMU. One file per verb: its clap arguments and one
//! call into linklab-emu.

pub(crate) mod args;
mod blast;
mod boot;
mod chips;
mod cost;
mod line;
mod output;
mod parts;
mod phy10;
mod predict;
mod throughput;

/// Options of `linklab emu`: a measuring verb, or the options that boot an image.
///
/// Its help stays within a screen: the options every boot needs; the others (`--elf`,
/// `--mac`, `--icount`, `--boot-timeout`, `--status`, `--pcap`, `--pty`, `--w5500-faults`, the
/// soft-PHY line's and the SPI master's) are taken here too and
/// described in `linklab emu boot --help`.
#[derive(clap::Args, Debug)]
#[command(
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    disable_help_subcommand = true,
    override_usage = "linklab emu BOARD [--image NAME|ELF] --tap NAME --ip ADDR/PREFIX [OPTIONS]\n       linklab emu VERB BOARD [OPTIONS]",
    subcommand_value_name = "VERB",
    subcommand_help_heading = "Verbs (the measuring ones boot the image in a network namespace of their own)",
    mut_arg("board", |a| a.hide(true)),
    mut_arg("image", |a| a.long_help(None)),
    mut_arg("elf", |a| a.hide(true)),
    mut_arg("mac", |a| a.hide(true)),
    mut_arg("icount", |a| a.hide(true)),
    mut_arg("boot_timeout", |a| a.hide(true)),
    mut_arg("status", |a| a.hide(true)),
    mut_arg("pcap", |a| a.hide(true)),
    mut_arg("oversample", |a| a.hide(true)),
    mut_arg("drift", |a| a.hide(true)),
    mut_arg("jitter", |a| a.hide(true)),
    mut_arg("noise", |a| a.hide(true)),
    mut_arg("no_pace", |a| a.hide(true)),
    mut_arg("bad_captures", |a| a.hide(true)),
    mut_arg("spi_hz", |a| a.hide(true)),
    mut_arg("spi_gap_us", |a| a.hide(true)),
    mut_arg("spi_tail_us", |a| a.hide(true)),
    mut_arg("spi_tail_per_mille", |a| a.hide(true)),
    mut_arg("spi_byte_gap", |a| a.hide(true)),
    mut_arg("pty", |a| a.hide(true)),
    mut_arg("w5500_faults", |a| a.hide(true)),
    after_help = "BOARD: `linklab emu boards` lists them. Every option of a boot, with examples:\n  linklab emu boot --help"
)]
pub struct Args {
    #[command(subcommand)]
    verb: Option<Verb>,
    #[command(flatten)]
    boot: boot::BootArgs,
}

/// `linklab emu boot`: the options that boot an image, as `linklab emu BOARD ...` takes them.
#[derive(clap::Args, Debug)]
pub struct BootVerb {
    #[command(flatten)]
    boot: boot::BootArgs,
}

/// The measuring verbs, and the table.
#[derive(clap::Subcommand, Debug)]
enum Verb {
    /// Boot an image with its NIC on a TAP and serve until a signal (`linklab emu BOARD ...`).
    ///
    /// The user's stock ping, curl and iperf3 reach it at `--ip` through the TAP.
    #[command(
        after_help = "Examples:\n  linklab emu boot mps2-an385 --tap t0 --ip 198.18.0.2/24\n  linklab emu mps2-an385 --tap t0 --ip 198.18.0.2/24   (the same)\n  linklab emu riscv32-virt --image embassy --tap t0 --ip 198.18.0.2/24\n  linklab emu riscv32-virt --image soft-phy --jitter 0.25 --tap t0 --ip 198.18.0.2/24\n  linklab emu pico --image soft-phy --tap t0 --ip 198.18.0.2/24   (rp2040js, the example as it is)\n  linklab emu pico --image usb-serial --pty /tmp/ttyACM0   (its USB port: then linklab serial --dev /tmp/ttyACM0)\n  linklab emu w5500-evb-pico --tap t0 --ip 198.18.0.2/24 --pcap port.pcap"
    )]
    Boot(BootVerb),
    /// The boards and their images: machine, NIC, console, how each is built.
    ///
    /// One row per board and one line per image: what it runs, its simulator profile, the
    /// cargo command that builds it in linklab's firmware/ folder.
    #[command(after_help = "Example: linklab emu boards")]
    Boards,
    /// What the image costs: instructions per byte each way, flash, RAM, peak stack.
    ///
    /// QEMU counts one instruction per nanosecond (`-icount shift=0`); stock iperf3 moves
    /// 4 MB each way; the firmware's own work counters (`/stats`, or the minimal image's
    /// console) give the work per layer, less what reading them costs.
    #[command(
        after_help = "Example: linklab emu cost mps2-an385 --image minimal --json cost.json"
    )]
    Cost(cost::Args),
    /// Instructions per part of the work: the data file of a `linklab bench` profile.
    ///
    /// Per frame, per byte, per main-loop pass. QEMU at `-icount shift=0`; stock iperf3 both ways at several segment sizes and once
    /// paced, curl downloads; the parts are the least-squares solution of the counted totals.
    /// Only the images a profile is counted from (`linklab emu boards` names them).
    #[command(
        after_help = "Example: linklab emu parts riscv32-virt --image embassy --json crates/linklab-sim/data/riscv32-embassy-measured.json"
    )]
    Parts(parts::Args),
    /// Stock iperf3 both ways and curl, free-running and at a fixed instruction rate.
    ///
    /// At the fixed rate every rate is in the device's clock (QEMU's virtual time); the
    /// host's is shown beside it only when the emulator fell behind real time, with a line
    /// saying by how much. The host's TCP runs without its tail-loss probe (QEMU's
    /// alignment stops set it off). A pin-level board (pico, w5500-evb-pico) runs once, in
    /// the chip's clock (1 MB each way with iperf3, then curl).
    #[command(
        after_help = "Examples:\n  linklab emu throughput mps2-an385 --icount 4\n  linklab emu throughput pico --image soft-phy"
    )]
    Throughput(throughput::Args),
    /// How well the simulator predicts the image at a fixed instruction rate.
    ///
    /// The image at a fixed rate beside `linklab bench` with its counted profile at the same
    /// MHz, on the same transfers. Stock iperf3 each way and curl of /3MB.txt, `--runs` boots; the emulated rates in
    /// the device's own clock.
    #[command(after_help = "Example: linklab emu predict riscv32-virt --icount 4 --runs 3")]
    Predict(predict::Args),
    /// The raw ceiling: the firmware's packet blaster, then bad checksums.
    ///
    /// UDP frames straight into the NIC driver and through smoltcp, counted by a receiver
    /// here; then frames with wrong IPv4, TCP and UDP checksums. QEMU at `-icount shift=0`; frames per second and instructions per frame each way.
    /// Fails unless every frame is accounted for, bad requests were refused and counted,
    /// and every wrong checksum was dropped and counted.
    #[command(after_help = "Example: linklab emu blast riscv32-virt --ms 200 --json blast.json")]
    Blast(blast::Args),
    /// linklab-phy10's decoder: instructions per wire bit on the board's ISA.
    ///
    /// Full-length frames under drift and jitter. QEMU at `-icount shift=0`; fails if a frame is not decoded bit-exact. On the boards
    /// with a phy10-bench image (riscv32-virt) and the bench machines microbit (thumbv6m) and mps2-an505 (thumbv8m.main).
    #[command(
        after_help = "Example: linklab emu phy10 riscv32-virt\n         linklab emu phy10 microbit"
    )]
    Phy10(phy10::Args),
    /// The soft 10BASE-T PHY counted on each chip's ISA, and the clock each chip needs.
    ///
    /// Runs the phy10 bench on riscv32imac (riscv32-virt), thumbv8m.main (mps2-an505) and
    /// thumbv6m (microbit), then predicts the ESP32-C6, the RP2350 and the RP2040 at their
    /// clocks: each core's MIPS at line rate, receiving, sending and both at once.
    #[command(after_help = "Example: linklab emu chips --json chips.json")]
    Chips(chips::Args),
    /// The soft-PHY line alone, for a device emulator that connects to its unix socket.
    ///
    /// The pin-level RP2040 harness (emulators/rp2040js/harness.mjs) carries the line's samples to
    /// the chip's RX pin and its TX pin's samples back; this side joins them to a TAP.
    /// Plumbing for emulators/rp2040js/run (docs/rp2040js.md): hidden from `linklab emu --help`,
    /// which fits a screen.
    #[command(
        hide = true,
        after_help = "Example: linklab emu line --tap t0 --socket /tmp/line.sock --no-pace\n  then: node emulators/rp2040js/harness.mjs --elf ELF --socket /tmp/line.sock"
    )]
    Line(line::Args),
}

/// Runs `linklab emu`.
pub fn run(args: Args) -> anyhow::Result<()> {
    match args.verb {
        None => boot::run(args.boot),
        Some(Verb::Boot(BootVerb { boot })) => boot::run(boot),
        Some(Verb::Boards) => {
            print!("{}", linklab_emu::board::table());
            Ok(())
        }
        Some(Verb::Cost(a)) => cost::run(a),
        Some(Verb::Parts(a)) => parts::run(a),
        Some(Verb::Throughput(a)) => throughput::run(a),
        Some(Verb::Predict(a)) => predict::run(a),
        Some(Verb::Blast(a)) => blast::run(a),
        Some(Verb::Phy10(a)) => phy10::run(a),
        Some(Verb::Chips(a)) => chips::run(a),
        Some(Verb::Line(a)) => line::run(a),
    }
}
