//! Hostile but ordinary peers against `linklab serve` (linklab-perf's device apps, the same
//! code the firmware runs): oversized requests, idle connections, spoofed SYNs and spoofed
//! UDP from hosts that never answer ARP, a SIGTERM during a download, a second serve on a
//! busy TAP. Each case checks that the services come back (and how fast), and that the
//! counters still conserve. Spoofed frames are written by the test on the kernel side of the
//! TAP with an AF_PACKET socket, inside the namespace the test creates (198.18.0.0/15).
//!
//! What this campaign tries:
//! - 4 POSTs of 100 kB bodies to the HTTP server (answered 405), then an ordinary GET;
//! - 3 idle connections held on port 80 (2 HTTP sockets), then a new client;
//! - 6 spoofed SYNs to port 80 and 2 to port 7 from a host that does not exist, then clients;
//! - 16 spoofed UDP echo requests from hosts that do not exist, then a real request;
//! - SIGTERM while curl downloads: curl must end at once (RST), not hang;
//! - a second `serve` on the TAP the first one holds: one line saying it is in use.
//!
//! - a continuous flood of spoofed SYNs (40 per second to ports 80, 7 and 5201 in turn) while
//!   ordinary clients use all three services, each without retries.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use common::spoof::{self, assert_nothing_stuck, stuck, Device};
use common::{assert_conserved, in_netns, linklab_bin, linklab_in, ChildGuard, Netns};
use serde_json::Value;

const DEVICE_IP: [u8; 4] = [198, 18, 0, 2];
const DEVICE: &str = "198.18.0.2";
const HOST_CIDR: &str = "198.18.0.1/24";
const TAP: &str = "llh0";
/// serve's default MAC.
const DEVICE_MAC: [u8; 6] = [0x02, 0x4c, 0x4c, 0x00, 0x00, 0x01];

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

struct Served {
    child: Option<ChildGuard>,
    ns: Netns,
    _turn: MutexGuard<'static, ()>,
}

impl Served {
    fn start(tag: &str) -> Served {
        let turn = ONE_AT_A_TIME
            .lock()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        let ns = Netns::new(tag);
        let bin = linklab_bin();
        let child = ns.spawn(&[
            bin.to_str().unwrap(),
            "serve",
            "--tap",
            TAP,
            "--ip",
            "198.18.0.2/24",
        ]);
        assert!(
            common::wait_until(Duration::from_secs(10), || ns
                .command(&["ip", "link", "show", TAP])
                .output()
                .is_ok_and(|o| o.status.success())),
            "no TAP"
        );
        ns.run(&["ip", "addr", "add", HOST_CIDR, "dev", TAP]);
        ns.run(&["ip", "link", "set", TAP, "up"]);
        assert!(
            common::wait_until(Duration::from_secs(10), || ns
                .command(&["ping", "-c", "1", "-W", "1", DEVICE])
                .output()
                .is_ok_and(|o| o.status.success())),
            "no ping"
        );
        Served {
            child: Some(child),
            ns,
            _turn: turn,
        }
    }

    fn curl(&self, extra: &[&str], path: &str) -> std::process::Output {
        let url = format!("http://{DEVICE}{path}");
        let mut argv = vec!["curl", "-sS", "-o", "/dev/null", "-w", "%{http_code}"];
        argv.extend_from_slice(extra);
        argv.push(&url);
        self.ns.command(&argv).output().expect("curl")
    }

    fn stats(&self) -> Value {
        let out = self
            .ns
            .run(&["curl", "-sS", "-m", "10", &format!("http://{DEVICE}/stats")]);
        serde_json::from_slice(&out.stdout).expect("/stats JSON")
    }

    /// Sends raw Ethernet frames out of the kernel side of the TAP.
    fn inject(&self, frames: Vec<Vec<u8>>) {
        spoof::inject(&self.ns, TAP, frames);
    }

    /// Sends spoofed SYNs at `per_second` to ports 80, 7 and 5201 in turn from a thread in
    /// the namespace, until `stop` is set (at most 60 s).
    fn flood(
        &self,
        per_second: u32,
        stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    ) -> std::thread::JoinHandle<u32> {
        let ns = self.ns.name.clone();
        std::thread::spawn(move || {
            let file = std::fs::File::open(format!("/run/netns/{ns}")).unwrap();
            let name = std::ffi::CString::new(TAP).unwrap();
            let mut sent = 0u32;
            // SAFETY: setns(2) on this thread only; socket/sendto with valid buffers.
            unsafe {
                use std::os::fd::AsRawFd;
                assert_eq!(libc::setns(file.as_raw_fd(), libc::CLONE_NEWNET), 0);
                let index = libc::if_nametoindex(name.as_ptr());
                let fd = libc::socket(libc::AF_PACKET, libc::SOCK_RAW, 0);
                assert!(fd >= 0);
                let mut addr: libc::sockaddr_ll = std::mem::zeroed();
                addr.sll_family = libc::AF_PACKET as u16;
                addr.sll_ifindex = index as i32;
                addr.sll_halen = 6;
                let started = Instant::now();
                while !stop.load(std::sync::atomic::Ordering::Relaxed)
                    && started.elapsed() < Duration::from_secs(60)
                {
                    let port = [80, 7, 5201][(sent % 3) as usize];
                    let ghost = [198, 18, 1, (sent % 250) as u8 + 1];
                    let f = spoofed_syn(ghost, 30000 + (sent % 30000) as u16, port);
                    libc::sendto(
                        fd,
                        f.as_ptr().cast(),
                        f.len(),
                        0,
                        (&addr as *const libc::sockaddr_ll).cast(),
                        std::mem::size_of::<libc::sockaddr_ll>() as u32,
                    );
                    sent += 1;
                    std::thread::sleep(Duration::from_secs(1) / per_second);
                }
                libc::close(fd);
            }
            sent
        })
    }

