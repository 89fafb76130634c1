//! iperf3's own release checklist against `linklab iperf`, on loopback.
//!
//! esnet/iperf keeps a list of 34 client command lines that must work before a release
//! (`test_commands.sh`). Each line runs here three ways at once, each against a server of its
//! own started for that line:
//! stock iperf3 3.12 client → stock server (the reference, measured in the same run),
//! `linklab iperf -c` → stock server, and stock client → `linklab iperf -s`. Every line must
//! pass or fail the same way in all three: the lines that fail for stock because of this
//! machine (no SCTP in the kernel, `-A 2/2` on a 2-core machine, `localhost` without an
//! IPv6 entry) or by design (`-n` with `-t`) must fail for us too, and every other line
//! must pass.
//!
//! Each line gets a fresh server, started when the line starts: stock iperf3's server, run
//! through all 34 lines, now and then told a line's client "the server is busy running a
//! test" on a loaded machine even after it had printed that it listens again (the
//! reference's UDP `-R` lines failed so beside two CPU hogs), and that is stock's race, not
//! what a line checks.
//!
//! Durations are shortened so the whole file stays within about a minute: `-t 5` becomes
//! `-t 1`, `-O 2` becomes `-O 1`, and the lines without an end condition get `-t 1`
//! (iperf3's default would be 10 s). A line passes when the client exits 0 and, with `-J`,
//! its document has no `error` (stock iperf3 exits 0 after a failed `-J` run).

use std::io::{BufRead, BufReader, Read};
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Condvar, Mutex};
use std::thread;
use std::time::{Duration, Instant};

use linklab_testkit::{free_port, linklab_bin, ChildGuard};

/// The client lines of iperf3's `test_commands.sh` (the host and `./src/iperf3 -c` left
/// out), in its order.
const CHECKLIST: [&str; 34] = [
    "-V -t 5 -T test1",
    "-u -V -t 5",
    "-i .3 -O 2 -t 5",
    "-i 1 -J -t 5",
    "-4 -t 5",
    "-4 -u -t 5",
    "-6 -t 5",
    "-6 -u -t 5",
    "-V -t 5 --fq-rate 5m",
    "-u -V -t 5 --fq-rate 5m",
    "--sctp -V -t 5",
    "-P 3 -t 5",
    "-u -P 3 -t 5",
    "-P 2 -t 5 -R",
    "-u -P 2 -t 5 -R",
    "-P 2 -t 5 --bidir",
    "-u -P 2 -t 5 --bidir",
    "-Z -t 5",
    "-Z -t 5 -R",
    "-t 5 -w 8M",
    "-n 5M",
    "-n 5M -u -b1G",
    "-n 5M -R",
    "-n 5M -u -b1G -R",
    "-n 5M -t 5",
    "-k 1K",
    "-k 1K -u -b1G",
    "-k 1K -R",
    "-k 1K -u -b1G -R",
    "-A 2/2",
    "-A 2/2 -u -b1G",
    "-u -b1G/100",
    "-C reno -V",
    "-M 1000 -V",
];

/// The host the checklist is run against (its only argument).
const HOST: &str = "localhost";

/// A checklist line with the shortened durations.
fn shortened(line: &str) -> Vec<String> {
    let mut args: Vec<String> = line.split_whitespace().map(String::from).collect();
    for i in 1..args.len() {
        match (args[i - 1].as_str(), args[i].as_str()) {
            ("-t", "5") => args[i] = "1".into(),
            ("-O", "2") => args[i] = "1".into(),
            _ => {}
        }
    }
    let bounded = args.iter().any(|a| a == "-t" || a == "-n" || a == "-k");
    if !bounded {
        args.extend(["-t".to_string(), "1".to_string()]);
    }
    args
}

/// A server on `port` for one line, and what its output says of it.
///
/// iperf3's server takes one test at a time: a client that connects while a test is under
/// way is told "the server is busy running a test". The line's client starts once the server
/// has said it listens ("Server listening on PORT (test #N)", printed after listen(2) and
/// again after each test is cleaned up; each test begins with "Accepted connection from").
/// The same for stock's server and ours.
struct Server {
    child: ChildGuard,
    banners: Arc<(Mutex<Banners>, Condvar)>,
}

/// The server's banners counted so far.
#[derive(Default)]
struct Banners {
    listening: usize,
    accepted: usize,
}

