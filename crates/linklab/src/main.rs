//! `linklab`: the command-line front end of the linklab toolkit.
//!
//! Each subcommand lives in its own module with an `Args` (clap) and a `run` function.
//! Every error ends the process with one line `linklab: error: …` on stderr: exit code 2 for
//! a usage error (clap's, or a [`linklab_results::Usage`] from a subcommand), 1 for a failure while
//! running. `--help` and `--version` behave as clap makes them.

use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod commands;
mod instruments;
mod progress;

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
    Bench(commands::bench::Args),
    /// Run the soft NIC (linklab-mac + smoltcp + linklab-perf) on a Linux TAP.
    Serve(commands::serve::Args),
    /// A reliable framed link on a serial port: bridge it to a TAP, serve on it, or self-test it.
    Serial(commands::serial::Args),
    /// Boot linklab's firmware on an emulated MCU (QEMU) with its NIC on a TAP, or measure it.
    Emu(Box<commands::emu::Args>),
    /// iperf3-compatible client and server.
    Iperf(Box<commands::iperf::Args>),
    /// iperf 2-compatible client and server (iperf 2.1.8's options and output).
    Iperf2(Box<commands::iperf2::Args>),
    /// Offered-rate sweep against an iperf3 server: find the knee and the collapse.
    Sweep(commands::sweep::Args),
    /// Round-trip and inter-arrival histograms per packet size against an echo endpoint.
    Rtt(commands::rtt::Args),
    /// Characterise a network device (ping, iperf3 or iperf 2, HTTP, echo) into one report.
    Probe(commands::probe::Args),
    /// Render JSON results into a self-contained HTML report.
    Report(commands::report::Args),
    /// Record figures per build in a store, compare runs (exit 3 when worse), walk commits.
    Track(commands::track::Args),
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
            eprintln!("linklab: error: {}", one_line(&err.render().to_string()));
            return ExitCode::from(2);
        }
    };
    let result = match cli.command {
        Command::Bench(args) => commands::bench::run(args),
        Command::Serve(args) => commands::serve::run(args),
        Command::Serial(args) => commands::serial::run(args),
        Command::Emu(args) => commands::emu::run(*args),
        Command::Iperf(args) => commands::iperf::run(*args),
        Command::Iperf2(args) => commands::iperf2::run(*args),
        Command::Sweep(args) => commands::sweep::run(args),
        Command::Rtt(args) => commands::rtt::run(args),
        Command::Probe(args) => commands::probe::run(args),
        Command::Report(args) => commands::report::run(args),
        Command::Track(args) => commands::track::run(args, &mut instruments::ProbeAndBench),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("linklab: error: {err:#}");
            if err.downcast_ref::<linklab_results::Usage>().is_some() {
                ExitCode::from(2)
            } else {
                ExitCode::FAILURE
            }
        }
    }
}

/// Turns a clap error into the one line `main` prints after `linklab: error: `: the first
/// paragraph of clap's message, without its `error: ` prefix, its lines joined.
fn one_line(clap_message: &str) -> String {
    let body = clap_message.trim_start();
    let body = body.strip_prefix("error: ").unwrap_or(body);
    body.lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect::<Vec<_>>()
        .join(" ")
}

#[cfg(test)]
mod tests {
    use super::one_line;

    #[test]
    fn clap_messages_become_one_line() {
        let unknown = "error: unexpected argument '--foo' found\n\n  tip: to pass '--foo' as a value, use '-- --foo'\n\nUsage: linklab bench [OPTIONS]\n\nFor more information, try '--help'.\n";
        assert_eq!(one_line(unknown), "unexpected argument '--foo' found");
        let missing = "error: the following required arguments were not provided:\n  --dev <PATH>\n\nUsage: linklab serial --dev <PATH>\n";
        assert_eq!(
            one_line(missing),
            "the following required arguments were not provided: --dev <PATH>"
        );
    }
}
