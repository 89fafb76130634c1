//! `linklab track run`: every entry of a suite measured, then the run stored in one
//! transaction (a run stopped before the end stores nothing).

use std::ffi::OsString;
use std::path::PathBuf;

use anyhow::Context;
use serde_json::Value;

use super::figure::{Better, EntryResult, Figure, Rule, Run};
use super::own_run::json_of;
use super::stamp::Stamp;
use super::suite::{self, SimEntry, Suite};
use super::{device, live, store};

/// Options of `linklab track run`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The suite file (TOML: docs/track.md).
    #[arg(value_name = "SUITE")]
    suite: PathBuf,
    /// The run's label (default: the suite's tree's commit, `-dirty` with changes). A label
    /// given twice makes a second run of it; compare takes the latest.
    #[arg(long, value_name = "L")]
    label: Option<String>,
    /// Samples per counted figure: boots of each image, and probe runs of each device
    /// (`linklab probe --repeat N`).
    #[arg(long, value_name = "N", default_value_t = 1,
          value_parser = linklab_results::values::ranged(1u32, 50))]
    repeat: u32,
    /// Check the suite and print what would be measured, measuring nothing.
    #[arg(long)]
    dry_run: bool,
    #[command(flatten)]
    db: store::DbArg,
}

/// Runs `linklab track run`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let suite = suite::load(&args.suite)?;
    if args.dry_run {
        print!("{}", plan(&suite));
        return Ok(());
    }
    let mut store = store::open(&args.db.db)?;
    let run = measure(&suite, args.label.as_deref(), args.repeat);
    let id = store.insert_run(&run)?;
    for e in &run.entries {
        match &e.failed {
            Some(why) => println!("{}: failed: {why}", e.name),
            None => {
                for f in &e.figures {
                    println!(
                        "{}: {} {} {}",
                        e.name,
                        f.name,
                        fmt_samples(&f.samples),
                        f.unit
                    );
                }
            }
        }
    }
    println!(
        "stored run {id} labelled {} in {}",
        run.stamp.label,
        args.db.shown()
    );
    Ok(())
}

/// What a run of `suite` measures, one line per entry.
fn plan(suite: &Suite) -> String {
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

/// The samples, as `a` or `a b c`.
fn fmt_samples(s: &[f64]) -> String {
    s.iter()
        .map(|v| format!("{}", (v * 1e4).round() / 1e4))
        .collect::<Vec<_>>()
        .join(" ")
}

/// Measures every entry of `suite`; an entry that fails is stored as failed with its
/// reason, the others are measured.
pub fn measure(suite: &Suite, label: Option<&str>, repeat: u32) -> Run {
    let mut stamp = Stamp::start(&suite.path, label, repeat);
    let mut entries = Vec::new();
    for image in &suite.images {
        eprintln!("track: measuring {} ...", image.name);
        entries.push(device::measure(image, repeat));
    }
    device::clean_up();
    for d in &suite.devices {
        eprintln!("track: probing {} at {} ...", d.name, d.address);
        entries.push(live::measure(d, repeat));
    }
    for sim in &suite.sims {
        eprintln!("track: simulating {} ...", sim.name);
        let mut e = EntryResult::new(&sim.name, "sim", "");
        match simulate(sim) {
            Ok(figures) => e.figures = figures,
            Err(why) => e.failed = Some(format!("{why:#}")),
        }
        entries.push(e);
    }
    stamp.finish();
    Run {
        id: None,
        stamp,
        entries,
    }
}

/// `linklab bench ARGS --json FILE` (this very program), its figures: each file's download
/// rate (a sample per GET), the ping round trips, the device's busy time.
fn simulate(sim: &SimEntry) -> anyhow::Result<Vec<Figure>> {
    let mut args: Vec<OsString> = vec!["bench".into()];
    args.extend(sim.args.iter().map(OsString::from));
    let what = format!("linklab bench {}", sim.args.join(" "));
    let text = json_of(args, "sim", &[0], &what)?;
    let v: Value = serde_json::from_slice(&text).context("linklab bench's JSON")?;
    Ok(sim_figures(&v))
}

/// The figures of one `linklab bench --json` document.
pub fn sim_figures(v: &Value) -> Vec<Figure> {
    let mut figures: Vec<Figure> = Vec::new();
    let empty = Vec::new();
    for d in v["downloads"].as_array().unwrap_or(&empty) {
        let (Some(path), Some(rate)) = (d["path"].as_str(), d["bytes_per_s"].as_f64()) else {
            continue;
        };
        let name = format!("get {path}");
        match figures.iter_mut().find(|f| f.name == name) {
            Some(f) => f.samples.push(rate / 1e3),
            None => figures.push(Figure::new(
                &name,
                "kB/s",
                Better::Higher,
                Rule::Rate,
                vec![rate / 1e3],
            )),
        }
    }
    let rtts: Vec<f64> = v["pings"]
        .as_array()
        .unwrap_or(&empty)
        .iter()
        .filter_map(|p| p["rtt_ms"].as_f64())
        .collect();
    if !rtts.is_empty() {
        figures.push(Figure::new(
            "ping rtt",
            "ms",
            Better::Lower,
            Rule::Count,
            rtts,
        ));
    }
    if let Some(busy) = v["cpu_busy_seconds"].as_f64() {
        figures.push(Figure::new(
            "cpu busy",
            "s",
            Better::Lower,
            Rule::Count,
            vec![busy],
        ));
    }
    figures
}
