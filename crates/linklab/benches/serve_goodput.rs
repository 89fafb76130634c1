//! TCP goodput of the soft NIC (`linklab serve`) measured by stock `iperf3 -c` (and `-R`),
//! side by side in one run with
//! (a) the bare smoltcp baseline: smoltcp's own `TunTapInterface` running the same
//!     linklab-perf iperf3 server (a TCP sink socket that speaks iperf3's control protocol),
//!     same socket buffers, same firmware-shaped loop, no linklab-mac in the path;
//! (b) the kernel ceiling: `iperf3 -s` on the far end of a veth pair.
//!
//! Besides goodput it reports the device's CPU time per megabyte moved (from
//! /proc/PID/stat), which a busy shared machine disturbs far less than goodput.
//!
//! Then, when valgrind is installed, it counts the device's instructions per MB moved
//! (callgrind, user space only) for the soft NIC and the baseline: a figure that does not
//! depend on how busy the machine is.
//!
//! Needs root (namespaces, TAP). Run: `cargo bench -p linklab --bench serve_goodput`.
//! `LINKLAB_BENCH_SECS` sets the iperf3 duration (default 3 s), `LINKLAB_BENCH_REPS` the runs
//! per setup (default 3, alternating soft NIC and baseline; medians are reported).

#[path = "serve_goodput/baseline.rs"]
mod baseline;

use std::process::Command;
use std::time::Duration;

use linklab_testkit::{linklab_bin, veth_pair, Netns};

/// One iperf3 run: goodput at the receiver and the device's CPU cost per MB moved.
#[derive(Clone, Copy, Debug)]
struct Run {
    mbps: f64,
    cpu_us_per_mb: f64,
}

/// CPU time (user + system) in clock ticks from a `/proc/.../stat` file.
fn cpu_ticks(stat_path: &str) -> u64 {
    let stat = std::fs::read_to_string(stat_path).unwrap_or_default();
    let Some(close) = stat.rfind(')') else {
        return 0;
    };
    let fields: Vec<&str> = stat[close + 1..].split_whitespace().collect();
    let field = |i: usize| {
        fields
            .get(i)
            .and_then(|f| f.parse::<u64>().ok())
            .unwrap_or(0)
    };
    field(11) + field(12)
}

/// Runs stock `iperf3 -c` against `server`; `stat_path` is the device's /proc stat file
/// (empty: no CPU figure).
fn iperf3(ns: &Netns, server: &str, secs: u32, reverse: bool, stat_path: &str) -> Run {
    let secs = secs.to_string();
    let mut argv = vec![
        "timeout",
        "60",
        "iperf3",
        "-c",
        server,
        "-t",
        &secs,
        "-J",
        "--connect-timeout",
        "5000",
    ];
    if reverse {
        argv.push("-R");
    }
    let before = cpu_ticks(stat_path);
    let out = ns.command(&argv).output().expect("run iperf3");
    let ticks = cpu_ticks(stat_path) - before;
    let report = linklab_testkit::iperf3::Report::parse(&out.stdout);
    assert!(report.error.is_none(), "iperf3 failed: {:?}", report.error);
    let sum = report.end.sum("sum_received");
    let bytes = sum.bytes as f64;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as f64;
    Run {
        mbps: sum.bits_per_second / 1e6,
        cpu_us_per_mb: ticks as f64 * 1e6 / hz / (bytes / 1e6),
    }
}

/// Puts the kernel side of `tap` at 198.18.0.1/24 once the TAP exists.
fn configure_host_side(ns: &Netns, tap: &str, device_ip: &str) {
    let up = linklab_testkit::wait_until(Duration::from_secs(10), || {
        ns.command(&["ip", "link", "show", tap])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    });
    assert!(up, "TAP {tap} never appeared");
    ns.run(&["ip", "addr", "add", "198.18.0.1/24", "dev", tap]);
    ns.run(&["ip", "link", "set", tap, "up"]);
    let ok = linklab_testkit::wait_until(Duration::from_secs(10), || {
        ns.command(&["ping", "-c", "1", "-W", "1", device_ip])
            .output()
            .map(|o| o.status.success())
            .unwrap_or(false)
    });
    assert!(ok, "{device_ip} does not answer ping");
}

/// The soft NIC: `linklab serve` with the given queue and window; (forward, reverse).
fn soft_nic(secs: u32, rx_frames: &str, window: &str) -> (Run, Run) {
    let ns = Netns::new("bsoft");
    let bin = linklab_bin();
    let child = ns.spawn(&[
        bin.to_str().unwrap(),
        "serve",
        "--tap",
        "ll0",
        "--ip",
        "198.18.0.2/24",
        "--rx-frames",
        rx_frames,
        "--tcp-window",
        window,
    ]);
    configure_host_side(&ns, "ll0", "198.18.0.2");
    let stat = format!("/proc/{}/stat", child.0.as_ref().expect("child").id());
    let fwd = iperf3(&ns, "198.18.0.2", secs, false, &stat);
    let rev = iperf3(&ns, "198.18.0.2", secs, true, &stat);
    let out = child.interrupt(Duration::from_secs(10));
    let text = String::from_utf8_lossy(&out.stdout);
    let missed = text
        .split_whitespace()
        .find_map(|w| w.strip_prefix("rx_missed_errors="))
        .unwrap_or("?");
    let law = if text.contains("conservation=ok") {
        "ok"
    } else {
        "BROKEN"
    };
    eprintln!("  soft NIC --rx-frames {rx_frames} --tcp-window {window}: rx_missed_errors={missed}, conservation {law}");
    (fwd, rev)
}

