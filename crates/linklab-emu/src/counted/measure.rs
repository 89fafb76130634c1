//! One image counted the peer's way: free-running QEMU with the counting plugin, the idle
//! rate over 4 s, then 10 MiB to the device and 10 MiB from it, each transfer bracketed by
//! two readings of the counter; instructions per payload byte = (instructions − idle rate ×
//! duration) / the bytes the receiving side counted. The lwIP peer speaks iperf 2 (lwiperf):
//! `iperf -n 10M`, then the tradeoff `iperf -n 10M -r`, whose second half (lwiperf connects
//! back and sends) is counted from lwiperf's console report of the first half's end to the
//! client's exit. linklab's images speak iperf3: `iperf3 -n 10M` and `-R`; the compact one
//! serves iperf 2 alone: `iperf -n 10M` and `-R` (on the client's connection: it has no
//! connect-back).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::Context;
use serde_json::Value;

use super::counter::Mark;
use super::image::{boot, iperf3, profile_path, Image, Speaks, DEVICE};
use crate::elf::{self, Function};
use crate::lab::{Clock, Lab};
use crate::transfer::end_bytes;

/// One counted transfer.
#[derive(Clone, Debug)]
pub struct Transfer {
    /// The command that moved the bytes.
    pub tool: String,
    /// Payload bytes the receiving side counted.
    pub bytes: u64,
    /// Host seconds between the two readings.
    pub host_s: f64,
    /// Instructions between the two readings.
    pub insns: u64,
    /// Instructions per payload byte, the idle rate taken off.
    pub per_byte: f64,
    /// Where the instructions went (with `--profile`): function, instructions per byte.
    pub top: Vec<(String, f64)>,
}

/// One image's counted run.
#[derive(Clone, Debug)]
pub struct Counted {
    /// Idle instructions per host second.
    pub idle_rate: f64,
    /// The transfer to the device.
    pub receive: Transfer,
    /// The transfer from the device.
    pub send: Transfer,
    /// The deepest stack the image used: linklab's painted peak, or for lwIP the lowest
    /// non-zero byte below the top of its RAM (QEMU starts RAM zeroed); or why it could not
    /// be read.
    pub stack_peak: Result<u64, String>,
}

/// How images are counted: the plugin, where its profiles go, how the host acknowledges.
#[derive(Clone, Debug)]
pub struct Counting {
    /// The counting plugin's library ([`super::counter::build_plugin`]).
    pub plugin: PathBuf,
    /// The folder the per-block profiles go to (`TAG.prof.N`), or None: no profiles.
    pub profiles: Option<PathBuf>,
    /// The host's route to the device has `quickack 1`: Linux acknowledges every segment
    /// the device sends, so the count of ACKs the device takes in no longer follows the
    /// host's delayed-ACK timing.
    pub ack_every_segment: bool,
}

