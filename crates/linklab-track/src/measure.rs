//! A run of a suite: every entry measured, in the suite's order by kind (images, devices, the
//! simulator), each entry that fails stored as failed with its reason, then the run's stamp
//! closed. Storing it is one transaction (a run stopped before the end stores nothing).

use crate::device;
use crate::image::{self, WorkFolder};
use crate::instruments::Instruments;
use crate::run::{EntryResult, Run};
use crate::sim;
use crate::stamp::Stamp;
use crate::suite::{self, DeviceEntry, ImageEntry, SimEntry, Suite};

/// How a suite is run.
#[derive(Clone, Debug, Default)]
pub struct RunOptions {
    /// The run's label; by default the suite's tree's commit (`-dirty` with changes).
    pub label: Option<String>,
    /// Samples per counted figure: boots of each image, probe runs of each device (at least 1).
    pub repeat: u32,
}

/// The entry about to be measured, told as a run goes.
#[derive(Clone, Copy, Debug)]
pub enum Progress<'a> {
    /// An `[[image]]` entry, booted on its board.
    Image(&'a ImageEntry),
    /// A `[[device]]` entry, probed.
    Device(&'a DeviceEntry),
    /// A `[[sim]]` entry, simulated.
    Sim(&'a SimEntry),
}

/// What a run of `suite` measures, one line per entry.
pub fn plan(suite: &Suite) -> String {
    let mut out = String::new();
    if let Some(b) = &suite.build {
        out.push_str(&format!("build: {b}\n"));
    }
    for i in &suite.images {
        let what = match &i.target {
            suite::Target::Linklab { image, elf: None } => format!("linklab's {image} image"),
            suite::Target::Linklab {
                image,
                elf: Some(e),
            } => {
                format!("linklab's {image} image from {}", e.display())
            }
            suite::Target::Foreign { elf, mac } => {
                format!("{} (iperf 2, lwiperf's way; mac {mac})", elf.display())
            }
        };
        out.push_str(&format!(
            "{} (line {}): {} on {}: {}\n",
            i.name,
            i.line,
            what,
            i.board,
            i.figures.join(", ")
        ));
    }
    for d in &suite.devices {
        let args: Vec<&str> = std::iter::once(d.address.as_str())
            .chain(d.args.iter().map(String::as_str))
            .collect();
        out.push_str(&format!("{}: linklab probe {}\n", d.name, args.join(" ")));
    }
    for s in &suite.sims {
        out.push_str(&format!("{}: linklab bench {}\n", s.name, s.args.join(" ")));
    }
    out
}

/// The samples, as `a` or `a b c` (to four decimals), as `linklab track run` prints them.
pub fn samples_text(s: &[f64]) -> String {
    s.iter()
        .map(|v| format!("{}", (v * 1e4).round() / 1e4))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Measures every entry of `suite`, telling `progress` of each before it starts; an entry that
/// fails is stored as failed with its reason, the others are measured. `[[device]]` and
/// `[[sim]]` entries are measured by `instruments`.
pub fn measure(
    suite: &Suite,
    options: &RunOptions,
    instruments: &mut dyn Instruments,
    progress: &mut dyn FnMut(Progress<'_>),
) -> Run {
    let repeat = options.repeat.max(1);
    let mut stamp = Stamp::start(&suite.path, options.label.as_deref(), repeat);
    let mut entries = Vec::new();
    // One work folder for every image (the plugin built once), removed once they are done.
    let mut work: Option<anyhow::Result<WorkFolder>> = None;
    for entry in &suite.images {
        progress(Progress::Image(entry));
        match work.get_or_insert_with(WorkFolder::new) {
            Ok(work) => entries.push(image::measure(entry, repeat, work)),
            Err(why) => {
                let mut e = EntryResult::new(&entry.name, "image", &entry.board);
                e.failed = Some(format!("{why:#}"));
                entries.push(e);
            }
        }
    }
    drop(work);
    for entry in &suite.devices {
        progress(Progress::Device(entry));
        entries.push(device::measure(entry, repeat, instruments));
    }
    for entry in &suite.sims {
        progress(Progress::Sim(entry));
        entries.push(sim::measure(entry, instruments));
    }
    stamp.finish();
    Run {
        id: None,
        stamp,
        entries,
    }
}
