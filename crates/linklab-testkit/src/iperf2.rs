//! iperf 2 on a device under test, with Debian's stock iperf 2.1.8 (`iperf`) as the peer: each
//! mode the device serves, run in sequence on one device, its figures read from iperf's own
//! output (`-y C`: one CSV line per flow; UDP's server report from the text) and held
//! against the device's counters in `/stats`; the hostile cases; and the iperf3 checks that
//! the device still serves `-P 3` and advertises the MSS the link allows. Stock iperf 2.1.8
//! exits 0 even when it cannot connect, so nothing here trusts an exit status alone.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream};
use std::time::{Duration, Instant};

use crate::stats::Stats;

use super::counter;
use super::device::{Device, DEVICE};
use super::{assert_conserved, in_netns, wait_until, Netns};

/// iperf 2's port.
pub const PORT: u16 = 5001;

/// One flow's line of `iperf -y C` (TCP): who sent to whom and what.
#[derive(Clone, Debug)]
pub struct Flow {
    /// The sender's address.
    pub src: String,
    /// The receiver's address (`::` on a `--full-duplex` line of the device's sending).
    pub dst: String,
    /// The sender's port.
    pub src_port: u16,
    /// The receiver's port.
    pub dst_port: u16,
    /// Bytes moved.
    pub bytes: u64,
    /// Its rate, bit/s.
    pub bps: u64,
}

/// What a stock `iperf -c` printed.
#[derive(Debug)]
pub struct Run {
    /// stdout and stderr.
    pub text: String,
    /// Its CSV lines (with `-y C`).
    pub flows: Vec<Flow>,
    /// How long it took.
    pub took: Duration,
}

impl Run {
    /// The flows sent to the device's iperf 2 port.
    pub fn streams_to_device(&self) -> Vec<&Flow> {
        self.flows
            .iter()
            .filter(|f| f.dst == DEVICE && f.dst_port == PORT)
            .collect()
    }

    /// Bytes of the flows sent to the device's iperf 2 port.
    pub fn received(&self) -> u64 {
        self.streams_to_device().iter().map(|f| f.bytes).sum()
    }

    /// Bytes of the flows the device sent from its iperf 2 port (`-R`, `--full-duplex`).
    pub fn sent_inline(&self) -> u64 {
        self.flows
            .iter()
            .filter(|f| f.src == DEVICE && f.src_port == PORT)
            .map(|f| f.bytes)
            .sum()
    }

    /// Bytes of the flows the device sent to the client's listener (`-r`, `-d`: to port
    /// `listen`, from an ephemeral port of the device).
    pub fn connected_back(&self, listen: u16) -> u64 {
        self.flows
            .iter()
            .filter(|f| f.src == DEVICE && f.src_port != PORT && f.dst_port == listen)
            .map(|f| f.bytes)
            .sum()
    }
}

/// Parses the CSV lines of `iperf -y C` (TCP: 9 fields; UDP client lines: 14).
fn flows(text: &str) -> Vec<Flow> {
    text.lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.trim().split(',').collect();
            if f.len() < 9
                || f[0].len() < 14
                || !f[0].bytes().all(|b| b.is_ascii_digit() || b == b'.')
            {
                return None;
            }
            Some(Flow {
                src: f[1].to_string(),
                dst: f[3].to_string(),
                src_port: f[2].parse().ok()?,
                dst_port: f[4].parse().ok()?,
                bytes: f[7].parse().ok()?,
                bps: f[8].parse().ok()?,
            })
        })
        .collect()
}

/// Stock `iperf -c DEVICE ARGS...` in the device's namespace (stopped after 30 s).
pub fn iperf(dev: &Device, args: &[&str]) -> Run {
    iperf_in(&dev.ns, 30, args)
}

/// Stock `iperf -c DEVICE ARGS...` in namespace `ns`, stopped after `timeout_s` seconds.
pub fn iperf_in(ns: &Netns, timeout_s: u32, args: &[&str]) -> Run {
    let limit = timeout_s.to_string();
    let mut argv = vec!["timeout", &limit, "iperf", "-c", DEVICE];
    argv.extend_from_slice(args);
    let started = Instant::now();
    let out = ns.command(&argv).output().expect("run iperf");
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    Run {
        flows: flows(&text),
        text,
        took: started.elapsed(),
    }
}

/// The device's iperf 2 counter `name`.
pub fn c(stats: &Stats, name: &str) -> u64 {
    counter(stats, "iperf2", name)
}

