//! The W5500-EVB-Pico's `linklab` image (examples/boards/w5500-evb-pico with feature
//! `linklab-driver`: linklab-w5500 through linklab-mac, SPI mode 3) booted as a user boots it,
//! `linklab emu w5500-evb-pico --image linklab`, in a namespace the test creates
//! (198.18.0.0/15), the harness modelling the W5500 and the RP2040's PL022 timing.
//!
//! - The board: stock ping, curl with CRC32, stock iperf3 both ways; a ping flood; a burst
//!   that fills the W5500's RX buffer (the chip drops what does not fit, the driver sees it
//!   full); the device answers after each, and never issues a SEND before the last frame
//!   left (the harness counts one).
//! - Faults from the model (`--w5500-faults`): corrupt length headers, as a glitching bus
//!   returns them, and refused SENDs; the device refuses and counts every bad header, issues
//!   every refused SEND again, and goes on answering: its `/stats` counts what the model did.
//!
//! Throughput figures are benchmarks by hand (docs/w5500.md): `cargo test -p linklab --test
//! emu_w5500_linklab -- --ignored --nocapture`. Needs root, node with `npm ci` in
//! emulators/rp2040js (scripts/setup), iperf3, curl.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

use serde::Deserialize;
use serde_json::Value;

use linklab_testkit::device::DEVICE;
use linklab_testkit::emulated_clock::Status;
use linklab_testkit::iperf3;
use linklab_testkit::ping::Ping;
use linklab_testkit::{linklab_bin, ChildGuard, Netns};

/// One emulated board at a time: each keeps a core busy.
static ONE_BOARD: Mutex<()> = Mutex::new(());

/// The harness's status line, the fields read here.
#[derive(Deserialize, Debug, Clone)]
struct Harness {
    spi_hz: u64,
    spi_mode: u8,
    w5500_rx_dropped_full: u64,
    w5500_rx_backlog_frames: u64,
    w5500_tx_send_while_busy: u64,
    w5500_tx_send_refused: u64,
    w5500_rx_header_corrupted: u64,
    w5500_unmodelled: BTreeMap<String, u64>,
}

/// The device's `/stats`, the members the tests read (the linklab image adds `w5500` and
/// `mac` to the apps').
#[derive(Deserialize, Debug)]
struct DeviceStats {
    board: String,
    link_up: bool,
    w5500: DriverCounts,
    mac: MacCounts,
}

/// linklab-w5500's counters as `/stats` gives them.
#[derive(Deserialize, Debug)]
struct DriverCounts {
    rx_frames: u64,
    rx_bad_headers: u64,
    rx_resyncs: u64,
    rx_chip_full: u64,
    tx_frames: u64,
    tx_send_retries: u64,
    tx_dropped: u64,
    socket_reopens: u64,
    spi_errors: u64,
}

/// The MAC's counters as `/stats` gives them.
#[derive(Deserialize, Debug)]
struct MacCounts {
    rx_missed_errors: u64,
    rx_checksum_errors: u64,
    tx_dropped: u64,
}

/// `linklab emu w5500-evb-pico --image linklab` in a namespace of its own.
struct Board {
    ns: Netns,
    status: Status,
    dir: PathBuf,
    cli: Option<ChildGuard>,
}

