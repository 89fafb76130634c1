//! `linklab emu predict`: the simulator against the emulated firmware. Boots the image at
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

use anyhow::{bail, Context};
use linklab_measure::bench::{bench_file, BenchOptions, Duplex, SendingApp};
use linklab_results::emu::document::{round, Spread};
use linklab_results::emu::predict::{
    self as doc, Latency, PredictReport, PredictRun, Summary, TestFigures,
};
use serde_json::Value;

use super::board::{Attach, Board, ImageSpec};
use super::image::ImageChoice;
use super::lab::{Lab, DEVICE_IP};
use super::line::{LineOptions, LineSettings};
use super::parts::{counted, profile_of};
use super::transfer::{Clocks, Moved, Transfer, Watch};

/// What `linklab emu predict` compares.
#[derive(Clone, Debug)]
pub struct PredictOptions {
    /// The board and image (one with a simulator profile).
    pub image: ImageChoice,
    /// The soft-PHY line's options (a soft-PHY image).
    pub line: LineOptions,
    /// The fixed rate: `-icount shift=N`, 1000 / 2^N MIPS.
    pub shift: u32,
    /// Boots of the image.
    pub runs: u32,
}

/// Builds (or finds) the image and compares: the `predict` document. `each_run` is told of
/// every run as it ends (its number from 1, and its figures).
pub fn run(
    options: &PredictOptions,
    each_run: &mut dyn FnMut(u32, &PredictRun),
) -> anyhow::Result<PredictReport> {
    let p = options.image.prepare("predict", &options.line, counted)?;
    predict(
        &p.board,
        p.chosen.spec,
        &p.image,
        (options.shift, options.runs),
        p.line.as_ref(),
        each_run,
    )
}

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

