//! Folders of our own for what QEMU and the stock tools read and write (sockets, the counting
//! plugin, saved memory, captures): created anew under a name no one can guess, mode 0700.
//! linklab runs as root, and QEMU loads and connects to what it is pointed at.

use std::os::unix::fs::PermissionsExt;

use anyhow::Context;
use tempfile::TempDir;

/// A new private folder `PREFIX…` in the temporary directory, removed when dropped.
pub fn private_dir(prefix: &str) -> anyhow::Result<TempDir> {
    tempfile::Builder::new()
        .prefix(prefix)
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .with_context(|| format!("cannot create a folder {prefix}… in the temporary directory"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::MetadataExt;

    #[test]
    fn a_private_folder_is_ours_alone() {
        let dir = private_dir("linklab-test-").unwrap();
        let meta = std::fs::symlink_metadata(dir.path()).unwrap();
        assert!(meta.is_dir());
        assert_eq!(meta.mode() & 0o777, 0o700);
        assert_eq!(meta.uid(), nix::unistd::geteuid().as_raw());
    }
}