impl Board {
    /// Boots `image` (building it if needed), `extra` options after the usual ones; waits
    /// until it answers a ping.
    fn boot(tag: &str, image: &str, extra: &[&str]) -> Board {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        assert!(
            root.join("emulators/rp2040js/node_modules/rp2040js")
                .exists(),
            "rp2040js is not installed (scripts/setup: npm ci in emulators/rp2040js)"
        );
        let ns = Netns::new(tag);
        let dir = std::env::temp_dir().join(format!("linklab-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let status = Status(dir.join("status.json"));
        let status_path = status.0.to_str().unwrap().to_string();
        let mut argv = vec![
            linklab_bin().to_str().unwrap().to_string(),
            "emu".into(),
            "w5500-evb-pico".into(),
            "--image".into(),
            image.into(),
            "--tap".into(),
            "wz0".into(),
            "--ip".into(),
            "198.18.0.2/24".into(),
            "--status".into(),
            status_path,
            "--boot-timeout".into(),
            "600".into(),
        ];
        argv.extend(extra.iter().map(|s| s.to_string()));
        let argv: Vec<&str> = argv.iter().map(String::as_str).collect();
        let cli = ns.spawn(&argv);
        // The build (when the image is not built yet) comes first: up to 10 minutes.
        let up = linklab_testkit::wait_until(Duration::from_secs(900), || {
            ns.command(&["ip", "link", "show", "wz0"])
                .output()
                .is_ok_and(|o| o.status.success())
        });
        assert!(up, "no TAP wz0");
        ns.run(&["ip", "addr", "add", "198.18.0.1/24", "dev", "wz0"]);
        ns.run(&["ip", "link", "set", "wz0", "up"]);
        let board = Board {
            ns,
            status,
            dir,
            cli: Some(cli),
        };
        Ping::new(DEVICE, 2)
            .deadline(180)
            .assert_answered(|argv| board.ns.run(argv).stdout);
        board
    }

    /// The harness's status now.
    fn harness(&self) -> Harness {
        serde_json::from_value(self.status.read()).expect("the harness's status line")
    }

    /// Lets the chip's clock run on `ms` (what is in flight lands).
    fn settle(&self, ms: u64) {
        let now = self.status.emulated_ns();
        self.status
            .wait_until(now + ms * 1_000_000, Duration::from_secs(120));
    }

    /// The device's `/stats`.
    fn stats(&self) -> DeviceStats {
        let url = format!("http://{DEVICE}/stats");
        let out = self
            .ns
            .run(&["curl", "-sS", "--fail", "--max-time", "120", &url]);
        serde_json::from_slice(&out.stdout)
            .unwrap_or_else(|e| panic!("/stats ({e}): {}", String::from_utf8_lossy(&out.stdout)))
    }

    /// curl of bench file `path`: whole, CRC32 right.
    fn curl_crc(&self, path: &str) {
        let file = linklab_perf::payload::find(path).expect("a bench file");
        let url = format!("http://{DEVICE}{path}");
        let out = self
            .ns
            .run(&["curl", "-sS", "--fail", "--max-time", "600", &url]);
        assert_eq!(out.stdout.len() as u64, file.len, "{path}: length");
        assert_eq!(
            crc32fast::hash(&out.stdout),
            linklab_perf::http::expected_crc32(file),
            "{path}: CRC32"
        );
    }

    /// Stock iperf3, `bytes` into the device or from it: the bytes the sender wrote (into
    /// the device the host's client; from it the device's server).
    fn iperf3(&self, bytes: &str, reverse: bool) -> u64 {
        let mut argv = vec!["iperf3", "-c", DEVICE, "-J", "-n", bytes];
        argv.extend(["--connect-timeout", "60000"]);
        if reverse {
            argv.push("-R");
        }
        let out = self.ns.run(&argv);
        let report = iperf3::Report::parse(&out.stdout);
        assert!(report.error.is_none(), "iperf3: {report:?}");
        report.end.sum_sent.map_or(0, |s| s.bytes)
    }

    /// Stops the harness and the line: the line's law must hold, and the model must have met
    /// nothing it does not model.
    fn finish(mut self) {
        let last = self.harness();
        assert!(
            last.w5500_unmodelled.is_empty(),
            "the driver touched what the model does not do: {:?}",
            last.w5500_unmodelled
        );
        let out = self
            .cli
            .take()
            .expect("linklab emu")
            .interrupt(Duration::from_secs(20));
        let summary = String::from_utf8_lossy(&out.stdout).to_string();
        let counts = summary
            .lines()
            .find(|l| l.starts_with("linklab emu: frame line "))
            .unwrap_or_else(|| panic!("no line summary: {summary}"))
            .to_string();
        assert!(counts.ends_with("law=holds"), "{counts}");
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// ping's "N received" in its summary.
fn received(summary: &str) -> u64 {
    summary
        .split(", ")
        .find_map(|p| p.strip_suffix(" received")?.trim().parse().ok())
        .unwrap_or(0)
}

/// The image as a user runs it: ping, curl with CRC32, iperf3 both ways, a ping flood and a
/// burst that fills the W5500's buffer; the device answers after each, every drop counted.
#[test]
fn linklab_image_serves_ping_curl_iperf3_and_outlasts_a_flood_and_a_full_buffer() {
    let _one = ONE_BOARD.lock().unwrap_or_else(|e| e.into_inner());
    let board = Board::boot("wzl", "linklab", &[]);
    let h = board.harness();
    assert_eq!(
        (h.spi_hz, h.spi_mode),
        (31_250_000, 3),
        "31.25 MHz in SPI mode 3"
    );
    Ping::new(DEVICE, 5)
        .deadline(60)
        .assert_answered(|argv| board.ns.run(argv).stdout);
    board.curl_crc("/100kB.txt");
    // Each test runs to its end (its sender wrote -n and more, the receiver took it: an
    // error is a failed test).
    assert!(board.iperf3("300K", false) >= 300 * 1024);
    assert!(board.iperf3("300K", true) >= 300 * 1024);

    // A flood: each request sent when the last is answered (or 10 ms of the host's time
    // later), 1 000-byte payloads.
    let before = board.harness().w5500_rx_dropped_full;
    let out = board
        .ns
        .command(&[
            "ping", "-n", "-q", "-f", "-c", "500", "-s", "1000", "-w", "300", DEVICE,
        ])
        .output()
        .expect("ping -f");
    let flood = received(&String::from_utf8_lossy(&out.stdout));
    let dropped = board.harness().w5500_rx_dropped_full - before;
    assert!(
        flood + dropped >= 500,
        "flood: {flood} answered, {dropped} dropped by the chip"
    );

    // A burst of 60 requests back to back (1 042-byte frames, 86 µs apart on the line; the
    // driver reads one in ~300 µs at 31.25 MHz): the chip's 16 KB buffer overflows, it drops
    // what does not fit (counting nothing itself), and the driver sees it full.
    let before = board.harness().w5500_rx_dropped_full;
    let out = board
        .ns
        .command(&[
            "ping", "-n", "-q", "-c", "60", "-l", "60", "-s", "1000", "-W", "15", DEVICE,
        ])
        .output()
        .expect("ping -l");
    let burst = received(&String::from_utf8_lossy(&out.stdout));
    board.settle(50);
    let h = board.harness();
    let dropped = h.w5500_rx_dropped_full - before;
    println!("w5500 linklab: flood {flood} of 500 answered; burst {burst} of 60 answered, {dropped} dropped by the chip (buffer full)");
    assert!(dropped > 0, "the burst overflows the chip's buffer");
    assert!(
        burst + dropped >= 60,
        "each request answered or dropped and counted"
    );
    assert_eq!(
        h.w5500_rx_backlog_frames, 0,
        "the driver drained the buffer"
    );
    Ping::new(DEVICE, 3)
        .deadline(60)
        .assert_answered(|argv| board.ns.run(argv).stdout);

    let s = board.stats();
    assert_eq!(s.board, "w5500-evb-pico");
    assert!(s.link_up);
    assert!(
        s.w5500.rx_chip_full > 0,
        "the driver saw the chip's buffer full: {s:?}"
    );
    // At least the flood's requests in and its replies out.
    assert!(s.w5500.rx_frames > 500 && s.w5500.tx_frames > 500, "{s:?}");
    let nothing_lost = (
        s.w5500.rx_bad_headers,
        s.w5500.rx_resyncs,
        s.w5500.tx_dropped,
        s.w5500.socket_reopens,
        s.w5500.spi_errors,
        s.mac.rx_missed_errors,
        s.mac.rx_checksum_errors,
        s.mac.tx_dropped,
    );
    assert_eq!(nothing_lost, (0, 0, 0, 0, 0, 0, 0, 0), "{s:?}");
    assert_eq!(
        board.harness().w5500_tx_send_while_busy,
        0,
        "no SEND before the last frame left"
    );
    board.finish();
}

/// Corrupt length headers and refused SENDs from the model: every one the model made is
/// counted by the device (refused, read again; issued again), nothing is given up, and the
/// device answers throughout.
#[test]
fn corrupt_headers_and_refused_sends_are_counted_and_the_device_goes_on() {
    let _one = ONE_BOARD.lock().unwrap_or_else(|e| e.into_inner());
    let board = Board::boot("wzf", "linklab", &["--w5500-faults", "header:9,send:13"]);
    Ping::new(DEVICE, 20)
        .with(&["-i", "0.05"])
        .deadline(120)
        .assert_answered(|argv| board.ns.run(argv).stdout);
    board.curl_crc("/100kB.txt");
    assert!(board.iperf3("200K", true) >= 200 * 1024);
    // Quiet: what is in flight lands (a refused SEND is looked at again 2 ms later).
    board.settle(20);
    let before = board.harness();
    let s = board.stats();
    board.settle(20);
    let after = board.harness();
    println!(
        "w5500 linklab faults: the model corrupted {}..{} headers and refused {}..{} SENDs; the device counted {} and {}",
        before.w5500_rx_header_corrupted,
        after.w5500_rx_header_corrupted,
        before.w5500_tx_send_refused,
        after.w5500_tx_send_refused,
        s.w5500.rx_bad_headers,
        s.w5500.tx_send_retries
    );
    assert!(before.w5500_rx_header_corrupted >= 10 && before.w5500_tx_send_refused >= 5);
    // Every fault the model made before /stats was asked is counted in it, and no more than
    // the model made by the end.
    let headers = before.w5500_rx_header_corrupted..=after.w5500_rx_header_corrupted;
    assert!(headers.contains(&s.w5500.rx_bad_headers), "{s:?}");
    let sends = before.w5500_tx_send_refused..=after.w5500_tx_send_refused;
    assert!(sends.contains(&s.w5500.tx_send_retries), "{s:?}");
    assert_eq!(
        (
            s.w5500.rx_resyncs,
            s.w5500.socket_reopens,
            s.mac.rx_missed_errors
        ),
        (0, 0, 0),
        "a glitch passes, a refused SEND goes again: nothing given up: {s:?}"
    );
    Ping::new(DEVICE, 3)
        .deadline(60)
        .assert_answered(|argv| board.ns.run(argv).stdout);
    board.finish();
}

/// By hand: the throughput benchmark of docs/w5500.md, image `W5500_IMAGE` (`linklab`, the
/// default, `linklab-62m` or `main`; `W5500_ELF`: that build of it) and `W5500_BYTES` (4M by
/// default) each way with stock iperf3, the device's own figures in the chip's clock and the
/// SPI's share of the time.
#[test]
#[ignore = "a benchmark: figures by hand (docs/w5500.md)"]
fn benchmark_iperf3_each_way() {
    let _one = ONE_BOARD.lock().unwrap_or_else(|e| e.into_inner());
    let image = std::env::var("W5500_IMAGE").unwrap_or_else(|_| "linklab".into());
    let bytes = std::env::var("W5500_BYTES").unwrap_or_else(|_| "4M".into());
    let elf = std::env::var("W5500_ELF").ok();
    let extra: Vec<&str> = elf.iter().flat_map(|e| ["--elf", e.as_str()]).collect();
    let board = Board::boot("wzb", &image, &extra);
    for reverse in [false, true] {
        let a: Value = board.status.read();
        let mut argv = vec!["iperf3", "-c", DEVICE, "-J", "-n", &bytes];
        if reverse {
            argv.push("-R");
        }
        let out = board.ns.run(&argv);
        let b: Value = board.status.read();
        let report = iperf3::Report::parse(&out.stdout);
        let side = if reverse { "sum_sent" } else { "sum_received" };
        let moved = report.end.sum(side).bytes as f64;
        let secs = report.end.sum(side).end;
        let d = |k: &str| b[k].as_f64().unwrap_or(0.0) - a[k].as_f64().unwrap_or(0.0);
        let elapsed = d("emulated_ns");
        println!(
            "w5500 {image} iperf3 {}: {moved} B in {secs:.4} s of the chip's clock: {:.2} Mbit/s; \
             SPI bytes on the bus {:.1} % of the time (frame bytes {:.1} %), SCSn low {:.1} %; core 0 awake {:.1} %",
            if reverse { "from the device (-R)" } else { "into the device" },
            moved * 8.0 / secs / 1e6,
            d("spi_clocked_ns") / elapsed * 100.0,
            d("spi_frame_clocked_ns") / elapsed * 100.0,
            d("spi_selected_ns") / elapsed * 100.0,
            100.0 - (b["core_asleep_cycles"][0].as_f64().unwrap_or(0.0)
                - a["core_asleep_cycles"][0].as_f64().unwrap_or(0.0))
                / d("cycles")
                * 100.0
        );
    }
    board.finish();
}
