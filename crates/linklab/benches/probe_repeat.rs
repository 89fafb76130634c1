//! The figures of the crate README's "probe, run after run" table: `linklab probe` run again
//! and again on an unchanged device beside CPU hogs, each run with `--baseline` of the first,
//! and the link of the baseline test halved (needs root and QEMU, as the probe tests):
//!
//! ```sh
//! cargo bench -p linklab --bench probe_repeat            # serve, riscv32-virt, halved
//! ```
//!
//! `LINKLAB_BIN=/path/to/linklab` measures another build (an older one, for the "before"
//! column); `PROBE_TARGETS=serve,riscv32-virt,halved` picks the cases, `PROBE_RUNS=10` the runs
//! per case, `PROBE_HOGS=2` the CPU hogs (`yes > /dev/null`, outside the namespaces) and
//! `PROBE_DURATION` the probe's `--duration` on the devices (default: the probe's own, 60 s),
//! `PROBE_HALVED_DURATION` on the halved link (default 25 s, the baseline test's).
//!
//! - **serve**, **riscv32-virt**: `linklab serve` / `linklab emu riscv32-virt` on a
//!   TAP; run 1 writes the baseline, runs 2..N compare with it at the default tolerance. Every
//!   exit 3 there is a false regression (the device did not change). Per figure: the lowest,
//!   median and highest value over the N runs and their spread ((max − min) / median).
//! - **halved**: stock `iperf3 -s` behind a router namespace with a tbf at 100 Mbit/s each way
//!   (as `tests/probe.rs`'s baseline test: both ends at real-time priority), one baseline run,
//!   then the tbf at 50 Mbit/s and N runs with `--baseline`: each must exit 3 naming TCP each
//!   way and the knee each way.

// The integration tests' helpers (namespaces, a device on a TAP).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use linklab_results::probe::ProbeReport;
use linklab_testkit::device::{Device, DEVICE};
use linklab_testkit::{iface_with, veth_pair, wait_until, ChildGuard, Netns};

/// The figures the halved link must name.
const HALVED_NAMES: [&str; 4] = [
    "tcp.to_device",
    "tcp.from_device",
    "udp.knee.to_device",
    "udp.knee.from_device",
];

/// One probe run: exit code, figures by id, the ids it named worse.
struct RunResult {
    code: i32,
    wall: f64,
    figures: BTreeMap<String, f64>,
    worse: Vec<String>,
}

/// CPU hogs (`yes > /dev/null`), killed on drop.
struct Hogs {
    _children: Vec<ChildGuard>,
}

fn hogs(n: usize) -> Hogs {
    let children = (0..n)
        .map(|_| {
            let child = Command::new("yes")
                .stdout(Stdio::null())
                .spawn()
                .expect("start yes");
            ChildGuard(Some(child))
        })
        .collect();
    Hogs {
        _children: children,
    }
}

fn env_or<T: std::str::FromStr>(name: &str, default: T) -> T {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(default)
}

/// Runs `bin probe HOST` in `ns` (with `prefix`, e.g. `chrt -f 20`), JSON to `json`.
fn probe(
    ns: &Netns,
    bin: &Path,
    host: &str,
    args: &[&str],
    prefix: &[&str],
    json: &Path,
) -> RunResult {
    let html = json.with_extension("html");
    let mut argv: Vec<&str> = prefix.to_vec();
    argv.extend_from_slice(&[bin.to_str().unwrap(), "probe", host, "--json"]);
    argv.push(json.to_str().unwrap());
    argv.extend_from_slice(&["-o", html.to_str().unwrap()]);
    argv.extend_from_slice(args);
    let began = Instant::now();
    let out = ns.command(&argv).output().expect("run linklab probe");
    let wall = began.elapsed().as_secs_f64();
    let stderr = String::from_utf8_lossy(&out.stderr);
    // A run that wrote no document (or a broken one) counts no figure: the bench goes on.
    let doc: Option<ProbeReport> = std::fs::read(json)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok());
    let figures = doc
        .iter()
        .flat_map(|d| &d.figures)
        .map(|f| (f.id.clone(), f.value))
        .collect();
    let worse = doc
        .iter()
        .filter_map(|d| d.baseline.as_ref())
        .flat_map(|b| &b.figures)
        .filter(|f| f.worse)
        .map(|f| f.id.clone())
        .collect();
    let code = out.status.code().unwrap_or(-1);
    if code != 0 && code != 3 {
        eprintln!("probe exited {code}: {stderr}");
    }
    RunResult {
        code,
        wall,
        figures,
        worse,
    }
}

