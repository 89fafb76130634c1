//! The Pico's USB port as a network interface (`linklab emu pico --image usb-ncm`:
//! examples/boards/rp2040-usb with feature `ncm`, embassy-usb's CDC-NCM class into
//! embassy-net) at the pin level in rp2040js, with the USB full-speed bus and Linux's cdc_ncm
//! modelled by the harness (emulators/rp2040js/pico-usb-ncm.mjs) and its interface joined to
//! a TAP in a namespace the test creates (198.18.0.0/15).
//!
//! - Booted as a user boots it: stock ping, curl of /100kB.txt with its CRC32, stock iperf3
//!   into the device and from it (small transfers), and the counts of both ends of the USB
//!   link checked against each other.
//! - Bad input and a fault: malformed transfer blocks from the host (a wrong signature, a
//!   datagram past the block, a table past the block, a table pointing at itself, a datagram
//!   longer than a frame) and a USB reset with re-enumeration while iperf3 runs: the device
//!   keeps answering, and every block and frame is accounted for at both ends.
//!
//! Rates are in the emulated chip's clock (the device's own iperf3 server, or the harness's
//! status file). Needs root, node with `npm ci` in emulators/rp2040js (scripts/setup),
//! iperf3; builds the example itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use serde::Deserialize;

use linklab_testkit::device::DEVICE;
use linklab_testkit::emulated_clock::Status;
use linklab_testkit::iperf3;
use linklab_testkit::ping::Ping;
use linklab_testkit::rp2040js::{build_elf, curl_crc, root};
use linklab_testkit::{linklab_bin, ChildGuard, Netns};

/// One emulated board at a time: each keeps a core busy.
static ONE_BOARD: Mutex<()> = Mutex::new(());

/// The host's MAC address: the device's iMACAddress string, which Linux's cdc_ncm gives its
/// interface (examples/boards/rp2040-usb/src/ncm.rs `HOST_MAC`).
const HOST_MAC: &str = "02:4c:4c:00:00:01";

/// The device's counters (`GET /ncm`).
#[derive(Debug, Deserialize)]
struct DeviceNcm {
    board: String,
    datagrams_in: u64,
    frames_in: u64,
    too_long: u64,
    frames_out: u64,
    datagrams_out: u64,
    out_errors: u64,
    connections: u64,
    disconnections: u64,
}

/// The modelled cdc_ncm's counters (the harness's status, `ncm`).
#[derive(Debug, Deserialize)]
struct HostNcm {
    binds: u64,
    bind_failures: u64,
    tx_frames: u64,
    tx_frames_lost: u64,
    tx_dropped_unbound: u64,
    tx_dropped_no_carrier: u64,
    tx_dropped_too_long: u64,
    rx_frames: u64,
    rx_errors: u64,
    injected: u64,
    injected_sent: u64,
}

/// What cdc_ncm refused of the device's blocks (`ncm_rx_blocks`).
#[derive(Debug, Deserialize)]
struct HostBlocks {
    blocks: u64,
    blocks_bad: u64,
}

/// The host's counts when `GET /ncm` left and when the first frame of its answer came
/// (`ncm_cut`).
#[derive(Debug, Deserialize)]
struct Cut {
    request: Option<HostCounts>,
    answer: Option<HostCounts>,
}

#[derive(Debug, Deserialize)]
struct HostCounts {
    tx_frames: u64,
    rx_frames: u64,
    injected: BTreeMap<String, u64>,
}

/// The modelled RP2040 USB controller's counts (`usb_device`).
#[derive(Debug, Deserialize)]
struct Controller {
    /// Packets ACKed and dropped for a DATA PID other than the buffer's.
    data_seq_errors: u64,
}

#[derive(Debug, Deserialize)]
struct Core {
    enumerations: u64,
    resets: u64,
}

/// The part of the harness's status line these tests read.
#[derive(Debug, Deserialize)]
struct Harness {
    tap_frames_in: u64,
    tap_frames_out: u64,
    ncm_frames_pending: u64,
    ncm_carrier: bool,
    ncm_mac: Option<String>,
    ncm: HostNcm,
    ncm_rx_blocks: HostBlocks,
    ncm_injected: BTreeMap<String, u64>,
    ncm_cut: Cut,
    usb_core: Core,
    usb_device: Controller,
    faults_done: Vec<String>,
}