/// The bare smoltcp baseline on smoltcp's TunTapInterface, same app and window.
fn smoltcp_baseline(secs: u32, window: usize) -> (Run, Run) {
    let ns = Netns::new("bbase");
    let server = baseline::start(&ns.name, "ll0", window);
    configure_host_side(&ns, "ll0", "198.18.0.2");
    let stat = format!("/proc/{}/task/{}/stat", std::process::id(), server.tid());
    let fwd = iperf3(&ns, "198.18.0.2", secs, false, &stat);
    let rev = iperf3(&ns, "198.18.0.2", secs, true, &stat);
    server.stop();
    (fwd, rev)
}

/// The kernel ceiling: iperf3 -s at the far end of a veth pair (CPU of the iperf3 server).
fn kernel_ceiling(secs: u32) -> (Run, Run) {
    let client = Netns::new("bkc");
    let far = Netns::new("bks");
    veth_pair(&client, "198.18.1.1/24", &far, "198.18.1.2/24");
    let server = far.spawn(&["iperf3", "-s"]);
    let ready = linklab_testkit::wait_until(Duration::from_secs(5), || {
        far.command(&["ss", "-ltn", "sport = :5201"])
            .output()
            .map(|o| String::from_utf8_lossy(&o.stdout).contains("5201"))
            .unwrap_or(false)
    });
    assert!(ready, "iperf3 -s did not start");
    let stat = format!("/proc/{}/stat", server.0.as_ref().expect("child").id());
    (
        iperf3(&client, "198.18.1.2", secs, false, &stat),
        iperf3(&client, "198.18.1.2", secs, true, &stat),
    )
}

/// Medians of goodput and CPU cost over runs, per direction.
struct Summary {
    runs: Vec<(Run, Run)>,
}

impl Summary {
    fn median(&self, pick: impl Fn(&(Run, Run)) -> f64) -> f64 {
        let mut v: Vec<f64> = self.runs.iter().map(pick).collect();
        v.sort_by(|a, b| a.total_cmp(b));
        v[v.len() / 2]
    }
    fn fwd(&self) -> f64 {
        self.median(|r| r.0.mbps)
    }
    fn rev(&self) -> f64 {
        self.median(|r| r.1.mbps)
    }
    fn fwd_cpu(&self) -> f64 {
        self.median(|r| r.0.cpu_us_per_mb)
    }
    fn rev_cpu(&self) -> f64 {
        self.median(|r| r.1.cpu_us_per_mb)
    }
    fn row(&self, name: &str) {
        let list = |f: fn(&(Run, Run)) -> f64| {
            self.runs
                .iter()
                .map(|r| format!("{:.0}", f(r)))
                .collect::<Vec<_>>()
                .join("/")
        };
        println!(
            "{name:<46} {:>7.0} {:>7.0} {:>9.0} {:>9.0}   runs -c {} -R {}",
            self.fwd(),
            self.rev(),
            self.fwd_cpu(),
            self.rev_cpu(),
            list(|r| r.0.mbps),
            list(|r| r.1.mbps)
        );
    }
}

/// Bytes each callgrind run moves (iperf3 -n).
const CALLGRIND_BYTES: &str = "20M";

/// Instructions (callgrind Ir) the device executed in namespace-local run: `device` is the
/// device's argv (run under valgrind), `traffic` None (start-up only), Some(false) for
/// `iperf3 -c -n 20M`, Some(true) for the same with `-R`.
fn callgrind_ir(device: &[String], traffic: Option<bool>) -> u64 {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let out = format!("/tmp/linklab-serve-cg-{}-{n}.out", std::process::id());
    let ns = Netns::new("bcg");
    let mut argv: Vec<String> = vec![
        "valgrind".into(),
        "--tool=callgrind".into(),
        format!("--callgrind-out-file={out}"),
    ];
    argv.extend(device.iter().map(|a| a.replace("{ns}", &ns.name)));
    let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
    let child = ns.spawn(&argv);
    configure_host_side(&ns, "ll0", "198.18.0.2");
    if let Some(reverse) = traffic {
        let mut iperf = vec![
            "timeout",
            "120",
            "iperf3",
            "-c",
            "198.18.0.2",
            "-n",
            CALLGRIND_BYTES,
            "--connect-timeout",
            "10000",
        ];
        if reverse {
            iperf.push("-R");
        }
        ns.run(&iperf);
    }
    child.interrupt(Duration::from_secs(60));
    let text = std::fs::read_to_string(&out).expect("callgrind output");
    let _ = std::fs::remove_file(&out);
    text.lines()
        .find_map(|l| l.strip_prefix("summary: "))
        .and_then(|v| v.trim().parse().ok())
        .expect("callgrind summary")
}

