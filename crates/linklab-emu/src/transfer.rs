//! One way to move data between the host and the device, for every measuring verb, and one
//! notion of clock.
//!
//! A [`Transfer`] is stock iperf3 against the device's server (either way) or stock curl
//! downloading a bench file from its HTTP server. What it moved is what the device counted
//! (its iperf3 server's bytes; curl's body), over the device's own clock: its iperf3
//! server's seconds, or for a download the uptime `/stats` gives before and after. Under
//! `-icount` that clock is QEMU's virtual time, which runs at the fixed instruction rate
//! whatever the host does; the host's real seconds are kept beside it ([`Clocks`]). When the
//! emulator could not hold the rate in real time (a host too slow for the guest: 22 MB took
//! 1.96 s of the device's clock and 5.2 s of real time at 62.5 MIPS on mps2-an385), the two
//! disagree, and the host's rate is only ever shown with a line that says so
//! ([`Clocks::behind`]).

use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use linklab_results::emu::rate::Rate;
use serde_json::Value;

use super::lab::{Lab, DEVICE_IP};

/// One transfer between the host and the device.
#[derive(Clone, Copy, Debug)]
pub enum Transfer<'a> {
    /// `iperf3 -c DEVICE -J OPTIONS` (`-R` added when the device sends).
    Iperf3 {
        /// The device sends (`-R`); else it receives.
        device_sends: bool,
        /// iperf3's other options (`-n 4M`, `-t 5`, `-C cubic`, ...).
        options: &'a [&'a str],
    },
    /// `curl http://DEVICE/PATH`: the device's HTTP server sends a bench file.
    Download {
        /// The file, e.g. `/3MB.txt`.
        path: &'a str,
    },
}

/// Which `/stats` documents a transfer takes (an image without `/stats` takes none).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Watch {
    /// None (the caller reads the device's counters itself, or it has none).
    Nothing,
    /// One before and one after.
    Ends,
    /// Before, every half second while it runs (a 32-bit counter of the device's can wrap
    /// within seconds), and after.
    Often,
}

/// What a transfer moved.
#[derive(Debug)]
pub struct Moved {
    /// Payload bytes, as the device counted them (its iperf3 server's; curl's body).
    pub bytes: u64,
    /// The device's seconds and the host's over the transfer.
    pub clocks: Clocks,
    /// The iperf3 report (None for a download).
    pub report: Option<Value>,
    /// The `/stats` documents [`Watch`] asked for, in order.
    pub snapshots: Vec<Value>,
    /// Real seconds from the first `/stats` to the last (the span their uptimes cover).
    pub stats_real_s: f64,
}

/// The device's clock and the host's over one transfer.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Clocks {
    /// Seconds of the device's clock (QEMU's virtual time under `-icount`).
    pub device_s: f64,
    /// Seconds of real time on the host.
    pub real_s: f64,
}

/// How far behind real time the device's clock may fall before a rate says so: QEMU's
/// `align` keeps the guest within a few ms, but not a guest the host cannot keep up with.
pub const BEHIND_SLACK: f64 = 0.1;

impl Clocks {
    /// Device seconds per real second: 1 while the emulator keeps up.
    pub fn pace(&self) -> f64 {
        self.device_s / self.real_s.max(f64::MIN_POSITIVE)
    }

    /// `bytes` per second of the device's clock.
    pub fn rate(&self, bytes: u64) -> f64 {
        bytes as f64 / self.device_s.max(f64::MIN_POSITIVE)
    }

    /// `bytes` per second of the host's clock.
    pub fn host_rate(&self, bytes: u64) -> f64 {
        bytes as f64 / self.real_s.max(f64::MIN_POSITIVE)
    }

    /// The line saying the emulator fell behind real time and by how much, when it did by
    /// more than [`BEHIND_SLACK`]; None when it kept up.
    pub fn behind(&self) -> Option<String> {
        let pace = self.pace();
        (pace < 1.0 - BEHIND_SLACK).then(|| {
            format!(
                "the emulator fell behind real time: {:.2} s of the device's clock took {:.2} s of real time ({pace:.2}x); rates are in the device's clock, the host's beside them",
                self.device_s, self.real_s
            )
        })
    }

    /// `bytes` as the documents give a rate in `unit`: the device's clock's, and the host's
    /// beside it with the line that says why only when the emulator fell behind.
    pub fn rate_document(&self, bytes: u64, unit: Unit) -> Rate {
        let mut r = Rate {
            bytes,
            device_seconds: (self.device_s * 1e4).round() / 1e4,
            ..Rate::default()
        };
        let (device, host) = match unit {
            Unit::Mbps => (&mut r.mbps, &mut r.host_mbps),
            Unit::KBps => (&mut r.kb_per_s, &mut r.host_kb_per_s),
        };
        *device = Some(unit.of(self.rate(bytes)));
        if let Some(note) = self.behind() {
            *host = Some(unit.of(self.host_rate(bytes)));
            r.real_seconds = Some((self.real_s * 1e3).round() / 1e3);
            r.behind = Some(note);
        }
        r
    }
}