    /// Stops serve with SIGTERM; its stdout.
    fn terminate(&mut self) -> String {
        let child = self.child.take().unwrap().0.take().unwrap();
        // SAFETY: kill(2) on our own child.
        unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
        let out = child.wait_with_output().unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

/// serve's device, for the spoofed frames.
const TARGET: Device = Device {
    mac: DEVICE_MAC,
    ip: DEVICE_IP,
};

fn spoofed_syn(src: [u8; 4], src_port: u16, dst_port: u16) -> Vec<u8> {
    spoof::spoofed_syn(TARGET, src, src_port, dst_port)
}

fn spoofed_udp(src: [u8; 4], src_port: u16, dst_port: u16, payload: &[u8]) -> Vec<u8> {
    spoof::spoofed_udp(TARGET, src, src_port, dst_port, payload)
}

#[test]
fn oversized_requests_do_not_wedge_http() {
    let served = Served::start("big");
    let body = common::tempdir("hostile-big").join("100k.bin");
    std::fs::write(&body, vec![b'x'; 100_000]).unwrap();
    let data = format!("@{}", body.display());
    for _ in 0..4 {
        let out = served.curl(&["-m", "10", "--data-binary", &data], "/10kB.txt");
        assert_eq!(String::from_utf8_lossy(&out.stdout), "405", "{out:?}");
    }
    let started = Instant::now();
    let out = served.curl(&["-m", "5", "--fail"], "/10kB.txt");
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200", "{out:?}");
    assert!(started.elapsed() < Duration::from_secs(2));
    std::thread::sleep(Duration::from_millis(500));
    let stats = served.stats();
    assert_conserved(&stats);
    assert_nothing_stuck(&stats);
}

#[test]
fn idle_connections_are_closed_after_the_idle_timeout() {
    let served = Served::start("idle");
    let held = in_netns(&served.ns, || {
        let device: SocketAddr = format!("{DEVICE}:80").parse().unwrap();
        // Two idle connections fill both HTTP sockets; a third is refused.
        (0..2)
            .map(|_| TcpStream::connect_timeout(&device, Duration::from_secs(3)).unwrap())
            .collect::<Vec<_>>()
    });
    let started = Instant::now();
    let out = served.curl(
        &[
            "-m",
            "30",
            "--fail",
            "--retry",
            "30",
            "--retry-connrefused",
            "--retry-delay",
            "1",
        ],
        "/10kB.txt",
    );
    let waited = started.elapsed();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200", "{out:?}");
    // Served within the 10 s idle timeout (plus retry granularity), not held forever.
    assert!(waited < Duration::from_secs(14), "waited {waited:?}");
    for mut s in held {
        s.set_read_timeout(Some(Duration::from_secs(2))).unwrap();
        let mut b = [0u8; 16];
        // The device reset the idle connection: EOF or an error, not a hang.
        assert!(matches!(s.read(&mut b), Ok(0) | Err(_)));
    }
    let stats = served.stats();
    assert!(
        stats["http"]["idle_closed"].as_u64().unwrap() >= 2,
        "{stats}"
    );
    assert_conserved(&stats);
}

#[test]
fn spoofed_syns_and_udp_from_silent_hosts_do_not_kill_services() {
    let served = Served::start("spoof");
    let ghost = [198, 18, 0, 77];
    let mut frames: Vec<Vec<u8>> = (0..6).map(|i| spoofed_syn(ghost, 40000 + i, 80)).collect();
    frames.extend((0..2).map(|i| spoofed_syn(ghost, 41000 + i, 7)));
    frames.extend((0..16u8).map(|i| spoofed_udp([198, 18, 0, 100 + i], 5000, 7, b"spoof")));
    served.inject(frames);

    // UDP echo answers a real request right after the burst (stuck replies are dropped
    // after 1 s).
    let udp_ok = spoof::udp_echo_answered(&served.ns, DEVICE);
    assert!(udp_ok.0, "UDP echo never answered after the spoofed burst");
    assert!(udp_ok.1 < Duration::from_secs(3), "{:?}", udp_ok.1);

    // HTTP and TCP echo come back once the half-open sockets time out (10 s), without a
    // restart.
    let started = Instant::now();
    let out = served.curl(
        &[
            "-m",
            "30",
            "--fail",
            "--retry",
            "30",
            "--retry-connrefused",
            "--retry-delay",
            "1",
        ],
        "/10kB.txt",
    );
    assert_eq!(String::from_utf8_lossy(&out.stdout), "200", "{out:?}");
    // A free socket is made for the new SYN at once (the oldest half-open one is reset).
    assert!(
        started.elapsed() < Duration::from_secs(3),
        "{:?}",
        started.elapsed()
    );
    let echoed = in_netns(&served.ns, || {
        let device: SocketAddr = format!("{DEVICE}:7").parse().unwrap();
        let mut s = TcpStream::connect_timeout(&device, Duration::from_secs(3)).ok()?;
        s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
        s.write_all(b"ping").ok()?;
        let mut b = [0u8; 4];
        s.read_exact(&mut b).ok()?;
        Some(b)
    });
    assert_eq!(echoed, Some(*b"ping"));
    // The spoofed half-open connections left over are gone within the 10 s TCP timeout.
    let mut stats = served.stats();
    let deadline = Instant::now() + Duration::from_secs(12);
    while stuck(&stats) > 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(500));
        stats = served.stats();
    }
    assert_conserved(&stats);
    assert_nothing_stuck(&stats);
    assert!(
        stats["echo"]["udp_unsent_resets"].as_u64().unwrap() >= 1,
        "{stats}"
    );
}

