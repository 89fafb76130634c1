//! A one-line progress bar on stderr, drawn only when stderr is a terminal.

use std::io::Write;

use linklab_results::units::format_rate;

/// The sweep's progress bar; does nothing when `enabled` is false (output piped or redirected).
pub struct Progress {
    enabled: bool,
    total: usize,
}

impl Progress {
    /// A bar for `total` steps (an upper bound when refinement may stop early).
    pub fn new(enabled: bool, total: usize) -> Progress {
        Progress {
            enabled,
            total: total.max(1),
        }
    }

    /// Shows that step `done + 1` (at `offered` bit/s) is running.
    pub fn show(&mut self, done: usize, offered: f64) {
        if !self.enabled {
            return;
        }
        const WIDTH: usize = 30;
        let filled = (done * WIDTH / self.total).min(WIDTH);
        let mut err = std::io::stderr().lock();
        let _ = write!(
            err,
            "\r[{}{}] step {}/{} at {} ",
            "#".repeat(filled),
            ".".repeat(WIDTH - filled),
            done + 1,
            self.total,
            format_rate(offered)
        );
        let _ = err.flush();
    }

    /// Erases the bar so a table row can be printed in its place.
    pub fn clear(&mut self) {
        if self.enabled {
            let mut err = std::io::stderr().lock();
            let _ = write!(err, "\r\x1b[2K");
            let _ = err.flush();
        }
    }
}