/// The unit of a rate in a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Mbit/s, two decimals (iperf3's figures).
    Mbps,
    /// kB/s, one decimal (curl's).
    KBps,
}

impl Unit {
    /// `bytes_per_s` in this unit, rounded.
    fn of(self, bytes_per_s: f64) -> f64 {
        match self {
            Unit::Mbps => (bytes_per_s * 8.0 / 1e4).round() / 100.0,
            Unit::KBps => (bytes_per_s / 100.0).round() / 10.0,
        }
    }
}

/// Stock `iperf3 -J`'s report from what it printed: an error if it printed no JSON or its
/// report is an `error` (`options`: what the test was asked, for the message).
pub fn iperf3_report(stdout: &[u8], options: &str) -> anyhow::Result<Value> {
    let report: Value = serde_json::from_slice(stdout).context("iperf3 printed no JSON")?;
    if let Some(e) = report.get("error") {
        bail!("iperf3 {options}: {e}");
    }
    Ok(report)
}

/// The payload bytes of `side` (`sum_sent` or `sum_received`) in an iperf3 report's end.
pub fn end_bytes(report: &Value, side: &str) -> anyhow::Result<u64> {
    report["end"][side]["bytes"]
        .as_u64()
        .with_context(|| format!("iperf3 report has no end.{side}.bytes"))
}

/// The device's side of an iperf3 report: its bytes and its seconds (the server's results,
/// exchanged at the end of the test: `sum_sent` when the device sent, `sum_received` when it
/// received; the other side is the host's).
pub fn device_side(report: &Value, device_sends: bool) -> anyhow::Result<(u64, f64)> {
    let side = if device_sends {
        "sum_sent"
    } else {
        "sum_received"
    };
    let bytes = end_bytes(report, side)?;
    let seconds = report["end"][side]["seconds"]
        .as_f64()
        .with_context(|| format!("iperf3 report has no end.{side}.seconds"))?;
    Ok((bytes, seconds))
}

impl Lab {
    /// Downloads `path` from the device with stock curl; the body's bytes. For a caller that
    /// reads the device's counters itself (`parts`); [`transfer`](Self::transfer) times it.
    pub fn download(&self, path: &str) -> anyhow::Result<u64> {
        let url = format!("http://{DEVICE_IP}{path}");
        let out = self.run(&[
            "curl",
            "-sS",
            "--max-time",
            "120",
            "-o",
            "/dev/null",
            "-w",
            "%{size_download}",
            &url,
        ])?;
        let text = String::from_utf8_lossy(&out.stdout);
        text.trim()
            .parse()
            .with_context(|| format!("curl printed no size: {text:?}"))
    }

