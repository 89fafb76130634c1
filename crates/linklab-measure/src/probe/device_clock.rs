//! The device's own clock, where probe is given one to read (`--device-clock FILE`): an
//! emulator's status file, one JSON line with the chip's `emulated_ns`, rewritten as it runs
//! (`linklab emu w5500-evb-pico --status FILE`, emulators/rp2040js's harness). probe's
//! budgets and waits stay real time; the document says how fast the device's clock ran
//! against it ([`DeviceClock`]), so figures of a device slower than real time are read as
//! what they are.

use std::path::Path;
use std::time::Instant;

use anyhow::Context;
use serde::Deserialize;

use linklab_results::probe::DeviceClock;

/// The part of a status line probe reads.
#[derive(Deserialize)]
struct Status {
    /// Nanoseconds of the device's clock since it started.
    emulated_ns: u64,
}

/// The device's clock read once: its nanoseconds, and when they were read.
#[derive(Clone, Copy, Debug)]
pub struct Reading {
    device_ns: u64,
    at: Instant,
}

/// Reads the device's clock from the status file `path`.
pub fn read(path: &Path) -> anyhow::Result<Reading> {
    let text = std::fs::read_to_string(path)
        .with_context(|| format!("--device-clock {}: cannot read it", path.display()))?;
    let status: Status = serde_json::from_str(text.trim()).with_context(|| {
        format!(
            "--device-clock {}: not a status line with emulated_ns",
            path.display()
        )
    })?;
    Ok(Reading {
        device_ns: status.emulated_ns,
        at: Instant::now(),
    })
}

/// The clock over a run from `start` to a reading of `path` now.
pub fn since(start: Reading, path: &Path) -> anyhow::Result<DeviceClock> {
    let end = read(path)?;
    let device_s = end.device_ns.saturating_sub(start.device_ns) as f64 / 1e9;
    let real_s = end.at.duration_since(start.at).as_secs_f64();
    Ok(DeviceClock::new(
        &path.display().to_string(),
        device_s,
        real_s,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_file_gives_the_ratio_and_a_slow_device_is_named() {
        let path = std::env::temp_dir().join(format!("device-clock-{}.json", std::process::id()));
        std::fs::write(&path, "{\"emulated_ns\":1000,\"cycles\":5}\n").unwrap();
        let start = read(&path).unwrap();
        std::thread::sleep(std::time::Duration::from_millis(200));
        std::fs::write(&path, "{\"emulated_ns\":20001000}\n").unwrap();
        let clock = since(start, &path).unwrap();
        assert!((clock.device_s - 0.02).abs() < 1e-9);
        assert!(clock.real_s >= 0.2);
        assert!(
            clock.ratio < 0.11 && clock.slower_than_real_time,
            "{clock:?}"
        );
        assert!(clock.words().contains("slower than real time"));
        std::fs::write(&path, "not json").unwrap();
        let e = read(&path).unwrap_err().to_string();
        assert!(e.contains("not a status line"), "{e}");
        let _ = std::fs::remove_file(&path);
    }
}
