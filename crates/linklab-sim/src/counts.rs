//! The counted profiles' data: instructions per part of the device's work, counted on one of
//! linklab's firmware images under QEMU `-icount shift=0` by `linklab emu parts`, one
//! versioned file per profile (`data/<profile>.json`) with the command that wrote it, what the
//! image's device looks like (its RX queue, TCP window and send buffers, the shape of its
//! loop) and a fingerprint of the sources it was counted from, so a check can say when the
//! counts are stale.
//!
//! This file is data only: it imports nothing of the simulator ([`crate::cost`] reads it).
//! Turning counts into time takes a [`Clock`]: `ns = instructions × cpi × 1000 / mhz`.

use std::path::Path;

/// Every counted profile: its name, its data file (relative to the repository root) and the
/// file, compiled in.
pub const PROFILES: [(&str, &str, &str); 5] = [
    (
        "riscv32-measured",
        "crates/linklab-sim/data/riscv32-measured.json",
        include_str!("../data/riscv32-measured.json"),
    ),
    (
        "riscv32-embassy-measured",
        "crates/linklab-sim/data/riscv32-embassy-measured.json",
        include_str!("../data/riscv32-embassy-measured.json"),
    ),
    (
        "riscv32-soft-phy",
        "crates/linklab-sim/data/riscv32-soft-phy.json",
        include_str!("../data/riscv32-soft-phy.json"),
    ),
    (
        "mps2-measured",
        "crates/linklab-sim/data/mps2-measured.json",
        include_str!("../data/mps2-measured.json"),
    ),
    (
        "sabrelite-measured",
        "crates/linklab-sim/data/sabrelite-measured.json",
        include_str!("../data/sabrelite-measured.json"),
    ),
];

/// Instructions per part of the device's work, solved by least squares from the counted
/// totals of several stock iperf3 transfers and curl downloads (each transfer's counts and
/// the solution's residual are kept in [`CountedProfile::runs`]).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Parts {
    /// RX interrupt, per received frame (the driver's fixed work: trap, the NIC's ring,
    /// grant, commit).
    pub isr_per_rx_frame: f64,
    /// RX interrupt, per received frame byte (a copy out of the NIC, or a soft PHY's
    /// decoding; ~0 where the NIC writes the grant itself).
    pub isr_per_rx_byte: f64,
    /// Interrupt work per transmitted frame (the driver reclaiming the sent buffer).
    pub isr_per_tx_frame: f64,
    /// One pass of the main loop (or of the embassy executor) that finds nothing to do.
    pub main_per_pass: f64,
    /// Main loop per received frame, on top of the pass: MAC dequeue, smoltcp ingress, the
    /// app's share that is per segment.
    pub main_per_rx_frame: f64,
    /// Main loop per received frame byte, with every copy on its word: the copy into the
    /// socket buffer, checksums where the NIC does not do them, the app reading.
    pub main_per_rx_byte: f64,
    /// What a byte copied off its word costs on top (memcpy's shifting path; the receive
    /// figure's slow mode, when the receive ring's write position is off the payload's word).
    pub main_per_misaligned_byte: f64,
    /// Main loop per transmitted frame (an ACK or a segment): smoltcp egress, the MAC and
    /// the driver's transmit.
    pub main_per_tx_frame: f64,
    /// Main loop per transmitted frame byte: the app writing (iperf3's source), checksums,
    /// the copies into the frame (and a soft PHY's encoding).
    pub main_per_tx_byte: f64,
    /// What the device's HTTP server adds per byte it sends (generating the bench file's
    /// text) on top of `main_per_tx_byte`.
    pub http_per_tx_byte: f64,
}

/// How the image's loop is shaped: when what an app queues leaves.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum LoopShape {
    /// linklab's main loop: ingress, the apps, then egress, in one pass (what an app queues
    /// leaves in the same pass).
    MainLoop,
    /// An embassy executor: embassy-net's runner takes frames in and sends in its own pass,
    /// the apps' tasks run in another, so what an app queues leaves in the runner's next
    /// pass (sending, 1.5 executor passes per segment against the main loop's 0.5).
    Executor,
}

/// What the image's device looks like, as its `/stats` and sockets reported it during the
/// count: the simulator builds the same.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Device {
    /// Full-size frames the RX queue holds.
    pub rx_queue_frames: usize,
    /// The TCP receive buffer of a data socket (the window before linklab-mac's burst cap).
    pub tcp_window: usize,
    /// The largest window the device advertised on the receive transfers (smoltcp's cap from
    /// the MAC's `max_burst_size`), as captured on the wire.
    pub advertised_window: usize,
    /// The most bytes the device kept in flight on `iperf3 -R`, as captured: its data
    /// socket's send buffer (a soft PHY's as the host saw them, beyond its 10 Mbit/s line,
    /// which holds one more segment).
    pub iperf3_send_buffer: usize,
    /// The same for the HTTP server's socket (curl against the device).
    pub http_send_buffer: usize,
    /// When an app's output leaves.
    pub shape: LoopShape,
}