/// What holds of iperf 2's counters at any time between tests: every test started ended
/// done or failed, none is open, and the MAC's law.
pub fn assert_iperf2_conserves(stats: &Stats) {
    assert_conserved(stats);
    assert_eq!(
        c(stats, "tests"),
        c(stats, "tests_done") + c(stats, "tests_failed"),
        "iperf2: {}",
        shown(stats)
    );
    assert_eq!(c(stats, "open_streams"), 0, "iperf2: {}", shown(stats));
}

/// iperf 2's counters in `stats`, as JSON text for a message.
fn shown(stats: &Stats) -> String {
    stats.show("iperf2")
}

/// Waits (up to 5 s) until the device's last iperf 2 test is over in its counters, and
/// returns /stats then.
pub fn settled(dev: &Device) -> Stats {
    let mut stats = dev.stats();
    wait_until(Duration::from_secs(5), || {
        stats = dev.stats();
        c(&stats, "tests") == c(&stats, "tests_done") + c(&stats, "tests_failed")
            && c(&stats, "open_streams") == 0
    });
    stats
}

/// Counter deltas between two /stats.
fn delta(before: &Stats, after: &Stats, name: &str) -> u64 {
    c(after, name) - c(before, name)
}

/// Runs `args` against the device and checks it as one test done: what the client counts
/// each way is what the device counts (`received`: the client's flows to the device;
/// `sent`: what the device sent, as the client received it).
fn one_test(dev: &Device, args: &[&str], check: impl Fn(&Run) -> (u64, u64)) -> Run {
    let before = settled(dev);
    let run = iperf(dev, args);
    let after = settled(dev);
    let (received, sent) = check(&run);
    let mode = args.join(" ");
    assert_eq!(
        delta(&before, &after, "tests_done"),
        1,
        "{mode}: {}\n{}",
        shown(&after),
        run.text
    );
    assert_eq!(
        delta(&before, &after, "tests_failed"),
        0,
        "{mode}: {}",
        shown(&after)
    );
    assert_eq!(
        delta(&before, &after, "bytes_received"),
        received,
        "{mode}: {}\n{}",
        shown(&after),
        run.text
    );
    assert_eq!(
        delta(&before, &after, "bytes_sent"),
        sent,
        "{mode}: {}\n{}",
        shown(&after),
        run.text
    );
    assert_iperf2_conserves(&after);
    run
}

/// Every TCP mode of stock `iperf -c` the device serves, each `-t 1` (or `-n`), in
/// sequence; `parallel` streams for `-P` (what the device's sizing allows). The client
/// listens for `-r`/`-d` on port 5001 of its own address (iperf's default).
pub fn tcp_modes(dev: &Device, parallel: usize) {
    // -n: exactly the bytes asked for, the 60-byte header among them (as iperf 2 counts).
    let run = one_test(dev, &["-n", "1M", "-y", "C"], |r| (r.received(), 0));
    assert_eq!(run.received(), 1 << 20, "{}", run.text);
    let run = one_test(dev, &["-t", "1", "-y", "C"], |r| (r.received(), 0));
    assert!(run.received() > 100_000, "{}", run.text);
    // -P: one line per stream.
    let p = parallel.to_string();
    let run = one_test(dev, &["-t", "1", "-P", &p, "-y", "C"], |r| {
        (r.received(), 0)
    });
    let streams = run.streams_to_device();
    assert_eq!(streams.len(), parallel, "{}", run.text);
    assert!(streams.iter().all(|f| f.bytes > 10_000), "{}", run.text);
    // -r: the client's test, then the device connects back to the client's port 5001.
    let run = one_test(dev, &["-t", "1", "-r", "-y", "C"], |r| {
        (r.received(), r.connected_back(PORT))
    });
    assert!(
        run.received() > 100_000 && run.connected_back(PORT) > 100_000,
        "{}",
        run.text
    );
    // -d: both at once.
    let run = one_test(dev, &["-t", "1", "-d", "-y", "C"], |r| {
        (r.received(), r.connected_back(PORT))
    });
    assert!(
        run.received() > 10_000 && run.connected_back(PORT) > 10_000,
        "{}",
        run.text
    );
    // -R: the device sends on the client's connection (the header is what it receives).
    let run = one_test(dev, &["-t", "1", "-R", "-y", "C"], |r| {
        (60, r.sent_inline())
    });
    assert!(run.sent_inline() > 100_000, "{}", run.text);
    // --full-duplex: both ways on the one connection.
    let run = one_test(dev, &["-t", "1", "--full-duplex", "-y", "C"], |r| {
        (r.received(), r.sent_inline())
    });
    assert!(
        run.received() > 10_000 && run.sent_inline() > 10_000,
        "{}",
        run.text
    );
    // -X: the client waits for the device's version reply before it sends.
    let run = one_test(dev, &["-t", "1", "-X", "-y", "C"], |r| (r.received(), 0));
    assert!(run.received() > 100_000, "{}", run.text);
    assert!(
        run.took < Duration::from_secs(5),
        "{:?}: {}",
        run.took,
        run.text
    );
}

