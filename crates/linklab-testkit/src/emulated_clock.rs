//! The rp2040js harness's status file (emulators/rp2040js/harness.mjs `--status`): one JSON
//! line rewritten every 50 ms of real time with the emulated chip's clock (`emulated_ns`) and
//! its devices' counters. Every rate of an emulated RP2040 is read in that clock.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::stats::Stats;

/// The harness's status file.
pub struct Status(pub PathBuf);

impl Status {
    /// Its last line, or `Null` before the first is written.
    pub fn read(&self) -> Value {
        std::fs::read(&self.0)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or(Value::Null)
    }

    /// Its last line as named figures (none before the first is written).
    pub fn figures(&self) -> Stats {
        std::fs::read(&self.0)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            .unwrap_or_else(|| Stats(Default::default()))
    }

    /// Emulated nanoseconds so far (0 before the first line).
    pub fn emulated_ns(&self) -> u64 {
        self.figures().try_top_counter("emulated_ns").unwrap_or(0)
    }

    /// Waits until the emulated clock reaches `ns` (a wait in the chip's time, not a retry).
    pub fn wait_until(&self, ns: u64, real_limit: Duration) {
        let started = Instant::now();
        while self.emulated_ns() < ns {
            assert!(
                started.elapsed() < real_limit,
                "the emulated clock did not reach {ns} ns within {real_limit:?}: {}",
                self.read()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Runs `f` and returns its result with the emulated seconds it took.
    pub fn timed<T>(&self, f: impl FnOnce() -> T) -> (T, f64) {
        let t0 = self.emulated_ns();
        let out = f();
        (out, (self.emulated_ns() - t0) as f64 / 1e9)
    }
}
