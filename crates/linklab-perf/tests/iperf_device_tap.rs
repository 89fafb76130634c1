//! The smoltcp device server (`iperf::device::SmoltcpIperfServer`) against stock iperf3 3.12 over
//! a real Linux TAP device: a network namespace made for the test holds the TAP
//! (198.18.0.1/24 and 2001:2::1/64 on the kernel side; both are benchmarking ranges) and
//! our smoltcp interface (198.18.0.2, 2001:2::2) runs in a thread that entered that
//! namespace. Stock `iperf3 -c` runs inside the namespace: every mode over IPv4 and IPv6,
//! the options the device honours, and the ones it refuses as a stock server refuses an
//! option its sockets reject. Nothing leaves the namespace; it is deleted at the end, also
//! on failure.

use std::os::fd::AsRawFd;
use std::process::{Command, Output};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use linklab_perf::iperf::device::SmoltcpIperfServer;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet, SocketStorage};
use smoltcp::phy::{Medium, TunTapInterface};
use smoltcp::socket::{tcp, udp};
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

struct Netns(String);

impl Netns {
    fn new() -> Option<Netns> {
        let name = format!("llp-iperf-{}", std::process::id());
        let ok = Command::new("ip")
            .args(["netns", "add", &name])
            .status()
            .ok()?
            .success();
        ok.then_some(Netns(name))
    }
    fn run(&self, argv: &[&str]) -> Output {
        Command::new("ip")
            .args(["netns", "exec", &self.0])
            .args(argv)
            .output()
            .expect("ip netns exec")
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        let _ = Command::new("ip").args(["netns", "del", &self.0]).status();
    }
}

/// Runs the device server on tap0 inside `ns` until `stop`; sends each outcome.
fn device_thread(
    ns: String,
    stop: Arc<AtomicBool>,
    ready: mpsc::Sender<()>,
    done: mpsc::Sender<bool>,
) {
    let f = std::fs::File::open(format!("/var/run/netns/{ns}")).expect("netns file");
    // SAFETY: setns on this thread only, with a valid namespace fd.
    let rc = unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) };
    assert_eq!(rc, 0, "setns");
    let mut dev = TunTapInterface::new("tap0", Medium::Ethernet).expect("tap0");
    for cmd in [
        &["ip", "link", "set", "tap0", "up"][..],
        &["ip", "addr", "add", "198.18.0.1/24", "dev", "tap0"],
        &[
            "ip",
            "-6",
            "addr",
            "add",
            "2001:2::1/64",
            "dev",
            "tap0",
            "nodad",
        ],
        &["ip", "link", "set", "lo", "up"],
    ] {
        assert!(
            Command::new(cmd[0])
                .args(&cmd[1..])
                .status()
                .unwrap()
                .success(),
            "{cmd:?}"
        );
    }
    let mut cfg = Config::new(EthernetAddress([0x02, 0, 0, 0, 0, 0x02]).into());
    cfg.random_seed = 7;
    let start = Instant::now();
    let now = || smoltcp::time::Instant::from_micros(start.elapsed().as_micros() as i64);
    let mut iface = Interface::new(cfg, &mut dev, now());
    iface.update_ip_addrs(|a| {
        a.push(IpCidr::new(IpAddress::v4(198, 18, 0, 2), 24))
            .unwrap();
        a.push(IpCidr::new(IpAddress::v6(0x2001, 2, 0, 0, 0, 0, 0, 2), 64))
            .unwrap();
    });
    let mut sockets = SocketSet::new(Vec::<SocketStorage>::new());
    let tcp: Vec<SocketHandle> = (0..6)
        .map(|_| {
            sockets.add(tcp::Socket::new(
                tcp::SocketBuffer::new(vec![0; 65535]),
                tcp::SocketBuffer::new(vec![0; 65535]),
            ))
        })
        .collect();
    let meta = || vec![udp::PacketMetadata::EMPTY; 128];
    let udp = sockets.add(udp::Socket::new(
        udp::PacketBuffer::new(meta(), vec![0; 128 * 1500]),
        udp::PacketBuffer::new(meta(), vec![0; 128 * 1500]),
    ));
    let (rx, tx) = (vec![0u8; 8192].leak(), vec![0u8; 8192].leak());
    let mut server: SmoltcpIperfServer = SmoltcpIperfServer::new(&tcp, udp, 5201, rx, tx);
    ready.send(()).unwrap();
    while !stop.load(Ordering::Relaxed) {
        let t = now();
        iface.poll(t, &mut dev, &mut sockets);
        server.poll(&mut sockets, t);
        iface.poll(t, &mut dev, &mut sockets);
        if let Some(o) = server.take_outcome() {
            let _ = done.send(o.is_ok());
        }
        let wake = [
            iface.poll_delay(t, &sockets),
            server.poll_at().map(|w| {
                if w > t {
                    w - t
                } else {
                    smoltcp::time::Duration::ZERO
                }
            }),
        ]
        .into_iter()
        .flatten()
        .min()
        .unwrap_or(smoltcp::time::Duration::from_millis(50))
        .min(smoltcp::time::Duration::from_millis(50));
        let _ = smoltcp::phy::wait(dev.as_raw_fd(), Some(wake));
    }
    assert_eq!(server.open_streams(), 0);
}

