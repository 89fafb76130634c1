//! `linklab rtt` (under construction).

/// Options of `linklab rtt`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `linklab rtt`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`linklab rtt` is not built yet")
}
