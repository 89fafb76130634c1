//! What every backend of the store implements: the [`Store`] trait (store a run whole, list the
//! runs, load one), and a stored run's head.

use std::time::Duration;

use crate::run::Run;

/// A stored run's head: enough to find it.
#[derive(Clone, Debug, PartialEq)]
pub struct RunHead {
    /// The run's id (runs are numbered in the order they were stored).
    pub id: i64,
    /// Its label.
    pub label: String,
    /// The commit of the tree measured.
    pub commit: String,
    /// When it started, Unix seconds.
    pub started_unix: f64,
}

/// A store of runs.
pub trait Store {
    /// Stores `run` whole, in one transaction; its id.
    fn insert_run(&mut self, run: &Run) -> anyhow::Result<i64>;
    /// Every run's head, oldest first.
    fn runs(&self) -> anyhow::Result<Vec<RunHead>>;
    /// The run with `id`, whole.
    fn load(&self, id: i64) -> anyhow::Result<Run>;
}

/// Holds a run's write transaction open for `$LINKLAB_TRACK_PAUSE_BEFORE_COMMIT_MS` (the test
/// that kills a run half-way through storing it needs a moment to do so).
pub(crate) fn pause_before_commit() {
    if let Some(ms) = std::env::var("LINKLAB_TRACK_PAUSE_BEFORE_COMMIT_MS")
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
    {
        std::thread::sleep(Duration::from_millis(ms));
    }
}
