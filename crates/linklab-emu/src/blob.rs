//! The configuration blob file: the device's address (and a soft PHY's factor) that QEMU's
//! loader puts in the board's RAM at boot, so no image is rebuilt per address. Removed when
//! dropped: `Qemu` drops it once the image has booted (QEMU read it when it started).
//!
//! The file is created anew (`O_EXCL`) under a name no one can guess, readable by us alone:
//! linklab runs as root, and in a temporary folder others may write to, a file created at a
//! name known beforehand follows a link planted there (wherever the kernel's
//! `protected_symlinks` is off, and always in a folder without the sticky bit).

use std::io::Write;
use std::path::Path;

use anyhow::Context;
use tempfile::NamedTempFile;

/// A blob written to the temporary directory, removed when dropped.
pub struct ConfigBlob {
    file: NamedTempFile,
}

impl ConfigBlob {
    /// Writes `bytes` to a new file `NAME….cfg` in the temporary directory.
    pub fn write(name: &str, bytes: &[u8]) -> anyhow::Result<ConfigBlob> {
        ConfigBlob::write_in(&std::env::temp_dir(), name, bytes)
    }

    /// Writes `bytes` to a new file `NAME….cfg` in `dir`.
    pub fn write_in(dir: &Path, name: &str, bytes: &[u8]) -> anyhow::Result<ConfigBlob> {
        let mut file = tempfile::Builder::new()
            .prefix(&format!("{name}-"))
            .suffix(".cfg")
            .tempfile_in(dir)
            .with_context(|| format!("cannot create the config blob in {}", dir.display()))?;
        file.write_all(bytes)
            .and_then(|()| file.flush())
            .context("cannot write the config blob")?;
        Ok(ConfigBlob { file })
    }

    /// Where it is, for QEMU's loader.
    pub fn path(&self) -> &Path {
        self.file.path()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::{MetadataExt, PermissionsExt};

    /// A folder everyone may write to without the sticky bit (so the kernel's
    /// `protected_symlinks` does not apply, whatever it is set to), and in it, at the name
    /// the blob used to be written to (`NAME.cfg`) and at the names a guess would try, links
    /// to a file of ours that must not change. Before, `fs::write(temp_dir/NAME.cfg)` wrote
    /// the device's address through the link into that file (the control below shows the
    /// hazard is real here); now the blob is a new regular file beside the links, ours
    /// alone, and the file behind the links keeps its bytes.
    #[test]
    fn a_planted_link_is_not_followed() {
        let lab = tempfile::tempdir().unwrap();
        let shared = lab.path().join("shared");
        std::fs::create_dir(&shared).unwrap();
        std::fs::set_permissions(&shared, std::fs::Permissions::from_mode(0o777)).unwrap();
        let victim = lab.path().join("victim");
        std::fs::write(&victim, b"precious").unwrap();
        let planted = shared.join("linklab-emu-1.cfg");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        for guess in ["linklab-emu-1-.cfg", "linklab-emu-1-000000.cfg"] {
            std::os::unix::fs::symlink(&victim, shared.join(guess)).unwrap();
        }

        // The control: a plain write at the known name goes through the link.
        let control = lab.path().join("control");
        std::fs::write(&control, b"precious").unwrap();
        let control_link = shared.join("control.cfg");
        std::os::unix::fs::symlink(&control, &control_link).unwrap();
        std::fs::write(&control_link, b"blob").unwrap();
        assert_eq!(std::fs::read(&control).unwrap(), b"blob");

        let blob = ConfigBlob::write_in(&shared, "linklab-emu-1", b"blob").unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
        let meta = std::fs::symlink_metadata(blob.path()).unwrap();
        assert!(meta.file_type().is_file(), "{}", blob.path().display());
        assert_eq!(meta.mode() & 0o777, 0o600);
        assert_eq!(meta.uid(), nix::unistd::getuid().as_raw());
        assert_eq!(std::fs::read(blob.path()).unwrap(), b"blob");
        assert_ne!(blob.path(), planted);
        let path = blob.path().to_path_buf();
        drop(blob);
        assert!(!path.exists());
        assert!(std::fs::symlink_metadata(&planted).is_ok());
    }
}
