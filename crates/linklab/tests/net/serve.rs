//! `linklab serve` against real peers: stock ping, curl and iperf3 3.12 talk to the soft NIC
//! (linklab-mac + smoltcp + linklab-perf) through a TAP inside a network namespace each test
//! creates. Addresses come from 198.18.0.0/15; no traffic leaves the namespace.
//!
//! These tests need root (to create namespaces and TAP devices).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::Duration;

use linklab_testkit::iperf2;
use linklab_testkit::iperf3;
use linklab_testkit::ping::Ping;
use linklab_testkit::stats::Stats;
use linklab_testkit::{assert_conserved, in_netns, linklab_bin, mac_counter, ChildGuard, Netns};

/// The soft NIC's address.
const DEVICE_IP: &str = "198.18.0.2";
/// The kernel side of the TAP.
const HOST_CIDR: &str = "198.18.0.1/24";
/// The TAP name inside each test's namespace.
const TAP: &str = "ll0";

/// One soft NIC at a time: the tests measure throughput and loss against a CPU-bound
/// device, so they do not compete with each other for the machine's cores.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A running `linklab serve` in its own namespace, with the kernel side configured.
struct Served {
    child: Option<ChildGuard>,
    ns: Netns,
    _turn: MutexGuard<'static, ()>,
}

impl Served {
    /// Starts `linklab serve` with `extra` options and waits until the device answers ARP.
    fn start(tag: &str, extra: &[&str]) -> Served {
        Served::start_with(tag, extra, |_| {})
    }

    /// Like [`Served::start`], running `prepare` in the fresh namespace first.
    fn start_with(tag: &str, extra: &[&str], prepare: impl FnOnce(&Netns)) -> Served {
        let turn = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let ns = Netns::new(tag);
        prepare(&ns);
        let bin = linklab_bin();
        let mut argv = vec![
            bin.to_str().unwrap(),
            "serve",
            "--tap",
            TAP,
            "--ip",
            "198.18.0.2/24",
        ];
        argv.extend_from_slice(extra);
        let child = ns.spawn(&argv);
        let up = linklab_testkit::wait_until(Duration::from_secs(10), || {
            ns.command(&["ip", "link", "show", TAP])
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        });
        let mut served = Served {
            child: Some(child),
            ns,
            _turn: turn,
        };
        if !up {
            let out = served
                .child
                .take()
                .unwrap()
                .interrupt(Duration::from_secs(5));
            panic!(
                "TAP never appeared; serve said: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        served.ns.run(&["ip", "addr", "add", HOST_CIDR, "dev", TAP]);
        served.ns.run(&["ip", "link", "set", TAP, "up"]);
        let answered = linklab_testkit::wait_until(Duration::from_secs(10), || {
            served
                .ns
                .command(&["ping", "-c", "1", "-W", "1", DEVICE_IP])
                .output()
                .map(|o| o.status.success())
                .unwrap_or(false)
        });
        assert!(answered, "the soft NIC never answered a ping");
        served
    }

    /// Runs `argv` in the namespace and returns stdout (panics on failure).
    fn run(&self, argv: &[&str]) -> Vec<u8> {
        self.ns.run(argv).stdout
    }

    /// GET /stats as JSON.
    fn stats(&self) -> Stats {
        let body = self.run(&[
            "curl",
            "-sS",
            "--max-time",
            "10",
            &format!("http://{DEVICE_IP}/stats"),
        ]);
        Stats::parse(&body)
    }

    /// Runs stock `iperf3 -c DEVICE -t 2 -J` with `extra` options and returns its report.
    fn iperf3(&self, extra: &[&str]) -> iperf3::Report {
        let mut argv = vec![
            "iperf3",
            "-c",
            DEVICE_IP,
            "-t",
            "2",
            "-J",
            "--connect-timeout",
            "5000",
        ];
        argv.extend_from_slice(extra);
        let out = self
            .ns
            .command(&["timeout", "30"])
            .args(&argv)
            .output()
            .expect("run iperf3");
        let report: iperf3::Report = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
            panic!(
                "iperf3 {extra:?} printed no report ({e}): {}",
                String::from_utf8_lossy(&out.stderr)
            )
        });
        assert!(
            out.status.success() && report.error.is_none(),
            "iperf3 {extra:?} failed: {report:?}"
        );
        report
    }

