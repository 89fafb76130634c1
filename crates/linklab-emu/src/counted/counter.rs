//! The instruction counter: our own QEMU TCG plugin (`insncount.c`, built with the host's
//! gcc) and the socket through which its count is read.

use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use tempfile::TempDir;

/// The plugin's source, next to this file.
const SOURCE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/src/counted/insncount.c"
);

/// Builds the plugin into `dir` (gcc -O2 -shared -fPIC) and returns the library's path.
///
/// QEMU, run as root, loads what is there: the folder must be one no one else can write to
/// or have made first, hence a [`TempDir`] (created anew, mode 0700), which the caller keeps
/// until QEMU is done with the plugin.
pub fn build_plugin(dir: &TempDir) -> anyhow::Result<PathBuf> {
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
