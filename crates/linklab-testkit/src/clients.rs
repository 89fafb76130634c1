//! More stock clients at once than a service has sockets: `n` parallel `curl`s of one bench
//! file, each reading slowly enough (`--limit-rate`, with the namespace's receive buffers cut
//! to 16 kB so the reader paces the device: a kernel would otherwise take in a whole 100 kB
//! file at once) that its download holds its socket, moving, while the others' SYNs come. Every one must be served whole (CRC32 right) within
//! the time its kernel's SYN retries allow, none reset, and the device's SYN counters must
//! match what the clients' kernel saw (its counters in the namespace, read from
//! `/proc/net/snmp` and `/proc/net/netstat`): every SYN retransmitted is one the device
//! dropped unanswered (`listen_drops`), every SYN the clients sent is one it counted
//! (`syns`), so every connection is a SYN it passed, at once or held (`syns_held`). Runs
//! against any
//! device on a namespace's TAP: `linklab serve`, an emulated board, a pin-level one.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use crate::stats::Stats;

use crate::device::DEVICE;
use crate::{counter, Netns};

/// What the clients' kernel counted in their namespace.
#[derive(Clone, Copy, Debug, Default)]
struct Kernel {
    /// Connections the clients opened (`Tcp: ActiveOpens`).
    opens: u64,
    /// Connections that failed: reset in SYN-SENT, or timed out (`Tcp: AttemptFails`).
    fails: u64,
    /// SYNs sent again (`TcpExt: TCPSynRetrans`).
    syn_retrans: u64,
}

/// `name` of the `prefix` rows of a /proc/net table (a row of names, then one of values).
fn proc_value(table: &str, prefix: &str, name: &str) -> u64 {
    let rows: Vec<&str> = table.lines().filter(|l| l.starts_with(prefix)).collect();
    let values: HashMap<&str, &str> = rows
        .chunks(2)
        .flat_map(|pair| pair[0].split_whitespace().zip(pair[1].split_whitespace()))
        .collect();
    values
        .get(name)
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| panic!("no {prefix} {name} in {table}"))
}

impl Kernel {
    fn read(ns: &Netns) -> Kernel {
        let snmp = String::from_utf8(ns.run(&["cat", "/proc/net/snmp"]).stdout).unwrap();
        let netstat = String::from_utf8(ns.run(&["cat", "/proc/net/netstat"]).stdout).unwrap();
        Kernel {
            opens: proc_value(&snmp, "Tcp:", "ActiveOpens"),
            fails: proc_value(&snmp, "Tcp:", "AttemptFails"),
            syn_retrans: proc_value(&netstat, "TcpExt:", "TCPSynRetrans"),
        }
    }
}

/// The HTTP service's SYN counters in a `/stats` document: syns, held, dropped.
fn http_syns(stats: &Stats) -> [u64; 3] {
    ["syns", "syns_held", "listen_drops"].map(|n| counter(stats, "http", n))
}

/// What the clients saw, for the report.
#[derive(Debug)]
pub struct Served {
    /// Each client's connect time (its SYNs until the handshake completed), seconds.
    pub connect_s: Vec<f64>,
    /// The whole run, seconds.
    pub took: Duration,
    /// SYNs the clients sent again (each one the device dropped unanswered).
    pub syn_retrans: u64,
    /// SYNs the device held until a socket was freed for them.
    pub held: u64,
}

/// How long a client's kernel keeps sending its SYN before it gives up: the first SYN and
/// `net.ipv4.tcp_syn_retries` more, each waiting one retransmission timeout — 1 s (RFC
/// 6298's initial RTO) for the first SYN and for the first `net.ipv4.tcp_syn_linear_timeouts`
/// retransmissions (Linux 6.7 and later; 4 by default), then doubling: 1, 1, 1, 1, 1, 2, 4 s
/// here, 11 s in all (1, 2, 4 … 64 s, 127 s, on a kernel without linear timeouts).
fn syn_retries_allow(ns: &Netns) -> Duration {
    let sysctl = |name: &str| {
        let out = ns
            .command(&["sysctl", "-n", name])
            .output()
            .expect("sysctl");
        String::from_utf8_lossy(&out.stdout)
            .trim()
            .parse::<u32>()
            .ok()
    };
    let retries = sysctl("net.ipv4.tcp_syn_retries").expect("tcp_syn_retries");
    let linear = sysctl("net.ipv4.tcp_syn_linear_timeouts").unwrap_or(0);
    let mut rto = 1u64;
    let mut total = 0u64;
    for k in 0..=retries {
        total += rto;
        if k >= linear {
            rto *= 2;
        }
    }
    Duration::from_secs(total)
}

/// The case: `n` stock `curl`s of `path` at once, each read at `rate` (curl's
/// `--limit-rate`), against an HTTP service of `sockets` sockets.
pub struct Clients {
    /// Clients at once (more than `sockets`).
    pub n: usize,
    /// The HTTP service's sockets.
    pub sockets: usize,
    /// The bench file each one fetches.
    pub path: &'static str,
    /// How fast each one reads (curl's `--limit-rate`).
    pub rate: &'static str,
    /// The clients' `net.ipv4.tcp_syn_retries` for the case (None: the namespace's, 6):
    /// more for a device emulated slower than its chip's clock, whose clients would
    /// otherwise give up after 11 s of the host's time, a fraction of that of the chip's.
    pub syn_retries: Option<u32>,
}

