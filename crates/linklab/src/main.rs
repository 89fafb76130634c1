//! `linklab`: the command-line front end of the linklab toolkit.
//!
//! Each subcommand lives in its own module with an `Args` (clap) and a `run` function.
//! Every error ends the process with one line `linklab: error: …` on stderr: exit code 2 for
//! a usage error (clap's, or a [`values::Usage`] from a subcommand), 1 for a failure while
//! running. `--help` and `--version` behave as clap makes them.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod bench;
mod emu;
mod iperf;
mod iperf2;
mod probe;
mod report;
mod rtt;
mod serial;
mod serve;
mod sweep;
mod track;
mod values;

/// The linklab command line.
#[derive(Parser)]
#[command(
    name = "linklab",
    version,
    about = "A software NIC stack for microcontrollers and the bench that proves its numbers"
)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

// One value, parsed once per run: the variants' sizes do not matter (`emu`'s arguments hold
// the board's table of images).
#[allow(clippy::large_enum_variant)]
#[derive(Subcommand)]
enum Command {
    /// Run the experiment of Niccle's MAC write-up (pings + HTTP downloads) on a simulated link.
    Bench(bench::Args),
    /// Run the soft NIC (linklab-mac + smoltcp + linklab-perf) on a Linux TAP.
    Serve(serve::Args),
    /// A reliable framed link on a serial port: bridge it to a TAP, serve on it, or self-test it.
    Serial(serial::Args),
    /// Boot linklab's firmware on an emulated MCU (QEMU) with its NIC on a TAP, or measure it.
    Emu(Box<emu::Args>),
    /// iperf3-compatible client and server.
    Iperf(Box<iperf::Args>),
    /// iperf 2-compatible client and server (iperf 2.1.8's options and output).
    Iperf2(Box<iperf2::Args>),
    /// Offered-rate sweep against an iperf3 server: find the knee and the collapse.
    Sweep(sweep::Args),
    /// Round-trip and inter-arrival histograms per packet size against an echo endpoint.
    Rtt(rtt::Args),
    /// Characterise a network device (ping, iperf3 or iperf 2, HTTP, echo) into one report.
    Probe(probe::Args),
    /// Render JSON results into a self-contained HTML report.
    Report(report::Args),
    /// Record figures per build in a store, compare runs (exit 3 when worse), walk commits.
    Track(track::Args),
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(err) => {
            use clap::error::ErrorKind;
            if matches!(
                err.kind(),
                ErrorKind::DisplayHelp
                    | ErrorKind::DisplayVersion
                    | ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand
            ) {
                err.exit();
            }
            eprintln!(
                "linklab: error: {}",
                values::one_line(&err.render().to_string())
            );
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Bench(args) => bench::run(args),
        Command::Serve(args) => serve::run(args),
        Command::Serial(args) => serial::run(args),
        Command::Emu(args) => emu::run(*args),
        Command::Iperf(args) => iperf::run(*args),
        Command::Iperf2(args) => iperf2::run(*args),
        Command::Sweep(args) => sweep::run(args),
        Command::Rtt(args) => rtt::run(args),
        Command::Probe(args) => probe::run(args),
        Command::Report(args) => report::run(args),
        Command::Track(args) => track::run(args),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("linklab: error: {err:#}");
            if err.downcast_ref::<values::Usage>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}
