//! A suite's `[[device]]` entries: a live device measured by `linklab probe` (this very
//! program), its figures stored with their ranges and judged by probe's rate rule.

use std::ffi::OsString;

use anyhow::Context;

use super::figure::{Better, EntryResult, Figure, Rule};
use super::own_run::{json_of, TempFile};
use super::suite::DeviceEntry;
use linklab_results::probe::ProbeReport;

/// Probes the device of `entry` (`--repeat N` when `repeat` > 1); a failed probe is the
/// entry failed with probe's own last line, never figures of a half run.
pub fn measure(entry: &DeviceEntry, repeat: u32) -> EntryResult {
    let mut e = EntryResult::new(&entry.name, "device", "");
    match probe(entry, repeat) {
        Ok(doc) => e.figures = probe_figures(&doc),
        Err(why) => e.failed = Some(format!("{why:#}")),
    }
    e
}

/// `linklab probe ADDRESS ARGS --json FILE`: its document (exit 0, or 3 when ARGS gave a
/// baseline the device fell behind: the figures are still this run's). Its HTML goes where
/// ARGS say (`-o`), or nowhere.
fn probe(entry: &DeviceEntry, repeat: u32) -> anyhow::Result<ProbeReport> {
    let mut args: Vec<OsString> = vec!["probe".into(), (&entry.address).into()];
    args.extend(entry.args.iter().map(OsString::from));
    let html_asked = entry
        .args
        .iter()
        .any(|a| a.starts_with("-o") || a.starts_with("--output"));
    let html = TempFile::new(&format!("{}.html", entry.name));
    if !html_asked {
        args.extend(["-o".into(), html.0.clone().into_os_string()]);
    }
    if repeat > 1 {
        args.extend(["--repeat".into(), repeat.to_string().into()]);
    }
    let what = format!("linklab probe {}", entry.address);
    let text = json_of(args, &entry.name, &[0, 3], &what)?;
    serde_json::from_slice(&text).context("linklab probe's JSON")
}

/// The figures of a probe document, each under its probe id (`tcp.to_device`, ...): across
/// the runs of `--repeat` (one sample per run), or else the one run's samples (a TCP test's
/// slices), or its range (a round trip's quartiles: low, median, high).
pub fn probe_figures(doc: &ProbeReport) -> Vec<Figure> {
    if let Some(rep) = doc.repeat.as_ref().filter(|r| r.runs > 1) {
        return rep
            .figures
            .iter()
            .map(|f| {
                let samples = f.values.iter().flatten().copied().collect();
                Figure::new(&f.id, &f.unit, better(f.better), Rule::Rate, samples)
            })
            .collect();
    }
    doc.figures
        .iter()
        .map(|f| {
            let samples = if f.samples.is_empty() {
                [f.low, Some(f.value), f.high]
                    .into_iter()
                    .flatten()
                    .collect()
            } else {
                f.samples.clone()
            };
            Figure::new(&f.id, &f.unit, better(f.better), Rule::Rate, samples)
        })
        .collect()
}

fn better(b: linklab_results::probe::Better) -> Better {
    match b {
        linklab_results::probe::Better::Higher => Better::Higher,
        linklab_results::probe::Better::Lower => Better::Lower,
    }
}
