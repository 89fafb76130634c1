//! `linklab probe --http PATH`: a figure only where bytes moved whole and were checked.
//!
//! Little HTTP servers in the test (std `TcpListener` threads inside a namespace the test
//! creates, probed on its loopback) answer each path a different way: a good 200 with its
//! Content-Length, a 200 read to the close, a 404, a 500, a short body (Content-Length 1000,
//! 10 bytes then close), a body longer than announced, a stall mid-body, and bytes that break
//! a known pattern. Only the good ones get a rate; the others are named absent or failed with
//! the status line in the JSON, the text and the page, and the exit code says so — 0 for a
//! device that only lacks a path, 1 for one that answered wrongly, 3 with `--baseline` when a
//! path the baseline measured is now absent.
//!
//! Needs root (namespaces).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use linklab_results::probe::{PathState, Unmeasured};
use linklab_testkit::probe::probe;
use linklab_testkit::{assert_one_line_error, enter_netns, Netns};

/// The HTTP port the little servers listen on (inside their own namespace).
const PORT: u16 = 8080;

/// Body byte `i` of the patterned answers: `i & 0xff`.
fn pattern(len: usize) -> Vec<u8> {
    (0..len).map(|i| i as u8).collect()
}

/// The 404 page: a status line like lwIP's httpd's and a body of 565 bytes, no length
/// announced (the body ends at the close).
fn not_found() -> Vec<u8> {
    let mut page = b"HTTP/1.0 404 File not found\r\nContent-Type: text/html\r\n\r\n".to_vec();
    page.extend(std::iter::repeat_n(b'x', 565));
    page
}

/// How the server answers `path`: the bytes to send, then how long to hold the connection
/// open before closing it.
fn answer(path: &str, b_missing: bool) -> (Vec<u8>, Duration) {
    let head = |line: &str, len: Option<usize>| {
        let mut h = format!("{line}\r\n");
        if let Some(n) = len {
            h += &format!("Content-Length: {n}\r\n");
        }
        (h + "\r\n").into_bytes()
    };
    let with = |mut h: Vec<u8>, body: &[u8]| {
        h.extend_from_slice(body);
        h
    };
    let none = Duration::ZERO;
    match path {
        "/good" | "/a" => (
            with(head("HTTP/1.1 200 OK", Some(100_000)), &pattern(100_000)),
            none,
        ),
        "/b" if b_missing => (not_found(), none),
        "/b" | "/to-close" => (with(head("HTTP/1.0 200 OK", None), &pattern(50_000)), none),
        "/missing" => (not_found(), none),
        "/error" => (
            with(
                head("HTTP/1.1 500 Internal Server Error", Some(21)),
                b"Internal Server Error",
            ),
            none,
        ),
        "/short" => (with(head("HTTP/1.1 200 OK", Some(1000)), &[b'y'; 10]), none),
        "/long" => (with(head("HTTP/1.1 200 OK", Some(10)), &[b'z'; 1000]), none),
        "/stall" => (
            with(head("HTTP/1.1 200 OK", Some(100_000)), &pattern(1000)),
            Duration::from_secs(5),
        ),
        "/wrong" => {
            let mut body = pattern(4096);
            body[3000] ^= 0x55;
            (with(head("HTTP/1.1 200 OK", Some(4096)), &body), none)
        }
        _ => (not_found(), none),
    }
}

/// Serves [`answer`] on `PORT` inside `ns` until dropped; `/b` answers 404 while
/// `b_missing` is set.
struct LittleServer {
    stop: Arc<AtomicBool>,
    b_missing: Arc<AtomicBool>,
}

impl LittleServer {
    fn start(ns: &Netns) -> LittleServer {
        let path = format!("/run/netns/{}", ns.name);
        let stop = Arc::new(AtomicBool::new(false));
        let b_missing = Arc::new(AtomicBool::new(false));
        let (flag, missing) = (Arc::clone(&stop), Arc::clone(&b_missing));
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            enter_netns(&path);
            let listener = TcpListener::bind(("127.0.0.1", PORT)).expect("bind");
            listener.set_nonblocking(true).unwrap();
            ready_tx.send(()).unwrap();
            while !flag.load(Ordering::Relaxed) {
                match listener.accept() {
                    Ok((s, _)) => {
                        let b_missing = missing.load(Ordering::Relaxed);
                        std::thread::spawn(move || serve(s, b_missing));
                    }
                    Err(_) => std::thread::sleep(Duration::from_millis(5)),
                }
            }
        });
        ready_rx.recv().unwrap();
        LittleServer { stop, b_missing }
    }
}

