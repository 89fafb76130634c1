//! `linklab report`: renders `probe`, `sweep`, `rtt`, `serial --selftest` and `bench` JSON results into one self-contained
//! HTML page with inline SVG charts (no scripts or fonts fetched from anywhere).

mod bench_section;
pub mod page;
mod probe_compare;
mod probe_latency;
mod probe_section;
mod probe_tables;
mod rtt_section;
mod serial_section;
pub mod svg;
mod sweep_section;

use std::path::PathBuf;

use anyhow::{bail, Context};
use serde_json::Value;

use linklab_results::probe::ProbeReport;
use linklab_results::rtt::RttReport;
use linklab_results::sweep::SweepReport;

/// Options of `linklab report`.
#[derive(clap::Args)]
pub struct Args {
    /// JSON results from `linklab probe --json`, `linklab sweep --json`, `linklab rtt --json`, `linklab serial
    /// --selftest --json` or `linklab bench --json`.
    #[arg(value_name = "FILE.json", required = true)]
    inputs: Vec<PathBuf>,
    /// The HTML file to write.
    #[arg(short = 'o', long, value_name = "FILE", default_value = "report.html")]
    output: PathBuf,
}

/// Runs `linklab report`.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mut sections = Vec::new();
    let mut sources = Vec::new();
    let mut probes: Vec<(ProbeReport, String)> = Vec::new();
    for (i, path) in args.inputs.iter().enumerate() {
        let name = path.display().to_string();
        let text = std::fs::read_to_string(path).with_context(|| format!("{name}: cannot read"))?;
        sections.push(render_result(&text, &name, i)?);
        if let Some(r) = serde_json::from_str::<Value>(&text)
            .ok()
            .filter(|v| v.get("kind").and_then(Value::as_str) == Some("probe"))
            .and_then(|v| serde_json::from_value::<ProbeReport>(v).ok())
        {
            probes.push((r, name.clone()));
        }
        sources.push(name);
    }
    // Two or more probe runs: side by side first.
    if probes.len() >= 2 {
        let runs: Vec<(&ProbeReport, &str)> = probes.iter().map(|(r, n)| (r, n.as_str())).collect();
        sections.insert(0, probe_compare::render(&runs));
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let html = page::page(&sections, &sources, &linklab_results::time::utc_time(now));
    std::fs::write(&args.output, html)
        .with_context(|| format!("-o: cannot write {}", args.output.display()))?;
    println!(
        "linklab report: wrote {} ({} result{})",
        args.output.display(),
        sources.len(),
        if sources.len() == 1 { "" } else { "s" }
    );
    Ok(())
}

/// The whole page of one probe run (what `linklab probe -o` writes; `linklab report` on its
/// JSON renders the same sections).
pub fn probe_page(r: &ProbeReport, source: &str) -> String {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    page::page(
        &[probe_section::render(r, source, 0)],
        &[source.to_string()],
        &linklab_results::time::utc_time(now),
    )
}

/// Renders one JSON result (any known kind) as an HTML section.
fn render_result(text: &str, name: &str, index: usize) -> anyhow::Result<String> {
    let v: Value = serde_json::from_str(text).with_context(|| format!("{name}: not valid JSON"))?;
    match v.get("kind").and_then(Value::as_str) {
        Some("sweep") => {
            let mut r: SweepReport =
                serde_json::from_value(v).with_context(|| format!("{name}: malformed sweep result"))?;
            // Files written before the sweep named limits get their knee recomputed, and say so.
            let note = r.upgrade();
            Ok(sweep_section::render(&r, note.as_deref(), name, index))
        }
        Some("serial-selftest") => {
            let r: linklab_results::serial::SerialReport = serde_json::from_value(v)
                .with_context(|| format!("{name}: malformed serial self-test result"))?;
            Ok(serial_section::render(&r, name, index))
        }
        Some("probe") => {
            let r: ProbeReport = serde_json::from_value(v)
                .with_context(|| format!("{name}: malformed probe result"))?;
            Ok(probe_section::render(&r, name, index))
        }
        Some("rtt") => {
            let r: RttReport = serde_json::from_value(v).with_context(|| format!("{name}: malformed rtt result"))?;
            Ok(rtt_section::render(&r, name, index))
        }
        _ if bench_section::is_bench(&v) => Ok(bench_section::render(&v, name, index)),
        _ => bail!("{name}: not a linklab probe, sweep, rtt or bench result or serial self-test (no \"kind\" field, no downloads and counters)"),
    }
}