/// Runs one transfer against the lab's device: what it moved (in the device's clock) and
/// what the device did meanwhile.
fn emulate(lab: &Lab, test: Test, shift: u32) -> anyhow::Result<(Moved, DeviceSide)> {
    let t = match test {
        Test::Receive => Transfer::Iperf3 {
            device_sends: false,
            options: &["-t", SECONDS, "-C", "cubic"],
        },
        Test::Send => Transfer::Iperf3 {
            device_sends: true,
            options: &["-t", SECONDS],
        },
        Test::Curl => Transfer::Download { path: "/3MB.txt" },
    };
    // `/stats` every half second while an iperf3 transfer runs (the interrupt's counter
    // wraps, see `DeviceSide::over`); its own work is in the count, a fraction of a per mille
    // of the transfer's.
    let moved = lab.transfer_retrying(t, Watch::Often, "predict")?;
    let side = DeviceSide::over(&moved.snapshots, shift, test != Test::Receive)?;
    Ok((moved, side))
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

/// The options of [`bench_argv`]'s `linklab bench` (its share as the command line gives it:
/// three decimals).
fn bench_options(
    profile: &str,
    mhz: f64,
    rate: &str,
    test: Test,
    share: f64,
) -> anyhow::Result<BenchOptions> {
    let sends = |app| Some(app).filter(|_| test != Test::Receive);
    Ok(BenchOptions {
        profile: profile.parse()?,
        mhz: Some(mhz),
        rate: rate.parse()?,
        duplex: Duplex::Full,
        pings: 0,
        gets: 1,
        misaligned_copy: Some(format!("{share:.3}").parse()?),
        sizes: vec![bench_file("3MB").map_err(anyhow::Error::msg)?],
        device_sends: sends(match test {
            Test::Curl => SendingApp::Http,
            _ => SendingApp::Iperf3,
        }),
        ..BenchOptions::default()
    })
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

/// The simulator's run of `options` (which set `mhz`).
fn simulate(options: &BenchOptions) -> anyhow::Result<Simulated> {
    let cfg = linklab_measure::bench::config(options)?;
    let mhz = options.mhz.context("the prediction sets --mhz")?;
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
    let s = Spread::of(xs);
    (s.mean, s.min, s.max)
}

/// Runs the comparison: `runs` boots of `board`'s `spec` image (`image`) at `shift`.
pub fn predict(
    board: &Board,
    spec: &ImageSpec,
    image: &Path,
    (shift, runs): (u32, u32),
    line: Option<&LineSettings>,
    each_run: &mut dyn FnMut(u32, &PredictRun),
) -> anyhow::Result<PredictReport> {
    let (profile, _) = profile_of(board, spec)?;
    let mips = 1000.0 / f64::from(1u32 << shift);
    // The soft PHY's line is paced at 10 Mbit/s each way; the NICs' TAPs are far faster
    // than the CPU.
    let rate = line_rate(spec);
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
        // The way between host and device, measured before the transfers: a diagnostic.
        let (rtt_us, echo_us, latency_us) = host_latency_us(&lab, shift, mips)?;
        let latency = Latency {
            ping_rtt_mean_us: round(rtt_us, 1),
            device_us_per_echo: round(echo_us, 1),
            one_way_us: round(latency_us, 1),
        };
        let mut figures = Vec::new();
        for (test, series) in table.iter_mut() {
            figures.push(run_test(
                &lab,
                *test,
                series,
                (shift, mips),
                (profile, rate),
            )?);
        }
        let [receive, send, curl]: [TestFigures; 3] = figures
            .try_into()
            .map_err(|_| anyhow::anyhow!("three transfers a run"))?;
        let r = PredictRun {
            latency,
            receive,
            send,
            curl,
        };
        each_run(run + 1, &r);
        per_run.push(r);
    }
    let summary: Vec<Summary> = table
        .iter()
        .map(|(test, series)| summary_of(*test, series))
        .collect();
    Ok(PredictReport {
        kind: doc::KIND.into(),
        schema_version: doc::SCHEMA_VERSION,
        board: board.name.into(),
        image: spec.name.into(),
        profile: profile.into(),
        icount,
        mips,
        // Lab::without_tail_loss_probes, read back before the transfers.
        host_tail_loss_probe: false,
        runs: per_run,
        summary,
    })
}

/// One test of one run: emulated on `lab`, then simulated with the profile (`profile`, at
/// `mips`, over a line of `rate`), its figures added to `series`; returns the run's figures.
fn run_test(
    lab: &Lab,
    test: Test,
    series: &mut Series,
    (shift, mips): (u32, f64),
    (profile, rate): (&str, &str),
) -> anyhow::Result<TestFigures> {
    let (e, side) = emulate(lab, test, shift)?;
    let share = side.misaligned_share();
    let argv = bench_argv(profile, mips, rate, test, share);
    let sim = simulate(&bench_options(profile, mips, rate, test, share)?)?;
    let (goodput, sim_busy_share) = (sim.goodput, sim.busy_share);
    let bytes = e.bytes as f64;
    let emulated_per_byte = side.instructions / bytes;
    series
        .per_byte
        .push((emulated_per_byte, sim.instructions_per_byte));
    let emulated_bps = e.clocks.rate(e.bytes);
    let busy_share = side.instructions / (side.uptime_ns / 1e9 * mips * 1e6);
    // The device's clock against real time over the span /stats covers (for curl,
    // whose transfer is a fraction of a second, the last fetch is not a rounding
    // error).
    let stats_clocks = Clocks {
        device_s: side.uptime_ns / 1e9,
        real_s: e.stats_real_s,
    };
    series.emulated.push(emulated_bps);
    series.predicted.push(goodput);
    series.busy.push(busy_share);
    series.sim_busy.push(sim_busy_share);
    let behind = e.clocks.behind();
    Ok(TestFigures {
        emulated_bytes: bytes,
        emulated_device_seconds: round(e.clocks.device_s, 4),
        emulated_kb_per_s: round(emulated_bps / 1000.0, 1),
        device_seconds_per_real_second: round(stats_clocks.pace(), 3),
        device_busy_share: round(busy_share, 3),
        instructions_per_byte: round(emulated_per_byte, 3),
        misaligned_copy_share: round(share, 3),
        frames_received: side.rx_frames,
        frames_sent: side.tx_frames,
        passes: side.passes,
        predicted_kb_per_s: round(goodput / 1000.0, 1),
        predicted_instructions_per_byte: round(sim.instructions_per_byte, 3),
        predicted_busy_share: round(sim_busy_share, 3),
        error_pct: round((goodput / emulated_bps - 1.0) * 100.0, 1),
        bench: format!("linklab bench {}", argv.join(" ")),
        emulated_device_bound_kb_per_s: round(emulated_bps / busy_share / 1000.0, 1),
        predicted_device_bound_kb_per_s: round(goodput / sim_busy_share / 1000.0, 1),
        // The host's rate only beside the line that says the emulator fell behind.
        real_seconds: behind.as_ref().map(|_| round(e.clocks.real_s, 3)),
        real_kb_per_s: behind
            .as_ref()
            .map(|_| round(e.clocks.host_rate(e.bytes) / 1000.0, 1)),
        behind,
    })
}

/// A test's figures over every run: mean, min and max of each, and the prediction's errors.
fn summary_of(test: Test, series: &Series) -> Summary {
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
    let bound: Vec<f64> = emulated
        .iter()
        .zip(busy.iter())
        .map(|(e, b)| e / b)
        .collect();
    let pred_bound: Vec<f64> = predicted
        .iter()
        .zip(sim_busy.iter())
        .map(|(p, b)| p / b)
        .collect();
    let (bound_mean, bound_min, bound_max) = stats(&bound);
    let (pred_bound_mean, _, _) = stats(&pred_bound);
    let kb = |x: f64| round(x / 1000.0, 1);
    let spread = |min: f64, mean: f64, max: f64, f: &dyn Fn(f64) -> f64| Spread {
        mean: f(mean),
        min: f(min),
        max: f(max),
    };
    let r3 = |x: f64| round(x, 3);
    Summary {
        test: test.name().into(),
        emulated_kb_per_s: spread(min, mean, max, &kb),
        predicted_kb_per_s: spread(pred_min, pred, pred_max, &kb),
        error_of_mean_pct: round((pred / mean - 1.0) * 100.0, 1),
        // The cost model alone, whatever the emulator's clock did: the instructions
        // the device ran per payload byte, emulated against simulated.
        instructions_per_byte: spread(epb_min, epb, epb_max, &r3),
        predicted_instructions_per_byte: round(spb, 3),
        instructions_per_byte_error_pct: round((spb / epb - 1.0) * 100.0, 1),
        worst_run_error_pct: round(
            emulated
                .iter()
                .zip(predicted.iter())
                .map(|(e, p)| (p / e - 1.0) * 100.0)
                .fold(0.0, |w: f64, x| if x.abs() > w.abs() { x } else { w }),
            1,
        ),
        device_busy_share: spread(busy_min, busy_mean, busy_max, &r3),
        predicted_busy_share: round(stats(sim_busy).0, 3),
        emulated_device_bound_kb_per_s: spread(bound_min, bound_mean, bound_max, &kb),
        predicted_device_bound_kb_per_s: kb(pred_bound_mean),
        device_bound_error_of_mean_pct: round((pred_bound_mean / bound_mean - 1.0) * 100.0, 1),
    }
}

/// The simulated link's rate for `spec`: a soft PHY's line is paced at 10 Mbit/s each way;
/// the NICs' TAPs are far faster than the CPU.
fn line_rate(spec: &ImageSpec) -> &'static str {
    if spec.attach == Attach::SoftPhyLine {
        "10M"
    } else {
        "1G"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every image with a profile: the prediction's `linklab bench` options are accepted, and
    /// the simulator's side of the comparison runs each transfer and reports what it charged.
    #[test]
    fn every_profile_predicts_every_transfer() {
        let counted = super::super::board::BOARDS.iter().flat_map(|b| {
            b.images
                .iter()
                .filter(|i| i.sim_profile.is_some())
                .map(move |i| (b, i))
        });
        for (board, spec) in counted {
            let (profile, _) = profile_of(board, spec).unwrap();
            let rate = line_rate(spec);
            for test in Test::ALL {
                let argv = bench_argv(profile, 31.25, rate, test, 0.5);
                let sim = bench_options(profile, 31.25, rate, test, 0.5)
                    .and_then(|o| simulate(&o))
                    .unwrap_or_else(|e| panic!("{profile} {argv:?}: {e:#}"));
                assert!(sim.goodput > 0.0, "{profile} {argv:?}");
                assert!(
                    sim.busy_share > 0.0 && sim.busy_share <= 1.0,
                    "{profile} {argv:?}: busy {}",
                    sim.busy_share
                );
                // More than a copy; a NIC image's well under 25, a soft PHY's (which decodes
                // every bit) under 200.
                let most = if spec.attach == Attach::SoftPhyLine {
                    200.0
                } else {
                    25.0
                };
                assert!(
                    sim.instructions_per_byte > 1.0 && sim.instructions_per_byte < most,
                    "{profile} {argv:?}: {} instructions per byte",
                    sim.instructions_per_byte
                );
            }
        }
    }

    #[test]
    fn mean_min_max() {
        assert_eq!(stats(&[3.0, 1.0, 2.0]), (2.0, 1.0, 3.0));
    }
}
