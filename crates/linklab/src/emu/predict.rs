//! `linklab emu --predict`: the simulator against the emulated firmware. Boots the image at
//! a fixed instruction rate (`-icount shift=N,align=on,sleep=on`: 1000 / 2^N MIPS), runs
//! stock iperf3 each way and a curl download of /3MB.txt, and runs `linklab bench` with the
//! image's counted profile at the same MHz on the same transfers; `--runs` times.
//!
//! Each emulated figure is taken in the device's own clock, QEMU's virtual time: the
//! device's iperf3 server times its transfers (for curl, `/stats` before and after give the
//! device's time). Real-time rates are kept beside them but not compared: QEMU's `align`
//! only holds the guest back when it runs ahead of real time, and a guest that sleeps falls
//! behind (sleep=on advances its clock while it sleeps, not its instruction count) and then
//! runs at the host's full speed, so in real time the "fixed" rate is the host's.
//!
//! The host's TCP runs without its tail-loss probe ([`Lab::without_tail_loss_probes`]):
//! QEMU's `align` stops the guest for up to 3 ms at a time, the probe fires in such a stop,
//! and Linux then takes the probe for a loss and cuts its congestion window, which starved
//! the device of segments (the embassy image received at 31.25 MIPS at 64 % of what it
//! does without the probe).
//!
//! Each transfer also gives what the device did in it (`/stats` around it): the
//! instructions it ran (its busy share of the device's time; the rest it slept, waiting for
//! the wire or for the host behind QEMU), and the share of the frame bytes its memcpy copied
//! off their word, which the simulator is given (`--misaligned-copy`): the peer's
//! segmentation decides it, not the device.

use std::path::Path;
use std::time::Instant;

use anyhow::{bail, Context};
use clap::Parser;
use serde_json::{json, Value};

use super::board::Board;
use super::image::Image;
use super::lab::{Lab, DEVICE_IP};
use super::line::LineArgs;
use super::parts::profile_of;

/// Seconds of each iperf3 test.
const SECONDS: &str = "5";

/// One of the three transfers.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Test {
    /// `iperf3 -c` with CUBIC (the simulator's host's congestion control): the device receives.
    Receive,
    /// `iperf3 -c -R`: the device sends.
    Send,
    /// curl of /3MB.txt: the device's HTTP server sends. (The device's time for it runs from
    /// the `/stats` before curl starts to the one after, so curl's own start and one fetch
    /// are in it: the largest bench file makes them the smallest share.)
    Curl,
}

impl Test {
    const ALL: [Test; 3] = [Test::Receive, Test::Send, Test::Curl];

    fn name(self) -> &'static str {
        match self {
            Test::Receive => "iperf3 (device receives)",
            Test::Send => "iperf3 -R (device sends)",
            Test::Curl => "curl /3MB.txt",
        }
    }

    fn key(self) -> &'static str {
        match self {
            Test::Receive => "receive",
            Test::Send => "send",
            Test::Curl => "curl",
        }
    }
}

/// `/stats` figures of one transfer (differences).
struct DeviceSide {
    /// Device time between the two `/stats` (ns).
    uptime_ns: f64,
    /// Instructions the device ran between them.
    instructions: f64,
    /// Frame bytes the MAC moved the transfer's way, and of them copied off their word.
    frame_bytes: f64,
    misaligned: f64,
    /// Frames received and sent, main-loop (or executor) passes.
    rx_frames: f64,
    tx_frames: f64,
    passes: f64,
}

impl DeviceSide {
    fn between(a: &Value, b: &Value, shift: u32, sends: bool) -> anyhow::Result<DeviceSide> {
        Self::over(&[a.clone(), b.clone()], shift, sends)
    }

