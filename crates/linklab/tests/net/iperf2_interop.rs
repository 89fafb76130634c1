//! `linklab iperf2` against Debian's stock iperf 2.1.8, both ways, in every mode it serves:
//! TCP (`-t`, `-n`, `-P 3`, `-r`, `-d`, `-R`, `--full-duplex`, `-X`, `-C`, 2.0's header),
//! UDP (`-b`, `-l`, `-r`, `-d`, `-R`, and loss from a small receive buffer). Each test runs
//! in a network namespace of its own on its loopback and compares what the two ends
//! counted, line by line from their CSV output (`-y C`: exact byte counts, matched by the
//! flows' ports), and for lossy UDP the server report the client relays against the
//! server's own figures. Plus the wrong-protocol answers and bad
//! options, and the TCP byte stream our client writes recorded beside stock 2.1.8's for
//! the same options: byte for byte the same.

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::process::Output;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use linklab_testkit::{
    assert_one_line_error, enter_netns, in_netns, linklab_bin, run_bounded, wait_until, ChildGuard,
    Netns,
};

/// One CSV report line (iperf 2's `reportCSV_bw_format` and `_jitter_loss_format`).
#[derive(Debug, Clone)]
struct Line {
    src_port: u16,
    dst_port: u16,
    bytes: u64,
    /// jitter ms, lost, total datagrams (UDP receivers).
    udp: Option<(f64, i64, i64)>,
}

fn csv(text: &str) -> Vec<Line> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.trim().split(',').collect();
            if f.len() != 9 && f.len() != 14 {
                return None;
            }
            let udp = if f.len() == 14 && f[11] != "-1" {
                Some((f[9].parse().ok()?, f[10].parse().ok()?, f[11].parse().ok()?))
            } else {
                None
            };
            Some(Line {
                src_port: f[2].parse().ok()?,
                dst_port: f[4].parse().ok()?,
                bytes: f[7].parse().ok()?,
                udp,
            })
        })
        .collect()
}

fn text(o: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&o.stdout),
        String::from_utf8_lossy(&o.stderr)
    )
}

/// True if process `pid` (in its namespace) listens on `port` (TCP) or has it bound (UDP).
fn bound_in(pid: u32, port: u16, udp: bool) -> bool {
    let needle = format!(":{port:04X}");
    let files: &[&str] = if udp {
        &["udp", "udp6"]
    } else {
        &["tcp", "tcp6"]
    };
    files.iter().any(|f| {
        std::fs::read_to_string(format!("/proc/{pid}/net/{f}"))
            .unwrap_or_default()
            .lines()
            .any(|l| {
                let c: Vec<&str> = l.split_whitespace().collect();
                c.len() > 3 && c[1].ends_with(&needle) && (udp || c[3] == "0A")
            })
    })
}

/// A server in `ns`, waited for until it listens; stdout line-buffered (stock iperf writes
/// through C stdio).
fn server(ns: &Netns, argv: &[&str], port: u16, udp: bool) -> ChildGuard {
    let mut full = vec!["stdbuf", "-oL", "-eL"];
    full.extend_from_slice(argv);
    let g = ns.spawn(&full);
    let pid = g.0.as_ref().unwrap().id();
    assert!(
        wait_until(Duration::from_secs(5), || bound_in(pid, port, udp)),
        "{argv:?} did not come up on port {port}"
    );
    g
}

