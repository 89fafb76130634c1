//! The report section of a `linklab bench --json` result (the experiment of Niccle's MAC write-up): pings, the
//! download table with CRC checks, and the netdev counters. Read through its
//! type, `linklab_results::bench::BenchReport`.

use linklab_results::bench::{BenchReport, Download};
use maud::{html, Markup};
use serde_json::Value;

use super::layout::fact;
use super::svg::{num, Axis, Chart, Mark, Series};

/// True when `v` looks like a bench result: `"kind": "bench"`, or downloads and counters.
pub fn is_bench(v: &Value) -> bool {
    v.get("kind").and_then(Value::as_str) == Some("bench")
        || (v.get("downloads").is_some() && v.get("counters").is_some())
}

/// Renders one bench result as a `<section>`.
pub fn render(r: &BenchReport, source: &str, index: usize) -> Markup {
    let pings: Vec<f64> = r.pings.iter().filter_map(|p| p.rtt_ms).collect();
    let downloads = &r.downloads;
    let limit = r.limit_bytes_per_s;
    let rates: Vec<f64> = downloads.iter().map(|d| d.bytes_per_s).collect();
    let bad_crc = downloads.iter().filter(|d| !d.crc_ok()).count();
    html! {
        section class="card bench" {
            h2 { "Bench · " (dash(&r.profile)) }
            p class="source" { (source) " · link " (dash(&r.link.rate)) " " (dash(&r.link.duplex)) " duplex" }
            div class="facts" {
                @if let Some(l) = limit {
                    (fact("", &format!("{} kB/s", num(l / 1e3)), "throughput limit"))
                }
                @if !pings.is_empty() {
                    @let mean = pings.iter().sum::<f64>() / pings.len() as f64;
                    (fact("", &format!("{} ms", num(mean)), &format!("mean ping of {}", pings.len())))
                }
                @if let Some(best) = rates.iter().copied().reduce(f64::max) {
                    (fact("", &format!("{} kB/s", num(best / 1e3)), "fastest download"))
                }
                (fact(
                    if bad_crc > 0 { "bad" } else { "good" },
                    &format!("{} / {}", downloads.len() - bad_crc, downloads.len()),
                    "downloads with the expected CRC-32",
                ))
                @if let Some(c) = &r.conservation {
                    @let class = if c == "ok" { "good" } else { "bad" };
                    (fact(class, c, "counter conservation"))
                }
                @if let Some(why) = &r.stopped {
                    (fact("bad", "stopped", why))
                }
            }
            (charts(index, &pings, (downloads, &rates), limit))
            (downloads_table(downloads))
            (counters(r))
        }
    }
}

fn charts(
    index: usize,
    pings: &[f64],
    (downloads, rates): (&[Download], &[f64]),
    limit: Option<f64>,
) -> Markup {
    let mut charts = Vec::new();
    if !pings.is_empty() {
        let mut c = Chart::new(
            &format!("bench-{index}-pings"),
            "Ping round-trip times",
            533.0,
            300.0,
            Axis::categories(
                "ping number",
                &(1..=pings.len()).map(|i| i.to_string()).collect::<Vec<_>>(),
            ),
            Axis::from_zero("round trip (ms)", pings.iter().copied(), 0.001),
        );
        c.series.push(Series {
            name: "rtt".into(),
            color: "#0d9488",
            mark: Mark::Bars { width: 0.8 },
            right: false,
            points: pings
                .iter()
                .enumerate()
                .map(|(i, &r)| ((i + 1) as f64, r))
                .collect(),
        });
        charts.push(c);
    }
    if !rates.is_empty() {
        let names: Vec<String> = downloads.iter().map(|d| short_name(&d.path)).collect();
        let mut values: Vec<f64> = rates.iter().map(|r| r / 1e3).collect();
        values.extend(limit.map(|l| l / 1e3));
        let mut c = Chart::new(
            &format!("bench-{index}-downloads"),
            "Download throughput",
            533.0,
            300.0,
            Axis::categories("download", &names),
            Axis::from_zero("throughput (kB/s)", values, 0.001),
        );
        c.series.push(Series {
            name: "throughput".into(),
            color: "#2563eb",
            mark: Mark::Bars { width: 0.6 },
            right: false,
            points: downloads
                .iter()
                .enumerate()
                .map(|(i, d)| ((i + 1) as f64, d.bytes_per_s / 1e3))
                .collect(),
        });
        if let Some(l) = limit {
            c.series.push(Series {
                name: "limit".into(),
                color: "#dc2626",
                mark: Mark::Line { dashed: true },
                right: false,
                points: vec![(0.5, l / 1e3), (names.len() as f64 + 0.5, l / 1e3)],
            });
        }
        charts.push(c);
    }
    html! {
        div class="charts" {
            @for c in &charts { (c) }
        }
    }
}

