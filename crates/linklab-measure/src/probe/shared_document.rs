//! The document a probe run fills as it goes, shared by its steps and its watchdog (which
//! takes what was measured when a step overruns).

use std::sync::{Mutex, MutexGuard};

use linklab_results::probe::ProbeReport;

/// The run's document behind a lock.
pub type SharedDocument = Mutex<ProbeReport>;

/// The document, even when a thread panicked holding it (what it holds is still the run's).
pub fn lock(doc: &SharedDocument) -> MutexGuard<'_, ProbeReport> {
    doc.lock().unwrap_or_else(|e| e.into_inner())
}