fn harness(status: &Status) -> Harness {
    let v = status.read();
    serde_json::from_value(v.clone()).unwrap_or_else(|e| panic!("the harness's status ({e}): {v}"))
}

/// The device's `/ncm` and the harness's status just after: the host's counts at the request
/// and at the answer bracket the device's.
fn counters(ns: &Netns, status: &Status) -> (DeviceNcm, Harness) {
    let url = format!("http://{DEVICE}/ncm");
    let out = ns.run(&["curl", "-sS", "--fail", "--max-time", "300", &url]);
    let device: DeviceNcm = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("/ncm ({e}): {}", String::from_utf8_lossy(&out.stdout)));
    // The harness saw the answer before the TAP did; its status file is rewritten every
    // 50 ms of real time: one written after the chip's clock moved on is fresh.
    status.wait_until(status.emulated_ns() + 1_000_000, Duration::from_secs(60));
    (device, harness(status))
}

/// Every datagram the host sent is one the device read, or a malformed block's that the
/// class reads anyway (`ndp-loop`: its first table's datagram; `too-long`: dropped by the
/// device, counted); the device's count falls between the host's at the request and at the
/// answer's first frame (the request itself among them). The device drops nothing else it
/// read, and every frame it sent before it answered is one the host took out of a block before
/// that answer, or one whose block a USB reset cut (the host refuses what is left of it: a
/// bad block, counted).
fn assert_accounted(device: &DeviceNcm, host: &Harness) {
    assert_eq!(
        host.usb_device.data_seq_errors, 0,
        "the controller dropped a packet"
    );
    let cut = &host.ncm_cut;
    let (request, answer) = (
        cut.request.as_ref().expect("request cut"),
        cut.answer.as_ref().expect("answer cut"),
    );
    let read_anyway = |c: &HostCounts| {
        c.injected.get("ndp-loop").copied().unwrap_or(0)
            + c.injected.get("too-long").copied().unwrap_or(0)
    };
    let lower = request.tx_frames + 1 + read_anyway(request);
    let upper = answer.tx_frames + read_anyway(answer);
    assert!(
        (lower..=upper).contains(&device.datagrams_in),
        "device read {} datagrams; the host sent {lower}..={upper}: {device:?} {cut:?}",
        device.datagrams_in
    );
    assert_eq!(
        device.datagrams_in,
        device.frames_in + device.too_long,
        "{device:?}"
    );
    assert_eq!(
        device.frames_out,
        device.datagrams_out + device.out_errors,
        "{device:?}"
    );
    assert_eq!(device.out_errors, 0, "{device:?}");
    let cut_by_resets = host.usb_core.resets;
    assert!(
        request.rx_frames <= device.datagrams_out
            && device.datagrams_out <= answer.rx_frames + cut_by_resets,
        "device sent {} frames, the host took {}..={} (resets {cut_by_resets}): {device:?}",
        device.datagrams_out,
        request.rx_frames,
        answer.rx_frames
    );
    assert!(
        host.ncm_rx_blocks.blocks_bad <= cut_by_resets,
        "{:?}",
        host.ncm_rx_blocks
    );
    // The host's own law: every frame from the TAP sent, lost to a reset, dropped (before the
    // carrier, too long) or still pending; every frame taken out of a block went to the TAP.
    let n = &host.ncm;
    let dropped = n.tx_dropped_unbound + n.tx_dropped_no_carrier + n.tx_dropped_too_long;
    assert_eq!(
        host.tap_frames_in,
        n.tx_frames + n.tx_frames_lost + dropped + host.ncm_frames_pending,
        "{n:?}"
    );
    assert_eq!(host.tap_frames_out, n.rx_frames, "{n:?}");
}