impl Clients {
    /// Runs the case against the device in `ns`, whose `/stats` `stats` fetches (in `ns`
    /// too). Asserts what the module docs say; returns what the clients saw.
    pub fn run(&self, ns: &Netns, stats: &dyn Fn() -> Stats) -> Served {
        assert!(
            self.n > self.sockets,
            "the case needs more clients than sockets"
        );
        let sysctl = "net.ipv4.tcp_syn_retries";
        let retries = String::from_utf8(ns.run(&["sysctl", "-n", sysctl]).stdout).unwrap();
        if let Some(r) = self.syn_retries {
            ns.run(&["sysctl", "-q", "-w", &format!("{sysctl}={r}")]);
        }
        let rmem = ns.small_receive_buffers();
        let restore = || {
            ns.set_receive_buffers(&rmem);
            ns.run(&[
                "sysctl",
                "-q",
                "-w",
                &format!("{sysctl}={}", retries.trim()),
            ]);
        };
        let before = stats();
        let kernel_before = Kernel::read(ns);
        let started = Instant::now();
        let connect_s = self.curls(ns, &|| {
            restore();
            stats()
        });
        let took = started.elapsed();
        restore();
        let after = stats();
        // After the last /stats: its own SYNs are the clients' kernel's too.
        let kernel = Kernel::read(ns);
        let opens = kernel.opens - kernel_before.opens;
        let retrans = kernel.syn_retrans - kernel_before.syn_retrans;
        let [syns, held, dropped] = {
            let (a, b) = (http_syns(&after), http_syns(&before));
            [0, 1, 2].map(|i| a[i] - b[i])
        };
        let seen = format!(
            "clients: {opens} connections, {retrans} SYNs sent again, {} failed; device: {syns} SYNs, {held} held, {dropped} dropped; {after}",
            kernel.fails - kernel_before.fails
        );
        assert_eq!(kernel.fails, kernel_before.fails, "{seen}");
        assert_eq!(dropped, retrans, "{seen}");
        assert_eq!(syns, opens + retrans, "{seen}");
        assert!(held <= opens, "{seen}");
        // Some clients found every socket busy and had to wait: held, or dropped and sent
        // again (as many as there are clients beyond the sockets when all start within a
        // download's time; a loaded machine may start one late enough to find a socket free).
        assert!(held + dropped >= 1, "{seen}");
        Served {
            connect_s,
            took,
            syn_retrans: retrans,
            held,
        }
    }

    /// The clients, at once; each one's connect time, once each is checked: served (a
    /// failure names the device's `/stats`, from `failed`), its body whole and its CRC32
    /// right, connected within its kernel's SYN retries.
    fn curls(&self, ns: &Netns, failed: &dyn Fn() -> Stats) -> Vec<f64> {
        let file = *linklab_perf::payload::BENCH_FILES
            .iter()
            .find(|f| f.path == self.path)
            .expect("a bench file");
        let allowed = syn_retries_allow(ns);
        let url = format!("http://{DEVICE}{}", self.path);
        let max_time = (allowed + Duration::from_secs(60)).as_secs().to_string();
        // Each body to a file: through a pipe nobody reads yet, a curl would stop reading
        // its socket once 64 kB waited there, and its download would stall on the device.
        let dir = crate::tempdir("parallel-curls");
        let bodies: Vec<_> = (0..self.n).map(|i| dir.join(format!("body-{i}"))).collect();
        let clients: Vec<_> = bodies
            .iter()
            .map(|body| {
                ns.command(&[
                    "curl",
                    "-sS",
                    "--limit-rate",
                    self.rate,
                    "--max-time",
                    &max_time,
                    "--output",
                    body.to_str().expect("a UTF-8 path"),
                    "--write-out",
                    "%{time_connect} %{http_code}",
                    &url,
                ])
                .stdout(std::process::Stdio::piped())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .expect("curl")
            })
            .collect();
        let outs: Vec<_> = clients
            .into_iter()
            .map(|c| c.wait_with_output().expect("curl ran"))
            .collect();
        let mut connect_s = Vec::new();
        for (i, out) in outs.into_iter().enumerate() {
            let (written, said) = (
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr),
            );
            let n = self.n;
            if !out.status.success() {
                panic!(
                    "client {i} of {n}: {} {written} {said}; the device: {}",
                    out.status,
                    failed()
                );
            }
            let (connect, code) = written.split_once(' ').expect("curl's write-out");
            assert_eq!(code, "200", "client {i}: {said}");
            let body = std::fs::read(&bodies[i]).expect("the body");
            assert_eq!(body.len() as u64, file.len, "client {i}: length");
            assert_eq!(
                crc32fast::hash(&body),
                linklab_perf::http::expected_crc32(file),
                "client {i}: CRC32"
            );
            // The kernel decides when it gives up (its timer fires a little after the
            // model's time); a client it let connect is within its retries, within a
            // second of the model.
            let connect: f64 = connect.parse().expect("time_connect");
            assert!(
                connect < (allowed + Duration::from_secs(1)).as_secs_f64(),
                "client {i} connected after {connect} s, past its SYN retries' {allowed:?}"
            );
            connect_s.push(connect);
        }
        let _ = std::fs::remove_dir_all(&dir);
        connect_s
    }
}