    /// Runs `t` against the lab's device, taking the `/stats` documents `watch` asks for.
    pub fn transfer(&self, t: Transfer<'_>, watch: Watch) -> anyhow::Result<Moved> {
        let mut snapshots = Vec::new();
        if watch != Watch::Nothing {
            snapshots.push(self.stats()?);
        }
        let started = Instant::now();
        let (bytes, device_s, report) = match t {
            Transfer::Iperf3 {
                device_sends,
                options,
            } => {
                let mut argv = vec!["iperf3", "-c", DEVICE_IP, "-J", "--connect-timeout", "5000"];
                argv.extend_from_slice(options);
                if device_sends {
                    argv.push("-R");
                }
                let mut child = self
                    .command(&argv)
                    .stdin(std::process::Stdio::null())
                    .stdout(std::process::Stdio::piped())
                    .stderr(std::process::Stdio::null())
                    .spawn()
                    .context("cannot run iperf3")?;
                if watch == Watch::Often {
                    while child.try_wait()?.is_none() {
                        std::thread::sleep(Duration::from_millis(500));
                        if child.try_wait()?.is_none() {
                            snapshots.push(self.stats()?);
                        }
                    }
                }
                let out = child.wait_with_output()?;
                let report = iperf3_report(&out.stdout, &argv[6..].join(" "))?;
                let (bytes, seconds) = device_side(&report, device_sends)?;
                (bytes, Some(seconds), Some(report))
            }
            Transfer::Download { path } => (self.download(path)?, None, None),
        };
        let real_s = started.elapsed().as_secs_f64();
        if watch != Watch::Nothing {
            snapshots.push(self.stats()?);
        }
        let stats_real_s = started.elapsed().as_secs_f64();
        // A download's seconds: the device's uptime between the /stats around it (the
        // transfer and one /stats fetch; the largest bench file makes that the smallest share).
        let device_s = match (device_s, snapshots.as_slice()) {
            (Some(s), _) => s,
            (None, [first, .., last]) => {
                let up = |v: &Value| v["cpu"]["uptime_ns"].as_u64();
                match (up(first), up(last)) {
                    (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e9,
                    _ => bail!("/stats has no cpu.uptime_ns"),
                }
            }
            (None, _) => bail!("a download's device time needs /stats around it"),
        };
        Ok(Moved {
            bytes,
            clocks: Clocks { device_s, real_s },
            report,
            snapshots,
            stats_real_s,
        })
    }

    /// [`Lab::transfer`], run again (twice at most, `what` says why on stderr) when the
    /// device refused it or dropped it midway (iperf3's "control socket has closed
    /// unexpectedly" now and then, while the last test's sockets close).
    pub fn transfer_retrying(
        &self,
        t: Transfer<'_>,
        watch: Watch,
        what: &str,
    ) -> anyhow::Result<Moved> {
        let mut tries = 0;
        loop {
            match self.transfer(t, watch) {
                Ok(m) => return Ok(m),
                Err(e) if tries < 2 => {
                    tries += 1;
                    eprintln!("{what}: {e:#}; again");
                    std::thread::sleep(Duration::from_secs(2));
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Stock iperf3 with `options` to the device, then from it (`-R`), each as
    /// [`transfer_retrying`](Self::transfer_retrying) with nothing watched: what the device
    /// received, then what it sent (the two rates of a `throughput` run).
    pub fn iperf3_both_ways(&self, options: &[&str], what: &str) -> anyhow::Result<(Moved, Moved)> {
        let one_way = |device_sends| {
            let t = Transfer::Iperf3 {
                device_sends,
                options,
            };
            self.transfer_retrying(t, Watch::Nothing, what)
        };
        let received = one_way(false)?;
        Ok((received, one_way(true)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// The shape of stock iperf3's `-J` report (3.12) for `-R` against the device: the
    /// server's results, exchanged at the end, are the sender's (`sum_sent`).
    fn reverse_report(sent: u64, device_s: f64, host_s: f64) -> Value {
        json!({ "end": {
            "sum_sent": { "bytes": sent, "seconds": device_s, "bits_per_second": sent as f64 * 8.0 / device_s },
            "sum_received": { "bytes": sent, "seconds": host_s, "bits_per_second": sent as f64 * 8.0 / host_s },
        }})
    }

    #[test]
    fn the_device_side_of_a_report_is_the_servers() {
        let r = reverse_report(22_000_000, 1.96, 5.2);
        assert_eq!(device_side(&r, true).unwrap(), (22_000_000, 1.96));
        assert_eq!(device_side(&r, false).unwrap(), (22_000_000, 5.2));
        assert!(device_side(&json!({}), true).is_err());
    }

    /// The case that made the device's clock the rate: mps2-an385 at 62.5 MIPS sent 22 MB in 1.96 s of its clock and 5.2 s
    /// of real time. The rate is the device's (≈ 90 Mbit/s, as `predict` says), and the
    /// host's (≈ 34 Mbit/s, what `emu throughput` used to print as the device's) comes only
    /// beside it, with the line saying the emulator fell behind and by how much.
    #[test]
    fn a_rate_is_in_the_devices_clock_and_the_hosts_only_with_a_note() {
        let r = reverse_report(22_000_000, 1.96, 5.2);
        let (bytes, device_s) = device_side(&r, true).unwrap();
        let behind = Clocks {
            device_s,
            real_s: 5.2,
        };
        let v = behind.rate_document(bytes, Unit::Mbps);
        assert_eq!(v.mbps, Some(89.8));
        assert_eq!(v.host_mbps, Some(33.85));
        let note = v.behind.as_deref().unwrap();
        assert!(
            note.contains("fell behind real time")
                && note.contains("1.96 s of the device's clock took 5.20 s of real time (0.38x)"),
            "{note}"
        );
        // Keeping up (within the slack): the device's rate alone.
        let kept = Clocks {
            device_s: 5.0,
            real_s: 5.3,
        };
        let v = kept.rate_document(50_000_000, Unit::Mbps);
        assert_eq!(v.mbps, Some(80.0));
        assert!(v.host_mbps.is_none() && v.behind.is_none(), "{v:?}");
        assert_eq!(
            serde_json::to_string(&v).unwrap(),
            r#"{"bytes":50000000,"device_seconds":5.0,"mbps":80.0}"#
        );
        let k = behind.rate_document(bytes, Unit::KBps);
        assert_eq!(
            serde_json::to_string(&k).unwrap(),
            format!(
                r#"{{"bytes":22000000,"device_seconds":1.96,"kB_per_s":11224.5,"host_kB_per_s":4230.8,"real_seconds":5.2,"behind":{}}}"#,
                serde_json::to_string(note).unwrap()
            )
        );
        assert_eq!(kept.behind(), None);
    }
}
