//! `linklab report` (under construction).

/// Options of `linklab report`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `linklab report`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`linklab report` is not built yet")
}