#[test]
fn a_continuous_syn_flood_does_not_lock_out_clients() {
    let served = Served::start("flood");
    // Off-subnet spoofed sources: the device answers them through... nobody (no route
    // needed: smoltcp replies to the MAC the SYN came from, or ARPs in vain).
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let flood = served.flood(40, stop.clone());
    std::thread::sleep(Duration::from_secs(1));
    for round in 0..5 {
        let started = Instant::now();
        let out = served.curl(&["-m", "5", "--fail"], "/10kB.txt");
        assert_eq!(
            String::from_utf8_lossy(&out.stdout),
            "200",
            "round {round}: {out:?}"
        );
        assert!(started.elapsed() < Duration::from_secs(3), "round {round}");
        let echoed = in_netns(&served.ns, || {
            let device: SocketAddr = format!("{DEVICE}:7").parse().unwrap();
            let mut s = TcpStream::connect_timeout(&device, Duration::from_secs(3))
                .map_err(|e| format!("connect: {e}"))?;
            s.set_read_timeout(Some(Duration::from_secs(3))).unwrap();
            s.write_all(b"ping").map_err(|e| format!("write: {e}"))?;
            let mut b = [0u8; 4];
            s.read_exact(&mut b).map_err(|e| format!("read: {e}"))?;
            Ok::<_, String>(b)
        });
        if echoed != Ok(*b"ping") {
            panic!("round {round}: TCP echo: {echoed:?}; {}", served.stats());
        }
        std::thread::sleep(Duration::from_millis(300));
    }
    let iperf = served
        .ns
        .command(&[
            "iperf3",
            "-c",
            DEVICE,
            "-n",
            "1M",
            "-J",
            "--connect-timeout",
            "3000",
        ])
        .output()
        .unwrap();
    let report: Value = serde_json::from_slice(&iperf.stdout).expect("iperf3 JSON");
    assert!(report.get("error").is_none(), "{report}");
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let sent = flood.join().unwrap();
    assert!(sent >= 60, "the flood sent only {sent} SYNs");
    let stats = served.stats();
    assert_conserved(&stats);
    assert!(stats["http"]["reclaimed"].as_u64().unwrap() > 0, "{stats}");
}

#[test]
fn sigterm_resets_open_connections_and_a_busy_tap_is_named() {
    let mut served = Served::start("term");
    let second = linklab_in(
        &served.ns,
        &["serve", "--tap", TAP, "--ip", "198.18.0.3/24"],
    );
    common::assert_one_line_error(&second, "in use");

    let url = format!("http://{DEVICE}/3MB.txt");
    let curl = served.ns.spawn(&[
        "curl",
        "-sS",
        "-o",
        "/dev/null",
        "--limit-rate",
        "50k",
        &url,
    ]);
    std::thread::sleep(Duration::from_millis(800));
    let stdout = served.terminate();
    assert!(stdout.contains("stopped by signal"), "{stdout}");
    let mut curl = curl;
    let mut child = curl.0.take().unwrap();
    let deadline = Instant::now() + Duration::from_secs(2);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            break None;
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let status = status.expect("curl still hangs 2 s after serve got SIGTERM");
    assert!(!status.success(), "the download cannot have completed");
}

#[test]
fn iperf_server_stops_on_sigint_even_when_started_ignoring_it() {
    // `sh -c 'trap "" INT; exec linklab iperf -s'`: the server inherits SIGINT ignored.
    let port = "52019";
    let mut child = Command::new("sh")
        .args([
            "-c",
            &format!(
                "trap '' INT; exec {} iperf -s -p {port}",
                linklab_bin().display()
            ),
        ])
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(500));
    // SAFETY: kill(2) on our own child.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let deadline = Instant::now() + Duration::from_secs(3);
    while Instant::now() < deadline {
        if child.try_wait().unwrap().is_some() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = child.kill();
    let _ = child.wait();
    panic!("linklab iperf -s ignored SIGINT");
}
