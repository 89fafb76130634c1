//! A suite's `[[device]]` entries: a live device measured by `linklab probe`, its figures
//! stored under probe's ids with their samples and judged by probe's rate rule.

use linklab_results::probe::ProbeReport;
use linklab_results::track::{Better, Figure, Rule};

use crate::instruments::Instruments;
use crate::run::EntryResult;
use crate::suite::DeviceEntry;

/// Probes the device of `entry` (`--repeat N` when `repeat` > 1); a probe that fails is the
/// entry failed with probe's own words, never figures of a half run.
pub fn measure(entry: &DeviceEntry, repeat: u32, instruments: &mut dyn Instruments) -> EntryResult {
    let mut e = EntryResult::new(&entry.name, "device", "");
    let what = format!("linklab probe {}", entry.address);
    match instruments.probe(entry, repeat) {
        Ok(doc) if !doc.failures.is_empty() => {
            e.failed = Some(format!("{what}: {}", doc.failures.join("; ")));
        }
        Ok(doc) => e.figures = probe_figures(&doc),
        Err(why) => e.failed = Some(format!("{what}: {why:#}")),
    }
    e
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
