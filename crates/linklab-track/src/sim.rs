//! A suite's `[[sim]]` entries: `linklab bench` on the simulated link, its figures each file's
//! download rate (a sample per GET), the ping round trips and the device's busy time.

use anyhow::Context;
use linklab_results::track::{Better, Figure, Rule};
use serde::Deserialize;

use crate::instruments::Instruments;
use crate::run::EntryResult;
use crate::suite::SimEntry;

/// What track reads of a `linklab bench` document.
#[derive(Deserialize)]
struct BenchFigures {
    #[serde(default)]
    downloads: Vec<Download>,
    #[serde(default)]
    pings: Vec<Ping>,
    cpu_busy_seconds: Option<f64>,
}

/// One GET of a bench file.
#[derive(Deserialize)]
struct Download {
    path: Option<String>,
    bytes_per_s: Option<f64>,
}

/// One ping.
#[derive(Deserialize)]
struct Ping {
    rtt_ms: Option<f64>,
}

/// Runs the simulator as `entry` says; a run that fails is the entry failed with its words.
pub fn measure(entry: &SimEntry, instruments: &mut dyn Instruments) -> EntryResult {
    let mut e = EntryResult::new(&entry.name, "sim", "");
    let what = format!("linklab bench {}", entry.args.join(" "));
    match instruments.bench(entry).and_then(sim_figures) {
        Ok(figures) => e.figures = figures,
        Err(why) => e.failed = Some(format!("{what}: {why:#}")),
    }
    e
}

/// The figures of one `linklab bench` document.
pub fn sim_figures(doc: serde_json::Value) -> anyhow::Result<Vec<Figure>> {
    let doc: BenchFigures = serde_json::from_value(doc).context("linklab bench's JSON")?;
    let mut figures: Vec<Figure> = Vec::new();
    for d in &doc.downloads {
        let (Some(path), Some(rate)) = (&d.path, d.bytes_per_s) else {
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
    let rtts: Vec<f64> = doc.pings.iter().filter_map(|p| p.rtt_ms).collect();
    if !rtts.is_empty() {
        figures.push(Figure::new(
            "ping rtt",
            "ms",
            Better::Lower,
            Rule::Count,
            rtts,
        ));
    }
    if let Some(busy) = doc.cpu_busy_seconds {
        figures.push(Figure::new(
            "cpu busy",
            "s",
            Better::Lower,
            Rule::Count,
            vec![busy],
        ));
    }
    Ok(figures)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_file_a_figure_with_a_sample_per_get() {
        let doc = serde_json::json!({
            "pings": [{"seq": 0, "rtt_ms": 1.5}, {"seq": 1, "rtt_ms": null}, {"seq": 2, "rtt_ms": 2.5}],
            "downloads": [
                {"path": "/10kB.txt", "bytes_per_s": 50000.0},
                {"path": "/10kB.txt", "bytes_per_s": 60000.0},
                {"path": "/1MB.txt", "bytes_per_s": null},
            ],
            "cpu_busy_seconds": 0.25,
            "seed": 1,
        });
        let f = sim_figures(doc).unwrap();
        let names: Vec<&str> = f.iter().map(|f| f.name.as_str()).collect();
        assert_eq!(names, ["get /10kB.txt", "ping rtt", "cpu busy"]);
        assert_eq!(f[0].samples, [50.0, 60.0]);
        assert_eq!(f[1].samples, [1.5, 2.5]);
        assert_eq!(f[2].samples, [0.25]);
    }
}
