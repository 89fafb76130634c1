//! `linklab bench` (under construction).

/// Options of `linklab bench`.
#[derive(clap::Args)]
pub struct Args {}

/// Runs `linklab bench`.
pub fn run(_args: Args) -> anyhow::Result<()> {
    anyhow::bail!("`linklab bench` is not built yet")
}