/// Stock iperf3 into the device or from it (`-R`), `kib` KiB: its JSON report (checked: no
/// error) and the device's bytes and seconds (its clock; at least all but the host's send
/// buffer of the bytes asked for: iperf3's server stops counting at the client's TEST_END,
/// which leaves once the last byte is in the client's socket, see [`small_send_buffers`]).
fn iperf3(ns: &Netns, kib: u64, reverse: bool) -> (iperf3::Report, u64, f64) {
    let n = format!("{kib}K");
    let mut argv = vec![
        "iperf3",
        "-c",
        DEVICE,
        "-J",
        "-n",
        &n,
        "--connect-timeout",
        "60000",
    ];
    if reverse {
        argv.push("-R");
    }
    let out = ns.run(&argv);
    let report = iperf3::Report::parse(&out.stdout);
    assert!(report.error.is_none(), "iperf3: {:?}", report.error);
    let side = if reverse { "sum_sent" } else { "sum_received" };
    let (moved, secs) = (report.end.sum(side).bytes, report.end.sum(side).seconds);
    let least = kib * 1024 - if reverse { 0 } else { SEND_BUFFER };
    assert!(
        moved >= least && secs > 0.0,
        "iperf3 {argv:?}: the device's side moved {moved} B: {:?}",
        report.end
    );
    (report, moved, secs)
}

/// The host's largest TCP send buffer in the tests' namespaces: iperf3's client sends its
/// TEST_END once its last byte is in the socket, and the device's server stops counting
/// there; with Linux's default (4 MB) a small test's bytes would nearly all be in the host's
/// buffer then.
const SEND_BUFFER: u64 = 16384;

/// Caps the TCP send buffers of `ns` at [`SEND_BUFFER`].
fn small_send_buffers(ns: &Netns) {
    let wmem = format!("net.ipv4.tcp_wmem=4096 {SEND_BUFFER} {SEND_BUFFER}");
    ns.run(&["sysctl", "-w", &wmem]);
}

/// `linklab emu pico --image usb-ncm`, as a user runs it, in a namespace of its own; waits
/// until the device answers ping.
struct Board {
    ns: Netns,
    status: Status,
    cli: Option<ChildGuard>,
    dir: PathBuf,
}