fn show(id: &str, v: f64) -> String {
    if id.contains("rtt_p50") {
        format!("{v:.0} µs")
    } else {
        format!("{:.1}", v / 1e6)
    }
}

/// Prints one run's line.
fn print_run(i: usize, r: &RunResult) {
    let ids = [
        "tcp.to_device",
        "tcp.from_device",
        "tcp.to_device.p2",
        "tcp.from_device.p2",
        "udp.knee.to_device",
        "udp.knee.from_device",
    ];
    let figs: Vec<String> = ids
        .iter()
        .map(|id| r.figures.get(*id).map_or("-".into(), |v| show(id, *v)))
        .collect();
    println!(
        "  run {:>2}: exit {} in {:>4.1} s · TCP → {} ← {} ·2 → {} ← {} · knee → {} ← {} Mbit/s{}",
        i + 1,
        r.code,
        r.wall,
        figs[0],
        figs[1],
        figs[2],
        figs[3],
        figs[4],
        figs[5],
        if r.worse.is_empty() {
            String::new()
        } else {
            format!(" · worse: {}", r.worse.join(", "))
        }
    );
}

/// Per figure over the runs: lowest, median, highest, spread.
fn print_spread(runs: &[RunResult]) {
    let mut all: BTreeMap<&str, Vec<f64>> = BTreeMap::new();
    for r in runs {
        for (id, v) in &r.figures {
            all.entry(id.as_str()).or_default().push(*v);
        }
    }
    println!(
        "  {:<24} {:>5} {:>10} {:>10} {:>10} {:>8}",
        "figure (Mbit/s, µs)", "runs", "lowest", "median", "highest", "spread"
    );
    for (id, mut v) in all {
        v.sort_by(f64::total_cmp);
        let median = if v.len() % 2 == 1 {
            v[v.len() / 2]
        } else {
            (v[v.len() / 2 - 1] + v[v.len() / 2]) / 2.0
        };
        let (lo, hi) = (v[0], v[v.len() - 1]);
        let spread = if median > 0.0 {
            format!("{:.0} %", (hi - lo) / median * 100.0)
        } else {
            "-".into()
        };
        println!(
            "  {:<24} {:>5} {:>10} {:>10} {:>10} {:>8}",
            id,
            v.len(),
            show(id, lo),
            show(id, median),
            show(id, hi),
            spread
        );
    }
}

/// N runs against an unchanged device, each after the first with `--baseline` of it.
fn unchanged(name: &str, dev: &Device, bin: &Path, runs: usize, dir: &Path) {
    let duration = std::env::var("PROBE_DURATION").ok();
    let mut args: Vec<String> = Vec::new();
    if let Some(d) = &duration {
        args.extend(["--duration".into(), d.clone()]);
    }
    let base = dir.join(format!("{name}-1.json"));
    let mut results = Vec::new();
    for i in 0..runs {
        let json = dir.join(format!("{name}-{}.json", i + 1));
        let mut a: Vec<&str> = args.iter().map(String::as_str).collect();
        let b = base.to_str().unwrap().to_string();
        if i > 0 {
            a.extend(["--baseline", &b]);
        }
        let r = probe(&dev.ns, bin, DEVICE, &a, &[], &json);
        print_run(i, &r);
        results.push(r);
    }
    let compared = &results[1..];
    let false_alarms = compared.iter().filter(|r| r.code == 3).count();
    let failed = results
        .iter()
        .filter(|r| r.code != 0 && r.code != 3)
        .count();
    println!(
        "{name}: {false_alarms} of {} runs with --baseline exited 3 (false regressions); {failed} failed",
        compared.len()
    );
    let mut named: BTreeMap<&str, usize> = BTreeMap::new();
    for r in compared {
        for id in &r.worse {
            *named.entry(id.as_str()).or_default() += 1;
        }
    }
    if !named.is_empty() {
        println!("  named worse: {named:?}");
    }
    print_spread(&results);
}

