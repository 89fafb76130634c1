//! The two prediction tables of `docs/sim.md`, linklab-sim in depth ("Results" and "Why,
//! from the same files", each between its `track:` markers), are the files `linklab emu
//! predict` wrote into `crates/linklab/tests/data/predict/`: this test renders them from those files
//! and fails when the page does not hold them verbatim, printing the tables to paste, and
//! when the page's count of means within ±15 % is not the files'. The prose around the
//! tables is not checked: after a rerun it is updated by hand.

use std::path::Path;

use linklab_results::emu::predict::{PredictReport, PredictRun, TestFigures};

/// The matrix's files, in the README's order: image, then rate.
const FILES: [&str; 4] = [
    "riscv32-virt",
    "riscv32-virt-embassy",
    "riscv32-virt-phy10-line",
    "mps2-an385",
];
/// `-icount shift=N` for 125, 62.5 and 31.25 MIPS.
const SHIFTS: [u32; 3] = [3, 4, 5];
/// The transfers of each run, in the order of each file's `summary`.
const TRANSFERS: [&str; 3] = ["receive", "send", "curl"];
/// An error past this is printed in bold: the goal the tables are held to.
const GOAL_PCT: f64 = 15.0;

/// The figures of one run's `transfer` (one of [`TRANSFERS`]).
fn transfer_of<'a>(run: &'a PredictRun, transfer: &str) -> &'a TestFigures {
    match transfer {
        "receive" => &run.receive,
        "send" => &run.send,
        "curl" => &run.curl,
        _ => panic!("no transfer {transfer} in a predict run"),
    }
}

/// A whole number with a space between thousands (the READMEs' style).
fn thousands(x: f64) -> String {
    let digits = format!("{:.0}", x.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(' ');
        }
        out.push(c);
    }
    if x < -0.5 {
        out.insert(0, '−');
    }
    out
}

/// A signed percentage with a real minus sign, bold past the goal.
fn pct(x: f64) -> String {
    let s = format!("{x:+.1} %").replace('-', "−");
    if x.abs() > GOAL_PCT {
        format!("**{s}**")
    } else {
        s
    }
}

fn share(x: f64) -> String {
    format!("{:.0} %", x * 100.0)
}

fn range(values: &[f64], fmt: impl Fn(f64) -> String) -> String {
    let min = values.iter().copied().fold(f64::INFINITY, f64::min);
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("[{}–{}]", fmt(min), fmt(max))
}

/// The README's two tables' rows and the count of means within the goal.
fn render(dir: &Path) -> (Vec<String>, Vec<String>, usize) {
    let (mut rates, mut costs, mut within) = (Vec::new(), Vec::new(), 0);
    for file in FILES {
        for shift in SHIFTS {
            let path = dir.join(format!("{file}-shift{shift}.json"));
            let text = std::fs::read_to_string(&path)
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            let j: PredictReport = linklab_testkit::docs::parse(&text);
            // The harness the README describes: the host's tail-loss probe off.
            assert!(
                !j.host_tail_loss_probe,
                "{} was not run with the host's tail-loss probe off (rerun linklab emu predict)",
                path.display()
            );
            let head = format!("| `{}` | {} |", j.profile, j.mips);
            let (mut rate_cells, mut cost_cells) = (Vec::new(), Vec::new());
            for (k, transfer) in TRANSFERS.iter().enumerate() {
                let sum = &j.summary[k];
                let emulated = &sum.emulated_kb_per_s;
                // From the means, not the file's `error_of_mean_pct` (rounded to 0.1): a
                // mean at +15.006 % misses the goal and is printed bold as one.
                let predicted = sum.predicted_kb_per_s.mean;
                let error = (predicted / emulated.mean - 1.0) * 100.0;
                if error.abs() <= GOAL_PCT {
                    within += 1;
                }
                rate_cells.push(format!(
                    "{} [{}–{}] → {}",
                    thousands(emulated.mean),
                    thousands(emulated.min),
                    thousands(emulated.max),
                    thousands(predicted)
                ));
                rate_cells.push(pct(error));
                let runs: Vec<&TestFigures> =
                    j.runs.iter().map(|r| transfer_of(r, transfer)).collect();
                let per_byte: Vec<f64> = runs.iter().map(|r| r.instructions_per_byte).collect();
                let busy: Vec<f64> = runs.iter().map(|r| r.device_busy_share).collect();
                cost_cells.push(format!(
                    "{:.2} {} → {:.2}",
                    sum.instructions_per_byte.mean,
                    range(&per_byte, |x| format!("{x:.2}")),
                    sum.predicted_instructions_per_byte
                ));
                cost_cells.push(pct(sum.instructions_per_byte_error_pct));
                cost_cells.push(format!(
                    "{} {} → {}",
                    share(busy.iter().sum::<f64>() / busy.len() as f64),
                    range(&busy, |x| format!("{:.0}", x * 100.0)),
                    share(sum.predicted_busy_share)
                ));
            }
            rates.push(format!("{head} {} |", rate_cells.join(" | ")));
            costs.push(format!("{head} {} |", cost_cells.join(" | ")));
        }
    }
    (rates, costs, within)
}

#[test]
fn readme_tables_are_the_stored_predictions() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let (rates, costs, within) =
        render(&Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/predict"));
    let readme_path = root.join("docs/sim.md");
    let readme = std::fs::read_to_string(&readme_path).expect("docs/sim.md");
    let lines: Vec<&str> = readme.lines().collect();
    let table_holds = |rows: &[String]| {
        // The header's rule, then the rows in order, then the table's end.
        lines.windows(rows.len() + 2).any(|w| {
            w[0].starts_with("|---")
                && w[1..=rows.len()]
                    .iter()
                    .zip(rows)
                    .all(|(l, r)| *l == r.as_str())
                && !w[rows.len() + 1].starts_with('|')
        })
    };
    let count = format!("{within} of the 36 means are within it");
    assert!(
        table_holds(&rates) && table_holds(&costs) && readme.contains(&count),
        "{} does not hold the stored predictions as two whole tables (rates: {}, costs: {}; \
         the count should read \"{count}\"). The tables from crates/linklab/tests/data/predict:\n\n{}\n\n{}\n",
        readme_path.display(),
        table_holds(&rates),
        table_holds(&costs),
        rates.join("\n"),
        costs.join("\n")
    );
}

#[test]
fn numbers_print_as_the_readmes_do() {
    assert_eq!(thousands(1234567.4), "1 234 567");
    assert_eq!(thousands(999.6), "1 000");
    assert_eq!(thousands(12.0), "12");
    assert_eq!(pct(-21.04), "**−21.0 %**");
    assert_eq!(pct(15.0), "+15.0 %");
    assert_eq!(pct(15.006), "**+15.0 %**");
    assert_eq!(pct(3.25), "+3.2 %");
}
