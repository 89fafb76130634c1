//! The report section of a `linklab bench --json` result (the experiment of Niccle's MAC write-up): pings, the
//! download table with CRC checks, and the netdev counters. Read from untyped JSON so that
//! fields `bench` adds later do not break the report.

use std::fmt::Write as _;

use maud::{Markup, PreEscaped, Render};
use serde_json::Value;

use super::svg::{num, Axis, Chart, Mark, Series};

/// Escapes text for HTML (until this section is written with the templates too).
fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One key figure in a box (the page's fact box, into this section's text).
fn fact(s: &mut String, class: &str, value: &str, what: &str) {
    s.push_str(&super::layout::fact(class, value, what).into_string());
}

/// True when `v` looks like a bench result: `"kind": "bench"`, or downloads and counters.
pub fn is_bench(v: &Value) -> bool {
    v.get("kind").and_then(Value::as_str) == Some("bench")
        || (v.get("downloads").is_some() && v.get("counters").is_some())
}

/// Renders one bench result as a `<section>`.
pub fn render(v: &Value, source: &str, index: usize) -> Markup {
    let mut s = String::new();
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
    let _ = write!(
        s,
        r#"<section class="card bench"><h2>Bench · {}</h2><p class="source">{} · link {} {} duplex</p>"#,
        esc(&profile),
        esc(source),
        esc(&rate),
        esc(&duplex)
    );

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

    s.push_str(r#"<div class="facts">"#);
    if let Some(l) = limit {
        fact(
            &mut s,
            "",
            &format!("{} kB/s", num(l / 1e3)),
            "throughput limit",
        );
    }
    if !pings.is_empty() {
        let mean = pings.iter().sum::<f64>() / pings.len() as f64;
        fact(
            &mut s,
            "",
            &format!("{} ms", num(mean)),
            &format!("mean ping of {}", pings.len()),
        );
    }
    let rates: Vec<f64> = downloads
        .iter()
        .filter_map(|d| d.get("bytes_per_s").and_then(Value::as_f64))
        .collect();
    if let Some(best) = rates.iter().copied().reduce(f64::max) {
        fact(
            &mut s,
            "",
            &format!("{} kB/s", num(best / 1e3)),
            "fastest download",
        );
    }
    let bad_crc = downloads.iter().filter(|d| !crc_ok(d)).count();
    fact(
        &mut s,
        if bad_crc > 0 { "bad" } else { "good" },
        &format!("{} / {}", downloads.len() - bad_crc, downloads.len()),
        "downloads with the expected CRC-32",
    );
    if let Some(c) = v.get("conservation") {
        let ok = c.as_str() == Some("ok");
        let class = if ok { "good" } else { "bad" };
        fact(&mut s, class, &text(c), "counter conservation");
    }
    if let Some(why) = v.get("stopped").filter(|w| !w.is_null()) {
        fact(&mut s, "bad", "stopped", &text(why));
    }
    s.push_str("</div>");

    charts(&mut s, index, &pings, (&downloads, &rates), limit);

    downloads_table(&mut s, &downloads);

    counters(&mut s, v);
    s.push_str("</section>");
    PreEscaped(s)
}

/// The charts: the pings' round trips, the downloads' throughput against the limit.
fn charts(
    s: &mut String,
    index: usize,
    pings: &[f64],
    (downloads, rates): (&[&Value], &[f64]),
    limit: Option<f64>,
) {
    s.push_str(r#"<div class="charts">"#);
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
        s.push_str(&c.render().into_string());
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
        s.push_str(&c.render().into_string());
    }
    s.push_str("</div>");
}

/// The downloads table, each download's CRC-32 checked against the expected one.
fn downloads_table(s: &mut String, downloads: &[&Value]) {
    // Downloads table.
    s.push_str(r#"<h3>Downloads</h3><div class="tablewrap"><table><tr><th class="l">path</th><th>bytes</th><th>seconds</th><th>kB/s</th><th>CRC-32</th><th>expected</th><th>check</th></tr>"#);
    for d in downloads {
        let ok = crc_ok(d);
        let _ = write!(
            s,
            r#"<tr><td class="l">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td class="{}">{}</td></tr>"#,
            esc(&d.get("path").map(text).unwrap_or_default()),
            d.get("bytes").map(text).unwrap_or_default(),
            d.get("seconds")
                .and_then(Value::as_f64)
                .map(num)
                .unwrap_or_default(),
            d.get("bytes_per_s")
                .and_then(Value::as_f64)
                .map(|r| num(r / 1e3))
                .unwrap_or_default(),
            crc_text(d.get("crc32")),
            crc_text(d.get("expected_crc32")),
            if ok { "ok" } else { "warn" },
            if ok { "match" } else { "MISMATCH" }
        );
    }
    s.push_str("</table></div>");
}

/// The counters: `counters` (the device MAC, netdev names) first, then any other `*counters`
/// object (PHY, host, impairments), nested objects flattened as `outer.inner`.
fn counters(s: &mut String, v: &Value) {
    // Counters: `counters` (the device MAC, netdev names) first, then any other `*counters`
    // object (PHY, host, impairments), nested objects flattened as `outer.inner`.
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
    if !blocks.is_empty() {
        s.push_str(r#"<h3>Counters</h3><div class="tables">"#);
        for (title, rows) in blocks {
            let _ = write!(
                s,
                r#"<div class="tablewrap"><table><tr><th class="l">{}</th><th>value</th></tr>"#,
                esc(title)
            );
            for (name, value) in rows {
                let n = value.as_f64().unwrap_or(0.0);
                let alarming = n > 0.0
                    && [
                        "error", "missed", "drop", "fifo", "overrun", "lost", "corrupt", "full",
                    ]
                    .iter()
                    .any(|w| name.contains(w));
                let _ = write!(
                    s,
                    r#"<tr><td class="l">{}</td><td{}>{}</td></tr>"#,
                    esc(&name),
                    if alarming { r#" class="warn""# } else { "" },
                    esc(&text(value))
                );
            }
            s.push_str("</table></div>");
        }
        s.push_str("</div>");
    }
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