#[test]
fn stock_iperf3_against_the_smoltcp_device_server_over_tap() {
    let Some(ns) = Netns::new() else {
        eprintln!("skipping: cannot create a network namespace (needs root)");
        return;
    };
    let stop = Arc::new(AtomicBool::new(false));
    let (ready_tx, ready_rx) = mpsc::channel();
    let (done_tx, done_rx) = mpsc::channel();
    let name = ns.0.clone();
    let stop2 = stop.clone();
    let th = std::thread::spawn(move || device_thread(name, stop2, ready_tx, done_tx));
    ready_rx
        .recv_timeout(Duration::from_secs(5))
        .expect("device thread up");
    // (client arguments, the error stock iperf3 must report; None: the test must pass).
    let runs: [(&[&str], Option<&str>); 16] = [
        (&["-t", "1"], None),
        (&["-t", "1", "-R"], None),
        (&["-t", "1", "-u", "-b", "5M"], None),
        (&["-t", "1", "-u", "-R", "-b", "5M"], None),
        (&["-t", "1", "--bidir"], None),
        (&["-t", "1", "-6"], None),
        (&["-t", "1", "-6", "-u", "-R", "-b", "5M"], None),
        // Honoured: the device never uses Nagle, sends in place, always sets DF, paces
        // --fq-rate itself, runs on CPU 0, reports the congestion control it uses.
        (&["-t", "1", "-N", "-Z", "-R", "-C", "reno"], None),
        (&["-t", "1", "-u", "--dont-fragment", "-A", "0,0"], None),
        (&["-t", "1", "-R", "--fq-rate", "4M"], None),
        // Refused with the SERVER_ERROR a stock server sends when setsockopt fails.
        (
            &["-t", "1", "-M", "1000"],
            Some("unable to set TCP/SCTP MSS: Operation not supported"),
        ),
        (
            &["-t", "1", "-w", "64K"],
            Some("unable to set socket buffer size: Operation not supported"),
        ),
        (
            &["-t", "1", "-S", "0x20"],
            Some("unable to set IP TOS: Operation not supported"),
        ),
        (
            &["-t", "1", "-6", "--dscp", "ef"],
            Some("unable to set IPv6 traffic class: Operation not supported"),
        ),
        (
            &["-t", "1", "-A", "0,1"],
            Some("unable to set CPU affinity: Invalid argument"),
        ),
        (
            &["-t", "1", "--sctp"],
            Some("unable to start stream listener: Protocol not supported"),
        ),
    ];
    let mut failures = Vec::new();
    for (args, refused) in runs {
        let host = if args.contains(&"-6") {
            "2001:2::2"
        } else {
            "198.18.0.2"
        };
        let mut argv = vec!["iperf3", "-c", host, "-J", "--connect-timeout", "3000"];
        argv.extend_from_slice(args);
        let out = ns.run(&argv);
        let text = String::from_utf8_lossy(&out.stdout).to_string();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap_or_default();
        let received = v["end"]["sum_received"]["bytes"].as_f64().unwrap_or(0.0);
        let server_ok = done_rx
            .recv_timeout(Duration::from_secs(10))
            .unwrap_or(false);
        if let Some(expected) = refused {
            let error = v["error"].as_str().unwrap_or("");
            if error != expected || server_ok {
                failures.push(format!(
                    "{args:?}: expected the error {expected:?}, got {error:?} (server_ok={server_ok})"
                ));
            }
            continue;
        }
        if !out.status.success() || v.get("error").is_some() || received <= 0.0 || !server_ok {
            failures.push(format!(
                "{args:?}: server_ok={server_ok} received={received}\n{text}"
            ));
        }
        check_options(args, &v, &mut failures);
    }
    stop.store(true, Ordering::Relaxed);
    th.join().expect("device thread");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// What each honoured option must show in stock iperf3's report of a test that passed: the
/// device's CPU as 0, UDP loss under 5 %, the IPv6 peer, the --fq-rate pacing, a congestion
/// control the device may report. Each miss is added to `failures`.
fn check_options(args: &[&str], v: &serde_json::Value, failures: &mut Vec<String>) {
    // The device cannot know its CPU use: it says null, which stock iperf3 parses
    // (and shows as 0).
    if v["end"]["cpu_utilization_percent"]["remote_total"].as_f64() != Some(0.0) {
        failures.push(format!(
            "{args:?}: remote CPU {}",
            v["end"]["cpu_utilization_percent"]
        ));
    }
    if args.contains(&"-u") {
        let lost = v["end"]["sum"]["lost_percent"].as_f64().unwrap_or(100.0);
        if lost > 5.0 {
            failures.push(format!("{args:?}: lost {lost}%"));
        }
    }
    if args.contains(&"-6") {
        let remote = v["start"]["connected"][0]["remote_host"]
            .as_str()
            .unwrap_or("");
        if remote != "2001:2::2" {
            failures.push(format!("{args:?}: connected to {remote:?}"));
        }
    }
    if args.contains(&"--fq-rate") {
        let bps = v["end"]["sum_received"]["bits_per_second"]
            .as_f64()
            .unwrap_or(0.0);
        if !(1e6..6e6).contains(&bps) {
            failures.push(format!("{args:?}: {bps} bit/s against --fq-rate 4M"));
        }
    }
    if args.contains(&"reno") {
        // With -R the device sends: what it reports is smoltcp's own algorithm (it
        // cannot switch to reno; a stock server without reno carries on the same way).
        let used = v["end"]["sender_tcp_congestion"].as_str().unwrap_or("");
        if !matches!(used, "none" | "reno" | "cubic") {
            failures.push(format!("{args:?}: device congestion control {used:?}"));
        }
    }
}