/// The downloads table, each download's CRC-32 checked against the expected one.
fn downloads_table(downloads: &[Download]) -> Markup {
    html! {
        h3 { "Downloads" }
        div class="tablewrap" {
            table {
                tr {
                    th class="l" { "path" } th { "bytes" } th { "seconds" } th { "kB/s" }
                    th { "CRC-32" } th { "expected" } th { "check" }
                }
                @for d in downloads {
                    @let ok = d.crc_ok();
                    tr {
                        td class="l" { (d.path) }
                        td { (d.bytes) }
                        td { (num(d.seconds)) }
                        td { (num(d.bytes_per_s / 1e3)) }
                        td { (crc_text(d.crc32)) }
                        td { (crc_text(d.expected_crc32)) }
                        td class=(if ok { "ok" } else { "warn" }) { (if ok { "match" } else { "MISMATCH" }) }
                    }
                }
            }
        }
    }
}

/// The counters: `counters` (the device MAC, netdev names) first, then the PHY's, the host's
/// and the impairments' (these flattened as `way.count`), those the document has.
fn counters(r: &BenchReport) -> Markup {
    let mut blocks: Vec<(&str, Vec<(String, u64)>)> = Vec::new();
    if !r.counters.0.is_empty() {
        blocks.push(("counters", r.counters.0.clone()));
    }
    let named = |fields: &[(&str, u64)]| -> Vec<(String, u64)> {
        fields.iter().map(|&(n, v)| (n.to_string(), v)).collect()
    };
    if let Some(h) = &r.host_counters {
        blocks.push(("host_counters", named(&h.fields())));
    }
    if let Some(i) = &r.impairment_counters {
        let ways = [("to_device", &i.to_device), ("to_host", &i.to_host)];
        let rows = ways
            .iter()
            .flat_map(|(way, c)| c.fields().map(|(n, v)| (format!("{way}.{n}"), v)))
            .collect();
        blocks.push(("impairment_counters", rows));
    }
    if let Some(p) = &r.phy_counters {
        blocks.push(("phy_counters", named(&p.fields())));
    }
    if blocks.is_empty() {
        return html! {};
    }
    html! {
        h3 { "Counters" }
        div class="tables" {
            @for (title, rows) in &blocks {
                div class="tablewrap" {
                    table {
                        tr { th class="l" { (title) } th { "value" } }
                        @for (name, value) in rows {
                            tr {
                                td class="l" { (name) }
                                td class=[alarming(name, *value).then_some("warn")] { (value) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A counter worth a second look: an error, miss, drop or loss counted at least once.
fn alarming(name: &str, value: u64) -> bool {
    value > 0
        && [
            "error", "missed", "drop", "fifo", "overrun", "lost", "corrupt", "full",
        ]
        .iter()
        .any(|w| name.contains(w))
}

/// "–" for an empty text.
fn dash(text: &str) -> &str {
    if text.is_empty() {
        "–"
    } else {
        text
    }
}

/// The last path component, for chart labels.
fn short_name(path: &str) -> String {
    let name = path.rsplit('/').next().unwrap_or(path).to_string();
    if name.chars().count() > 14 {
        name.chars().take(13).collect::<String>() + "…"
    } else {
        name
    }
}

/// A CRC-32 as 8 hex digits, "–" when the download has none.
fn crc_text(crc: Option<u32>) -> String {
    crc.map_or_else(|| "–".into(), |c| format!("{c:08x}"))
}