/// The baseline test's path: stock iperf3 behind a router with a tbf; baseline at 100 Mbit/s,
/// then N runs at 50 Mbit/s with `--baseline`.
fn halved(bin: &Path, runs: usize, dir: &Path) {
    let a = Netns::new("prra");
    let b = Netns::new("prrb");
    let r = Netns::new("prrr");
    veth_pair(&a, "198.18.41.1/24", &r, "198.18.41.254/24");
    veth_pair(&b, "198.18.42.2/24", &r, "198.18.42.254/24");
    a.run(&["ip", "route", "add", "default", "via", "198.18.41.254"]);
    b.run(&["ip", "route", "add", "default", "via", "198.18.42.254"]);
    r.run(&["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]);
    let rt = ["chrt", "-f", "20"];
    // Its output discarded: a pipe nobody reads fills after ~100 tests and stops the server.
    let _server = ChildGuard(Some(
        a.command(&["chrt", "-f", "20", "iperf3", "-s", "-p", "5201"])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start iperf3 -s"),
    ));
    let up = wait_until(Duration::from_secs(5), || {
        let out = a
            .command(&["ss", "-Hltn", "sport", "= :5201"])
            .output()
            .unwrap();
        !out.stdout.is_empty()
    });
    assert!(up, "iperf3 -s did not start");
    let shape = |rate: &str| {
        for addr in ["198.18.41.254", "198.18.42.254"] {
            let dev = iface_with(&r, addr);
            r.run(&[
                "tc", "qdisc", "replace", "dev", &dev, "root", "tbf", "rate", rate, "burst",
                "128kb", "latency", "50ms",
            ]);
        }
    };
    let d = env_or("PROBE_HALVED_DURATION", 25u64).to_string();
    shape("100mbit");
    let base = dir.join("halved-base.json");
    let first = probe(&b, bin, "198.18.41.1", &["--duration", &d], &rt, &base);
    print_run(0, &first);
    shape("50mbit");
    let b_path = base.to_str().unwrap().to_string();
    let mut results = vec![first];
    for i in 0..runs {
        let json = dir.join(format!("halved-{}.json", i + 1));
        let r = probe(
            &b,
            bin,
            "198.18.41.1",
            &["--duration", &d, "--baseline", &b_path],
            &rt,
            &json,
        );
        print_run(i + 1, &r);
        results.push(r);
    }
    let halved = &results[1..];
    let flagged = halved.iter().filter(|r| r.code == 3).count();
    let named_all = halved
        .iter()
        .filter(|r| HALVED_NAMES.iter().all(|n| r.worse.iter().any(|w| w == n)))
        .count();
    println!(
        "halved: {flagged} of {} runs exited 3; {named_all} named all of {}",
        halved.len(),
        HALVED_NAMES.join(", ")
    );
}

fn main() {
    let bin =
        std::env::var_os("LINKLAB_BIN").map_or_else(linklab_testkit::linklab_bin, PathBuf::from);
    let targets = std::env::var("PROBE_TARGETS").unwrap_or("serve,riscv32-virt,halved".into());
    let runs: usize = env_or("PROBE_RUNS", 10);
    let n_hogs: usize = env_or("PROBE_HOGS", 2);
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(format!(
        "probe_repeat-{}",
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    ));
    std::fs::create_dir_all(&dir).expect("output directory");
    println!(
        "linklab: {} · {runs} runs per case · {n_hogs} CPU hogs · documents in {}",
        bin.display(),
        dir.display()
    );
    for target in targets.split(',') {
        let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
        println!(
            "\n{target} (load before: {})",
            load.split_whitespace()
                .take(3)
                .collect::<Vec<_>>()
                .join(" ")
        );
        match target {
            "serve" => {
                let dev = Device::serve_with(&bin, "prq");
                let _hogs = hogs(n_hogs);
                unchanged(target, &dev, &bin, runs, &dir);
            }
            "halved" => {
                let _hogs = hogs(n_hogs);
                halved(&bin, runs, &dir);
            }
            board => {
                let dev = Device::emu_with(&bin, board, &[]);
                let _hogs = hogs(n_hogs);
                unchanged(target, &dev, &bin, runs, &dir);
            }
        }
    }
}