/// The server report a UDP client printed: (lost, total datagrams).
fn udp_report(text: &str) -> Option<(u64, u64)> {
    let after = text.split("Server Report:").nth(1)?;
    let line = after
        .lines()
        .find(|l| l.contains(" ms ") && l.contains('('))?;
    let field = line
        .split_whitespace()
        .find(|w| w.contains('/') && !w.contains("sec"))?;
    let (lost, total) = field.split_once('/')?;
    Some((lost.parse().ok()?, total.parse().ok()?))
}

/// The datagrams a UDP client says it sent.
fn udp_sent(text: &str) -> Option<u64> {
    let at = text.find("Sent ")?;
    text[at + 5..].split_whitespace().next()?.parse().ok()
}

/// Stock `iperf -c -u -b 5M -t 1`: the device's server report reaches the client, its count
/// of datagrams is the client's, and the loss is under 5 % (in one of up to three tries: an
/// emulator not scheduled while its NIC model's buffers filled loses datagrams the firmware
/// never saw, as tests/emu.rs's UDP check says).
pub fn udp_mode(dev: &Device) {
    let mut seen = Vec::new();
    for _ in 0..3 {
        let before = settled(dev);
        let run = iperf(dev, &["-u", "-b", "5M", "-t", "1"]);
        let after = settled(dev);
        let (lost, total) =
            udp_report(&run.text).unwrap_or_else(|| panic!("no server report: {}", run.text));
        let sent = udp_sent(&run.text).unwrap_or_else(|| panic!("no datagram count: {}", run.text));
        // The report counts the client's data datagrams: its count less the FIN, as a
        // stock 2.1.8 server's report does (896 sent, 0/895 from `iperf -s -u`).
        assert_eq!(total + 1, sent, "{}", run.text);
        assert_eq!(delta(&before, &after, "tests_done"), 1, "{}", shown(&after));
        assert!(
            delta(&before, &after, "bytes_received") >= (total - lost) * 1470 / 2,
            "{}",
            shown(&after)
        );
        assert_iperf2_conserves(&after);
        if lost * 20 < total {
            return;
        }
        seen.push(run.text);
    }
    panic!("UDP at 5 Mbit/s lost 5 % or more in three tests: {seen:?}");
}

/// The second host address on the device's link, for a client that is not the test's.
const OTHER_HOST: &str = "198.18.0.3";

/// A raw connection to the device's iperf 2 port from [`OTHER_HOST`] (added to the
/// namespace's side of the TAP).
fn connect_from_other_host(dev: &Device) -> TcpStream {
    let _ = dev
        .ns
        .command(&[
            "ip",
            "addr",
            "add",
            &format!("{OTHER_HOST}/24"),
            "dev",
            dev.tap,
        ])
        .output();
    let device: SocketAddr = format!("{DEVICE}:{PORT}").parse().unwrap();
    let path = format!("/run/netns/{}", dev.ns.name);
    std::thread::spawn(move || {
        super::enter_netns(&path);
        let s = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::STREAM, None).unwrap();
        let from: SocketAddr = format!("{OTHER_HOST}:0").parse().unwrap();
        s.bind(&from.into()).unwrap();
        s.connect_timeout(&device.into(), Duration::from_secs(5))
            .unwrap();
        TcpStream::from(s)
    })
    .join()
    .unwrap()
}

/// An iperf 2.1 test header (60 bytes): `flags`, `threads`, `port`, `amount` as given.
fn header(flags: u32, threads: u32, port: u32, amount: u32) -> Vec<u8> {
    let mut h = Vec::with_capacity(60);
    for w in [flags, threads, port, 0, 0, amount] {
        h.extend_from_slice(&w.to_be_bytes());
    }
    // The extension: type, length, upper/lower flags, version 2.1.8, the rest zero.
    for w in [0u32, 0, 0, 0x0002_0001, 0x0008_0003, 0, 0, 0, 0] {
        h.extend_from_slice(&w.to_be_bytes());
    }
    h
}

