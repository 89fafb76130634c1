//! The configuration blob file: the device's address (and a soft PHY's factor) that QEMU's
//! loader puts in the board's RAM at boot, so no image is rebuilt per address. Removed when
//! dropped: `Qemu` drops it once the image has booted (QEMU read it when it started).

use std::path::{Path, PathBuf};

use anyhow::Context;

/// A blob written to the temporary directory, removed when dropped.
pub struct ConfigBlob {
    path: PathBuf,
}

impl ConfigBlob {
    /// Writes `bytes` to `NAME.cfg` in the temporary directory.
    pub fn write(name: &str, bytes: &[u8]) -> anyhow::Result<ConfigBlob> {
        let path = std::env::temp_dir().join(format!("{name}.cfg"));
        std::fs::write(&path, bytes).context("cannot write the config blob")?;
        Ok(ConfigBlob { path })
    }

    /// Where it is, for QEMU's loader.
    pub fn path(&self) -> &Path {
        &self.path
    }
}

impl Drop for ConfigBlob {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