    /// From the first of `snapshots` to the last. The interrupt's work counter is 32 bits in
    /// `/stats` and advances 2^N per instruction at `shift=N`: a soft PHY's wraps within
    /// seconds, so it is summed over the snapshots between (each under a wrap apart).
    fn over(snapshots: &[Value], shift: u32, sends: bool) -> anyhow::Result<DeviceSide> {
        let (a, b) = match snapshots {
            [a, .., b] => (a, b),
            _ => bail!("two /stats snapshots at least"),
        };
        let get = |v: &Value, p: &[&str]| -> anyhow::Result<u64> {
            let mut x = v;
            for k in p {
                x = &x[*k];
            }
            x.as_u64()
                .with_context(|| format!("/stats has no {}", p.join(".")))
        };
        let d =
            |p: &[&str]| -> anyhow::Result<f64> { Ok(get(b, p)?.wrapping_sub(get(a, p)?) as f64) };
        let d32 = |p: &[&str]| -> anyhow::Result<f64> {
            Ok(f64::from(
                (get(b, p)? as u32).wrapping_sub(get(a, p)? as u32),
            ))
        };
        // At shift N the work counters advance 2^N per instruction on riscv32 (minstret
        // follows the virtual clock), and the M3's count nanoseconds: both are ns of device
        // time, 2^N of them per instruction.
        let per_instruction = f64::from(1u32 << shift);
        let mut isr = 0.0;
        for w in snapshots.windows(2) {
            let at = |v: &Value| get(v, &["cpu", "work", "isr"]).map(|x| x as u32);
            isr += f64::from(at(&w[1])?.wrapping_sub(at(&w[0])?));
        }
        let work = d(&["cpu", "work", "main"])? + isr;
        let bytes = if sends { "tx_bytes" } else { "rx_bytes" };
        Ok(DeviceSide {
            uptime_ns: d(&["cpu", "uptime_ns"])?,
            instructions: work / per_instruction,
            frame_bytes: d(&["mac", bytes])?,
            misaligned: d32(&["cpu", "work", "misaligned_copy_bytes"])?,
            rx_frames: d(&["mac", "rx_packets"])?,
            tx_frames: d(&["mac", "tx_packets"])?,
            passes: d(&["cpu", "work", "loops"])?,
        })
    }

    fn misaligned_share(&self) -> f64 {
        (self.misaligned / self.frame_bytes.max(1.0)).clamp(0.0, 1.0)
    }
}

/// Echo requests sent to measure the way between the host and the device.
const PINGS: &str = "200";

/// The way between the host and the device besides the device's CPU, as a diagnostic of the
/// emulator's host (not given to the simulator: on a loaded machine it moves by 10x from boot
/// to boot): stock ping's mean round trip (real time) less the device's own time per echo
/// (its instructions at `mips`, from `/stats` around the pings), halved. Returns (mean RTT,
/// the device's time per echo, that one-way rest), all µs.
fn host_latency_us(lab: &Lab, shift: u32, mips: f64) -> anyhow::Result<(f64, f64, f64)> {
    let before = lab.stats()?;
    let out = lab.run(&["ping", "-q", "-n", "-c", PINGS, "-i", "0.002", DEVICE_IP])?;
    let after = lab.stats()?;
    let text = String::from_utf8_lossy(&out.stdout);
    // "rtt min/avg/max/mdev = 0.101/0.153/0.402/0.050 ms"
    let avg_ms: f64 = text
        .lines()
        .find_map(|l| l.split_once(" = ").filter(|(k, _)| k.starts_with("rtt")))
        .and_then(|(_, v)| v.split('/').nth(1))
        .and_then(|v| v.trim().parse().ok())
        .with_context(|| format!("ping printed no round trip: {text:?}"))?;
    let pings: f64 = PINGS.parse().context("PINGS is a number")?;
    // Two /stats fetches are inside the difference too: less one fetch's work, measured
    // back to back.
    let fetch = DeviceSide::between(&after, &lab.stats()?, shift, false)?.instructions;
    let side = DeviceSide::between(&before, &after, shift, false)?;
    let echo_us = ((side.instructions - fetch) / pings / mips).max(0.0);
    let rtt_us = avg_ms * 1000.0;
    Ok((rtt_us, echo_us, ((rtt_us - echo_us) / 2.0).max(0.0)))
}

/// One emulated transfer.
struct Emulated {
    /// Payload bytes the device moved, over seconds of its own clock.
    bytes: f64,
    device_s: f64,
    /// Real seconds the transfer took, as the host saw it.
    real_s: f64,
    /// Real seconds between the first and the last `/stats`: the span `side`'s uptime
    /// covers, so the two clocks are compared over the same stretch (for curl, whose
    /// transfer is a fraction of a second, the last `/stats` fetch is not a rounding error).
    stats_real_s: f64,
    side: DeviceSide,
}