/// Sends `bytes` on a fresh connection and closes it; returns what the device sent back
/// before closing (within 3 s).
fn send_and_close(dev: &Device, bytes: Vec<u8>) -> Vec<u8> {
    let path = format!("/run/netns/{}", dev.ns.name);
    let device: SocketAddr = format!("{DEVICE}:{PORT}").parse().unwrap();
    std::thread::spawn(move || {
        super::enter_netns(&path);
        let mut s = TcpStream::connect_timeout(&device, Duration::from_secs(5)).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        let _ = s.write_all(&bytes);
        let _ = s.shutdown(Shutdown::Write);
        let mut back = Vec::new();
        let _ = s.read_to_end(&mut back);
        back
    })
    .join()
    .unwrap()
}

/// The hostile cases: a header claiming 2^31 threads, a `-r` header naming port 0, an
/// iperf3 cookie on 5001, a header cut short, a silent holder; after each the device still
/// serves a stock client, never connected anywhere it was not asked to by a real test, and
/// its counters conserve.
pub fn hostile(dev: &Device) {
    let flags_21 = 0x4001_0078;
    // 2^31 threads: one stream of a test whose header claims more than any device holds.
    let before = settled(dev);
    let mut h = header(flags_21, 0x8000_0000, 5001, 100_000);
    h.extend(std::iter::repeat_n(b'0', 100_000));
    send_and_close(dev, h);
    let after = settled(dev);
    assert_eq!(delta(&before, &after, "tests"), 1, "{}", shown(&after));
    assert_eq!(
        delta(&before, &after, "bytes_received"),
        100_060,
        "{}",
        shown(&after)
    );
    assert_iperf2_conserves(&after);
    stock_still_served(dev);

    // -r (VERSION1) naming port 0: nothing is connected back; the test fails.
    let before = settled(dev);
    let mut h = header(0x8000_0000 | flags_21, 1, 0, 10_000);
    h.extend(std::iter::repeat_n(b'0', 10_000));
    send_and_close(dev, h);
    let after = settled(dev);
    assert_eq!(
        delta(&before, &after, "connect_backs"),
        0,
        "{}",
        shown(&after)
    );
    assert_eq!(
        delta(&before, &after, "tests_failed"),
        1,
        "{}",
        shown(&after)
    );
    assert_iperf2_conserves(&after);

    // An iperf3 cookie (and parameters) on 5001: refused, nothing sent back.
    let before = settled(dev);
    let mut cookie = b"abcdefghijklmnopqrstuvwxyz234567abcd\0".to_vec();
    cookie.extend_from_slice(&[0, 0, 0, 2, b'{', b'}']);
    let back = send_and_close(dev, cookie);
    assert!(back.is_empty(), "{back:?}");
    let after = settled(dev);
    assert_eq!(
        delta(&before, &after, "tests_failed"),
        1,
        "{}",
        shown(&after)
    );
    assert_iperf2_conserves(&after);

    // A header cut short (30 of its 60 bytes), then the close.
    let before = settled(dev);
    send_and_close(dev, header(flags_21, 1, 5001, 0)[..30].to_vec());
    let after = settled(dev);
    assert_eq!(delta(&before, &after, "tests"), 1, "{}", shown(&after));
    assert_eq!(
        delta(&before, &after, "bytes_received"),
        30,
        "{}",
        shown(&after)
    );
    assert_iperf2_conserves(&after);
    stock_still_served(dev);

    // A silent holder from another host: connected, sends nothing. A stock client is served
    // within 3 s (the idle test gives way), and the holder is reset.
    let before = settled(dev);
    let mut holder = connect_from_other_host(dev);
    std::thread::sleep(Duration::from_millis(1000));
    let started = Instant::now();
    let run = iperf(dev, &["-n", "100K", "-y", "C"]);
    assert_eq!(run.received(), 100 * 1024, "{}", run.text);
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    holder
        .set_read_timeout(Some(Duration::from_secs(1)))
        .unwrap();
    let mut b = [0u8; 8];
    assert!(
        !matches!(holder.read(&mut b), Ok(n) if n > 0),
        "the holder got bytes"
    );
    let after = settled(dev);
    assert_eq!(delta(&before, &after, "evicted"), 1, "{}", shown(&after));
    assert_iperf2_conserves(&after);
}

/// A stock `iperf -c -n 100K` right after: served whole.
fn stock_still_served(dev: &Device) {
    let run = iperf(dev, &["-n", "100K", "-y", "C"]);
    assert_eq!(run.received(), 100 * 1024, "{}", run.text);
}

