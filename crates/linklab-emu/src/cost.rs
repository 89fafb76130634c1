//! `linklab emu cost`: what the firmware costs, counted on its own ISA.
//!
//! Instructions: QEMU's `-icount shift=0` runs one guest instruction per nanosecond of virtual
//! time. The firmware counts its awake work per layer (`/stats` `cpu.work`): on riscv32 with
//! `minstret` deltas taken only across code that does not sleep (asleep, icount advances the
//! clock and `minstret` with it), on the Cortex-M3 in nanoseconds awake on its 25 MHz timer,
//! which under `shift=0` are instructions (40 per tick). Each figure is the difference of
//! `/stats` before and after a stock iperf3 transfer, less the cost of one `/stats` fetch,
//! divided by the payload bytes the device's iperf3 server counted (received, or sent).
//! With `--iperf2` the transfers are stock iperf 2's (`iperf -c -n 4M`, and `-R`), divided by
//! the bytes the device's iperf 2 server counted. The compact image serves iperf 2 alone and
//! has no `/stats`: its figures come from its console's work lines around the same two iperf
//! 2 transfers, divided by the bytes the client's reports count.

use std::path::Path;

use anyhow::Context;
use linklab_results::emu::cost::{self as doc, CostReport, Layers};
use serde_json::{json, Value};

use super::board::{Board, ImageSpec, Iperf, Work as WorkSource};
use super::elf;
use super::image::{carries_traffic, Chosen, ImageChoice};
use super::lab::{Lab, DEVICE_IP};
use super::line::{LineOptions, LineSettings};
use super::transfer::{end_bytes, Transfer, Watch};

/// What `linklab emu cost` measures.
#[derive(Clone, Debug)]
pub struct CostOptions {
    /// The board and image.
    pub image: ImageChoice,
    /// The soft-PHY line's options (a soft-PHY image).
    pub line: LineOptions,
    /// Move the bytes with stock iperf 2 instead (`iperf -c -n 4M`, and `-R`, against the
    /// device's port 5001): what its iperf 2 server costs per byte.
    pub iperf2: bool,
}

/// Builds (or finds) the image and counts it: the `cost` document.
pub fn run(options: &CostOptions) -> anyhow::Result<CostReport> {
    if options.iperf2 {
        let p = options
            .image
            .prepare("cost --iperf2", &options.line, serves_iperf2)?;
        if p.chosen.spec.iperf == Iperf::Iperf2Tcp {
            cost_console_iperf2(&p.board, &p.image, p.line.as_ref())
        } else {
            cost_iperf2(&p.board, &p.image, p.line.as_ref())
        }
    } else {
        let p = options
            .image
            .prepare("cost", &options.line, carries_traffic)?;
        cost(&p.board, &p.chosen, &p.image, p.line.as_ref())
    }
}

/// Accepts an image that serves iperf 2: one built with every app and `/stats` (its iperf 2
/// counters; linklab-firmware's feature `iperf2` among them), or the compact image.
fn serves_iperf2(spec: &ImageSpec) -> Result<(), String> {
    carries_traffic(spec)?;
    let full = spec.default_features && spec.work == WorkSource::Stats;
    if !full && spec.iperf != Iperf::Iperf2Tcp {
        return Err(
            "does not serve iperf 2 (the images with every app and /stats do, and the compact one)"
                .into(),
        );
    }
    Ok(())
}

/// Bytes moved each way for the instruction count.
const COST_BYTES: &str = "4M";

/// The device's awake work since boot: the main loop plus the interrupt handler (the ISR
/// counter wraps at 32 bits; differences below are taken modulo that).
#[derive(Clone, Copy, Debug)]
struct Work {
    isr: u32,
    stack: u64,
    apps: u64,
    main: u64,
}

impl Work {
    /// No work (what reading an image's console work lines costs the figures: nothing to
    /// take off).
    const NONE: Work = Work {
        isr: 0,
        stack: 0,
        apps: 0,
        main: 0,
    };

    fn of(stats: &Value) -> anyhow::Result<Work> {
        let w = &stats["cpu"]["work"];
        let get = |k: &str| {
            w[k].as_u64()
                .with_context(|| format!("/stats has no cpu.work.{k}"))
        };
        Ok(Work {
            isr: get("isr")? as u32,
            stack: get("stack")?,
            apps: get("apps")?,
            main: get("main")?,
        })
    }

    /// What happened between `self` and `later`, less `overhead` (what fetching /stats costs).
    fn until(&self, later: &Work) -> Work {
        Work {
            isr: later.isr.wrapping_sub(self.isr),
            stack: later.stack.wrapping_sub(self.stack),
            apps: later.apps.wrapping_sub(self.apps),
            main: later.main.wrapping_sub(self.main),
        }
    }

    fn total(&self) -> u64 {
        self.main + u64::from(self.isr)
    }
}

