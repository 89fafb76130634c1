//! Where a probe run's outputs go (the page and the JSON), and the watchdog that writes them
//! when a step overruns `--duration`.

use std::io::Write as _;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Context;

use super::{lock, Step, OVERRUN};
use linklab_results::probe::ProbeReport;
use linklab_results::quantity::Quantity;

/// Where the outputs go.
#[derive(Clone)]
pub struct Outputs {
    /// The page (`-o`).
    pub html: PathBuf,
    /// The JSON (`--json`), when asked.
    pub json: Option<PathBuf>,
}

impl Outputs {
    /// Writes the JSON (if asked) and the HTML page of `r`.
    pub fn write(&self, r: &ProbeReport) -> anyhow::Result<()> {
        if let Some(path) = &self.json {
            let text = serde_json::to_string_pretty(r).expect("the document serializes");
            std::fs::write(path, text + "\n")
                .with_context(|| format!("--json: cannot write {}", path.display()))?;
        }
        let name = self.json.as_deref().map_or_else(
            || format!("linklab probe {}", r.host),
            |p| p.display().to_string(),
        );
        std::fs::write(&self.html, linklab_report::probe_page(r, &name))
            .with_context(|| format!("-o: cannot write {}", self.html.display()))
    }
}

/// The last line of defence for "never past --duration": at `deadline` (the budget plus a few
/// seconds) a step still running is abandoned; what was measured is written and the run ends.
/// Setting the flag it returns (the run ended in time) disarms it.
pub fn watchdog(
    doc: Arc<Mutex<ProbeReport>>,
    out: Outputs,
    started: Instant,
    deadline: Instant,
) -> Arc<AtomicBool> {
    let disarmed = Arc::new(AtomicBool::new(false));
    let flag = Arc::clone(&disarmed);
    std::thread::spawn(move || {
        while Instant::now() < deadline {
            if flag.load(Ordering::Relaxed) {
                return;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            std::thread::sleep(left.min(Duration::from_millis(200)));
        }
        if flag.load(Ordering::Relaxed) {
            return;
        }
        let mut r = lock(&doc).clone();
        let running = Step::ALL
            .iter()
            .find(|s| !r.steps.iter().any(|x| x.name == s.name()))
            .map_or("the end", |s| s.name());
        let what = format!(
            "stopped: step {running} was still running {} s past --duration",
            OVERRUN.as_secs()
        );
        r.failures.push(what.clone());
        r.wall = Quantity::new(started.elapsed().as_secs_f64(), "s");
        let written = out.write(&r);
        eprint!("\r\x1b[2K");
        let _ = std::io::stderr().flush();
        match written {
            Ok(()) => eprintln!("linklab: error: {what} (the report has what was measured)"),
            Err(e) => eprintln!("linklab: error: {what}; {e:#}"),
        }
        std::process::exit(1);
    });
    disarmed
}
