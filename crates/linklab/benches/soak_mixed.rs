//! The mixed-load soak of one home of the apps (`scripts/soak --mixed MINUTES` runs one per
//! home): a device — `linklab serve`, or a board's main-loop or embassy image under
//! `linklab emu` — under real clients (stock curl with CRC checks, iperf3, iperf 2 where the
//! device speaks it, ping, TCP and UDP echo; `soak_mixed/clients.rs`) while hostile peers run
//! (a minute each in turn: a SYN flood, idle holders, malformed and oversized requests, bad
//! and spoofed UDP, all at once; `soak_mixed/pressure.rs`), for MINUTES. Needs root and QEMU,
//! as the hostile tests.
//!
//! ```sh
//! cargo bench -p linklab --bench soak_mixed -- --home HOME --minutes M --log FILE
//! ```
//!
//! HOME is `serve`, a board of `linklab emu` (its main-loop image) or a board with
//! `-embassy` (its embassy image). `LINKLAB_BIN=/path/to/linklab` runs another build's device
//! (its `linklab emu` boots that tree's images), e.g. main's, for a before/after table.
//!
//! Every real client's outcome is a JSON line of FILE (`t`, `home`, `phase`, `client`,
//! `verdict` ok / busy / fail, `tries`, `secs`, `detail`); the last line is the verdict with
//! what it rests on. The soak passes when, at the end (hostile peers stopped, their
//! connections gone):
//! - no real client failed but as a stock server fails one: refused, or told busy, then
//!   served on a later try within 60 s (`busy`); datagrams lost (ping, UDP echo, iperf3 UDP:
//!   no retransmission) are recorded and summed, and must be in the device's counters;
//! - the device's counters conserve (the MAC's RX and TX laws, the UDP echo's), none of its
//!   TCP sockets is left half-open or closing, and it did not restart (uptime grew);
//! - its memory is where it was after the first round of hostile phases: `serve`'s resident
//!   set (within 1 MiB: the allocator's arenas move a little); the firmware's RX queue empty
//!   (`rx_pending` 0) and its stack peak within [`STACK_PEAK_SLACK`] of the first round's
//!   (the firmware has no heap: its statics cannot grow, and the peak is a high-water mark).
//!
//! Exits 0 when it passes, 1 when not, 2 on bad arguments.

// The integration tests' helpers (a device on a TAP, the hostile campaign's peers).
#[path = "soak_mixed/clients.rs"]
mod clients;
#[path = "soak_mixed/pressure.rs"]
mod pressure;

use std::io::Write;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use serde_json::json;

use clients::{Verdict, CLIENTS};
use linklab_testkit::device::Device;
use linklab_testkit::hostile::{assert_counters_conserve, stuck, wait_quiet};

/// How far a firmware's stack peak may rise past the first round's, in bytes: 1 KiB. The
/// peak is a high-water mark: it never falls, and it rises when a rarer, deeper path first
/// runs (an hour's soak found +88 B on mps2-an385-embassy and +248 B on riscv32-virt between
/// the first round and the end). A stack that grows with load — recursion, a frame per
/// connection, a buffer sized from the wire — goes past 1 KiB.
const STACK_PEAK_SLACK: u64 = 1024;

