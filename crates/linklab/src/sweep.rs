//! `linklab sweep` (under construction).

/// Options of `linklab sweep`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `linklab sweep`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`linklab sweep` is not built yet")
}