    /// Stops the server with SIGINT and returns what it printed on stdout (the namespace
    /// stays until `self` is dropped).
    fn stop(&mut self) -> String {
        let out = self
            .child
            .take()
            .unwrap()
            .interrupt(Duration::from_secs(10));
        assert!(
            out.status.success(),
            "serve exited with {}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// Stops the server with SIGTERM and returns what it printed on stdout (the namespace
    /// stays until `self` is dropped).
    fn terminate(&mut self) -> String {
        let mut child = self.child.take().unwrap().0.take().unwrap();
        // SAFETY: kill(2) on the pid of our own child (`ip netns exec` has exec'd serve).
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let exited = linklab_testkit::exit_within(&mut child, Duration::from_secs(10)).is_some();
        let out = child.wait_with_output().expect("wait for serve");
        assert!(
            exited && out.status.success(),
            "serve did not exit cleanly on SIGTERM ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).expect("utf-8 output")
    }

    /// CPU time (user + system, in clock ticks) the server process has used so far.
    fn cpu_ticks(&self) -> u64 {
        let pid = self
            .child
            .as_ref()
            .and_then(|c| c.0.as_ref())
            .expect("running")
            .id();
        let stat =
            std::fs::read_to_string(format!("/proc/{pid}/stat")).expect("read /proc/PID/stat");
        // Fields after the parenthesised command name; utime and stime are fields 14 and 15.
        let rest = &stat[stat.rfind(')').expect("stat format") + 2..];
        let fields: Vec<&str> = rest.split_whitespace().collect();
        fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap()
    }
}

/// `/stats/tcp` is JSON and lists the request's own connection among the sockets.
fn lists_its_own_request(served: &Served) {
    let body = served.run(&[
        "curl",
        "-sS",
        "--fail",
        "--max-time",
        "10",
        &format!("http://{DEVICE_IP}/stats/tcp"),
    ]);
    let tcp: TcpTable = serde_json::from_slice(&body).unwrap_or_else(|e| {
        panic!(
            "/stats/tcp is no table ({e}): {}",
            String::from_utf8_lossy(&body)
        )
    });
    let columns = ["port", "state", "rx_queue", "tx_queue", "rx_capacity"];
    assert_eq!(tcp.fields, columns, "{tcp:?}");
    let own = tcp
        .sockets
        .iter()
        .any(|row| row.0 == 80 && row.1 == "ESTABLISHED");
    assert!(own, "{} rows omitted: {tcp:?}", tcp.omitted);
}

/// `GET /stats/tcp`: the connected sockets as compact rows, with the rows' field names.
#[derive(Debug, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct TcpTable {
    /// The rows' columns: port, state, rx_queue, tx_queue, rx_capacity.
    fields: Vec<String>,
    /// One row per socket, in `fields`' order.
    sockets: Vec<(u16, String, u64, u64, u64)>,
    /// Rows left out to fit the response.
    omitted: u64,
}

#[test]
fn bad_options_get_one_line_naming_the_option() {
    let cases: [(&[&str], &str); 6] = [
        (&["--ip", "198.18.0.2/24"], "--tap"),
        (&["--tap", "ll0"], "--ip"),
        (&["--tap", "ll0", "--ip", "198.18.0.2/33"], "--ip"),
        (
            &["--tap", "ll0", "--ip", "198.18.0.2/24", "--rx-frames", "0"],
            "--rx-frames",
        ),
        (
            &[
                "--tap",
                "ll0",
                "--ip",
                "198.18.0.2/24",
                "--tcp-window",
                "huge",
            ],
            "--tcp-window",
        ),
        (
            &[
                "--tap",
                "ll0",
                "--ip",
                "198.18.0.2/24",
                "--mac",
                "01:00:5e:00:00:01",
            ],
            "--mac",
        ),
    ];
    for (args, option) in cases {
        let out = Command::new(linklab_bin())
            .arg("serve")
            .args(args)
            .output()
            .expect("run linklab");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(
            stderr.starts_with("linklab: error: ") && stderr.contains(option),
            "{args:?}: {stderr}"
        );
    }
}

#[test]
fn ping_curl_echo_stats_and_clean_exit() {
    let mut served = Served::start("srv", &["--stats-interval", "1"]);

    // Idle, the main loop sleeps in ppoll(2) on the TAP: a spinning loop would burn the whole
    // second (100 ticks at the usual 100 Hz); allow a tenth of that.
    let before = served.cpu_ticks();
    std::thread::sleep(Duration::from_secs(1));
    let idle = served.cpu_ticks() - before;
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) }.max(1) as u64;
    assert!(
        idle * 10 <= hz,
        "serve used {idle} of {hz} ticks in an idle second: it spins"
    );