/// What the end checks compare with: the device after the first round of hostile phases.
struct Snapshot {
    uptime_s: f64,
    /// `serve`'s resident set (KiB), or the firmware's stack peak (bytes).
    memory: u64,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let arg = |name: &str| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let (Some(home), Some(minutes), Some(log)) = (arg("--home"), arg("--minutes"), arg("--log"))
    else {
        eprintln!("usage: soak_mixed --home HOME --minutes M --log FILE (see its doc comment)");
        std::process::exit(2);
    };
    let Ok(minutes) = minutes.parse::<f64>() else {
        eprintln!("soak_mixed: --minutes takes a number, not '{minutes}'");
        std::process::exit(2);
    };
    let bin =
        std::env::var_os("LINKLAB_BIN").map_or_else(linklab_testkit::linklab_bin, PathBuf::from);
    let mut log = std::fs::File::create(&log).unwrap_or_else(|e| panic!("{log}: {e}"));
    let dev = match home.as_str() {
        "serve" => Device::serve_with(&bin, "soak"),
        h => match h.strip_suffix("-embassy") {
            Some(board) => Device::emu_with(&bin, board, &["--embassy"]),
            None => Device::emu_with(&bin, h, &[]),
        },
    };
    let iperf2 = speaks_iperf2(&dev);
    println!(
        "{home}: up ({}), {minutes} min of mixed load; iperf 2 {}",
        bin.display(),
        if iperf2 {
            "served"
        } else {
            "not served (skipped)"
        }
    );

    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(minutes * 60.0);
    let phase = AtomicU64::new(0);
    let window = (started, deadline);
    let (counts, lost, baseline) = mixed_load(&dev, &home, iperf2, window, &mut log, &phase);

    // The hostile peers are gone; their connections go within the TCP timeouts.
    let quiet = catch_unwind(AssertUnwindSafe(|| {
        wait_quiet(&dev, Duration::from_secs(30))
    }));
    std::thread::sleep(Duration::from_secs(1));
    let end = snapshot(&dev, &home);
    let stats = catch_unwind(AssertUnwindSafe(|| dev.stats())).ok();
    let conserved = stats
        .as_ref()
        .is_some_and(|s| catch_unwind(AssertUnwindSafe(|| assert_counters_conserve(s))).is_ok());
    let stuck_sockets = stats.as_ref().map(stuck);
    let rx_pending = stats
        .as_ref()
        .and_then(|s| s.try_counter("mac", "rx_pending"));
    let (memory_ok, memory) = memory_check(&home, &baseline, &end, rx_pending);
    let restarted = match (&baseline, &end) {
        (Some(b), Some(e)) => e.uptime_s < b.uptime_s,
        _ => true,
    };
    let [ok, busy, failed] = counts;
    let pass = failed == 0
        && conserved
        && quiet.is_ok()
        && stuck_sockets == Some(0)
        && memory_ok
        && !restarted;
    let verdict = json!({
        "home": home,
        "verdict": if pass { "pass" } else { "fail" },
        "minutes": (started.elapsed().as_secs_f64() / 6.0).round() / 10.0,
        "clients": ok + busy + failed,
        "ok": ok,
        "busy": busy,
        "failed": failed,
        "datagrams_lost": lost,
        "phases": phase.load(Ordering::Relaxed),
        "conserved": conserved,
        "quiet": quiet.is_ok(),
        "stuck_sockets": stuck_sockets,
        "memory": memory,
        "memory_ok": memory_ok,
        "restarted": restarted,
        "stats": stats,
    });
    writeln!(log, "{verdict}").expect("write the log");
    println!(
        "{home}: {} | {} clients: {ok} ok, {busy} busy then served, {failed} failed; {lost} datagrams unanswered | counters {} | {} | {}",
        if pass { "PASS" } else { "FAIL" },
        ok + busy + failed,
        if conserved { "conserve" } else { "DO NOT conserve" },
        memory,
        if quiet.is_ok() && stuck_sockets == Some(0) {
            "no socket left"
        } else {
            "sockets left behind"
        },
    );
    drop(dev);
    std::process::exit(if pass { 0 } else { 1 });
}

