//! The instruction counter: our own QEMU TCG plugin (`insncount.c`, built with the host's
//! gcc) and the socket through which its count is read.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use tempfile::TempDir;

/// The plugin's source, next to this file.
const SOURCE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/src/counted/insncount.c");

/// Builds the plugin into `dir` (gcc -O2 -shared -fPIC) and returns the library's path.
///
/// QEMU, run as root, loads what is there: the folder must be one no one else can write to
/// or have made first, hence a [`TempDir`] (created anew; ours, or refused; made mode 0700
/// here), which the caller keeps until QEMU is done with the plugin.
pub fn build_plugin(dir: &TempDir) -> anyhow::Result<PathBuf> {
    let meta = std::fs::symlink_metadata(dir.path())
        .with_context(|| format!("cannot read {}", dir.path().display()))?;
    if !meta.is_dir() || meta.uid() != nix::unistd::geteuid().as_raw() {
        bail!(
            "{}: not a folder of ours, the counting plugin is not built there",
            dir.path().display()
        );
    }
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o700))
        .with_context(|| format!("cannot make {} private", dir.path().display()))?;
    let lib = dir.path().join("libinsncount.so");
    let out = Command::new("gcc")
        .args(["-O2", "-Wall", "-Wextra", "-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(SOURCE)
        .arg("-lpthread")
        .output()
        .context("cannot run gcc (Debian's gcc package) to build the counting plugin")?;
    if !out.status.success() {
        bail!(
            "gcc could not build {SOURCE}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(lib)
}

/// A connection to a running plugin.
pub struct Counter {
    stream: BufReader<UnixStream>,
    /// Profile files written so far (with `prof=`).
    profiles: usize,
}

/// A reading of the counter: when, how many instructions so far, and the profile file
/// written with it (if asked for one).
#[derive(Clone, Copy, Debug)]
pub struct Mark {
    /// When the count was read.
    pub at: Instant,
    /// Instructions executed since QEMU started.
    pub count: u64,
    /// The number of the profile file written with it (`prof=`), if one was asked for.
    pub profile: Option<usize>,
}

/// The counter, shared by the main thread and the console reader (which marks the lines it
/// is told to as they arrive).
pub type Shared = Arc<Mutex<Counter>>;

impl Counter {
    /// Connects to the plugin's socket at `path`, waiting up to 20 s for QEMU to load it.
    pub fn connect(path: &Path) -> anyhow::Result<Counter> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            match UnixStream::connect(path) {
                Ok(s) => {
                    s.set_read_timeout(Some(Duration::from_secs(20)))?;
                    return Ok(Counter {
                        stream: BufReader::new(s),
                        profiles: 0,
                    });
                }
                Err(e) if Instant::now() > deadline => {
                    bail!("the counting plugin's socket {}: {e}", path.display())
                }
                Err(_) => std::thread::sleep(Duration::from_millis(50)),
            }
        }
    }

    fn ask(&mut self, request: u8) -> anyhow::Result<u64> {
        self.stream.get_mut().write_all(&[request])?;
        let mut line = String::new();
        self.stream.read_line(&mut line)?;
        line.trim()
            .parse()
            .with_context(|| format!("the plugin answered {line:?}"))
    }

    /// The instructions executed so far, and with `profile` the per-block counts written to
    /// the plugin's next profile file.
    pub fn mark(&mut self, profile: bool) -> anyhow::Result<Mark> {
        let at = Instant::now();
        if profile {
            let count = self.ask(b'p')?;
            self.profiles += 1;
            Ok(Mark {
                at,
                count,
                profile: Some(self.profiles - 1),
            })
        } else {
            Ok(Mark {
                at,
                count: self.ask(b'c')?,
                profile: None,
            })
        }
    }
}

/// Reads `shared` now.
pub fn mark(shared: &Shared, profile: bool) -> anyhow::Result<Mark> {
    shared
        .lock()
        .map_err(|_| anyhow::anyhow!("the counter's lock was poisoned"))?
        .mark(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The plugin QEMU loads as root is built in a folder made anew for it, ours alone. The
    /// hazard it replaces: `create_dir_all(temp_dir/linklab-track-PID)` took a folder that
    /// another user had made first at that name (here one owned by `nobody`, writable by
    /// them, with a library of theirs planted where ours goes), and the user could swap the
    /// library before QEMU loaded it. The control below shows `create_dir_all` accepts such
    /// a folder; the folder `build_plugin` builds into is a new one beside it, mode 0700,
    /// ours, and the planted library is left as it was.
    #[test]
    fn the_plugin_is_built_in_a_folder_of_our_own() {
        let shared = tempfile::tempdir().unwrap();
        std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o777)).unwrap();
        let nobody = nix::unistd::Uid::from_raw(65534);
        let planted = shared
            .path()
            .join(format!("linklab-track-{}", std::process::id()));
        std::fs::create_dir(&planted).unwrap();
        nix::unistd::chown(&planted, Some(nobody), None).unwrap();
        std::fs::set_permissions(&planted, std::fs::Permissions::from_mode(0o777)).unwrap();
        let theirs = planted.join("libinsncount.so");
        std::fs::write(&theirs, b"not a plugin").unwrap();

        // The control: the old way takes the folder as it is.
        std::fs::create_dir_all(&planted).unwrap();
        assert_eq!(std::fs::metadata(&planted).unwrap().uid(), 65534);

        let ours = tempfile::Builder::new()
            .prefix("linklab-track-")
            .tempdir_in(shared.path())
            .unwrap();
        let lib = build_plugin(&ours).unwrap();
        assert_eq!(lib.parent(), Some(ours.path()));
        let dir = std::fs::metadata(ours.path()).unwrap();
        assert_eq!(dir.mode() & 0o777, 0o700);
        assert_eq!(dir.uid(), nix::unistd::getuid().as_raw());
        assert!(std::fs::symlink_metadata(&lib)
            .unwrap()
            .file_type()
            .is_file());
        assert!(std::fs::read(&lib).unwrap().starts_with(b"\x7fELF"));
        assert_eq!(std::fs::read(&theirs).unwrap(), b"not a plugin");
    }
}
