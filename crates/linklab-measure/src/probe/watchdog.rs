//! The last line of defence for "never past the budget": a step still running [`OVERRUN`]
//! past it is reported with what was measured ([`Event::Overrun`]), for the watcher to end
//! the run.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use linklab_results::quantity::Quantity;

use super::plan::Step;
use super::shared_document::{lock, SharedDocument};
use super::watch::{Event, Watch};

/// How far past the budget the watchdog lets a step run before it reports the run stopped.
pub const OVERRUN: Duration = Duration::from_secs(6);

/// What the watchdog watches: the run's document, when the run started and when it overran.
pub struct Watchdog<'a> {
    /// The run's document.
    pub doc: &'a SharedDocument,
    /// When the run started.
    pub started: Instant,
    /// The budget's end plus [`OVERRUN`].
    pub deadline: Instant,
}

impl Watchdog<'_> {
    /// Runs `work` under the watchdog: if it is still running at the deadline, `watch` is
    /// told [`Event::Overrun`] (once) while `work` goes on.
    pub fn guard<T>(&self, watch: &dyn Watch, work: impl FnOnce() -> T) -> T {
        let done = AtomicBool::new(false);
        std::thread::scope(|s| {
            s.spawn(|| self.watch_over(watch, &done));
            // Disarmed however `work` ends, a panic included.
            let _disarm = Disarm(&done);
            work()
        })
    }

    /// Waits for the deadline or `done`; at the deadline, tells `watch` what was measured.
    fn watch_over(&self, watch: &dyn Watch, done: &AtomicBool) {
        while Instant::now() < self.deadline {
            if done.load(Ordering::Relaxed) {
                return;
            }
            let left = self.deadline.saturating_duration_since(Instant::now());
            std::thread::sleep(left.min(Duration::from_millis(200)));
        }
        if done.load(Ordering::Relaxed) {
            return;
        }
        let mut partial = lock(self.doc).clone();
        let running = Step::ALL
            .iter()
            .find(|s| !partial.steps.iter().any(|x| x.name == s.name()))
            .map_or("the end", |s| s.name());
        let what = format!(
            "stopped: step {running} was still running {} s past --duration",
            OVERRUN.as_secs()
        );
        partial.failures.push(what.clone());
        partial.wall = Quantity::new(self.started.elapsed().as_secs_f64(), "s");
        watch.event(Event::Overrun {
            partial: &partial,
            what: &what,
        });
    }
}

/// Sets its flag when dropped.
struct Disarm<'a>(&'a AtomicBool);

impl Drop for Disarm<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Relaxed);
    }
}