fn per_byte(work: u64, bytes: u64) -> f64 {
    if bytes == 0 {
        return 0.0;
    }
    (work as f64 / bytes as f64 * 100.0).round() / 100.0
}

/// Instructions per byte of one transfer, whole and per layer, with what one /stats fetch
/// costs (`fetch`) taken off the main loop's share.
fn breakdown(w: &Work, fetch: &Work, bytes: u64) -> (f64, Layers) {
    let main = w.main.saturating_sub(fetch.main);
    let isr = u64::from(w.isr.saturating_sub(fetch.isr));
    let stack = w.stack.saturating_sub(fetch.stack);
    let apps = w.apps.saturating_sub(fetch.apps);
    let layers = Layers {
        driver_isr: per_byte(isr, bytes),
        mac_smoltcp_driver_tx: per_byte(stack, bytes),
        apps: per_byte(apps, bytes),
        main_loop_rest: per_byte(main.saturating_sub(stack + apps), bytes),
    };
    (per_byte(main + isr, bytes), layers)
}

/// What one transfer took in frames and main-loop passes (the per-segment and per-pass
/// shares of the per-byte figures), from two `/stats` documents (the fetch's own frames and
/// pass included).
struct Counts {
    frames_received: u64,
    frames_sent: u64,
    frames_missed: u64,
    loops: u64,
}

impl Counts {
    fn between(before: &Value, after: &Value) -> Counts {
        let diff = |path: [&str; 2]| {
            let v = |s: &Value| s[path[0]][path[1]].as_u64().unwrap_or(0);
            v(after).saturating_sub(v(before))
        };
        let loops = {
            let v = |s: &Value| s["cpu"]["work"]["loops"].as_u64().unwrap_or(0);
            v(after).saturating_sub(v(before))
        };
        Counts {
            frames_received: diff(["mac", "rx_packets"]),
            frames_sent: diff(["mac", "tx_packets"]),
            frames_missed: diff(["mac", "rx_missed_errors"]),
            loops,
        }
    }

    fn document(&self) -> doc::Counts {
        doc::Counts {
            frames_received: self.frames_received,
            frames_sent: self.frames_sent,
            frames_missed: self.frames_missed,
            main_loop_passes: self.loops,
        }
    }
}

/// What an image without `/stats` (the minimal one) prints on its console after the work
/// it counts: `linklab work: isr=.. stack=.. apps=.. main=.. loops=.. rx_packets=..
/// tx_packets=.. rx_missed=.. stack_peak=.. tests=.. failed=.. unit=..` (firmware/common's
/// `work_line`), as the `/stats` document's members the figures below read.
fn console_stats(line: &str) -> anyhow::Result<Value> {
    let body = line
        .split_once("linklab work:")
        .map(|(_, b)| b)
        .context("not a work line")?;
    let mut v = std::collections::BTreeMap::new();
    let mut unit = String::new();
    for pair in body.split_whitespace() {
        let (k, val) = pair
            .split_once('=')
            .with_context(|| format!("work line member {pair:?}"))?;
        if k == "unit" {
            unit = val.replace('-', " ");
        } else {
            let n: u64 = val
                .parse()
                .with_context(|| format!("work line member {pair:?}"))?;
            v.insert(k.to_string(), n);
        }
    }
    let get = |k: &str| {
        v.get(k)
            .copied()
            .with_context(|| format!("work line has no {k}"))
    };
    Ok(json!({
        "cpu": {
            "work_unit": unit,
            "work": {
                "isr": get("isr")?, "stack": get("stack")?, "apps": get("apps")?,
                "main": get("main")?, "loops": get("loops")?,
            },
        },
        "mac": {
            "rx_packets": get("rx_packets")?, "tx_packets": get("tx_packets")?,
            "rx_missed_errors": get("rx_missed")?,
        },
        "memory": { "stack_peak_bytes": get("stack_peak")? },
        "iperf_tests": get("tests")?,
        // (Absent from the lines of images built before it was added.)
        "iperf_failed": v.get("failed").copied(),
    }))
}

/// Fails when the device counted a failed iperf test between the work lines `before` and
/// `after`: the client's figures of a failed test are no measurement.
fn no_failed_tests(before: &Value, after: &Value) -> anyhow::Result<()> {
    let failed = |s: &Value| s["iperf_failed"].as_u64().unwrap_or(0);
    if failed(after) > failed(before) {
        anyhow::bail!(
            "the device counted {} failed iperf test(s) during the measurement",
            failed(after) - failed(before)
        );
    }
    Ok(())
}

/// Waits for the console's work line after iperf3 test number `tests` (see
/// [`console_stats`]).
fn console_stats_after(lab: &mut Lab, tests: u64) -> anyhow::Result<Value> {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let s = console_stats(&lab.console_line("linklab work:", left)?)?;
        if s["iperf_tests"].as_u64() == Some(tests) {
            return Ok(s);
        }
    }
}