/// iperf3 with three streams each way (`-P 3`, `-P 3 -R`): every stream carries bytes, and
/// every SYN-ACK the device sent during them (control and data connections) offered a window
/// of at least two segments with the full MSS, so the client's Linux uses the full MSS.
/// Also that stock iperf3 sizes its UDP datagrams by the full MSS (its control connection's
/// `TCP_MAXSEG`), and `-u -l 1000` draws no warning.
pub fn iperf3_streams_and_mss(dev: &Device) {
    let capture = format!("/tmp/linklab-mss-{}.pcap", dev.ns.name);
    let _ = std::fs::remove_file(&capture);
    let tshark = dev.ns.spawn(&[
        "tshark",
        "-i",
        dev.tap,
        "-w",
        &capture,
        "-q",
        "-f",
        "tcp[tcpflags] & tcp-syn != 0",
    ]);
    // Capturing once the file has its header (a pcapng section and interface block).
    let started = wait_until(Duration::from_secs(20), || {
        std::fs::metadata(&capture).is_ok_and(|m| m.len() >= 24)
    });
    assert!(started, "tshark did not start capturing");
    std::thread::sleep(Duration::from_millis(500));
    for extra in [&["-P", "3"][..], &["-P", "3", "-R"]] {
        let mut args = vec!["-t", "1"];
        args.extend_from_slice(extra);
        let r = dev.iperf3(&args);
        assert_eq!(r.end.stream_count(), Some(3), "{extra:?}: {:?}", r.end);
        // Each stream carried bytes (the regression was `-P 3` refused outright); how many
        // is the machine's: on a loaded one a stream of a 1 s test may lose its second to a
        // retransmission timeout (2 920 bytes seen beside two CPU hogs), so the bar is on
        // the sum.
        let mut total = 0;
        for s in r.end.streams.iter().flatten() {
            let bytes = s.receiver.as_ref().map_or(0, |r| r.bytes);
            assert!(bytes > 0, "{extra:?}: {s:?}");
            total += bytes;
        }
        assert!(
            total > 30_000,
            "{extra:?}: {total} bytes in all: {:?}",
            r.end
        );
    }
    let udp = dev.iperf3(&["-u", "-b", "1M", "-t", "1"]);
    let blksize = udp.start.test_start.as_ref().map(|t| t.blksize);
    assert!(
        blksize == Some(1448) || blksize == Some(1460),
        "UDP length {blksize:?}"
    );
    let (_, text, _) = dev.iperf3_text(&["-u", "-b", "1M", "-t", "1", "-l", "1000"]);
    assert!(!text.contains("exceeds TCP MSS"), "{text}");
    std::thread::sleep(Duration::from_millis(500));
    let _ = tshark.interrupt(Duration::from_secs(5));
    let out = dev.ns.run(&[
        "tshark",
        "-r",
        &capture,
        "-Y",
        "tcp.flags.syn==1 && tcp.flags.ack==1",
        "-T",
        "fields",
        "-e",
        "tcp.window_size_value",
        "-e",
        "tcp.options.mss_val",
    ]);
    let _ = std::fs::remove_file(&capture);
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let syn_acks: Vec<(u64, u64)> = text
        .lines()
        .filter_map(|l| {
            let (w, m) = l.split_once('\t')?;
            Some((w.parse().ok()?, m.parse().ok()?))
        })
        .collect();
    // Control and 3 data connections per TCP test, control and the UDP test's.
    assert!(syn_acks.len() >= 8, "{text}");
    // The three streams that receive at once share the window the device's receive path
    // holds (a fresh clone's check once saw three full windows overrun mps2-an385's queue
    // and its NIC's FIFO: a stream whose first segments were dropped got nothing in 1 s).
    let window = dev.stats().counter("tcp_window", "bytes");
    let offered: u64 = syn_acks[1..4].iter().map(|(w, _)| w).sum();
    assert!(
        offered <= window,
        "-P 3's streams were offered {offered} bytes in all, over the {window}-byte window of the receive path: {text}"
    );
    for (window, mss) in syn_acks {
        assert_eq!(mss, 1460, "{text}");
        assert!(
            window >= 2 * 1460,
            "a SYN-ACK offered {window} bytes: {text}"
        );
    }
}

/// The device keeps its MAC's law and iperf 2's at the end.
pub fn counters_conserve(dev: &Device) {
    let stats = settled(dev);
    assert_iperf2_conserves(&stats);
    in_netns(&dev.ns, || ());
}