impl Server {
    fn start(program: &str, pre: &[&str], port: u16) -> Server {
        let mut child = Command::new(program)
            .args(pre)
            .args(["-s", "-p", &port.to_string(), "--forceflush"])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap_or_else(|e| panic!("could not start {program}: {e}"));
        let stdout = child.stdout.take().expect("piped stdout");
        // Its stderr is read to the end (a pipe left full would stop it), and shown when it
        // does not come up.
        let mut stderr = child.stderr.take().expect("piped stderr");
        let stderr = thread::spawn(move || {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text);
            text
        });
        let banners = Arc::new((Mutex::new(Banners::default()), Condvar::new()));
        let counted = Arc::clone(&banners);
        thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                let (lock, changed) = &*counted;
                let mut b = lock.lock().unwrap();
                if line.starts_with("Server listening on") {
                    b.listening += 1;
                } else if line.starts_with("Accepted connection from") {
                    b.accepted += 1;
                }
                changed.notify_all();
            }
        });
        let mut server = Server {
            child: ChildGuard(Some(child)),
            banners,
        };
        // iperf3 prints the banner after listen(2): no need to look at the socket too.
        if !server.wait_free(Duration::from_secs(10)) {
            let child = server.child.0.as_mut().expect("child present");
            let exited = child.try_wait().ok().flatten();
            let _ = child.kill();
            let stderr = stderr.join().unwrap_or_default();
            panic!("{program} -s did not say it listens on {port} (exited: {exited:?}): {stderr}");
        }
        server
    }

    /// Waits until the server's last banner is "Server listening" (no test under way), at
    /// most `timeout`; false if it is still busy then.
    fn wait_free(&self, timeout: Duration) -> bool {
        let (lock, changed) = &*self.banners;
        let b = lock.lock().unwrap();
        let (_b, waited) = changed
            .wait_timeout_while(b, timeout, |b| b.listening <= b.accepted)
            .unwrap();
        !waited.timed_out()
    }
}

/// How one client run ended.
#[derive(Clone, Debug)]
struct Run {
    pass: bool,
    /// The exit status and the last lines of output, to show when lines disagree.
    detail: String,
}

/// Runs `program [pre] -c HOST -p port ARGS`, at most 30 s, once `server` is free.
fn client(program: &str, pre: &[&str], server: &Server, port: u16, args: &[String]) -> Run {
    // A server still busy after 10 s is the line's failure to show, not a reason to stop.
    let busy = !server.wait_free(Duration::from_secs(10));
    let mut child: Child = Command::new(program)
        .args(pre)
        .args(["-c", HOST, "-p", &port.to_string()])
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap_or_else(|e| panic!("could not start {program}: {e}"));
    linklab_testkit::exit_within(&mut child, Duration::from_secs(30));
    let out = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    let json_error = args.iter().any(|a| a == "-J")
        && serde_json::from_str::<serde_json::Value>(&stdout)
            .map_or(true, |v| v.get("error").is_some());
    let tail: Vec<&str> = stdout.lines().rev().take(3).collect();
    Run {
        pass: out.status.success() && !json_error,
        detail: format!(
            "{}{} | {} | {}",
            if busy {
                "(server still busy 10 s after the last line) "
            } else {
                ""
            },
            out.status,
            stderr.trim(),
            tail.into_iter().rev().collect::<Vec<_>>().join(" / ")
        ),
    }
}

/// Runs every checklist line with `program [pre]` as the client, each against a fresh
/// `server [server_pre] -s`.
fn column(
    program: &'static str,
    pre: &'static [&'static str],
    server: &'static str,
    server_pre: &'static [&'static str],
) -> Vec<Run> {
    CHECKLIST
        .iter()
        .map(|line| {
            let port = free_port();
            let s = Server::start(server, server_pre, port);
            client(program, pre, &s, port, &shortened(line))
        })
        .collect()
}

#[test]
fn release_checklist_passes_and_fails_like_stock_iperf3() {
    let linklab = linklab_bin();
    let linklab: &'static str = Box::leak(linklab.to_string_lossy().into_owned().into_boxed_str());
    let started = Instant::now();
    let reference = thread::spawn(move || column("iperf3", &[], "iperf3", &[]));
    let ours_to_stock = thread::spawn(move || column(linklab, &["iperf"], "iperf3", &[]));
    let stock_to_ours = thread::spawn(move || column("iperf3", &[], linklab, &["iperf"]));
    let (reference, ours_to_stock, stock_to_ours) = (
        reference.join().unwrap(),
        ours_to_stock.join().unwrap(),
        stock_to_ours.join().unwrap(),
    );
    let mut table = String::new();
    let mut disagree = Vec::new();
    for (i, line) in CHECKLIST.iter().enumerate() {
        let mark = |r: &Run| if r.pass { "pass" } else { "FAIL" };
        table.push_str(&format!(
            "{:2} {:<28} stock↔stock {}  ours→stock {}  stock→ours {}\n",
            i + 1,
            line,
            mark(&reference[i]),
            mark(&ours_to_stock[i]),
            mark(&stock_to_ours[i])
        ));
        if reference[i].pass != ours_to_stock[i].pass || reference[i].pass != stock_to_ours[i].pass
        {
            disagree.push(format!(
                "line {} `{line}`:\n  stock↔stock: {}\n  ours→stock:  {}\n  stock→ours:  {}",
                i + 1,
                reference[i].detail,
                ours_to_stock[i].detail,
                stock_to_ours[i].detail
            ));
        }
    }
    let passes = reference.iter().filter(|r| r.pass).count();
    eprintln!(
        "iperf3 release checklist ({:.0} s):\n{table}stock↔stock passes {passes}/34",
        started.elapsed().as_secs_f64()
    );
    assert!(disagree.is_empty(), "{}", disagree.join("\n"));
    // The reference itself must mostly work, or the comparison proves nothing.
    assert!(
        passes >= 25,
        "stock iperf3 passed only {passes}/34 lines:\n{table}"
    );
}
