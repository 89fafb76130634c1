//! The `riscv32-measured` profile's data: instructions per part of the device's work, counted
//! on linklab's riscv32imac firmware (the ESP32-C6's ISA) under QEMU `-icount shift=0`, in one
//! versioned file (`data/riscv32-measured.json`) with the command that produced it and a
//! fingerprint of the sources it measured, so a check can say when the counts are stale.
//!
//! Turning counts into time takes a clock and a CPI: `ns = instructions × cpi × 1000 / mhz`.

use std::path::Path;

/// The data file, compiled in.
pub const DATA_JSON: &str = include_str!("../data/riscv32-measured.json");

/// The data file's path relative to the repository root.
pub const DATA_PATH: &str = "crates/linklab-sim/data/riscv32-measured.json";

/// Instructions per part of the device's work (fitted by least squares over several stock
/// iperf3 transfers; see the file's `runs` for each one's counts and residual).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Parts {
    /// RX interrupt, per received frame (the driver's fixed work: trap, virtio used ring,
    /// grant, commit).
    pub isr_per_rx_frame: f64,
    /// RX interrupt, per received byte (the copy of the frame into the grant).
    pub isr_per_rx_byte: f64,
    /// Interrupt work per transmitted frame (the driver reclaiming the sent buffer).
    pub isr_per_tx_frame: f64,
    /// One pass of the main loop that finds nothing to do (`Interface::poll`, the apps'
    /// poll, the deadline, the sleep's check).
    pub main_per_pass: f64,
    /// Main loop per received frame, on top of the pass: MAC dequeue, smoltcp ingress, the
    /// app's share that is per segment.
    pub main_per_rx_frame: f64,
    /// Main loop per received byte: checksum, the copy into the socket buffer, the app
    /// reading it.
    pub main_per_rx_byte: f64,
    /// Main loop per transmitted frame (an ACK or a segment): smoltcp egress, the MAC and
    /// the driver's transmit.
    pub main_per_tx_frame: f64,
    /// Main loop per transmitted byte: the app writing (iperf3's source), checksum, the copy
    /// into the frame.
    pub main_per_tx_byte: f64,
    /// What the device's HTTP server adds per body byte it sends (generating the bench file's
    /// text from the offset) on top of `main_per_tx_byte`.
    pub http_per_tx_byte: f64,
}

/// The whole data file.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct MeasuredCounts {
    /// What the file is.
    pub about: String,
    /// The exact command that produced it (run from the repository root).
    pub command: String,
    /// The ISA counted on.
    pub isa: String,
    /// How QEMU ran (`-icount shift=0`: one instruction per ns of virtual time).
    pub icount: String,
    /// The sources whose code the counts measured (files or folders, from the root).
    pub sources: Vec<String>,
    /// [`fingerprint`] of `sources` when the counts were taken.
    pub fingerprint: String,
    /// The fitted counts.
    pub parts: Parts,
    /// Each transfer's raw counts and the fit's residual (kept for inspection).
    pub runs: serde_json::Value,
}

impl MeasuredCounts {
    /// The compiled-in data file.
    pub fn compiled_in() -> MeasuredCounts {
        serde_json::from_str(DATA_JSON).expect("data/riscv32-measured.json is valid (tested)")
    }
}

/// A CPU clock and its cycles per instruction, to turn counts into time.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct Clock {
    /// Clock frequency in MHz.
    pub mhz: f64,
    /// Cycles per instruction (1 = one instruction per cycle).
    pub cpi: f64,
}

impl Clock {
    /// The ESP32-C6's high-performance core at its top clock, one instruction per cycle.
    pub const ESP32_C6: Clock = Clock {
        mhz: 160.0,
        cpi: 1.0,
    };

    /// Picoseconds for `instructions` (fractional counts are kept: per-byte costs are below
    /// one instruction per byte in places).
    pub fn ps(&self, instructions: f64) -> u64 {
        (instructions.max(0.0) * self.cpi * 1e6 / self.mhz).round() as u64
    }

    /// Nanoseconds for `instructions`.
    pub fn ns(&self, instructions: f64) -> u64 {
        (self.ps(instructions) + 500) / 1000
    }
}

/// FNV-1a (64 bit) over every file under `sources` (sorted by path; each path and its
/// bytes), relative to `root`: changes when any measured source changes. Missing sources
/// are an error (the list is out of date).
pub fn fingerprint(root: &Path, sources: &[String]) -> std::io::Result<String> {
    let mut files = Vec::new();
    for s in sources {
        collect(&root.join(s), &mut files)?;
    }
    files.sort();
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |bytes: &[u8]| {
        for &b in bytes {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    for f in &files {
        let rel = f.strip_prefix(root).unwrap_or(f);
        eat(rel.to_string_lossy().as_bytes());
        eat(&std::fs::read(f)?);
    }
    Ok(format!("fnv1a64:{h:016x} over {} files", files.len()))
}

fn collect(path: &Path, out: &mut Vec<std::path::PathBuf>) -> std::io::Result<()> {
    if path.is_dir() {
        for e in std::fs::read_dir(path)? {
            collect(&e?.path(), out)?;
        }
    } else {
        std::fs::metadata(path)?;
        out.push(path.to_path_buf());
    }
    Ok(())
}

/// The sources the counts depend on: the firmware's main loop and board, the driver, the MAC,
/// the apps, and the lock file that pins smoltcp's version.
pub const SOURCES: [&str; 6] = [
    "firmware/common/src",
    "firmware/riscv32-virt/src",
    "firmware/Cargo.lock",
    "crates/linklab-virtio-net/src",
    "crates/linklab-mac/src",
    "crates/linklab-perf/src",
];