/// Boots `image` with QEMU counting one instruction per nanosecond (`-icount shift=0`), over
/// the emulated line `line` when given.
fn boot_counting(board: &Board, image: &Path, line: Option<&LineSettings>) -> anyhow::Result<Lab> {
    Ok(match line {
        Some(l) => Lab::boot_line(board, image, Some(0), l)?,
        None => Lab::boot(board, image, Some("shift=0".into()))?,
    })
}

/// Instructions per payload byte both ways, flash, RAM and stack. With an image without
/// `/stats` (its work on the console) the work counters come from the console's work lines,
/// printed at boot and after each test (there is no fetch to take off; writing a line is
/// counted in the next one's figures).
pub fn cost(
    board: &Board,
    chosen: &Chosen,
    image: &Path,
    line: Option<&LineSettings>,
) -> anyhow::Result<CostReport> {
    if chosen.spec.iperf == Iperf::Iperf2Tcp {
        return cost_console_iperf2(board, image, line);
    }
    let console_work = chosen.spec.work == WorkSource::Console;
    let size = elf::size(image)?;
    let mut lab = boot_counting(board, image, line)?;
    if console_work {
        let s1 = console_stats_after(&mut lab, 0)?;
        let rx_report = moved(&lab, false)?;
        let s2 = console_stats_after(&mut lab, 1)?;
        let tx_report = moved(&lab, true)?;
        let s3 = console_stats_after(&mut lab, 2)?;
        no_failed_tests(&s1, &s3)?;
        return cost_json(
            board,
            &size,
            &Work::NONE,
            [&s1, &s2, &s3],
            iperf3_bytes(&rx_report, &tx_report)?,
            "console",
        );
    }
    let s0 = lab.stats()?;
    let s1 = lab.stats()?;
    let fetch = Work::of(&s0)?.until(&Work::of(&s1)?);

    // Each way, the bytes the device's app moved: received, as the device counted them
    // (the client's `sent` is what it wrote into its socket, and a Linux client ends the
    // test with up to a few hundred kB of that still in its send buffer, never sent: a
    // capture of one run had 3.57 MB of payload on the TAP for 4.19 MB "sent", the device
    // counting 3.56 MB), and sent, as the device counted them.
    let rx_report = moved(&lab, false)?;
    let s2 = lab.stats()?;
    let tx_report = moved(&lab, true)?;
    let s3 = lab.stats()?;
    cost_json(
        board,
        &size,
        &fetch,
        [&s1, &s2, &s3],
        iperf3_bytes(&rx_report, &tx_report)?,
        "/stats",
    )
}

/// The bytes of the two iperf3 transfers: received (as the device counted them), written
/// by the client, sent.
fn iperf3_bytes(rx_report: &Value, tx_report: &Value) -> anyhow::Result<Moved> {
    Ok(Moved {
        received: end_bytes(rx_report, "sum_received")?,
        client_wrote: end_bytes(rx_report, "sum_sent")?,
        sent: end_bytes(tx_report, "sum_sent")?,
        tool: "iperf3",
    })
}

/// What the two transfers of a cost run moved, and with which tool.
struct Moved {
    /// Payload bytes the device received.
    received: u64,
    /// What the client says it wrote of them.
    client_wrote: u64,
    /// Payload bytes the device sent.
    sent: u64,
    /// The stock tool that moved them.
    tool: &'static str,
}

