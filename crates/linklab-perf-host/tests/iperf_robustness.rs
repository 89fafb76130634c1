//! Bad input never wins: our host server against garbage, truncated and oversized JSON,
//! wrong data-stream cookies, vanishing clients, a second client, a silent client (watchdog)
//! and 100 back-to-back tests — and it still serves stock iperf3 afterwards with no leaked
//! sockets or streams.

#[path = "iperf_support.rs"]
mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use linklab_perf::iperf::wire::{self, state, COOKIE_SIZE};
use linklab_perf::iperf::Failure;
use linklab_perf_host::iperf3::Error;
use support::*;

const LIMIT: Duration = Duration::from_secs(20);

fn connect(port: u16) -> TcpStream {
    let s = TcpStream::connect(("127.0.0.1", port)).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s
}

fn read_byte(s: &mut TcpStream) -> Option<u8> {
    let mut b = [0u8; 1];
    match s.read(&mut b) {
        Ok(1) => Some(b[0]),
        _ => None,
    }
}

/// Reads until EOF (or error); true if the peer closed within the read timeout.
fn closes(s: &mut TcpStream) -> bool {
    let mut b = [0u8; 256];
    loop {
        match s.read(&mut b) {
            Ok(0) => return true,
            Ok(_) => {}
            Err(e) => return e.kind() == std::io::ErrorKind::ConnectionReset,
        }
    }
}

fn json_msg(body: &[u8]) -> Vec<u8> {
    let mut v = (body.len() as u32).to_be_bytes().to_vec();
    v.extend_from_slice(body);
    v
}

/// Checks the server still runs a normal test with stock iperf3 and holds nothing open.
fn still_serves(server: &OurServer) {
    let (ok, out) = iperf3_client(server.port(), &["-t", "1"]).finish(LIMIT);
    assert!(ok, "iperf3 after abuse failed:\n{out}");
    server.next(LIMIT).expect("test after abuse succeeds");
    let j = parse_json(&out);
    assert!(num(&j, "end.sum_received.bytes") > 0.0);
    assert_eq!(server.stats.open_streams.load(Ordering::Relaxed), 0);
    assert_eq!(server.stats.open_controls.load(Ordering::Relaxed), 0);
}

#[test]
fn garbage_on_the_control_port() {
    let _turn = serial();
    let server = OurServer::start();
    // Random bytes: the first 37 are taken as a cookie, then a huge JSON length.
    let mut s = connect(server.port());
    let garbage: Vec<u8> = (0..1000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8 | 0x80)
        .collect();
    let _ = s.write_all(&garbage);
    let mut seen = Vec::new();
    let _ = s.read_to_end(&mut seen);
    assert_eq!(
        seen.first(),
        Some(&(state::PARAM_EXCHANGE as u8)),
        "{seen:?}"
    );
    assert!(
        seen.contains(&(state::SERVER_ERROR as u8)),
        "server answers bad parameters with SERVER_ERROR: {seen:?}"
    );
    assert!(server.next(LIMIT).is_err());
    // Connect and hang up at once, several times.
    for _ in 0..5 {
        drop(connect(server.port()));
        assert!(server.next(LIMIT).is_err());
    }
    still_serves(&server);
}

