//! `linklab report`: reads linklab's JSON documents and writes them as one self-contained HTML
//! page (`linklab_report::page`).

use std::path::PathBuf;

use anyhow::Context;

use linklab_report::{Document, Input};

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

/// Runs `linklab report`: every input read (one line naming the first that is not one of
/// linklab's documents, and no page), then the page written.
pub fn run(args: Args) -> anyhow::Result<()> {
    let inputs = args
        .inputs
        .iter()
        .map(|path| {
            let name = path.display().to_string();
            let text =
                std::fs::read_to_string(path).with_context(|| format!("{name}: cannot read"))?;
            let document = Document::from_json(&text, &name)?;
            Ok(Input { name, document })
        })
        .collect::<anyhow::Result<Vec<Input>>>()?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let html = linklab_report::page(&inputs, now);
    std::fs::write(&args.output, html)
        .with_context(|| format!("-o: cannot write {}", args.output.display()))?;
    println!(
        "linklab report: wrote {} ({} result{})",
        args.output.display(),
        inputs.len(),
        if inputs.len() == 1 { "" } else { "s" }
    );
    Ok(())
}