/// Boots `image` counted and runs the transfers its protocol has; `tag` names its profile
/// files.
pub fn count(tag: &str, image: &Image, counting: &Counting) -> anyhow::Result<Counted> {
    let clock = Clock::Counted {
        plugin: counting.plugin.clone(),
        profile: counting.profiles.as_deref().map(|d| profile_path(d, tag)),
    };
    let emu = boot(image, clock, counting.ack_every_segment)?;
    let (elf, speaks) = (image.elf.as_path(), image.speaks);
    std::thread::sleep(Duration::from_secs(1));
    let idle0 = emu.mark()?;
    std::thread::sleep(Duration::from_secs(4));
    let idle1 = emu.mark()?;
    let idle_rate = (idle1.count - idle0.count) as f64 / (idle1.at - idle0.at).as_secs_f64();
    let functions = match idle0.profile {
        Some(_) => elf::functions(elf)?,
        None => Vec::new(),
    };
    let counted = |tool: String, m0: Mark, m1: Mark, bytes: u64| {
        let host_s = (m1.at - m0.at).as_secs_f64();
        let insns = m1.count - m0.count;
        let per_byte = (insns as f64 - idle_rate * host_s) / bytes.max(1) as f64;
        let top = profile(&emu, &functions, m0, m1, bytes).unwrap_or_default();
        Transfer {
            tool,
            bytes,
            host_s,
            insns,
            per_byte,
            top,
        }
    };
    let (receive, send) = match speaks {
        Speaks::Lwip => {
            let tool = "iperf -c DEVICE -n 10M";
            let m0 = emu.mark()?;
            let csv = run_csv(&emu, &["iperf", "-c", DEVICE, "-n", "10M", "-y", "C"], 60)?;
            let m1 = emu.mark()?;
            let receive = counted(tool.into(), m0, m1, iperf2_bytes(&csv, 3)?);
            std::thread::sleep(Duration::from_secs(3));
            let seen = emu.lines_containing("iperf-done: type=0").len();
            let client = emu
                .command(&[
                    "timeout", "90", "iperf", "-c", DEVICE, "-n", "10M", "-r", "-y", "C",
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::null())
                .spawn()
                .context("cannot run iperf (Debian's iperf package)")?;
            let half = emu.wait_for_nth("iperf-done: type=0", seen, Duration::from_secs(90))?;
            let out = client.wait_with_output()?;
            let m1 = emu.mark()?;
            let m0 = half.mark.context("the console line was not marked")?;
            let csv = String::from_utf8_lossy(&out.stdout).into_owned();
            let send = counted(
                "second half of iperf -c DEVICE -n 10M -r".into(),
                m0,
                m1,
                iperf2_bytes(&csv, 1)?,
            );
            (receive, send)
        }
        Speaks::Linklab { iperf2: true, .. } => {
            let m0 = emu.mark()?;
            let csv = run_csv(&emu, &["iperf", "-c", DEVICE, "-n", "10M", "-y", "C"], 60)?;
            let m1 = emu.mark()?;
            let receive = counted(
                "iperf -c DEVICE -n 10M".into(),
                m0,
                m1,
                iperf2_bytes(&csv, 3)?,
            );
            std::thread::sleep(Duration::from_secs(3));
            let m0 = emu.mark()?;
            let argv = ["iperf", "-c", DEVICE, "-n", "10M", "-R", "-y", "C"];
            let csv = run_csv(&emu, &argv, 60)?;
            let m1 = emu.mark()?;
            let send = counted(
                "iperf -c DEVICE -n 10M -R".into(),
                m0,
                m1,
                iperf2_bytes(&csv, 1)?,
            );
            (receive, send)
        }
        Speaks::Linklab { .. } => {
            let m0 = emu.mark()?;
            let report = iperf3(&emu, "90", &["-n", "10M"])?;
            let m1 = emu.mark()?;
            let receive = counted(
                "iperf3 -c DEVICE -n 10M".into(),
                m0,
                m1,
                end_bytes(&report, "sum_received")?,
            );
            std::thread::sleep(Duration::from_secs(3));
            let m0 = emu.mark()?;
            let report = iperf3(&emu, "90", &["-n", "10M", "-R"])?;
            let m1 = emu.mark()?;
            let send = counted(
                "iperf3 -c DEVICE -n 10M -R".into(),
                m0,
                m1,
                end_bytes(&report, "sum_received")?,
            );
            (receive, send)
        }
    };
    let stack_peak = stack_peak(&emu, speaks).map_err(|e| format!("{e:#}"));
    Ok(Counted {
        idle_rate,
        receive,
        send,
        stack_peak,
    })
}

/// Runs `argv` in the namespace under `timeout SECONDS`; its standard output.
fn run_csv(emu: &Lab, argv: &[&str], seconds: u32) -> anyhow::Result<String> {
    let limit = seconds.to_string();
    let mut all = vec!["timeout", limit.as_str()];
    all.extend_from_slice(argv);
    let out = emu.run(&all)?;
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// The bytes of iperf 2's CSV report line (`-y C`) whose column `column` (1: source
/// address, 3: destination address) is the device.
fn iperf2_bytes(csv: &str, column: usize) -> anyhow::Result<u64> {
    csv.lines()
        .map(|l| l.split(',').collect::<Vec<_>>())
        .filter(|c| c.len() >= 9 && c[column] == DEVICE)
        .find_map(|c| c[7].parse().ok())
        .with_context(|| format!("no iperf 2 report with the device in column {column}: {csv}"))
}

/// The image's deepest stack: linklab's own painted peak (`/stats`, or the minimal image's
/// console work line); for lwIP, the lowest non-zero byte of the 16 KiB below the top of
/// RAM (its stack grows down from 0x2040_0000 into a 4 KiB reserve, and QEMU starts RAM
/// zeroed).
fn stack_peak(emu: &Lab, speaks: Speaks) -> anyhow::Result<u64> {
    match speaks {
        Speaks::Lwip => {
            const TOP: u64 = 0x2040_0000;
            const SCAN: u64 = 16 * 1024;
            let mem = emu.memory(TOP - SCAN, SCAN)?;
            let first = mem.iter().position(|&b| b != 0).unwrap_or(mem.len());
            Ok(SCAN - first as u64)
        }
        Speaks::Linklab { stats: true, .. } => {
            let url = format!("http://{DEVICE}/stats");
            let out = emu.run(&["curl", "-sS", "--max-time", "20", &url])?;
            let stats: Value = serde_json::from_slice(&out.stdout).context("/stats")?;
            stats["memory"]["stack_peak_bytes"]
                .as_u64()
                .context("/stats has no memory.stack_peak_bytes")
        }
        Speaks::Linklab { stats: false, .. } => {
            let line = emu
                .lines_containing("linklab work:")
                .pop()
                .context("no work line on the console")?;
            line.text
                .split_whitespace()
                .find_map(|kv| kv.strip_prefix("stack_peak=")?.parse().ok())
                .context("the work line has no stack_peak")
        }
    }
}

/// Where the instructions between two profiled marks went: the functions with the most,
/// per payload byte (empty when the boot does not profile).
fn profile(
    emu: &Lab,
    functions: &[Function],
    m0: Mark,
    m1: Mark,
    bytes: u64,
) -> anyhow::Result<Vec<(String, f64)>> {
    let (Some(p0), Some(p1)) = (emu.profile_file(&m0), emu.profile_file(&m1)) else {
        return Ok(Vec::new());
    };
    let read = |p: &Path| -> anyhow::Result<HashMap<u64, u64>> {
        let mut by_block = HashMap::new();
        for l in std::fs::read_to_string(p)?.lines() {
            let f: Vec<&str> = l.split(' ').collect();
            if f.len() != 3 {
                continue;
            }
            let addr = u64::from_str_radix(f[0], 16)?;
            let insns: u64 = f[1].parse()?;
            let execs: u64 = f[2].parse()?;
            *by_block.entry(addr).or_default() += insns * execs;
        }
        Ok(by_block)
    };
    let (before, after) = (read(&p0)?, read(&p1)?);
    let mut by_function: HashMap<String, u64> = HashMap::new();
    for (addr, n) in after {
        let d = n.saturating_sub(before.get(&addr).copied().unwrap_or(0));
        if d == 0 {
            continue;
        }
        let name = elf::function_at(functions, addr)
            .map_or_else(|| format!("{addr:#x}"), |f| demangle(&f.name));
        *by_function.entry(name).or_default() += d;
    }
    let mut top: Vec<(String, f64)> = by_function
        .into_iter()
        .map(|(f, n)| (f, n as f64 / bytes.max(1) as f64))
        .collect();
    top.sort_by(|a, b| b.1.total_cmp(&a.1));
    top.truncate(30);
    Ok(top)
}

/// A Rust symbol's path without its hash (`_ZN...17h<hash>E`), or the name as it is.
fn demangle(name: &str) -> String {
    let Some(mut rest) = name.strip_prefix("_ZN") else {
        return name.to_string();
    };
    let mut parts = Vec::new();
    while let Some(len_end) = rest.find(|c: char| !c.is_ascii_digit()) {
        let Ok(len) = rest[..len_end].parse::<usize>() else {
            break;
        };
        let Some(part) = rest.get(len_end..len_end + len) else {
            break;
        };
        if !(part.len() == 17 && part.starts_with('h')) {
            parts.push(
                part.replace("$LT$", "<")
                    .replace("$GT$", ">")
                    .replace("$u20$", " ")
                    .replace("..", "::"),
            );
        }
        rest = &rest[len_end + len..];
    }
    if parts.is_empty() {
        name.to_string()
    } else {
        parts.join("::")
    }
}
