//! The side-by-side table (Markdown, as the firmware README has it) and its JSON.

use std::path::Path;

use anyhow::Context;
use serde_json::{json, Value};

use linklab_emu::counted::measure::{Counted, Transfer};
use linklab_emu::elf::Size;

/// One image's column: its runs, sizes and the device's own count where there is one.
pub struct Column {
    pub label: String,
    pub elf: String,
    pub runs: Vec<Counted>,
    pub size: Size,
    /// `linklab emu cost` on the same image (instructions per byte received, sent).
    pub device_count: Option<(f64, f64)>,
    /// Throughput at 31.25 MIPS, device's figure (receive, send Mbit/s).
    pub throughput: Option<(f64, f64)>,
}

/// "a" or "a–b" over the runs, `digits` decimals.
fn range(values: &[f64], digits: usize) -> String {
    let lo = values.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    if values.is_empty() {
        return "—".into();
    }
    let (a, b) = (format!("{lo:.digits$}"), format!("{hi:.digits$}"));
    if a == b {
        a
    } else {
        format!("{a}–{b}")
    }
}

fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len().max(1) as f64
}

/// Bytes with a thin space every three digits, as the READMEs write them.
pub fn bytes(n: u64) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, c) in s.chars().enumerate() {
        if i > 0 && (s.len() - i).is_multiple_of(3) {
            out.push(' ');
        }
        out.push(c);
    }
    format!("{out} B")
}

/// A row's cell of a column: its text and the value its ratio to the reference's is taken
/// of (None: no ratio).
type Cell<'a> = dyn Fn(&Column) -> Option<(String, Option<f64>)> + 'a;

/// The table: one column per image, the first the reference (lwIP); every other cell has
/// its ratio to the reference's.
pub fn table(columns: &[Column]) -> String {
    let mut t = String::from("| figure |");
    for c in columns {
        t.push_str(&format!(" {} |", c.label));
    }
    t.push_str("\n|---|");
    t.push_str(&"---|".repeat(columns.len()));
    t.push('\n');
    let per_byte = |c: &Column, pick: fn(&Counted) -> &Transfer| -> Vec<f64> {
        c.runs.iter().map(|r| pick(r).per_byte).collect()
    };
    let reference = columns.first();
    let mut row = |name: &str, cell: &Cell<'_>| {
        t.push_str(&format!("| {name} |"));
        let base = reference.and_then(cell).and_then(|(_, v)| v);
        for (i, c) in columns.iter().enumerate() {
            match cell(c) {
                Some((text, value)) => {
                    let ratio = match (i, base, value) {
                        (0, _, _) => String::new(),
                        (_, Some(b), Some(v)) if b > 0.0 => format!(" ({:.2}×)", v / b),
                        _ => String::new(),
                    };
                    t.push_str(&format!(" {text}{ratio} |"));
                }
                None => t.push_str(" — |"),
            }
        }
        t.push('\n');
    };
    row(
        "instructions per payload byte received (10 MiB)",
        &|c: &Column| {
            let v = per_byte(c, |r| &r.receive);
            (!v.is_empty()).then(|| (format!("**{}**", range(&v, 2)), Some(mean(&v))))
        },
    );
    row(
        "instructions per payload byte sent (10 MiB)",
        &|c: &Column| {
            let v = per_byte(c, |r| &r.send);
            (!v.is_empty()).then(|| (format!("**{}**", range(&v, 2)), Some(mean(&v))))
        },
    );
    row(
        "the device's own count (`linklab emu cost`, 4 MB), received / sent",
        &|c: &Column| {
            c.device_count
                .map(|(rx, tx)| (format!("{rx:.2} / {tx:.2}"), None))
        },
    );
    row("idle instructions per second", &|c: &Column| {
        let v: Vec<f64> = c.runs.iter().map(|r| r.idle_rate).collect();
        (!v.is_empty()).then(|| (format!("{:.0}", mean(&v)), None))
    });
    row(
        "Mbit/s at 31.25 MIPS (device clock), received / sent",
        &|c: &Column| {
            c.throughput
                .map(|(rx, tx)| (format!("{rx:.1} / {tx:.1}"), None))
        },
    );
    row("flash (allocated sections with contents)", &|c: &Column| {
        Some((bytes(c.size.flash), Some(c.size.flash as f64)))
    });
    row(
        "static RAM (allocated writable sections, stack apart)",
        &|c: &Column| Some((bytes(c.size.static_ram), Some(c.size.static_ram as f64))),
    );
    row("stack: deepest use seen (reserve)", &|c: &Column| {
        let peak = c
            .runs
            .iter()
            .filter_map(|r| r.stack_peak.as_ref().ok().copied())
            .max()?;
        let reserve = if c.size.stack_reserve > 0 {
            format!(" ({})", bytes(c.size.stack_reserve))
        } else {
            String::new()
        };
        Some((format!("{}{reserve}", bytes(peak)), None))
    });
    t
}