/// The mixed load until `deadline`: rounds of clients (the first alone, as a warm-up), the
/// hostile peers' pressure from the second on; each client's outcome logged. Returns the
/// verdicts counted (ok, busy, failed), the datagrams lost, and the device after the first
/// round of hostile phases.
fn mixed_load(
    dev: &Device,
    home: &str,
    iperf2: bool,
    (started, deadline): (Instant, Instant),
    log: &mut std::fs::File,
    phase: &AtomicU64,
) -> ([usize; 3], u64, Option<Snapshot>) {
    let stop = AtomicBool::new(false);
    let mut counts = [0usize; 3];
    let mut lost = 0u64;
    let mut baseline: Option<Snapshot> = None;
    std::thread::scope(|s| {
        // One round of clients alone first (warm-up), then the hostile peers.
        let mut round = 0;
        let mut pressure = None;
        while Instant::now() < deadline || round == 0 {
            for name in CLIENTS {
                if round > 0 && Instant::now() >= deadline {
                    break;
                }
                let phase_now = pressure::name(phase.load(Ordering::Relaxed));
                let Some(outcome) = clients::run(dev, name, iperf2) else {
                    continue;
                };
                counts[outcome.verdict as usize] += 1;
                lost += outcome.lost;
                let at = started.elapsed().as_secs_f64();
                let line = outcome.json(home, at, phase_now);
                writeln!(log, "{line}").expect("write the log");
                if outcome.verdict == Verdict::Fail {
                    println!("  {at:.0} s [{phase_now}] {name}: FAIL {}", outcome.detail);
                }
            }
            round += 1;
            if pressure.is_none() {
                pressure = Some(s.spawn(|| pressure::run(dev, &stop, phase)));
            }
            // The first round of hostile phases is over: what the end is compared with.
            let phases = phase.load(Ordering::Relaxed);
            if baseline.is_none()
                && (phases > pressure::PHASES.len() as u64 || Instant::now() >= deadline)
            {
                baseline = snapshot(dev, home);
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    (counts, lost, baseline)
}

/// Whether the memory held from the first hostile round to the end (`serve`'s resident set
/// within 1 MiB; the firmware's stack peak within its slack, its RX queue drained), and what
/// it was.
fn memory_check(
    home: &str,
    baseline: &Option<Snapshot>,
    end: &Option<Snapshot>,
    rx_pending: Option<u64>,
) -> (bool, String) {
    match (baseline, end) {
        (Some(b), Some(e)) if home == "serve" => (
            e.memory <= b.memory + 1024,
            format!("RSS {} -> {} KiB", b.memory, e.memory),
        ),
        (Some(b), Some(e)) => (
            e.memory <= b.memory + STACK_PEAK_SLACK && rx_pending == Some(0),
            format!(
                "stack peak {} -> {} B, rx_pending {}",
                b.memory,
                e.memory,
                rx_pending.map_or("?".into(), |n| n.to_string())
            ),
        ),
        _ => (false, "no snapshot".into()),
    }
}

/// The device's uptime and memory now (None if /stats did not answer).
fn snapshot(dev: &Device, home: &str) -> Option<Snapshot> {
    let stats = catch_unwind(AssertUnwindSafe(|| dev.stats())).ok()?;
    let uptime_s = stats.try_top_number("uptime_s")?;
    let memory = if home == "serve" {
        serve_rss_kib(dev)?
    } else {
        stats.try_counter("memory", "stack_peak_bytes")?
    };
    Some(Snapshot { uptime_s, memory })
}

/// The resident set of the `linklab serve` process in the device's namespace (KiB).
fn serve_rss_kib(dev: &Device) -> Option<u64> {
    let pids = dev.run(&["ip", "netns", "pids", &dev.ns.name]);
    String::from_utf8_lossy(&pids)
        .split_whitespace()
        .filter(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .is_ok_and(|c| c.trim() == "linklab")
        })
        .find_map(|pid| {
            let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
            let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
            line.split_whitespace().nth(1)?.parse().ok()
        })
}

/// True if the device serves iperf 2 (a TCP connection to port 5001 is accepted).
fn speaks_iperf2(dev: &Device) -> bool {
    linklab_testkit::in_netns(&dev.ns, || {
        let addr: std::net::SocketAddr = format!("{}:5001", linklab_testkit::device::DEVICE)
            .parse()
            .unwrap();
        std::net::TcpStream::connect_timeout(&addr, Duration::from_secs(2)).is_ok()
    })
}