/// Instructions per MB for a device, forward and reverse, start-up cost subtracted.
fn callgrind_per_mb(device: &[String]) -> (f64, f64) {
    let idle = callgrind_ir(device, None) as f64;
    let mb = 20.0 * 1.048576;
    let fwd = (callgrind_ir(device, Some(false)) as f64 - idle) / mb;
    let rev = (callgrind_ir(device, Some(true)) as f64 - idle) / mb;
    (fwd, rev)
}

/// The callgrind comparison (skipped without valgrind).
fn callgrind_comparison() {
    if Command::new("valgrind").arg("--version").output().is_err() {
        println!("\nvalgrind not installed: instruction counts skipped");
        return;
    }
    println!("\ndevice instructions per MB (callgrind Ir, user space; iperf3 -n {CALLGRIND_BYTES}, start-up subtracted)");
    println!("{:<46} {:>12} {:>12}", "setup", "-c", "-c -R");
    let window = "43800";
    let me = std::env::current_exe()
        .expect("current exe")
        .to_string_lossy()
        .into_owned();
    let base = callgrind_per_mb(&[me, "--baseline-server".into(), "{ns}".into(), window.into()]);
    let bin = linklab_bin().to_string_lossy().into_owned();
    let soft_args = [
        "serve",
        "--tap",
        "ll0",
        "--ip",
        "198.18.0.2/24",
        "--rx-frames",
        "32",
        "--tcp-window",
        window,
    ];
    let soft = callgrind_per_mb(
        &std::iter::once(bin)
            .chain(soft_args.iter().map(|s| s.to_string()))
            .collect::<Vec<_>>(),
    );
    println!(
        "{:<46} {:>12.0} {:>12.0}",
        format!("smoltcp TunTapInterface, window {window}"),
        base.0,
        base.1
    );
    println!(
        "{:<46} {:>12.0} {:>12.0}",
        format!("linklab serve --rx-frames 32 --tcp-window {window}"),
        soft.0,
        soft.1
    );
    println!(
        "{:<46} {:>12.2} {:>12.2}",
        "  soft NIC / smoltcp baseline",
        soft.0 / base.0,
        soft.1 / base.1
    );
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    if let Some(i) = args.iter().position(|a| a == "--baseline-server") {
        let (ns, window) = (&args[i + 1], args[i + 2].parse().expect("window"));
        baseline::serve_until_sigint(ns, "ll0", window);
        return;
    }
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("serve_goodput: needs root (network namespaces and TAP devices); skipped");
        return;
    }
    let env = |name: &str, default: u32| {
        std::env::var(name)
            .ok()
            .and_then(|s| s.parse().ok())
            .unwrap_or(default)
    };
    let secs = env("LINKLAB_BENCH_SECS", 3);
    let reps = env("LINKLAB_BENCH_REPS", 3).max(1);
    if std::env::var("LINKLAB_BENCH_ONLY").as_deref() == Ok("callgrind") {
        callgrind_comparison();
        return;
    }
    let iperf = Command::new("iperf3")
        .arg("--version")
        .output()
        .expect("iperf3 installed");
    println!(
        "client: {}",
        String::from_utf8_lossy(&iperf.stdout)
            .lines()
            .next()
            .unwrap_or("?")
    );
    println!("iperf3 -t {secs}; goodput at the receiver (Mbit/s) and device CPU per MB (us/MB); medians of {reps} alternating runs\n");
    println!(
        "{:<46} {:>7} {:>7} {:>9} {:>9}",
        "setup", "-c", "-c -R", "cpu -c", "cpu -R"
    );

    let kernel = Summary {
        runs: (0..reps).map(|_| kernel_ceiling(secs)).collect(),
    };
    kernel.row("kernel ceiling (iperf3 -s over veth)");
    for (frames, window) in [("32", 43_800usize), ("256", 65_535usize)] {
        let mut base = Summary { runs: Vec::new() };
        let mut soft = Summary { runs: Vec::new() };
        for _ in 0..reps {
            base.runs.push(smoltcp_baseline(secs, window));
            soft.runs.push(soft_nic(secs, frames, &window.to_string()));
        }
        base.row(&format!("smoltcp TunTapInterface, window {window}"));
        soft.row(&format!(
            "linklab serve --rx-frames {frames} --tcp-window {window}"
        ));
        println!(
            "{:<46} {:>7.2} {:>7.2} {:>9.2} {:>9.2}",
            "  soft NIC / smoltcp baseline",
            soft.fwd() / base.fwd(),
            soft.rev() / base.rev(),
            soft.fwd_cpu() / base.fwd_cpu(),
            soft.rev_cpu() / base.rev_cpu()
        );
        println!(
            "{:<46} {:>7.3} {:>7.3}",
            "  soft NIC / kernel ceiling",
            soft.fwd() / kernel.fwd(),
            soft.rev() / kernel.rev()
        );
    }
    callgrind_comparison();
}
