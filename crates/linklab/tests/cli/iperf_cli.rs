//! `linklab iperf` end to end on loopback against stock iperf3 3.12: the client's `-J`
//! document in iperf3's schema, the server with `-1`, and bad options answered with one
//! clear line and a non-zero exit.

use std::process::{Command, Stdio};
use std::time::Duration;

use linklab_testkit::iperf3::Report;
use linklab_testkit::{free_port, linklab_bin, listening, wait_until, ChildGuard};

fn spawn(cmd: &mut Command) -> ChildGuard {
    ChildGuard(Some(
        cmd.stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn"),
    ))
}

fn stock_server(port: u16) -> ChildGuard {
    let g = spawn(Command::new("iperf3").args(["-s", "-1", "-J", "-p", &port.to_string()]));
    assert!(wait_until(Duration::from_secs(5), || listening(port)));
    g
}

fn json_of(out: &std::process::Output) -> Report {
    assert!(
        out.status.success(),
        "failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Report::parse(&out.stdout)
}

fn wait_output(g: ChildGuard) -> std::process::Output {
    let mut g = g;
    let child = g.0.take().unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn client_json_matches_a_stock_server() {
    let port = free_port();
    let server = stock_server(port);
    let out = Command::new(linklab_bin())
        .args([
            "iperf",
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "1",
            "-i",
            "0.5",
            "-J",
        ])
        .output()
        .unwrap();
    let ours = json_of(&out);
    let theirs = json_of(&wait_output(server));
    let protocol = ours.start.test_start.as_ref().map(|t| t.protocol.as_str());
    assert_eq!(protocol, Some("TCP"));
    assert!(ours.intervals.len() >= 2, "{:?}", ours.intervals);
    let received = ours.end_bytes("sum_received");
    assert_eq!(received, theirs.end_bytes("sum_received"));
    assert!(received > 0 && received <= ours.end_bytes("sum_sent"));
    assert_eq!(ours.end.stream_count(), Some(1));
    assert!(ours.end.sum("sum_sent").bits_per_second > 0.0);
}

#[test]
fn client_udp_json_has_loss_and_jitter() {
    let port = free_port();
    let server = stock_server(port);
    let out = Command::new(linklab_bin())
        .args([
            "iperf",
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-u",
            "-b",
            "10M",
            "-t",
            "1",
            "-l",
            "1200",
            "-J",
        ])
        .output()
        .unwrap();
    let ours = json_of(&out);
    let theirs = json_of(&wait_output(server));
    // A sum's bytes are always there (the type requires them); the UDP figures are not.
    let sum = ours.end.sum("sum");
    let udp = [
        ("jitter_ms", sum.jitter_ms.is_some()),
        ("lost_packets", sum.lost_packets.is_some()),
        ("lost_percent", sum.lost_percent.is_some()),
        ("packets", sum.packets.is_some()),
    ];
    for (k, present) in udp {
        assert!(present, "end.sum.{k} missing: {sum:?}");
    }
    let stock = theirs.end.sum("sum");
    assert_eq!(sum.lost_packets, stock.lost_packets);
    assert_eq!(sum.packets, stock.packets);
    assert!(sum.lost_percent.unwrap() < 1.0, "{sum:?}");
}

#[test]
fn server_one_off_serves_stock_client() {
    let port = free_port();
    let server =
        spawn(Command::new(linklab_bin()).args(["iperf", "-s", "-1", "-p", &port.to_string()]));
    assert!(wait_until(Duration::from_secs(5), || listening(port)));
    let out = Command::new("iperf3")
        .args([
            "-c",
            "127.0.0.1",
            "-p",
            &port.to_string(),
            "-t",
            "1",
            "-R",
            "-J",
        ])
        .output()
        .unwrap();
    let theirs = json_of(&out);
    assert!(theirs.end_bytes("sum_received") > 0);
    let srv = wait_output(server);
    assert!(srv.status.success());
    let text = String::from_utf8_lossy(&srv.stdout);
    // As iperf3's server in a -R test: its own (sending) side only.
    assert!(
        text.contains("Server listening on")
            && text
                .lines()
                .any(|l| l.starts_with('[') && l.ends_with("  sender")),
        "{text}"
    );
}

#[test]
fn bad_options_get_one_clear_line() {
    let cases: [(&[&str], &str); 19] = [
        (&["-c", "127.0.0.1", "-P", "9"], "--parallel"),
        (&["-c", "127.0.0.1", "-b", "fast"], "--bitrate"),
        (&["-c", "127.0.0.1", "-l", "0"], "--length"),
        (
            &["-c", "127.0.0.1", "-u", "-l", "70000"],
            "block size invalid (minimum = 16 bytes, maximum = 65507 bytes)",
        ),
        (&["-c", "127.0.0.1", "-i", "100"], "--interval"),
        (&["-c", "127.0.0.1", "-t", "0"], "--time"),
        (&["-c", "127.0.0.1", "-p", "70000"], "--port"),
        (
            &["-c", "127.0.0.1", "-n", "1M", "-t", "1"],
            "only one test end condition (-t, -n, -k) may be specified",
        ),
        (
            &["-c", "127.0.0.1", "-R", "--bidir"],
            "cannot be both reverse and bidirectional",
        ),
        (
            &["-s", "-u"],
            "some option you are trying to set is client only",
        ),
        (&["-c", "127.0.0.1", "--sctp"], "no SCTP support available"),
        (
            &["-c", "127.0.0.1", "--username", "u"],
            "an option you are trying to set is not implemented yet",
        ),
        (&["-c", "bogus!"], "--client"),
        (&["-c", "198.18.0.1%a/b"], "--client"),
        (&["-s", "-B", "bogus!"], "--bind"),
        (&["-s", "--bind-dev", "a/b"], "--bind-dev"),
        (&["-c", "127.0.0.1", "-C", "bogus!"], "--congestion"),
        (&["-c", "127.0.0.1", "-T", "a\nb"], "--title"),
        (&["-c", "127.0.0.1", "--username", "a/b"], "--username"),
    ];
    for (args, name) in cases {
        let out = Command::new(linklab_bin())
            .arg("iperf")
            .args(args)
            .output()
            .unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?} is a usage error");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim_end().lines().count(), 1, "{args:?}: {err}");
        assert!(
            err.starts_with("linklab: error: ") && err.contains(name),
            "{args:?}: {err}"
        );
    }
    let out = Command::new(linklab_bin())
        .args(["iperf"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr)
        .contains("must either be a client (-c) or server (-s)"));
}