/// The bytes of stock `iperf -c DEVICE ARGS -y C` (iperf 2): the sum of its flows' lines.
fn iperf2_bytes(lab: &Lab, args: &[&str]) -> anyhow::Result<u64> {
    let mut argv = vec!["iperf", "-c", DEVICE_IP, "-y", "C"];
    argv.extend_from_slice(args);
    let out = lab.run(&argv)?;
    let text = String::from_utf8_lossy(&out.stdout);
    let bytes: u64 = text
        .lines()
        .filter_map(|l| l.split(',').nth(7)?.parse::<u64>().ok())
        .sum();
    if bytes == 0 {
        anyhow::bail!(
            "iperf {}: no transfer ({})",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(bytes)
}

/// A `/stats` iperf 2 counter.
fn iperf2_counter(stats: &Value, name: &str) -> anyhow::Result<u64> {
    stats["iperf2"][name]
        .as_u64()
        .with_context(|| format!("/stats has no iperf2.{name} (an image without iperf 2?)"))
}

/// [`cost`] with stock iperf 2 moving the bytes: `iperf -c -n 4M` (the device receives) and
/// `iperf -c -n 4M -R` (it sends on the client's connection), each divided by the bytes the
/// device's iperf 2 server counted.
pub fn cost_iperf2(
    board: &Board,
    image: &Path,
    line: Option<&LineSettings>,
) -> anyhow::Result<CostReport> {
    let size = elf::size(image)?;
    let lab = boot_counting(board, image, line)?;
    let s0 = lab.stats()?;
    let s1 = lab.stats()?;
    let fetch = Work::of(&s0)?.until(&Work::of(&s1)?);
    let client_wrote = iperf2_bytes(&lab, &["-n", COST_BYTES])?;
    let s2 = lab.stats()?;
    iperf2_bytes(&lab, &["-n", COST_BYTES, "-R"])?;
    let s3 = lab.stats()?;
    let moved = Moved {
        received: iperf2_counter(&s2, "bytes_received")? - iperf2_counter(&s1, "bytes_received")?,
        client_wrote,
        sent: iperf2_counter(&s3, "bytes_sent")? - iperf2_counter(&s2, "bytes_sent")?,
        tool: "iperf2",
    };
    cost_json(board, &size, &fetch, [&s1, &s2, &s3], moved, "/stats")
}

/// [`cost`] of an image that serves iperf 2 alone and prints its work on the console (the
/// compact image): the work lines after each test around `iperf -c -n 4M` and `-R`, the
/// bytes as the client's reports count them (iperf 2's server reads until the client's FIN,
/// so what the client wrote arrived; with `-R` the client counts what it received).
fn cost_console_iperf2(
    board: &Board,
    image: &Path,
    line: Option<&LineSettings>,
) -> anyhow::Result<CostReport> {
    let size = elf::size(image)?;
    let mut lab = boot_counting(board, image, line)?;
    let s1 = console_stats_after(&mut lab, 0)?;
    let received = iperf2_bytes(&lab, &["-n", COST_BYTES])?;
    let s2 = console_stats_after(&mut lab, 1)?;
    let sent = iperf2_bytes(&lab, &["-n", COST_BYTES, "-R"])?;
    let s3 = console_stats_after(&mut lab, 2)?;
    no_failed_tests(&s1, &s3)?;
    let moved = Moved {
        received,
        client_wrote: received,
        sent,
        tool: "iperf2",
    };
    cost_json(board, &size, &Work::NONE, [&s1, &s2, &s3], moved, "console")
}

/// [`COST_BYTES`] one way (the device's counters are read around it by the caller): the
/// iperf3 report.
fn moved(lab: &Lab, device_sends: bool) -> anyhow::Result<Value> {
    let t = Transfer::Iperf3 {
        device_sends,
        options: &["-n", COST_BYTES],
    };
    lab.transfer(t, Watch::Nothing)?
        .report
        .context("an iperf3 transfer has its report")
}

/// The `cost` document from the work before (`s[0]`), between (`s[1]`) and after
/// (`s[2]`) the two transfers, less `fetch` (what reading the figures cost), and where the
/// figures were read (`source`).
fn cost_json(
    board: &Board,
    size: &elf::Size,
    fetch: &Work,
    s: [&Value; 3],
    moved: Moved,
    source: &str,
) -> anyhow::Result<CostReport> {
    let [s1, s2, s3] = s;
    let rx_bytes = moved.received;
    let rx = Work::of(s1)?.until(&Work::of(s2)?);
    let tx_bytes = moved.sent;
    let tx = Work::of(s2)?.until(&Work::of(s3)?);

    let (rx_per_byte, rx_layers) = breakdown(&rx, fetch, rx_bytes);
    let (tx_per_byte, tx_layers) = breakdown(&tx, fetch, tx_bytes);
    let rx_counts = Counts::between(s1, s2);
    let tx_counts = Counts::between(s2, s3);
    let stack_peak = s3["memory"]["stack_peak_bytes"].as_u64().unwrap_or(0);
    // Every allocated writable section: a stack reserve of the linker script's counts too.
    let static_ram = size.static_ram + size.stack_reserve;
    Ok(CostReport {
        kind: doc::KIND.into(),
        schema_version: doc::SCHEMA_VERSION,
        board: board.name.into(),
        isa: board.isa.into(),
        unit: s3["cpu"]["work_unit"].as_str().map(String::from),
        rx_instr_per_byte: rx_per_byte,
        tx_instr_per_byte: tx_per_byte,
        rx_layers,
        tx_layers,
        rx_bytes,
        rx_bytes_client_wrote: moved.client_wrote,
        tx_bytes,
        rx_counts: rx_counts.document(),
        tx_counts: tx_counts.document(),
        rx_work: rx.total(),
        tx_work: tx.total(),
        stats_fetch_work: fetch.total(),
        flash_bytes: size.flash,
        static_ram_bytes: static_ram,
        stack_peak_bytes: stack_peak,
        ram_bytes: static_ram + stack_peak,
        conservation_holds: s3["conservation"]["holds"].as_bool(),
        work_source: source.into(),
        tool: moved.tool.into(),
    })
}