fn round(x: f64, digits: i32) -> f64 {
    let f = 10f64.powi(digits);
    (x * f).round() / f
}

/// Runs one transfer against the lab's device.
fn emulate(lab: &Lab, test: Test, shift: u32) -> anyhow::Result<Emulated> {
    let before = lab.stats()?;
    let started = Instant::now();
    let mut snapshots = vec![before];
    let (bytes, device_s) = match test {
        Test::Receive | Test::Send => {
            let mut opts = vec!["-t", SECONDS];
            match test {
                Test::Send => opts.push("-R"),
                _ => opts.extend(["-C", "cubic"]),
            }
            // `/stats` every half second while the transfer runs (the interrupt's counter
            // wraps, see `DeviceSide::over`); its own work is in the count, a fraction of a
            // per mille of the transfer's.
            let mut argv = vec!["iperf3", "-c", DEVICE_IP, "-J", "--connect-timeout", "5000"];
            argv.extend_from_slice(&opts);
            let mut child = lab
                .command(&argv)
                .stdin(std::process::Stdio::null())
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .context("cannot run iperf3")?;
            while child.try_wait()?.is_none() {
                std::thread::sleep(std::time::Duration::from_millis(500));
                if child.try_wait()?.is_none() {
                    snapshots.push(lab.stats()?);
                }
            }
            let out = child.wait_with_output()?;
            let r: Value = serde_json::from_slice(&out.stdout).context("iperf3 printed no JSON")?;
            if let Some(e) = r.get("error") {
                bail!("iperf3 {}: {e}", opts.join(" "));
            }
            // The device's own side: its server's bytes and its seconds.
            let side = if test == Test::Send {
                "sum_sent"
            } else {
                "sum_received"
            };
            let e = &r["end"][side];
            (
                e["bytes"].as_f64().context("iperf3 report without bytes")?,
                e["seconds"]
                    .as_f64()
                    .context("iperf3 report without seconds")?,
            )
        }
        Test::Curl => {
            let url = format!("http://{DEVICE_IP}/3MB.txt");
            let out = lab.run(&[
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
            let size: f64 = text
                .trim()
                .parse()
                .with_context(|| format!("curl printed no size: {text:?}"))?;
            (size, f64::NAN)
        }
    };
    let real_s = started.elapsed().as_secs_f64();
    snapshots.push(lab.stats()?);
    let stats_real_s = started.elapsed().as_secs_f64();
    let side = DeviceSide::over(&snapshots, shift, test != Test::Receive)?;
    // curl: the device's time between the two /stats (the transfer and one /stats fetch).
    let device_s = if device_s.is_nan() {
        side.uptime_ns / 1e9
    } else {
        device_s
    };
    Ok(Emulated {
        bytes,
        device_s,
        real_s,
        stats_real_s,
        side,
    })
}

/// `linklab bench` as a library call, from its own options.
#[derive(Parser)]
struct BenchCommand {
    #[command(flatten)]
    args: crate::bench::Args,
}

/// The `linklab bench` options that predict `test` with `profile` at `mhz` on `rate`, with
/// `share` of the frame bytes copied off their word.
fn bench_argv(profile: &str, mhz: f64, rate: &str, test: Test, share: f64) -> Vec<String> {
    let mut v: Vec<String> = [
        "--profile",
        profile,
        "--mhz",
        &mhz.to_string(),
        "--rate",
        rate,
        "--duplex",
        "full",
        "--pings",
        "0",
        "--gets",
        "1",
        "--misaligned-copy",
        &format!("{share:.3}"),
    ]
    .map(String::from)
    .to_vec();
    match test {
        Test::Receive => v.extend(["--sizes", "3MB"].map(String::from)),
        Test::Send => v.extend(["--sizes", "3MB", "--device-sends", "iperf3"].map(String::from)),
        Test::Curl => v.extend(["--sizes", "3MB", "--device-sends", "http"].map(String::from)),
    }
    v
}

/// What the simulator's run of a transfer gave.
struct Simulated {
    /// Goodput, payload bytes per second.
    goodput: f64,
    /// The device's busy share of the virtual time.
    busy_share: f64,
    /// Instructions the device ran (its busy time at the clock, CPI 1) per payload byte.
    instructions_per_byte: f64,
}

/// The simulator's run of `argv` (which sets `--mhz`).
fn simulate(argv: &[String]) -> anyhow::Result<Simulated> {
    let cmd = BenchCommand::try_parse_from(
        std::iter::once("bench".to_string()).chain(argv.iter().cloned()),
    )
    .context("the prediction's bench options")?;
    let cfg = crate::bench::config(&cmd.args)?;
    let mhz = cmd.args.mhz.context("the prediction sets --mhz")?;
    let r = linklab_sim::sim::run(cfg)?;
    if let Some(why) = &r.stopped {
        bail!("the simulator stopped: {why}");
    }
    let d = r
        .downloads
        .first()
        .context("the simulator made no transfer")?;
    if let Some(e) = &d.error {
        bail!("the simulated transfer failed: {e}");
    }
    let bytes = d.body_bytes as f64;
    Ok(Simulated {
        goodput: bytes / d.seconds,
        busy_share: r.cpu_busy_ns as f64 / r.virtual_ns.max(1) as f64,
        instructions_per_byte: r.cpu_busy_ns as f64 * mhz / 1000.0 / bytes.max(1.0),
    })
}

/// One test's figures over the runs: emulated and predicted rates (bytes/s), the emulated
/// device's and the simulated device's busy shares.
#[derive(Default)]
struct Series {
    emulated: Vec<f64>,
    predicted: Vec<f64>,
    /// Instructions per payload byte, (emulated, simulated).
    per_byte: Vec<(f64, f64)>,
    busy: Vec<f64>,
    sim_busy: Vec<f64>,
}

/// Mean, min and max.
fn stats(xs: &[f64]) -> (f64, f64, f64) {
    let mean = xs.iter().sum::<f64>() / xs.len().max(1) as f64;
    let min = xs.iter().copied().fold(f64::INFINITY, f64::min);
    let max = xs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, min, max)
}

/// Runs the comparison: `runs` boots of `board`'s `kind` image at `shift`.
pub fn predict(
    board: &Board,
    kind: Image,
    image: &Path,
    shift: u32,
    runs: u32,
    line: Option<&LineArgs>,
) -> anyhow::Result<Value> {
    let (profile, _) = profile_of(board, kind)?;
    let mips = 1000.0 / f64::from(1u32 << shift);
    // The soft PHY's line is paced at 10 Mbit/s each way; the NICs' TAPs are far faster
    // than the CPU.
    let rate = if kind == Image::SoftPhy { "10M" } else { "1G" };
    let icount = format!("shift={shift},align=on,sleep=on");
    let mut per_run = Vec::new();
    let mut table: Vec<(Test, Series)> =
        Test::ALL.iter().map(|&t| (t, Series::default())).collect();
    for run in 0..runs {
        let lab = match line {
            Some(l) => Lab::boot_line(board, image, Some(shift), l)?,
            None => Lab::boot(board, image, Some(icount.clone()))?,
        };
        lab.without_tail_loss_probes()?;
        let mut tests = serde_json::Map::new();
        // The way between host and device, measured before the transfers: a diagnostic.
        let (rtt_us, echo_us, latency_us) = host_latency_us(&lab, shift, mips)?;
        tests.insert(
            "latency".into(),
            json!({
                "ping_rtt_mean_us": round(rtt_us, 1),
                "device_us_per_echo": round(echo_us, 1),
                "one_way_us": round(latency_us, 1),
            }),
        );
        for (test, series) in table.iter_mut() {
            let Series {
                emulated,
                predicted,
                per_byte,
                busy,
                sim_busy,
            } = series;
            // A transfer the device refused or dropped midway (iperf3's "control socket has
            // closed unexpectedly" now and then, at the lower rates) is run again, twice at most.
            let mut tries = 0;
            let e = loop {
                match emulate(&lab, *test, shift) {
                    Ok(e) => break e,
                    Err(err) if tries < 2 => {
                        tries += 1;
                        eprintln!("--predict: {err:#}; again");
                        std::thread::sleep(std::time::Duration::from_secs(2));
                    }
                    Err(err) => return Err(err),
                }
            };
            let share = e.side.misaligned_share();
            let argv = bench_argv(profile, mips, rate, *test, share);
            let sim = simulate(&argv)?;
            let (goodput, sim_busy_share) = (sim.goodput, sim.busy_share);
            let emulated_per_byte = e.side.instructions / e.bytes;
            per_byte.push((emulated_per_byte, sim.instructions_per_byte));
            let emulated_bps = e.bytes / e.device_s;
            let busy_share = e.side.instructions / (e.side.uptime_ns / 1e9 * mips * 1e6);
            emulated.push(emulated_bps);
            predicted.push(goodput);
            busy.push(busy_share);
            sim_busy.push(sim_busy_share);
            tests.insert(
                test.key().into(),
                json!({
                    "emulated_bytes": e.bytes,
                    "emulated_device_seconds": round(e.device_s, 4),
                    "emulated_kB_per_s": round(emulated_bps / 1000.0, 1),
                    "real_seconds": round(e.real_s, 3),
                    "real_kB_per_s": round(e.bytes / e.real_s / 1000.0, 1),
                    "device_seconds_per_real_second": round(e.side.uptime_ns / 1e9 / e.stats_real_s, 3),
                    "device_busy_share": round(busy_share, 3),
                    "instructions_per_byte": round(emulated_per_byte, 3),
                    "misaligned_copy_share": round(share, 3),
                    "frames_received": e.side.rx_frames,
                    "frames_sent": e.side.tx_frames,
                    "passes": e.side.passes,
                    "predicted_kB_per_s": round(goodput / 1000.0, 1),
                    "predicted_instructions_per_byte": round(sim.instructions_per_byte, 3),
                    "predicted_busy_share": round(sim_busy_share, 3),
                    "error_pct": round((goodput / emulated_bps - 1.0) * 100.0, 1),
                    "bench": format!("linklab bench {}", argv.join(" ")),
                    "emulated_device_bound_kB_per_s": round(emulated_bps / busy_share / 1000.0, 1),
                    "predicted_device_bound_kB_per_s": round(goodput / sim_busy_share / 1000.0, 1),
                }),
            );
        }
        eprintln!(
            "run {}/{runs}: {}",
            run + 1,
            Test::ALL
                .iter()
                .map(|t| {
                    let v = &tests[t.key()];
                    format!(
                        "{} {} -> {} kB/s{}",
                        t.key(),
                        v["emulated_kB_per_s"],
                        v["predicted_kB_per_s"],
                        clock_note(v["device_seconds_per_real_second"].as_f64().unwrap_or(1.0))
                    )
                })
                .collect::<Vec<_>>()
                .join(", ")
        );
        per_run.push(Value::Object(tests));
    }
    let summary: Vec<Value> = table
        .iter()
        .map(|(test, series)| {
            let Series {
                emulated,
                predicted,
                per_byte,
                busy,
                sim_busy,
            } = series;
            let (mean, min, max) = stats(emulated);
            let (pred, pred_min, pred_max) = stats(predicted);
            let emulated_per_byte: Vec<f64> = per_byte.iter().map(|p| p.0).collect();
            let simulated_per_byte: Vec<f64> = per_byte.iter().map(|p| p.1).collect();
            let (epb, epb_min, epb_max) = stats(&emulated_per_byte);
            let (spb, _, _) = stats(&simulated_per_byte);
            let (busy_mean, busy_min, busy_max) = stats(busy);
            // What the device moved per second it was busy: the rate without the waits.
            let bound: Vec<f64> = emulated.iter().zip(busy.iter()).map(|(e, b)| e / b).collect();
            let pred_bound: Vec<f64> =
                predicted.iter().zip(sim_busy.iter()).map(|(p, b)| p / b).collect();
            let (bound_mean, bound_min, bound_max) = stats(&bound);
            let (pred_bound_mean, _, _) = stats(&pred_bound);
            let kb = |x: f64| round(x / 1000.0, 1);
            json!({
                "test": test.name(),
                "emulated_kB_per_s": { "mean": kb(mean), "min": kb(min), "max": kb(max) },
                "predicted_kB_per_s": { "mean": kb(pred), "min": kb(pred_min), "max": kb(pred_max) },
                "error_of_mean_pct": round((pred / mean - 1.0) * 100.0, 1),
                // The cost model alone, whatever the emulator's clock did: the instructions
                // the device ran per payload byte, emulated against simulated.
                "instructions_per_byte": { "mean": round(epb, 3), "min": round(epb_min, 3), "max": round(epb_max, 3) },
                "predicted_instructions_per_byte": round(spb, 3),
                "instructions_per_byte_error_pct": round((spb / epb - 1.0) * 100.0, 1),
                "worst_run_error_pct": round(
                    emulated
                        .iter()
                        .zip(predicted.iter())
                        .map(|(e, p)| (p / e - 1.0) * 100.0)
                        .fold(0.0, |w: f64, x| if x.abs() > w.abs() { x } else { w }),
                    1
                ),
                "device_busy_share": { "mean": round(busy_mean, 3), "min": round(busy_min, 3), "max": round(busy_max, 3) },
                "predicted_busy_share": round(stats(sim_busy).0, 3),
                "emulated_device_bound_kB_per_s": { "mean": kb(bound_mean), "min": kb(bound_min), "max": kb(bound_max) },
                "predicted_device_bound_kB_per_s": kb(pred_bound_mean),
                "device_bound_error_of_mean_pct": round((pred_bound_mean / bound_mean - 1.0) * 100.0, 1),
            })
        })
        .collect();
    Ok(json!({
        "board": board.name,
        "image": match kind { Image::Embassy => "embassy", Image::SoftPhy => "soft-phy", _ => "main" },
        "profile": profile,
        "icount": icount,
        "mips": mips,
        // Lab::without_tail_loss_probes, read back before the transfers.
        "host_tail_loss_probe": false,
        "runs": per_run,
        "summary": summary,
    }))
}

/// How far the device's clock may run from real time before a run says so.
const CLOCK_SLACK: f64 = 0.1;

/// A note for a transfer whose device clock ran off real time: the simulator's host and
/// device share one clock, and here QEMU's guest and the host did not, so the host's waits
/// (and a soft PHY's line, paced in real time) took a different share of the device's time.
fn clock_note(device_s_per_real_s: f64) -> String {
    if (device_s_per_real_s - 1.0).abs() > CLOCK_SLACK {
        format!(" (device clock {device_s_per_real_s:.2}x real time)")
    } else {
        String::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every image with a profile: the prediction's `linklab bench` options are accepted, and
    /// the simulator's side of the comparison runs each transfer and reports what it charged.
    #[test]
    fn every_profile_predicts_every_transfer() {
        let riscv = Board::by_name("riscv32-virt").unwrap();
        let mps2 = Board::by_name("mps2-an385").unwrap();
        for (board, kind) in [
            (riscv, Image::Main),
            (riscv, Image::Embassy),
            (riscv, Image::SoftPhy),
            (mps2, Image::Main),
        ] {
            let (profile, _) = profile_of(&board, kind).unwrap();
            let rate = if kind == Image::SoftPhy { "10M" } else { "1G" };
            for test in Test::ALL {
                let argv = bench_argv(profile, 31.25, rate, test, 0.5);
                let sim = simulate(&argv).unwrap_or_else(|e| panic!("{profile} {argv:?}: {e:#}"));
                assert!(sim.goodput > 0.0, "{profile} {argv:?}");
                assert!(
                    sim.busy_share > 0.0 && sim.busy_share <= 1.0,
                    "{profile} {argv:?}: busy {}",
                    sim.busy_share
                );
                // More than a copy; a NIC image's well under 25, a soft PHY's (which decodes
                // every bit) under 200.
                let most = if kind == Image::SoftPhy { 200.0 } else { 25.0 };
                assert!(
                    sim.instructions_per_byte > 1.0 && sim.instructions_per_byte < most,
                    "{profile} {argv:?}: {} instructions per byte",
                    sim.instructions_per_byte
                );
            }
        }
    }

    #[test]
    fn a_clock_off_real_time_is_noted() {
        assert_eq!(clock_note(1.05), "");
        assert_eq!(clock_note(0.95), "");
        assert_eq!(clock_note(1.41), " (device clock 1.41x real time)");
        assert_eq!(clock_note(0.48), " (device clock 0.48x real time)");
    }

    #[test]
    fn mean_min_max() {
        assert_eq!(stats(&[3.0, 1.0, 2.0]), (2.0, 1.0, 3.0));
    }
}