/// Where the instructions of each transfer went (with `--profile`), per image.
pub fn profiles(columns: &[Column]) -> String {
    let mut out = String::new();
    for c in columns {
        for (way, pick) in [
            (
                "received",
                (|r: &Counted| &r.receive) as fn(&Counted) -> &Transfer,
            ),
            ("sent", |r: &Counted| &r.send),
        ] {
            let Some(t) = c.runs.first().map(pick) else {
                continue;
            };
            if t.top.is_empty() {
                continue;
            }
            out.push_str(&format!(
                "\n{} — {way}: {:.2} instructions per byte ({})\n",
                c.label, t.per_byte, t.tool
            ));
            for (f, v) in &t.top {
                out.push_str(&format!("  {v:7.3}  {f}\n"));
            }
        }
    }
    out
}

/// Every figure as JSON.
pub fn json(columns: &[Column], load: &str) -> Value {
    let transfer = |t: &Transfer| {
        json!({
            "tool": t.tool, "bytes": t.bytes, "host_s": t.host_s, "instructions": t.insns,
            "instructions_per_byte": t.per_byte,
            "top_functions": t.top.iter().map(|(f, v)| json!([f, v])).collect::<Vec<_>>(),
        })
    };
    json!({
        "method": "free-running QEMU 7.2 mps2-an385 with linklab's counting plugin; idle rate subtracted",
        "load_average": load,
        "images": columns.iter().map(|c| json!({
            "label": c.label,
            "elf": c.elf,
            "flash_bytes": c.size.flash,
            "static_ram_bytes": c.size.static_ram,
            "stack_reserve_bytes": c.size.stack_reserve,
            "device_count": c.device_count.map(|(rx, tx)| json!({"rx": rx, "tx": tx})),
            "throughput_mbps": c.throughput.map(|(rx, tx)| json!({"rx": rx, "tx": tx})),
            "runs": c.runs.iter().map(|r| json!({
                "idle_instructions_per_s": r.idle_rate,
                "receive": transfer(&r.receive),
                "send": transfer(&r.send),
                "stack_peak_bytes": r.stack_peak.as_ref().ok(),
            })).collect::<Vec<_>>(),
        })).collect::<Vec<_>>(),
    })
}

/// Marks of the table's place in `docs/lwip.md` (the `track:NAME` form, so `linklab track`
/// can find and regenerate it too).
const BEGIN: &str = "<!-- track:lwip-side-by-side begin -->";
const END: &str = "<!-- track:lwip-side-by-side end -->";

/// Replaces the table between the marks in `readme` (the marks must be there).
pub fn write_readme(readme: &Path, text: &str) -> anyhow::Result<()> {
    let old = std::fs::read_to_string(readme)
        .with_context(|| format!("cannot read {}", readme.display()))?;
    let (head, rest) = old
        .split_once(BEGIN)
        .with_context(|| format!("{} has no {BEGIN} line", readme.display()))?;
    let (_, tail) = rest
        .split_once(END)
        .with_context(|| format!("{} has no {END} line", readme.display()))?;
    let new = format!("{head}{BEGIN}\n{text}{END}{tail}");
    std::fs::write(readme, new).with_context(|| format!("cannot write {}", readme.display()))
}
