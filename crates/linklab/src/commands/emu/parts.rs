//! `linklab emu parts`: one counted profile of the simulator, from its image.

use linklab_emu::parts::{self, PartsOptions};

use super::args::MeasureArgs;
use super::output::report;

/// Options of `linklab emu parts` (`--json FILE`: the profile's file under
/// crates/linklab-sim/data/).
#[derive(clap::Args, Debug)]
pub struct Args {
    #[command(flatten)]
    measure: MeasureArgs,
}

/// Runs `linklab emu parts`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let m = &args.measure;
    let profile = parts::run(&PartsOptions {
        image: m.target.choice("parts")?,
        line: m.line.options(),
    })?;
    report(&profile, m.json.as_deref())
}