fn linklab(args: &[&str]) -> Vec<String> {
    let mut v = vec![linklab_bin().to_str().unwrap().to_string(), "iperf2".into()];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

fn stock(args: &[&str]) -> Vec<String> {
    let mut v = vec!["iperf".to_string()];
    v.extend(args.iter().map(|s| s.to_string()));
    v
}

/// Runs a client in `ns` (at most 30 s); panics with its output unless it succeeds.
fn client(ns: &Netns, argv: &[String]) -> Output {
    let a: Vec<&str> = argv.iter().map(String::as_str).collect();
    let out = run_bounded(&mut ns.command(&a), Duration::from_secs(30));
    assert!(out.status.success(), "{argv:?} failed:\n{}", text(&out));
    out
}

/// Stops a server and returns everything it printed.
fn stop(g: ChildGuard) -> String {
    text(&g.interrupt(Duration::from_secs(10)))
}

/// The line of `lines` for traffic from port `src` to port `dst`.
fn find(lines: &[Line], src: u16, dst: u16) -> Option<&Line> {
    lines
        .iter()
        .find(|l| l.src_port == src && l.dst_port == dst)
}

/// Every flow line of the client has a server line with the same ports and the same bytes,
/// less `uncounted` (what the server reads but does not count); for a UDP receiver's line,
/// the datagrams it counts lost (of `datagram_len` bytes) are the difference: a loaded machine's loopback drops a datagram
/// now and then even at 10 Mbit/s, and every one sent is either counted or counted lost.
fn assert_flows(
    what: &str,
    client_out: &str,
    server_out: &str,
    flows: usize,
    uncounted: u64,
    datagram_len: u64,
) {
    let c = csv(client_out);
    let s = csv(server_out);
    // Stock 2.1.8's client prints its --full-duplex receive line with peer `::` port 0:
    // that line's peer is the other port of the run.
    let run_ports: Vec<u16> = c
        .iter()
        .flat_map(|l| [l.src_port, l.dst_port])
        .filter(|p| *p != 0)
        .collect();
    let mut matched = 0;
    for l in &c {
        let m = if l.dst_port == 0 {
            s.iter().find(|m| {
                m.src_port == l.src_port
                    && m.dst_port != l.src_port
                    && run_ports.contains(&m.dst_port)
            })
        } else {
            find(&s, l.src_port, l.dst_port)
        };
        if let Some(m) = m {
            // The receiver's line says what was lost, whichever end printed it.
            let lost = [l, m]
                .iter()
                .filter_map(|x| x.udp)
                .map(|(_, lost, _)| lost.max(0) as u64)
                .next()
                .unwrap_or(0);
            let (sent, got) = if l.udp.is_some() {
                (m.bytes, l.bytes)
            } else {
                (l.bytes, m.bytes)
            };
            assert_eq!(
                sent - uncounted.min(sent) - lost * datagram_len, got,
                "{what}: client {l:?} vs server {m:?}\nclient:\n{client_out}\nserver:\n{server_out}"
            );
            assert!(l.bytes > 0, "{what}: no bytes moved: {l:?}");
            matched += 1;
        }
    }
    assert_eq!(
        matched, flows,
        "{what}: matched {matched} flows, expected {flows}\nclient:\n{client_out}\nserver:\n{server_out}"
    );
}

/// Runs each TCP mode from `make_client` against a server from `make_server` and compares
/// the two ends' flows.
/// `v20`: our client against the stock server (it also sends 2.0's 24-byte header).
fn tcp_modes(
    tag: &str,
    make_server: fn(&[&str]) -> Vec<String>,
    make_client: fn(&[&str]) -> Vec<String>,
    v20: bool,
) {
    let ns = Netns::new(tag);
    let sargv = make_server(&["-s", "-y", "C"]);
    let s: Vec<&str> = sargv.iter().map(String::as_str).collect();
    let srv = server(&ns, &s, 5001, false);
    let mut cases: Vec<(&str, Vec<&str>, usize)> = vec![
        ("-t 1", vec!["-t", "1"], 1),
        ("-n 1M", vec!["-n", "1M"], 1),
        ("-P 3", vec!["-t", "1", "-P", "3"], 3),
        ("-r", vec!["-t", "1", "-r", "-L", "5002"], 2),
        ("-d", vec!["-t", "1", "-d", "-L", "5003"], 2),
        ("-R", vec!["-t", "1", "-R"], 1),
        ("--full-duplex", vec!["-t", "1", "--full-duplex"], 2),
        ("-X", vec!["-t", "1", "-X"], 1),
        ("-C", vec!["-n", "1M", "-C"], 1),
    ];
    if v20 {
        cases.push((
            "2.0 header -r",
            vec!["-t", "1", "-r", "-L", "5004", "--v20-header"],
            2,
        ));
    }
    let mut clients = String::new();
    let mut expect = Vec::new();
    for (what, args, flows) in &cases {
        let mut a = vec!["-c", "127.0.0.1", "-y", "C"];
        a.extend(args);
        let out = client(&ns, &make_client(&a));
        let o = text(&out);
        if *what == "-n 1M" || *what == "-C" {
            let l = csv(&o);
            assert_eq!(l.first().map(|l| l.bytes), Some(1_048_576), "{what}: {o}");
        }
        clients.push_str(&o);
        expect.push((what.to_string(), o, *flows));
    }
    // The server's lines for every case (it prints a flow when it ends).
    std::thread::sleep(Duration::from_millis(300));
    let server_out = stop(srv);
    for (what, o, flows) in expect {
        // Stock 2.1.8's server does not count the 4 bytes it reads to look for a header
        // when there is none (stock client -C to stock server: 1048576 sent, 1048572
        // counted); ours counts every byte.
        let uncounted = if what == "-C" && v20 { 4 } else { 0 };
        assert_flows(&what, &o, &server_out, flows, uncounted, 0);
    }
}

#[test]
fn tcp_stock_client_to_linklab_server() {
    tcp_modes("i2tsl", linklab, stock, false);
}

#[test]
fn tcp_linklab_client_to_stock_server() {
    tcp_modes("i2tls", stock, linklab, true);
}

/// UDP modes without loss: both ends' CSV lines carry the same bytes. One server per case:
/// stock 2.1.8's UDP server, kept for several tests, stopped answering after the first
/// (with `-y C`, its own client too) or segfaulted (without) in our runs.
fn udp_modes(
    tag: &str,
    make_server: fn(&[&str]) -> Vec<String>,
    make_client: fn(&[&str]) -> Vec<String>,
    reverse: bool,
) {
    let ns = Netns::new(tag);
    let mut cases: Vec<(&str, Vec<&str>, usize, u64)> = vec![
        ("-b 10M", vec!["-t", "1", "-b", "10M"], 1, 1470),
        ("-l 1000 -n 100K", vec!["-l", "1000", "-n", "100K"], 1, 1000),
        (
            "-r",
            vec!["-t", "1", "-b", "5M", "-r", "-L", "6002"],
            2,
            1470,
        ),
        (
            "-d",
            vec!["-t", "1", "-b", "5M", "-d", "-L", "6003"],
            2,
            1470,
        ),
    ];
    if reverse {
        cases.push(("-R", vec!["-t", "1", "-b", "5M", "-R"], 1, 1470));
    }
    for (i, (what, args, flows, len)) in cases.iter().enumerate() {
        let port = (5001 + 10 * i).to_string();
        let sargv = make_server(&["-s", "-u", "-y", "C", "-p", &port]);
        let s: Vec<&str> = sargv.iter().map(String::as_str).collect();
        let srv = server(&ns, &s, 5001 + 10 * i as u16, true);
        let mut a = vec!["-c", "127.0.0.1", "-u", "-y", "C", "-p", &port];
        a.extend(args);
        let o = text(&client(&ns, &make_client(&a)));
        std::thread::sleep(Duration::from_millis(300));
        let server_out = stop(srv);
        assert_flows(what, &o, &server_out, *flows, 0, *len);
    }
}

#[test]
fn udp_stock_client_to_linklab_server() {
    // Stock 2.1.8's client runs UDP -R; its server does not (it crashed in our runs).
    udp_modes("i2usl", linklab, stock, true);
}

#[test]
fn udp_linklab_client_to_stock_server() {
    udp_modes("i2uls", stock, linklab, false);
}

/// The report line a client relays: (jitter ms, lost, total).
fn relayed_report(client_text: &str) -> (f64, i64, i64) {
    let mut lines = client_text
        .lines()
        .skip_while(|l| !l.contains("Server Report:"));
    let line = lines
        .find(|l| l.contains(" ms "))
        .unwrap_or_else(|| panic!("no server report in:\n{client_text}"));
    // "... 0.029 ms 114136/182620 (62%)"
    let (before, after) = line.split_once(" ms ").unwrap();
    let jitter: f64 = before.split_whitespace().last().unwrap().parse().unwrap();
    let (lost, rest) = after.split_once('/').unwrap();
    let total = rest.split_whitespace().next().unwrap();
    (jitter, lost.trim().parse().unwrap(), total.parse().unwrap())
}

/// Loss from a small server receive buffer (no netem here): the client's relayed report
/// equals the server's own figures; jitter within 1 µs (the report carries whole µs).
fn udp_loss(
    tag: &str,
    make_server: fn(&[&str]) -> Vec<String>,
    make_client: fn(&[&str]) -> Vec<String>,
) {
    let ns = Netns::new(tag);
    let sargv = make_server(&["-s", "-u", "-y", "C", "-w", "8K"]);
    let s: Vec<&str> = sargv.iter().map(String::as_str).collect();
    let srv = server(&ns, &s, 5001, true);
    let out = client(
        &ns,
        &make_client(&["-c", "127.0.0.1", "-u", "-t", "1", "-b", "2G"]),
    );
    let c = text(&out);
    std::thread::sleep(Duration::from_millis(300));
    let server_out = stop(srv);
    let (jitter, lost, total) = relayed_report(&c);
    let line = csv(&server_out)
        .into_iter()
        .find(|l| l.udp.is_some())
        .unwrap_or_else(|| panic!("no server line:\n{server_out}"));
    let (sj, sl, st) = line.udp.unwrap();
    assert_eq!(
        (lost, total),
        (sl, st),
        "client:\n{c}\nserver:\n{server_out}"
    );
    assert!(lost > 0, "no loss through an 8 KB buffer at 2 Gbit/s:\n{c}");
    assert!((jitter - sj).abs() <= 0.0011, "jitter {jitter} vs {sj}");
}

#[test]
fn udp_loss_stock_client_to_linklab_server() {
    udp_loss("i2lsl", linklab, stock);
}

#[test]
fn udp_loss_linklab_client_to_stock_server() {
    udp_loss("i2lls", stock, linklab);
}

#[test]
fn wrong_protocol_is_named_within_seconds() {
    let ns = Netns::new("i2wp");
    let bin = linklab_bin();
    let bin = bin.to_str().unwrap();
    // linklab iperf -c at stock iperf 2.1.8.
    let s2 = server(&ns, &["iperf", "-s"], 5001, false);
    let t = Instant::now();
    let out = run_bounded(
        &mut ns.command(&[bin, "iperf", "-c", "127.0.0.1", "-p", "5001", "-t", "1"]),
        Duration::from_secs(20),
    );
    assert_one_line_error(&out, "speaks iperf 2");
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    drop(s2);
    // linklab iperf -c at linklab iperf2 -s.
    let l2 = server(&ns, &[bin, "iperf2", "-s", "-p", "5011"], 5011, false);
    let out = run_bounded(
        &mut ns.command(&[bin, "iperf", "-c", "127.0.0.1", "-p", "5011", "-t", "1"]),
        Duration::from_secs(20),
    );
    assert_one_line_error(&out, "speaks iperf 2");
    let log = stop(l2);
    assert!(log.contains("an iperf3 client"), "{log}");
    // linklab iperf2 -c at stock iperf3.
    let s3 = server(&ns, &["iperf3", "-s", "-p", "5201"], 5201, false);
    let t = Instant::now();
    let out = run_bounded(
        &mut ns.command(&[bin, "iperf2", "-c", "127.0.0.1", "-p", "5201", "-t", "1"]),
        Duration::from_secs(20),
    );
    assert_one_line_error(&out, "speaks iperf3");
    assert!(
        t.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t.elapsed()
    );
    drop(s3);
    // Stock iperf -c at linklab iperf -s: served as iperf 2, said in one line, and the
    // client's figure is what was received (it ends without a reset, all -n bytes counted).
    let l3 = server(&ns, &[bin, "iperf", "-s", "-p", "5202"], 5202, false);
    let out = client(
        &ns,
        &stock(&["-c", "127.0.0.1", "-p", "5202", "-n", "4M", "-y", "C"]),
    );
    let o = text(&out);
    assert_eq!(csv(&o).first().map(|l| l.bytes), Some(4 << 20), "{o}");
    assert!(!o.contains("reset") && !o.contains("failed"), "{o}");
    let log = stop(l3);
    assert!(log.contains("is an iperf 2 client"), "{log}");
}

#[test]
fn bad_options_one_line() {
    let bin = linklab_bin();
    for (args, says) in [
        (vec!["iperf2"], "give -s"),
        (vec!["iperf2", "-s", "-c", "x"], "exclude"),
        (vec!["iperf2", "-c", "x", "-r", "-d"], "exclude"),
        (vec!["iperf2", "-c", "x", "-u", "-X"], "TCP only"),
        (vec!["iperf2", "-c", "x", "-b", "fast"], "rate"),
        (vec!["iperf2", "-c", "x", "-P", "0"], "parallel"),
        (vec!["iperf2", "-c", "x", "-u", "-l", "10"], "76"),
        (vec!["iperf2", "-c", "x", "-n", "3G"], "byte count"),
        (vec!["iperf2", "-s", "-R"], "client options"),
        (vec!["iperf2", "-c", "x", "-e"], "-e"),
    ] {
        let out = std::process::Command::new(&bin)
            .args(&args)
            .output()
            .unwrap();
        assert_one_line_error(&out, says);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
}

/// A TCP server that records every byte of each connection to its end, then closes it;
/// for a `-r` header (VERSION1) it connects back to the port the header names and closes
/// at once (an empty way back, so the client's test ends without waiting).
fn recording_sink(listener: TcpListener, streams: mpsc::Sender<Vec<u8>>) {
    for conn in listener.incoming() {
        let Ok(mut conn) = conn else { return };
        let mut bytes = Vec::new();
        if conn.read_to_end(&mut bytes).is_err() {
            continue;
        }
        if bytes.first().is_some_and(|b| b & 0x80 != 0) && bytes.len() >= 12 {
            let port = u16::try_from(u32::from_be_bytes(bytes[8..12].try_into().unwrap()));
            if let (Ok(port), Ok(peer)) = (port, conn.peer_addr()) {
                // The client listens for the connect-back once its own test is over, which on
                // a loaded machine may be after this: try for 5 s, as a connection refused
                // would leave it waiting for one.
                let deadline = std::time::Instant::now() + Duration::from_secs(5);
                loop {
                    match TcpStream::connect((peer.ip(), port)) {
                        Ok(mut back) => {
                            let _ = back.flush();
                            let _ = back.shutdown(Shutdown::Both);
                            break;
                        }
                        Err(_) if std::time::Instant::now() < deadline => {
                            std::thread::sleep(Duration::from_millis(50));
                        }
                        Err(_) => break,
                    }
                }
            }
        }
        drop(conn);
        if streams.send(bytes).is_err() {
            return;
        }
    }
}

/// The TCP bytes stock `iperf -c` and `linklab iperf2 -c` write with the same options,
/// recorded by a sink (not an iperf server: nothing answers, so nothing but the options
/// shapes them): equal byte for byte. 2.1.8 sends its header alone, then its `-l` write
/// buffer again and again — the header's bytes, then the digit of each byte's index —
/// the last write cut to what `-n` leaves; lwIP's lwiperf relies on that for `-r`.
#[test]
fn tcp_byte_stream_is_stock_2_1_8s() {
    let ns = Netns::new("i2bs");
    let listener = in_netns(&ns, || {
        TcpListener::bind("127.0.0.1:5001").expect("bind 5001")
    });
    let (tx, rx) = mpsc::channel();
    let path = format!("/run/netns/{}", ns.name);
    std::thread::spawn(move || {
        enter_netns(&path); // its connect-backs go to the namespace's loopback
        recording_sink(listener, tx)
    });
    let cases: [&[&str]; 6] = [
        &["-n", "300K"],
        &["-n", "200K", "-b", "100M"],
        &["-n", "300K", "-l", "100K"],
        &["-n", "100000", "-l", "1002", "-C"],
        &["-n", "300K", "-r", "-L", "5002"],
        &["-n", "200K", "-d", "-L", "5003", "-l", "64K"],
    ];
    for args in cases {
        let mut streams = Vec::new();
        for make in [stock as fn(&[&str]) -> Vec<String>, linklab] {
            let mut a = vec!["-c", "127.0.0.1"];
            a.extend_from_slice(args);
            let argv = make(&a);
            let out = client(&ns, &argv);
            let bytes = rx
                .recv_timeout(Duration::from_secs(5))
                .unwrap_or_else(|_| panic!("{argv:?}: nothing recorded:\n{}", text(&out)));
            streams.push(bytes);
        }
        let (theirs, ours) = (&streams[0], &streams[1]);
        assert!(
            theirs.len() > 1000,
            "{args:?}: stock wrote {} bytes",
            theirs.len()
        );
        assert_eq!(theirs.len(), ours.len(), "{args:?}: lengths");
        if let Some(i) = (0..theirs.len()).find(|&i| theirs[i] != ours[i]) {
            let end = (i + 16).min(theirs.len());
            panic!(
                "{args:?}: first difference at byte {i}: stock {:02x?}, ours {:02x?}",
                &theirs[i..end],
                &ours[i..end]
            );
        }
    }
}
