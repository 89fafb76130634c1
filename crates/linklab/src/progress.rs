//! The progress lines of the commands that measure for a while, on indicatif: drawn on stderr
//! when it is a terminal, nothing otherwise (stderr then carries only the error line, and
//! stdout the results as they come).
//!
//! - [`StepLine`]: probe's line, `probe: step 3/9: echo-tcp · 41 s left`, redrawn twice a
//!   second; the lines printed under it erase it and draw it again;
//! - [`StepBar`]: sweep's bar, `[#######.......] step 3/12 at 150 Mbit/s`, drawn while a step
//!   runs and erased when its row is printed.

use std::io::Write as _;
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressState, ProgressStyle};

/// A line naming the step that runs and the time left.
pub struct StepLine {
    bar: ProgressBar,
}

impl StepLine {
    /// A line for a run of `total` steps that ends at `end`.
    pub fn new(end: Instant, total: usize) -> StepLine {
        let left = move |_: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(
                w,
                "{}",
                end.saturating_duration_since(Instant::now()).as_secs()
            );
        };
        let style = ProgressStyle::with_template("probe: step {pos}/{len}: {msg} · {left} s left")
            .expect("the template is valid")
            .with_key("left", left);
        let bar = ProgressBar::with_draw_target(Some(total as u64), ProgressDrawTarget::stderr())
            .with_style(style);
        bar.enable_steady_tick(Duration::from_millis(500));
        StepLine { bar }
    }

    /// Step `index` of the total, named `name`, is starting.
    pub fn step(&self, index: usize, name: &str) {
        self.bar.set_message(name.to_string());
        self.bar.set_position(index as u64);
    }

    /// Prints `line` on stdout, the line erased under it and drawn again after.
    pub fn println(&self, line: &str) {
        self.bar.suspend(|| {
            println!("{line}");
            let _ = std::io::stdout().flush();
        });
    }

    /// Erases the line for good.
    pub fn finish(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for StepLine {
    fn drop(&mut self) {
        self.finish();
    }
}

/// Width of [`StepBar`]'s bar, characters.
const BAR_WIDTH: u64 = 30;

/// A bar of the steps done, drawn while a step runs.
pub struct StepBar {
    total: u64,
    shown: Option<ProgressBar>,
}

impl StepBar {
    /// A bar for `total` steps (an upper bound when a search may stop early).
    pub fn new(total: usize) -> StepBar {
        StepBar {
            total: total.max(1) as u64,
            shown: None,
        }
    }

    /// Shows that step `done + 1`, `what` (its offered rate), is running.
    pub fn show(&mut self, done: usize, what: &str) {
        self.clear();
        let done_bar = |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            let total = state.len().unwrap_or(1).max(1);
            let filled = (state.pos() * BAR_WIDTH / total).min(BAR_WIDTH) as usize;
            let _ = write!(
                w,
                "{}{}",
                "#".repeat(filled),
                ".".repeat(BAR_WIDTH as usize - filled)
            );
        };
        let next = |state: &ProgressState, w: &mut dyn std::fmt::Write| {
            let _ = write!(w, "{}", state.pos() + 1);
        };
        let style = ProgressStyle::with_template("[{done_bar}] step {next}/{len} at {msg} ")
            .expect("the template is valid")
            .with_key("done_bar", done_bar)
            .with_key("next", next);
        let shown = ProgressBar::with_draw_target(Some(self.total), ProgressDrawTarget::stderr())
            .with_style(style)
            .with_position(done as u64)
            .with_message(what.to_string());
        shown.tick();
        self.shown = Some(shown);
    }

    /// Erases the bar (a row is printed in its place).
    pub fn clear(&mut self) {
        if let Some(shown) = self.shown.take() {
            shown.finish_and_clear();
        }
    }
}

impl Drop for StepBar {
    fn drop(&mut self) {
        self.clear();
    }
}