    Ping::new(DEVICE_IP, 20)
        .with(&["-i", "0.05"])
        .assert_answered(|argv| served.run(argv));

    for file in linklab_perf::payload::BENCH_FILES {
        let body = served.run(&[
            "curl",
            "-sS",
            "--fail",
            "--max-time",
            "60",
            &format!("http://{DEVICE_IP}{}", file.path),
        ]);
        let mut expected = vec![0u8; file.len as usize];
        linklab_perf::payload::fill(0, &mut expected);
        assert_eq!(body.len(), expected.len(), "{}: length", file.path);
        assert_eq!(
            crc32fast::hash(&body),
            crc32fast::hash(&expected),
            "{}: CRC32",
            file.path
        );
    }
    let missing = served
        .ns
        .command(&[
            "curl",
            "-s",
            "-o",
            "/dev/null",
            "-w",
            "%{http_code}",
            &format!("http://{DEVICE_IP}/nope.txt"),
        ])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&missing.stdout), "404");

    echoes_udp_and_tcp(&served.ns);

    let stats = served.stats();
    assert_conserved(&stats);
    assert!(mac_counter(&stats, "rx_packets") > 100, "{stats}");
    lists_its_own_request(&served);
    assert!(mac_counter(&stats, "tx_packets") > 100, "{stats}");
    assert_eq!(stats.counter("echo", "udp_tx_datagrams"), 5, "{stats}");
    assert!(stats.counter("echo", "tcp_bytes") >= 50_000, "{stats}");

    let tap_created = served
        .ns
        .command(&["ip", "link", "show", TAP])
        .output()
        .unwrap()
        .status
        .success();
    assert!(tap_created);
    let stdout = served.stop();
    assert!(
        stdout.contains("rx_packets"),
        "no counters printed at exit: {stdout}"
    );
    assert!(
        stdout.matches("rx_packets").count() >= 2,
        "no periodic counters with --stats-interval 1: {stdout}"
    );
    // The namespace still exists (`run` fails otherwise); only the TAP is gone.
    let links = String::from_utf8(served.run(&["ip", "-o", "link", "show"])).unwrap();
    assert!(
        !links.contains(&format!(" {TAP}:")),
        "the TAP serve created is still there after exit: {links}"
    );
}