impl Drop for LittleServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

/// One connection: reads the request head, writes the answer for its path, holds, closes.
fn serve(mut s: TcpStream, b_missing: bool) {
    s.set_nonblocking(false).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
    let mut head = Vec::new();
    let mut buf = [0u8; 1024];
    while !head.windows(4).any(|w| w == b"\r\n\r\n") {
        match s.read(&mut buf) {
            Ok(0) | Err(_) => return,
            Ok(n) => head.extend_from_slice(&buf[..n]),
        }
    }
    let text = String::from_utf8_lossy(&head);
    let path = text.split(' ').nth(1).unwrap_or("/").to_string();
    let (bytes, hold) = answer(&path, b_missing);
    let _ = s.write_all(&bytes);
    std::thread::sleep(hold);
}

/// Every way of answering at once: rates only for the good 200 and the 200 read to its close,
/// each refusal named with its status line, exit 1 naming the failures.
#[test]
fn a_rate_only_where_the_body_came_whole() {
    let ns = Netns::new("phw");
    let _server = LittleServer::start(&ns);
    let paths = [
        "/good",
        "/to-close",
        "/missing",
        "/error",
        "/short",
        "/long",
        "/stall",
        "/wrong",
    ];
    let port = PORT.to_string();
    let mut args = vec!["--http-port", port.as_str()];
    for p in &paths {
        args.extend_from_slice(&["--http", p]);
    }
    let run = probe(&ns, "http-answers", "127.0.0.1", 12, &args, &[]);

    // Exit 1, one line naming every failure with what the server said.
    assert_one_line_error(&run.out, "GET /error: HTTP/1.1 500 Internal Server Error");
    assert_eq!(run.out.status.code(), Some(1));
    let line = run.stderr();
    for said in [
        "GET /short: HTTP/1.1 200 OK: 10 of the 1000 body bytes announced, then the server closed the connection;",
        "GET /long: HTTP/1.1 200 OK: more body bytes arrived than the 10 announced",
        "GET /stall: HTTP/1.1 200 OK: 1000 of the 100000 body bytes announced, then the server stalled (no byte for 2 s)",
        "GET /wrong: HTTP/1.1 200 OK (4096-byte body) (the body began 0, 1, ... 255 and then broke the pattern byte i = i & 0xff)",
    ] {
        assert!(line.contains(said), "{said:?} in: {line}");
    }
    assert!(
        !line.contains("/missing"),
        "a 404 is absent, not a failure: {line}"
    );

    // The good ones: a rate, checked.
    let good = run.http("/good");
    assert_eq!(good.state, PathState::Done, "{good:?}");
    assert_eq!(good.status_line.as_deref(), Some("HTTP/1.1 200 OK"));
    assert_eq!(good.content_length, Some(100_000));
    assert_eq!(good.index_bytes_ok, Some(true), "{good:?}");
    assert!(good.rate.as_ref().unwrap().value > 0.0);
    assert!(run.figure("http./good") > 0.0);
    let closed = run.http("/to-close");
    assert_eq!(closed.state, PathState::Done, "{closed:?}");
    assert!(closed.content_length.is_none());
    assert_eq!(closed.body.value, 50_000.0);
    assert!(run.figure("http./to-close") > 0.0);

    // The others: no rate, no figure, a state and the status line.
    for (p, state, status) in [
        ("/missing", "absent", "HTTP/1.0 404 File not found"),
        ("/error", "failed", "HTTP/1.1 500 Internal Server Error"),
        ("/short", "failed", "HTTP/1.1 200 OK"),
        ("/long", "failed", "HTTP/1.1 200 OK"),
        ("/stall", "failed", "HTTP/1.1 200 OK"),
        ("/wrong", "failed", "HTTP/1.1 200 OK"),
    ] {
        let (path_state, unmeasured) = match state {
            "absent" => (PathState::Absent, Unmeasured::Absent),
            _ => (PathState::Failed, Unmeasured::Failed),
        };
        let h = run.http(p);
        assert_eq!(h.state, path_state, "{h:?}");
        assert!(h.rate.is_none(), "no rate: {h:?}");
        assert!(!run.has_figure(&format!("http.{p}")), "no figure for {p}");
        let m = run.not_measured(&format!("http.{p}"));
        assert_eq!(m.state, unmeasured, "{m:?}");
        assert!(m.reason.contains(status), "{p}: {status:?} in {m:?}");
    }
    assert_eq!(run.http("/missing").body.value, 565.0);
    assert_eq!(run.http("/missing").status, Some(404));

    // The text: a line each, the absent one with its status line.
    let text = run.stdout();
    let missing = text
        .lines()
        .find(|l| l.contains("HTTP GET /missing"))
        .unwrap_or_else(|| panic!("no /missing line: {text}"));
    assert!(
        missing.contains("absent")
            && missing.contains("HTTP/1.0 404 File not found (565-byte body)")
            && missing.contains("no figure"),
        "{missing}"
    );
    assert!(!missing.contains("Mbit/s"), "{missing}");
    for p in ["/error", "/short", "/long", "/stall", "/wrong"] {
        let l = text
            .lines()
            .find(|l| l.contains(&format!("HTTP GET {p} ")))
            .unwrap_or_else(|| panic!("no {p} line: {text}"));
        assert!(l.contains("failed") && !l.contains("Mbit/s"), "{l}");
    }
    // The page: the refused paths as rows with their state, the status lines in the table.
    let page = std::fs::read_to_string(&run.html).unwrap();
    assert!(page.contains(r#"data-figure="http./missing" data-missing="absent""#));
    assert!(page.contains(r#"data-figure="http./stall" data-missing="failed""#));
    assert!(page.contains(r#"data-path="/error" data-state="failed""#));
    assert!(page.contains("HTTP/1.0 404 File not found"));
}

/// A device that only lacks a path (404) exits 0 with a plain line; against a baseline that
/// measured the path, the same run exits 3 naming it absent. The old `--http-path` still works
/// and says the new spelling.
#[test]
fn a_path_gone_is_absent_and_worse_than_the_baseline() {
    let ns = Netns::new("phb");
    let server = LittleServer::start(&ns);
    let port = PORT.to_string();
    let first = probe(
        &ns,
        "http-base",
        "127.0.0.1",
        6,
        &["--http-port", &port, "--http-path", "/a,/b"],
        &[],
    );
    assert_eq!(first.out.status.code(), Some(0), "{}", first.stderr());
    assert_eq!(
        first.stderr().trim(),
        "linklab: note: --http-path is now --http PATH (repeat it for more paths); --http-path goes in the next release"
    );
    assert!(first.figure("http./a") > 0.0 && first.figure("http./b") > 0.0);
    let base = first.html.with_file_name("baseline.json");
    std::fs::copy(first.html.with_file_name("probe.json"), &base).unwrap();

    server.b_missing.store(true, Ordering::Relaxed);
    let args = ["--http-port", port.as_str(), "--http", "/a", "--http", "/b"];
    let alone = probe(&ns, "http-gone", "127.0.0.1", 6, &args, &[]);
    assert_eq!(alone.out.status.code(), Some(0), "{}", alone.stderr());
    assert!(alone.stderr().is_empty(), "{}", alone.stderr());
    assert_eq!(alone.http("/b").state, PathState::Absent);
    assert!(!alone.has_figure("http./b"));

    let mut with_base = args.to_vec();
    let base = base.to_str().unwrap();
    with_base.extend_from_slice(&["--baseline", base]);
    let gone = probe(&ns, "http-gone-base", "127.0.0.1", 6, &with_base, &[]);
    assert_eq!(gone.out.status.code(), Some(3), "{}", gone.stderr());
    let line = gone.stderr();
    assert_eq!(line.lines().count(), 1, "{line}");
    assert!(
        line.starts_with("linklab: worse than the baseline") && line.contains("http./b absent"),
        "{line}"
    );
    let compared = &gone.report().baseline.as_ref().unwrap().figures;
    let b = compared.iter().find(|f| f.id == "http./b").unwrap();
    assert!(b.worse, "{b:?}");
    assert!(b.new.is_none());
    assert!(
        b.missing
            .as_deref()
            .unwrap()
            .starts_with("absent: GET /b: HTTP/1.0 404 File not found"),
        "{b:?}"
    );
    let text = gone.stdout();
    let row = text.lines().find(|l| l.contains("HTTP GET /b")).unwrap();
    assert!(row.contains("absent") && row.contains("WORSE"), "{row}");
}