/// A soft PHY's decoder, for decoding at another factor than the image's
/// (`--phy samples --oversample N`): linklab-phy10's decoder counted on the same ISA by
/// `linklab emu phy10` (instructions per wire bit, the costliest case at each factor).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Decoder {
    /// The factor the image decoded at while counted (its interrupt's per-byte part).
    pub image_oversample: u8,
    /// `[factor, instructions per wire bit]`, one entry per factor counted.
    pub per_wire_bit: Vec<(u8, f64)>,
}

impl Decoder {
    /// Instructions per wire bit at `oversample`, if that factor was counted.
    pub fn per_bit(&self, oversample: u8) -> Option<f64> {
        self.per_wire_bit
            .iter()
            .find(|(f, _)| *f == oversample)
            .map(|(_, n)| *n)
    }
}

/// One counted profile's data file.
#[derive(Clone, Debug, serde::Serialize, serde::Deserialize)]
pub struct CountedProfile {
    /// The profile's name (`linklab bench --profile`).
    pub profile: String,
    /// What the file is.
    pub about: String,
    /// The exact command that writes it (as root, from the repository root).
    pub command: String,
    /// The emulated board counted on.
    pub board: String,
    /// Which of its images (`main`, `embassy`, `soft-phy`).
    pub image: String,
    /// The ISA counted on.
    pub isa: String,
    /// How QEMU ran (`-icount shift=0`: one instruction per ns of virtual time).
    pub icount: String,
    /// What the firmware's work counter counted (`instructions`: riscv's `minstret`; `ns
    /// awake`: a 25 MHz timer, one instruction per ns at `shift=0`, in 40-instruction ticks).
    pub work_unit: String,
    /// The sources whose code the counts measured (files or folders, from the root).
    pub sources: Vec<String>,
    /// [`fingerprint`] of `sources` when the counts were taken.
    pub fingerprint: String,
    /// The device the counts were taken on.
    pub device: Device,
    /// The counts.
    pub parts: Parts,
    /// A soft PHY's decoder at every factor counted (soft-PHY images only).
    pub decoder: Option<Decoder>,
    /// Each transfer's raw counts and the solution's residual (kept for inspection).
    pub runs: serde_json::Value,
}

impl CountedProfile {
    /// The compiled-in data file of the profile called `name`, or None if there is none.
    /// Panics if a compiled-in file does not parse (a test parses every one).
    pub fn compiled_in(name: &str) -> Option<CountedProfile> {
        let (_, path, text) = PROFILES.iter().find(|(n, _, _)| *n == name)?;
        Some(serde_json::from_str(text).unwrap_or_else(|e| panic!("{path}: {e}")))
    }

    /// The data file's path (from the repository root) of the profile called `name`.
    pub fn data_path(name: &str) -> Option<&'static str> {
        PROFILES
            .iter()
            .find(|(n, _, _)| *n == name)
            .map(|(_, p, _)| *p)
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
/// bytes), relative to `root`: changes when any measured source changes. A source written
/// `!path` leaves out what lies under `path` (host-only code inside a measured crate, which
/// no image links). Missing sources are an error (the list is out of date).
pub fn fingerprint(root: &Path, sources: &[String]) -> std::io::Result<String> {
    let mut files = Vec::new();
    let mut left_out = Vec::new();
    for s in sources {
        match s.strip_prefix('!') {
            Some(out) => left_out.push(root.join(out)),
            None => collect(&root.join(s), &mut files)?,
        }
    }
    files.retain(|f| !left_out.iter().any(|out| f.starts_with(out)));
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

#[cfg(test)]
mod tests {
    use super::fingerprint;

    #[test]
    fn a_left_out_folder_does_not_move_the_fingerprint() {
        let root = std::env::temp_dir().join(format!("linklab-fp-{}", std::process::id()));
        let host = root.join("src/host");
        std::fs::create_dir_all(&host).unwrap();
        std::fs::write(root.join("src/lib.rs"), "device").unwrap();
        std::fs::write(host.join("server.rs"), "host 1").unwrap();
        let all = ["src".to_string()];
        let device = ["src".to_string(), "!src/host".to_string()];
        let (all_1, device_1) = (
            fingerprint(&root, &all).unwrap(),
            fingerprint(&root, &device).unwrap(),
        );
        assert!(device_1.ends_with("over 1 files"), "{device_1}");
        std::fs::write(host.join("server.rs"), "host 2").unwrap();
        assert_ne!(fingerprint(&root, &all).unwrap(), all_1);
        assert_eq!(fingerprint(&root, &device).unwrap(), device_1);
        std::fs::write(root.join("src/lib.rs"), "device 2").unwrap();
        assert_ne!(fingerprint(&root, &device).unwrap(), device_1);
        std::fs::remove_dir_all(&root).unwrap();
    }
}
