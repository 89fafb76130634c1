//! `linklab track table`'s table: a stored run as Markdown between two markers in a file
//! (`<!-- track:NAME begin -->` and `<!-- track:NAME end -->`), so a README's figures are the
//! store's, not pasted (and a check can tell when the README's table is not the run's).

use anyhow::bail;

use crate::run::{EntryResult, Run};
use crate::tables::num;

/// `run` as a table, each entry's figures also given as a ratio of entry `reference`'s where
/// one is named (an error when the run has no such entry).
pub fn table(run: &Run, reference: Option<&str>) -> anyhow::Result<String> {
    if let Some(r) = reference {
        if run.entry(r).is_none() {
            bail!(
                "--reference {r}: run {:?} has no entry {r}",
                run.stamp.label
            );
        }
    }
    Ok(markdown(&run.entries, reference))
}

/// The words a known figure goes by in a table; others by their stored name.
fn figure_words(name: &str) -> &str {
    match name {
        "flash_bytes" => "flash (allocated sections with contents)",
        "static_ram_bytes" => "static RAM (allocated writable sections, stack apart)",
        "rx_instr_per_byte" => "instructions per payload byte received",
        "tx_instr_per_byte" => "instructions per payload byte sent",
        "stack_peak_bytes" => "stack: deepest use seen",
        "rx_mbit_s" => "Mbit/s received at a fixed instruction rate",
        "tx_mbit_s" => "Mbit/s sent at a fixed instruction rate",
        other => other,
    }
}

/// A run's entries as a table: a row per figure (in the order the entries first give them), a
/// column per entry; a cell is the median, its range when the samples differ, and its ratio to
/// the reference entry's median.
pub fn markdown(entries: &[EntryResult], reference: Option<&str>) -> String {
    let mut names: Vec<(&str, &str)> = Vec::new();
    for e in entries {
        for f in &e.figures {
            if !names.iter().any(|(n, _)| *n == f.name) {
                names.push((&f.name, &f.unit));
            }
        }
    }
    let mut out = String::from("| figure |");
    for e in entries {
        out.push_str(&format!(" {} |", e.name));
    }
    out.push_str("\n|---|");
    out.push_str(&"---|".repeat(entries.len()));
    out.push('\n');
    let reference = reference.and_then(|r| entries.iter().find(|e| e.name == r));
    for (name, unit) in names {
        out.push_str(&format!("| {} ({unit}) |", figure_words(name)));
        for e in entries {
            let cell = match (&e.failed, e.figure(name)) {
                (Some(why), _) => format!("failed: {why}"),
                (None, None) => "-".into(),
                (None, Some(f)) => {
                    let (lo, hi) = f.range();
                    let mut c = if lo == hi {
                        num(f.median())
                    } else {
                        format!("{} ({}–{})", num(f.median()), num(lo), num(hi))
                    };
                    let base = reference
                        .filter(|r| r.name != e.name)
                        .and_then(|r| r.figure(name));
                    if let Some(b) = base.filter(|b| b.median() != 0.0) {
                        c.push_str(&format!(", {:.2}×", f.median() / b.median()));
                    }
                    c
                }
            };
            out.push_str(&format!(" {cell} |"));
        }
        out.push('\n');
    }
    out
}

/// `text` with what lies between block `name`'s markers replaced by `table`; `None` when
/// the markers are missing or out of order.
pub fn replace_block(text: &str, name: &str, table: &str) -> Option<String> {
    let begin = format!("<!-- track:{name} begin -->\n");
    let end = format!("<!-- track:{name} end -->");
    let start = text.find(&begin)? + begin.len();
    let stop = start + text[start..].find(&end)?;
    Some(format!("{}{table}{}", &text[..start], &text[stop..]))
}

#[cfg(test)]
mod tests {
    use super::*;
    use linklab_results::track::{Better, Figure, Rule};

    fn entry(name: &str, flash: f64, rx: &[f64]) -> EntryResult {
        let mut e = EntryResult::new(name, "image", "mps2-an385");
        e.figures.push(Figure::new(
            "flash_bytes",
            "B",
            Better::Lower,
            Rule::Exact,
            vec![flash],
        ));
        e.figures.push(Figure::new(
            "rx_instr_per_byte",
            "instr/B",
            Better::Lower,
            Rule::Count,
            rx.to_vec(),
        ));
        e
    }

    #[test]
    fn a_run_becomes_a_table_with_ranges_and_ratios() {
        let entries = [
            entry("lwip", 40000.0, &[3.5]),
            entry("main", 20000.0, &[2.0, 1.5, 2.5]),
        ];
        let t = markdown(&entries, Some("lwip"));
        assert_eq!(
            t,
            "| figure | lwip | main |\n|---|---|---|\n\
             | flash (allocated sections with contents) (B) | 40000 | 20000, 0.50× |\n\
             | instructions per payload byte received (instr/B) | 3.5 | 2 (1.5–2.5), 0.57× |\n"
        );
    }

    #[test]
    fn only_the_marked_block_changes() {
        let text = "a\n<!-- track:baseline begin -->\nold\n<!-- track:baseline end -->\nb\n";
        assert_eq!(
            replace_block(text, "baseline", "new\n").unwrap(),
            "a\n<!-- track:baseline begin -->\nnew\n<!-- track:baseline end -->\nb\n"
        );
        assert!(replace_block(text, "other", "x").is_none());
        assert!(replace_block(
            "<!-- track:baseline end -->\n<!-- track:baseline begin -->\n",
            "baseline",
            "x"
        )
        .is_none());
    }
}