#[test]
fn truncated_and_oversized_json() {
    let _turn = serial();
    let server = OurServer::start();
    // Truncated: the length promises 100 bytes, 50 arrive, then the client leaves.
    let mut s = connect(server.port());
    s.write_all(&wire::make_cookie(1)).unwrap();
    assert_eq!(read_byte(&mut s), Some(state::PARAM_EXCHANGE as u8));
    s.write_all(&100u32.to_be_bytes()).unwrap();
    s.write_all(&[b'{'; 50]).unwrap();
    drop(s);
    assert!(matches!(
        server.next(LIMIT),
        Err(Error::Test(Failure::ControlClosed))
    ));
    // Complete but cut-off JSON document.
    let mut s = connect(server.port());
    s.write_all(&wire::make_cookie(2)).unwrap();
    assert_eq!(read_byte(&mut s), Some(state::PARAM_EXCHANGE as u8));
    s.write_all(&json_msg(br#"{"tcp":true,"time":1,"paral"#))
        .unwrap();
    assert_eq!(read_byte(&mut s), Some(state::SERVER_ERROR as u8));
    assert!(closes(&mut s));
    assert!(matches!(
        server.next(LIMIT),
        Err(Error::Test(Failure::BadJson(_)))
    ));
    // Oversized: 9000 > 8 KiB cap, refused on the length alone.
    let mut s = connect(server.port());
    s.write_all(&wire::make_cookie(3)).unwrap();
    assert_eq!(read_byte(&mut s), Some(state::PARAM_EXCHANGE as u8));
    s.write_all(&9000u32.to_be_bytes()).unwrap();
    assert_eq!(read_byte(&mut s), Some(state::SERVER_ERROR as u8));
    assert!(closes(&mut s));
    assert!(server.next(LIMIT).is_err());
    // Unsupported parameters (-P 9) get SERVER_ERROR, not a crash.
    let mut s = connect(server.port());
    s.write_all(&wire::make_cookie(4)).unwrap();
    assert_eq!(read_byte(&mut s), Some(state::PARAM_EXCHANGE as u8));
    s.write_all(&json_msg(
        br#"{"tcp":true,"time":1,"parallel":9,"len":131072}"#,
    ))
    .unwrap();
    assert_eq!(read_byte(&mut s), Some(state::SERVER_ERROR as u8));
    assert!(closes(&mut s));
    assert!(matches!(
        server.next(LIMIT),
        Err(Error::Test(Failure::BadParams(_)))
    ));
    still_serves(&server);
}

#[test]
fn wrong_cookie_on_a_data_stream_is_denied() {
    let _turn = serial();
    let server = OurServer::start();
    let cookie = wire::make_cookie(7);
    let mut c = connect(server.port());
    c.write_all(&cookie).unwrap();
    assert_eq!(read_byte(&mut c), Some(state::PARAM_EXCHANGE as u8));
    c.write_all(&json_msg(
        br#"{"tcp":true,"omit":0,"time":1,"parallel":1,"len":1024}"#,
    ))
    .unwrap();
    assert_eq!(read_byte(&mut c), Some(state::CREATE_STREAMS as u8));
    // A stream with a foreign cookie is answered ACCESS_DENIED and closed.
    let mut bad = connect(server.port());
    bad.write_all(&wire::make_cookie(8)).unwrap();
    assert_eq!(read_byte(&mut bad), Some(state::ACCESS_DENIED as u8));
    assert!(closes(&mut bad));
    // The right cookie starts the test.
    let mut good = connect(server.port());
    good.write_all(&cookie).unwrap();
    assert_eq!(read_byte(&mut c), Some(state::TEST_START as u8));
    assert_eq!(read_byte(&mut c), Some(state::TEST_RUNNING as u8));
    good.write_all(&[0u8; 4096]).unwrap();
    // End it properly: TEST_END, our results, theirs, DISPLAY_RESULTS, IPERF_DONE.
    std::thread::sleep(Duration::from_millis(100));
    c.write_all(&[state::TEST_END as u8]).unwrap();
    assert_eq!(read_byte(&mut c), Some(state::EXCHANGE_RESULTS as u8));
    c.write_all(&json_msg(
        br#"{"cpu_util_total":0,"cpu_util_user":0,"cpu_util_system":0,"sender_has_retransmits":0,"streams":[{"id":1,"bytes":4096,"retransmits":0,"jitter":0,"errors":0,"packets":0,"start_time":0,"end_time":0.1}]}"#,
    ))
    .unwrap();
    let mut len = [0u8; 4];
    c.read_exact(&mut len).unwrap();
    let mut body = vec![0u8; u32::from_be_bytes(len) as usize];
    c.read_exact(&mut body).unwrap();
    let v: serde_json::Value = serde_json::from_slice(&body).unwrap();
    assert_eq!(v["streams"][0]["bytes"], 4096);
    assert_eq!(read_byte(&mut c), Some(state::DISPLAY_RESULTS as u8));
    c.write_all(&[state::IPERF_DONE as u8]).unwrap();
    let rep = server.next(LIMIT).expect("hand-driven test completes");
    assert_eq!(rep.forward.unwrap().bytes_received, 4096);
    assert_eq!(server.stats.denied.load(Ordering::Relaxed), 1);
    still_serves(&server);
}

#[test]
fn a_client_that_disconnects_mid_test_frees_the_server() {
    let _turn = serial();
    let server = OurServer::start();
    for args in [
        &["-t", "10"][..],
        &["-t", "10", "-R"],
        &["-u", "-b", "10M", "-t", "10"],
        &["-u", "-R", "-b", "10M", "-t", "10"],
    ] {
        let mut client = iperf3_client(server.port(), args);
        std::thread::sleep(Duration::from_millis(700));
        let started = Instant::now();
        let _ = client.0.as_mut().unwrap().kill();
        let outcome = server.next(LIMIT);
        assert!(
            outcome.is_err(),
            "a killed client's test cannot succeed: {args:?}"
        );
        // TCP notices at once; UDP streams are noticed through the control connection.
        assert!(
            started.elapsed() < Duration::from_secs(3),
            "freed after {:?} for {args:?}",
            started.elapsed()
        );
    }
    still_serves(&server);
}

#[test]
fn a_silent_client_is_freed_by_the_watchdog() {
    let _turn = serial();
    let server = OurServer::start_with_watchdog(Duration::from_secs(1));
    let mut s = connect(server.port());
    s.write_all(&wire::make_cookie(9)).unwrap();
    assert_eq!(read_byte(&mut s), Some(state::PARAM_EXCHANGE as u8));
    let started = Instant::now();
    assert!(matches!(
        server.next(LIMIT),
        Err(Error::Test(Failure::Timeout))
    ));
    assert!(started.elapsed() < Duration::from_secs(3));
    assert!(closes(&mut s));
    still_serves(&server);
}

#[test]
fn a_second_client_gets_access_denied() {
    let _turn = serial();
    let server = OurServer::start();
    let first = iperf3_client(server.port(), &["-t", "2"]);
    std::thread::sleep(Duration::from_millis(500));
    // Raw: one ACCESS_DENIED byte, then close.
    let mut s = connect(server.port());
    let _ = s.write_all(&[b'x'; COOKIE_SIZE]);
    assert_eq!(read_byte(&mut s), Some(state::ACCESS_DENIED as u8));
    assert!(closes(&mut s));
    // Stock iperf3 reports the busy server.
    // (iperf3 3.12 -J exits 0 here and reports the error in the document.)
    let (_, out) = iperf3_client(server.port(), &["-t", "1"]).finish(LIMIT);
    let j: serde_json::Value = serde_json::from_str(&out).unwrap();
    let err = j["error"].as_str().unwrap_or_default();
    assert!(
        err.contains("busy"),
        "iperf3 should say the server is busy:\n{out}"
    );
    let (ok, out) = first.finish(LIMIT);
    assert!(ok, "first client unaffected:\n{out}");
    server.next(LIMIT).expect("first test succeeds");
    assert_eq!(server.stats.denied.load(Ordering::Relaxed), 2);
    still_serves(&server);
}

fn open_fds() -> usize {
    std::fs::read_dir("/proc/self/fd").unwrap().count()
}

#[test]
fn hundred_back_to_back_tests_leak_nothing() {
    let _turn = serial();
    let server = OurServer::start();
    // Warm up once so lazily opened descriptors are counted in the baseline.
    let (ok, _) = iperf3_client(server.port(), &["-n", "1M"]).finish(LIMIT);
    assert!(ok);
    server.next(LIMIT).unwrap();
    let fds = open_fds();
    let modes: [&[&str]; 4] = [
        &["-n", "2M"],
        &["-n", "1M", "-R"],
        &["-k", "50", "-u", "-b", "100M", "-l", "1000"],
        &["-n", "1M", "-P", "3"],
    ];
    for i in 0..100 {
        let (ok, out) = iperf3_client(server.port(), modes[i % 4]).finish(LIMIT);
        assert!(ok, "test {i} {:?} failed:\n{out}", modes[i % 4]);
        server
            .next(LIMIT)
            .unwrap_or_else(|e| panic!("test {i}: {e}"));
    }
    assert_eq!(server.stats.tests_done.load(Ordering::Relaxed), 101);
    assert_eq!(server.stats.tests_failed.load(Ordering::Relaxed), 0);
    assert_eq!(server.stats.open_streams.load(Ordering::Relaxed), 0);
    assert_eq!(server.stats.open_controls.load(Ordering::Relaxed), 0);
    // Other tests of this binary run serially, so the descriptor count is ours alone.
    assert_eq!(open_fds(), fds, "descriptors leaked");
    still_serves(&server);
}
