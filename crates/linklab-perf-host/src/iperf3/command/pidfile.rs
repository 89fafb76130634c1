//! `-I FILE`: the process id written to a file for as long as the command runs.

use std::path::{Path, PathBuf};

use linklab_perf::iperf::errors;

use crate::command_error::CommandError;

/// Writes the process id to `-I FILE` and removes it when dropped.
pub(super) struct PidFile(Option<PathBuf>);

impl PidFile {
    /// Writes the file, if `path` is given.
    pub(super) fn create(path: Option<&Path>) -> Result<Self, CommandError> {
        if let Some(p) = path {
            std::fs::write(p, format!("{}\n", std::process::id()))
                .map_err(|e| CommandError::failed(format!("{}: {e}", errors::text(135).0)))?;
        }
        Ok(Self(path.map(Into::into)))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}
