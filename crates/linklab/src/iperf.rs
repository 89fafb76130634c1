//! `linklab iperf` (under construction).

/// Options of `linklab iperf`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `linklab iperf`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`linklab iperf` is not built yet")
}