/// Port 7 echoes five UDP datagrams and 50 000 bytes over TCP, in order.
fn echoes_udp_and_tcp(ns: &Netns) {
    let (udp_reply, tcp_reply) = in_netns(ns, || {
        let device: SocketAddr = format!("{DEVICE_IP}:7").parse().unwrap();
        let udp = UdpSocket::bind("198.18.0.1:0").unwrap();
        udp.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut udp_reply = Vec::new();
        for i in 0..5u8 {
            let msg = [i; 100];
            udp.send_to(&msg, device).unwrap();
            let mut buf = [0u8; 200];
            let (n, from) = udp.recv_from(&mut buf).unwrap();
            assert_eq!(from, device);
            udp_reply.extend_from_slice(&buf[..n]);
        }
        let mut tcp = TcpStream::connect_timeout(&device, Duration::from_secs(5)).unwrap();
        tcp.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let msg: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        tcp.write_all(&msg).unwrap();
        tcp.shutdown(std::net::Shutdown::Write).unwrap();
        let mut tcp_reply = Vec::new();
        tcp.read_to_end(&mut tcp_reply).unwrap();
        (udp_reply, tcp_reply)
    });
    let expected_udp: Vec<u8> = (0..5u8).flat_map(|i| [i; 100]).collect();
    assert_eq!(udp_reply, expected_udp, "UDP echo");
    assert_eq!(
        tcp_reply,
        (0..50_000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>(),
        "TCP echo"
    );
}

/// Bytes an iperf3 -J report says were received, checked for sanity.
fn received_bytes(report: &iperf3::Report, what: &str) -> u64 {
    let end = &report.end;
    let sum = end
        .sum_received
        .as_ref()
        .or(end.sum.as_ref())
        .unwrap_or_else(|| panic!("{what}: no byte count: {end:?}"));
    assert!(
        sum.bytes > 0 && sum.seconds > 1.0,
        "{what}: nothing moved: {end:?}"
    );
    sum.bytes
}

#[test]
fn stock_iperf3_tcp_and_udp() {
    let mut served = Served::start("ipf", &[]);

    let tcp = served.iperf3(&[]);
    let bytes = received_bytes(&tcp, "TCP");
    assert!(bytes > 1_000_000, "TCP moved only {bytes} bytes");
    let reverse = served.iperf3(&["-R"]);
    assert!(received_bytes(&reverse, "TCP -R") > 1_000_000);
    assert_eq!(reverse.start.test_start.map(|t| t.reverse), Some(1));

    let bidir = served.iperf3(&["--bidir"]);
    let end = &bidir.end;
    assert!(end.sum("sum_received").bytes > 100_000, "{end:?}");
    assert!(
        end.sum("sum_received_bidir_reverse").bytes > 100_000,
        "{end:?}"
    );

    let parallel = served.iperf3(&["-P", "4"]);
    assert_eq!(parallel.end.stream_count(), Some(4));
    assert!(received_bytes(&parallel, "TCP -P 4") > 1_000_000);

    // UDP both ways at a rate a loaded two-core host carries (at 50 Mbit/s, beside another
    // test binary and two CPU hogs, the kernel dropped a quarter of the datagrams while serve
    // waited for a core): every datagram counted, the sender (ours with -R) paced to -b.
    // What serve carries at full rate is `linklab bench`'s and probe's to say, not a test's.
    for extra in [&["-u", "-b", "5M"][..], &["-u", "-R", "-b", "5M"][..]] {
        let udp = served.iperf3(extra);
        let sum = udp.end.sum("sum");
        let packets = sum.packets.unwrap_or(0);
        let lost = sum.lost_packets.unwrap_or(u64::MAX);
        // 5 Mbit/s for 2 s is about 850 datagrams of 1460 bytes.
        assert!(packets > 400, "{extra:?}: {sum:?}");
        assert!(lost * 20 < packets, "{extra:?}: more than 5% lost: {sum:?}");
        let mbps = sum.bits_per_second / 1e6;
        assert!(
            (2.5..6.0).contains(&mbps),
            "{extra:?}: {mbps} Mbit/s for -b 5M"
        );
    }

    let stats = served.stats();
    assert_conserved(&stats);
    served.stop();
}

#[test]
fn auto_window_keeps_a_small_queue_from_overflowing() {
    let mut served = Served::start("win", &["--rx-frames", "4", "--tcp-window", "auto"]);
    let report = served.iperf3(&[]);
    assert!(received_bytes(&report, "TCP, auto window") > 100_000);
    let stats = served.stats();
    assert_conserved(&stats);
    assert!(mac_counter(&stats, "rx_packets") > 100, "{stats}");
    lists_its_own_request(&served);
    assert_eq!(
        mac_counter(&stats, "rx_missed_errors"),
        0,
        "queue-full drops with the auto window: {stats}"
    );
    served.stop();
    drop(served); // frees the namespace and the turn before the next soft NIC starts

    let mut served = Served::start("big", &["--rx-frames", "4", "--tcp-window", "262144"]);
    let report = served.iperf3(&[]);
    received_bytes(&report, "TCP, window far above the queue");
    let stats = served.stats();
    assert_conserved(&stats);
    assert!(
        mac_counter(&stats, "rx_missed_errors") > 0,
        "no queue-full drops with a 256 KiB window over 4 frames: {stats}"
    );
    let stdout = served.terminate();
    assert!(
        stdout.contains("stopped by signal 15") && stdout.contains("rx_missed_errors="),
        "{stdout}"
    );
}

/// The queue is sized at run time: any `--rx-frames` in 2..=1024 serves (not only a table of
/// compile-time sizes), with the ring and the auto window linklab-mac computes for it.
#[test]
fn any_queue_size_from_2_to_1024_frames_serves() {
    for (frames, bytes) in [(2, 4592), (5, 9140), (1024, 1_553_944)] {
        let mut served =
            Served::start(&format!("q{frames}"), &["--rx-frames", &frames.to_string()]);
        let body = served.run(&[
            "curl",
            "-sS",
            "--fail",
            "--max-time",
            "20",
            &format!("http://{DEVICE_IP}/100kB.txt"),
        ]);
        assert_eq!(body.len(), 100_000, "{frames} frames");
        let stats = served.stats();
        assert_conserved(&stats);
        assert_eq!(stats.counter("rx_queue", "frames"), frames, "{stats}");
        assert_eq!(stats.counter("rx_queue", "bytes"), bytes, "{stats}");
        let window = (frames - 2).max(1) * 1460;
        assert_eq!(stats.counter("tcp_window", "bytes"), window, "{stats}");
        let stdout = served.stop();
        assert!(
            stdout.contains(&format!("rx queue {frames} frames ({bytes} bytes)")),
            "{stdout}"
        );
    }
}

#[test]
fn an_existing_tap_is_used_and_left_in_place() {
    let mut served = Served::start_with("old", &[], |ns| {
        ns.run(&["ip", "tuntap", "add", "dev", TAP, "mode", "tap"]);
    });
    Ping::new(DEVICE_IP, 3)
        .with(&["-i", "0.05"])
        .assert_answered(|argv| served.run(argv));
    let stdout = served.stop();
    assert!(stdout.contains("TAP existed"), "{stdout}");
    let links = String::from_utf8(served.run(&["ip", "-o", "link", "show"])).unwrap();
    assert!(
        links.contains(&format!(" {TAP}:")),
        "serve removed a TAP it did not create: {links}"
    );
}

/// iperf 2 on the soft NIC, against Debian's stock iperf 2.1.8 (`iperf`): every mode it
/// serves (`-n`, `-t`, `-P 3`, `-r`, `-d`, `-R`, `--full-duplex`, `-X`, UDP with its server
/// report), each test's bytes as the client counted them equal to the device's counters;
/// the hostile cases (2^31 threads, connect-back port 0, an iperf3 cookie, a cut header, a
/// silent holder); and iperf3 with three streams each way and the full MSS (every SYN-ACK
/// offers two segments). One soft NIC for all, about 30 s.
#[test]
fn stock_iperf2_every_mode_hostile_peers_and_iperf3_three_streams() {
    let _turn = ONE_AT_A_TIME
        .lock()
        .unwrap_or_else(|poisoned| poisoned.into_inner());
    let dev = linklab_testkit::device::Device::serve("ip2");
    iperf2::iperf3_streams_and_mss(&dev);
    iperf2::tcp_modes(&dev, 3);
    iperf2::udp_mode(&dev);
    iperf2::hostile(&dev);
    iperf2::counters_conserve(&dev);
}
