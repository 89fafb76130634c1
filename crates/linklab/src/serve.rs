//! `linklab serve` (under construction).

/// Options of `linklab serve`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `linklab serve`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`linklab serve` is not built yet")
}
