//! The report section of a `linklab bench --json` result (the experiment of Niccle's MAC write-up): pings, the
//! download table with CRC checks, and the netdev counters. Read from untyped JSON so that
//! fields `bench` adds later do not break the report.

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
pub fn render(v: &Value, source: &str, index: usize) -> Markup {
    let profile = v.get("profile").map(text).unwrap_or_else(|| "–".into());
    let link = v.get("link");
    let rate = link
        .and_then(|l| l.get("rate"))
        .map(text)
        .unwrap_or_else(|| "–".into());
    let duplex = link
        .and_then(|l| l.get("duplex"))
        .map(text)
        .unwrap_or_else(|| "–".into());
    let pings: Vec<f64> = v
        .get("pings")
        .and_then(Value::as_array)
        .map_or(Vec::new(), |a| {
            a.iter()
                .filter_map(|p| p.get("rtt_ms").and_then(Value::as_f64))
                .collect()
        });
    let downloads: Vec<&Value> = v
        .get("downloads")
        .and_then(Value::as_array)
        .map_or(Vec::new(), |a| a.iter().collect());
    let limit = v.get("limit_bytes_per_s").and_then(Value::as_f64);
    let rates: Vec<f64> = downloads
        .iter()
        .filter_map(|d| d.get("bytes_per_s").and_then(Value::as_f64))
        .collect();
    let bad_crc = downloads.iter().filter(|d| !crc_ok(d)).count();
    html! {
        section class="card bench" {
            h2 { "Bench · " (profile) }
            p class="source" { (source) " · link " (rate) " " (duplex) " duplex" }
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
                @if let Some(c) = v.get("conservation") {
                    @let class = if c.as_str() == Some("ok") { "good" } else { "bad" };
                    (fact(class, &text(c), "counter conservation"))
                }
                @if let Some(why) = v.get("stopped").filter(|w| !w.is_null()) {
                    (fact("bad", "stopped", &text(why)))
                }
            }
            (charts(index, &pings, (&downloads, &rates), limit))
            (downloads_table(&downloads))
            (counters(v))
        }
    }
}

/// The charts: the pings' round trips, the downloads' throughput against the limit.
fn charts(
    index: usize,
    pings: &[f64],
    (downloads, rates): (&[&Value], &[f64]),
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
        let names: Vec<String> = downloads
            .iter()
            .map(|d| short_name(d.get("path").map(text).unwrap_or_default()))
            .collect();
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
                .filter_map(|(i, d)| {
                    d.get("bytes_per_s")
                        .and_then(Value::as_f64)
                        .map(|r| ((i + 1) as f64, r / 1e3))
                })
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
fn downloads_table(downloads: &[&Value]) -> Markup {
    html! {
        h3 { "Downloads" }
        div class="tablewrap" {
            table {
                tr {
                    th class="l" { "path" } th { "bytes" } th { "seconds" } th { "kB/s" }
                    th { "CRC-32" } th { "expected" } th { "check" }
                }
                @for d in downloads {
                    @let ok = crc_ok(d);
                    tr {
                        td class="l" { (d.get("path").map(text).unwrap_or_default()) }
                        td { (d.get("bytes").map(text).unwrap_or_default()) }
                        td { (d.get("seconds").and_then(Value::as_f64).map(num).unwrap_or_default()) }
                        td {
                            (d.get("bytes_per_s")
                                .and_then(Value::as_f64)
                                .map(|r| num(r / 1e3))
                                .unwrap_or_default())
                        }
                        td { (crc_text(d.get("crc32"))) }
                        td { (crc_text(d.get("expected_crc32"))) }
                        td class=(if ok { "ok" } else { "warn" }) { (if ok { "match" } else { "MISMATCH" }) }
                    }
                }
            }
        }
    }
}

/// The counters: `counters` (the device MAC, netdev names) first, then any other `*counters`
/// object (PHY, host, impairments), nested objects flattened as `outer.inner`.
fn counters(v: &Value) -> Markup {
    let mut blocks: Vec<(&str, Vec<(String, &Value)>)> = Vec::new();
    if let Some(obj) = v.as_object() {
        let mut keys: Vec<&String> = obj.keys().filter(|k| k.ends_with("counters")).collect();
        keys.sort_by_key(|k| (k.as_str() != "counters", k.as_str()));
        for key in keys {
            let Some(fields) = obj[key].as_object() else {
                continue;
            };
            let mut rows = Vec::new();
            for (name, value) in fields {
                match value.as_object() {
                    Some(inner) => {
                        rows.extend(inner.iter().map(|(n, x)| (format!("{name}.{n}"), x)));
                    }
                    None => rows.push((name.clone(), value)),
                }
            }
            blocks.push((key.as_str(), rows));
        }
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
                                td class=[alarming(name, value).then_some("warn")] { (text(value)) }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// A counter worth a second look: an error, miss, drop or loss counted at least once.
fn alarming(name: &str, value: &Value) -> bool {
    value.as_f64().unwrap_or(0.0) > 0.0
        && [
            "error", "missed", "drop", "fifo", "overrun", "lost", "corrupt", "full",
        ]
        .iter()
        .any(|w| name.contains(w))
}

/// Any JSON value as short text (strings without quotes).
fn text(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        Value::Null => "–".into(),
        other => other.to_string(),
    }
}

/// The last path component, for chart labels.
fn short_name(path: String) -> String {
    let name = path.rsplit('/').next().unwrap_or(&path).to_string();
    if name.chars().count() > 14 {
        name.chars().take(13).collect::<String>() + "…"
    } else {
        name
    }
}

/// A CRC-32 as 8 hex digits (from a number or a string).
fn crc_text(v: Option<&Value>) -> String {
    match v {
        Some(Value::Number(n)) => n.as_u64().map_or(n.to_string(), |x| format!("{x:08x}")),
        Some(other) => text(other),
        None => "–".into(),
    }
}

/// True when the download's CRC-32 equals the expected one.
fn crc_ok(d: &Value) -> bool {
    match (d.get("crc32"), d.get("expected_crc32")) {
        (Some(a), Some(b)) => crc_text(Some(a)).eq_ignore_ascii_case(&crc_text(Some(b))),
        _ => false,
    }
}