impl Board {
    fn boot(tag: &str) -> Board {
        assert!(
            root()
                .join("emulators/rp2040js/node_modules/rp2040js")
                .exists(),
            "rp2040js is not installed (scripts/setup: npm ci in emulators/rp2040js)"
        );
        let ns = Netns::new(tag);
        small_send_buffers(&ns);
        let dir = std::env::temp_dir().join(format!("linklab-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let status = Status(dir.join("status.json"));
        let cli = ns.spawn(&[
            linklab_bin().to_str().unwrap(),
            "emu",
            "pico",
            "--image",
            "usb-ncm",
            "--tap",
            "ncm0",
            "--ip",
            "198.18.0.2/24",
            "--status",
            status.0.to_str().unwrap(),
        ]);
        // linklab builds the example first (minutes on a cold target).
        let board = Board {
            ns,
            status,
            cli: Some(cli),
            dir,
        };
        board.configure("ncm0", Duration::from_secs(1200));
        board
    }

    /// Gives the TAP `tap` the host's address once it exists, and waits for the device.
    fn configure(&self, tap: &str, within: Duration) {
        let started = Instant::now();
        while !self
            .ns
            .command(&["ip", "link", "show", tap])
            .output()
            .is_ok_and(|o| o.status.success())
        {
            assert!(started.elapsed() < within, "no TAP {tap}");
            std::thread::sleep(Duration::from_millis(100));
        }
        self.ns
            .run(&["ip", "addr", "add", "198.18.0.1/24", "dev", tap]);
        self.ns.run(&["ip", "link", "set", tap, "up"]);
        // Enumeration, cdc_ncm's bind and the device's notification: under a second of the
        // chip's clock.
        self.status
            .wait_until(1_000_000_000, Duration::from_secs(300));
        Ping::new(DEVICE, 2)
            .deadline(120)
            .assert_answered(|argv| self.ns.run(argv).stdout);
    }
}

impl Drop for Board {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// Booted as a user does: ping, curl with its CRC, iperf3 both ways; both ends' counts agree.
#[test]
fn usb_ncm_serves_ping_curl_and_iperf3_as_a_network_interface() {
    let _one = ONE_BOARD.lock().unwrap_or_else(|e| e.into_inner());
    let mut board = Board::boot("usbncm");
    let h = harness(&board.status);
    assert_eq!(h.ncm.binds, 1, "{h:?}");
    assert_eq!(h.ncm.bind_failures, 0);
    assert!(h.ncm_carrier);
    assert_eq!(h.ncm_mac.as_deref(), Some(HOST_MAC));
    assert_eq!(h.usb_core.enumerations, 1);

    Ping::new(DEVICE, 5)
        .deadline(120)
        .assert_answered(|argv| board.ns.run(argv).stdout);
    let (len, secs) = curl_crc(&board.ns, &board.status, "/100kB.txt");
    println!(
        "usb-ncm: curl /100kB.txt {len} B, CRC32 right, in {secs:.3} emulated s: {:.0} kB/s",
        len as f64 / secs / 1e3
    );
    for reverse in [false, true] {
        let (_, moved, secs) = iperf3(&board.ns, 100, reverse);
        let way = if reverse {
            "from the device (-R)"
        } else {
            "into the device"
        };
        println!(
            "usb-ncm: iperf3 {way}: {moved} B in {secs:.3} s of the chip's clock, {:.0} kB/s",
            moved as f64 / secs / 1e3
        );
    }

    let (device, host) = counters(&board.ns, &board.status);
    assert_eq!(device.board, "rp2040-usb-ncm");
    assert_accounted(&device, &host);
    assert_eq!(host.ncm_rx_blocks.blocks_bad, 0, "{:?}", host.ncm_rx_blocks);
    // embassy-usb sends one datagram a block.
    assert_eq!(
        host.ncm_rx_blocks.blocks, host.ncm.rx_frames,
        "{:?}",
        host.ncm_rx_blocks
    );
    assert_eq!(host.ncm.rx_errors, 0, "{:?}", host.ncm);
    // Frames the TAP had before the interface's carrier came (IPv6's first solicitations)
    // are dropped and counted; none is lost once it is up.
    assert_eq!(host.ncm.tx_frames_lost, 0, "{:?}", host.ncm);
    assert_eq!(device.too_long, 0, "{device:?}");
    assert_eq!(device.connections, device.disconnections + 1, "{device:?}");
    println!("usb-ncm: device {device:?}");
    println!(
        "usb-ncm: host {:?} blocks {:?}",
        host.ncm, host.ncm_rx_blocks
    );

    let out = board
        .cli
        .take()
        .expect("linklab emu runs")
        .interrupt(Duration::from_secs(30));
    let stdout = String::from_utf8_lossy(&out.stdout);
    let summary = stdout
        .lines()
        .find(|l| l.starts_with("linklab emu: frame line"))
        .unwrap_or_else(|| panic!("no summary: {stdout}"));
    assert!(summary.ends_with("law=holds"), "{summary}");
    println!("{summary}");
}

/// The harness and `linklab emu line --frames` run directly, for the harness's fault plan.
struct Faulty {
    board: Board,
    line: Option<ChildGuard>,
    node: ChildGuard,
}

impl Faulty {
    fn start(tag: &str, elf: &Path, plan: &str) -> Faulty {
        let ns = Netns::new(tag);
        small_send_buffers(&ns);
        let dir = std::env::temp_dir().join(format!("linklab-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sock = dir.join("line.sock");
        let status = Status(dir.join("status.json"));
        let line = ns.spawn(&[
            linklab_bin().to_str().unwrap(),
            "emu",
            "line",
            "--frames",
            "--tap",
            "ncm1",
            "--socket",
            sock.to_str().unwrap(),
        ]);
        let started = Instant::now();
        while !sock.exists() {
            assert!(
                started.elapsed() < Duration::from_secs(20),
                "no line socket"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        let node = Command::new("node")
            .arg(root().join("emulators/rp2040js/harness.mjs"))
            .args(["--board", "pico-usb-ncm", "--elf", elf.to_str().unwrap()])
            .args(["--socket", sock.to_str().unwrap()])
            .args(["--status", status.0.to_str().unwrap()])
            .args(["--usb-inject", plan])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("node");
        let board = Board {
            ns,
            status,
            cli: None,
            dir,
        };
        board.configure("ncm1", Duration::from_secs(20));
        Faulty {
            board,
            line: Some(line),
            node: ChildGuard(Some(node)),
        }
    }

    /// SIGUSR1 to the harness: its plan starts.
    fn start_plan(&self) {
        let pid = self.node.0.as_ref().expect("the harness runs").id() as libc::pid_t;
        // SAFETY: kill(2) on our own child.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGUSR1) }, 0);
    }
}

/// Malformed blocks from the host and a USB reset while iperf3 runs into the device: the
/// device keeps answering, iperf3 completes, every block and frame is accounted for.
#[test]
fn usb_ncm_survives_bad_blocks_and_a_usb_reset_mid_iperf3() {
    let _one = ONE_BOARD.lock().unwrap_or_else(|e| e.into_inner());
    let elf = build_elf("rp2040-usb", "ncm", "usb-ncm");
    const KINDS: [&str; 5] = [
        "bad-signature",
        "past-block",
        "ndp-past-block",
        "ndp-loop",
        "too-long",
    ];
    let plan = "0:bad-signature,1:past-block,2:ndp-past-block,3:ndp-loop,4:too-long,30:reset";
    let mut faulty = Faulty::start("usbncmbad", &elf, plan);
    let b = &faulty.board;
    // iperf3 into the device; the plan starts once a few dozen of its frames have crossed.
    let mut iperf = b.ns.command(&[
        "iperf3",
        "-c",
        DEVICE,
        "-J",
        "-n",
        "300K",
        "--connect-timeout",
        "60000",
    ]);
    let iperf = iperf
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("iperf3");
    let sent_before = harness(&b.status).ncm.tx_frames;
    let started = Instant::now();
    while harness(&b.status).ncm.tx_frames < sent_before + 40 {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "iperf3's frames never crossed"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    faulty.start_plan();
    let out = iperf.wait_with_output().expect("iperf3");
    let report = iperf3::Report::parse(&out.stdout);
    assert!(
        report.error.is_none(),
        "iperf3 across the faults: {:?}",
        report.error
    );
    let received = report.end_bytes("sum_received");
    assert!(received >= 300 * 1024 - SEND_BUFFER, "{:?}", report.end);

    let h = harness(&b.status);
    assert_eq!(h.faults_done.len(), 6, "{:?}", h.faults_done);
    assert_eq!(h.usb_core.resets, 1);
    assert_eq!(
        h.ncm.binds, 2,
        "cdc_ncm bound again after the reset: {:?}",
        h.ncm
    );
    assert!(
        h.ncm_carrier,
        "the device notified the host again after the reset"
    );
    // Every malformed block went out whole (the carrier was on when each was due).
    assert_eq!(h.ncm.injected, 5);
    assert_eq!(h.ncm.injected_sent, 5, "{:?}", h.ncm);
    for kind in KINDS {
        assert_eq!(
            h.ncm_injected.get(kind),
            Some(&1),
            "{kind}: {:?}",
            h.ncm_injected
        );
    }
    // The device still answers, and its counts and the host's agree.
    Ping::new(DEVICE, 3)
        .deadline(120)
        .assert_answered(|argv| b.ns.run(argv).stdout);
    let (device, host) = counters(&b.ns, &b.status);
    assert_accounted(&device, &host);
    assert_eq!(
        device.too_long, 1,
        "the 1600-byte datagram dropped and counted: {device:?}"
    );
    assert_eq!(device.connections, device.disconnections + 1, "{device:?}");
    println!(
        "usb-ncm faults: iperf3 {received} B into the device across them; device {device:?}; host {:?}, blocks {:?}",
        host.ncm, host.ncm_rx_blocks
    );
    drop(faulty.line.take());
}
