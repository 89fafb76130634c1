//! iperf3's socket options reach the sockets of our host client and server, against stock
//! iperf3 3.12 on loopback: the test reads each data socket's options back with
//! getsockopt (TCP_MAXSEG, TCP_NODELAY, IP_TOS, SO_RCVBUF, TCP_CONGESTION,
//! TCP_USER_TIMEOUT, SO_MAX_PACING_RATE, IP_MTU_DISCOVER) while the test runs. Also: the
//! burst mode of `-b RATE/BURST` keeps the average rate, and `--rcv-timeout` ends a
//! receiving test whose sender went silent.

#[path = "iperf_support.rs"]
mod support;

use std::io::{Read, Write};
use std::net::TcpListener;
use std::os::fd::RawFd;
use std::process::Command;
use std::sync::atomic::AtomicBool;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use linklab_perf::iperf::{Params, Protocol};
use linklab_perf_host::iperf3::{
    run_client_observed, ClientConfig, Error, HostInterval, Observer, Server, ServerConfig,
    StreamInfo,
};

/// An int (or the bytes) of a socket option.
fn opt(fd: RawFd, level: i32, name: i32) -> Vec<u8> {
    let mut buf = [0u8; 64];
    let mut len = buf.len() as libc::socklen_t;
    // SAFETY: getsockopt writes at most `len` bytes into `buf` and stores the length.
    let r = unsafe { libc::getsockopt(fd, level, name, buf.as_mut_ptr().cast(), &mut len) };
    assert_eq!(r, 0, "getsockopt({level}, {name})");
    buf[..len as usize].to_vec()
}

fn int(fd: RawFd, level: i32, name: i32) -> i64 {
    let b = opt(fd, level, name);
    match b.len() {
        4 => i64::from(i32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
        8 => i64::from_ne_bytes(b.try_into().unwrap()),
        1 => i64::from(b[0]),
        n => panic!("option of {n} bytes"),
    }
}

fn text(fd: RawFd, level: i32, name: i32) -> String {
    let b = opt(fd, level, name);
    let end = b.iter().position(|c| *c == 0).unwrap_or(b.len());
    String::from_utf8_lossy(&b[..end]).into_owned()
}

/// The options of each data socket, read when it is announced.
#[derive(Default)]
struct Sockets(Vec<(StreamInfo, Vec<(&'static str, String)>)>, bool);

impl Observer for Sockets {
    fn stream(&mut self, s: &StreamInfo) {
        let fd = s.socket;
        let mut v = Vec::new();
        if self.1 {
            v.push(("tos", int(fd, libc::IPPROTO_IP, libc::IP_TOS).to_string()));
            v.push((
                "mtu_discover",
                int(fd, libc::IPPROTO_IP, libc::IP_MTU_DISCOVER).to_string(),
            ));
        } else {
            v.push((
                "mss",
                int(fd, libc::IPPROTO_TCP, libc::TCP_MAXSEG).to_string(),
            ));
            v.push((
                "nodelay",
                int(fd, libc::IPPROTO_TCP, libc::TCP_NODELAY).to_string(),
            ));
            v.push(("tos", int(fd, libc::IPPROTO_IP, libc::IP_TOS).to_string()));
            v.push((
                "rcvbuf",
                int(fd, libc::SOL_SOCKET, libc::SO_RCVBUF).to_string(),
            ));
            v.push((
                "congestion",
                text(fd, libc::IPPROTO_TCP, libc::TCP_CONGESTION),
            ));
            v.push((
                "user_timeout",
                int(fd, libc::IPPROTO_TCP, libc::TCP_USER_TIMEOUT).to_string(),
            ));
            v.push((
                "pacing",
                int(fd, libc::SOL_SOCKET, libc::SO_MAX_PACING_RATE).to_string(),
            ));
        }
        self.0.push((*s, v));
    }
}

fn get<'a>(v: &'a [(&'static str, String)], k: &str) -> &'a str {
    &v.iter().find(|(n, _)| *n == k).unwrap().1
}

#[test]
fn client_socket_options_reach_the_sockets() {
    let _turn = support::serial();
    let port = support::free_port();
    let _srv = support::iperf3_server(port);
    let cport = support::free_port();
    let mut cfg = ClientConfig::new("127.0.0.1");
    cfg.port = port;
    cfg.params = Params {
        duration_s: 1,
        len: 0,
        mss: 1000,
        nodelay: true,
        tos: 0x20,
        window: 256 * 1024,
        fq_rate_bps: 800_000_000,
        parallel: 2,
        ..Params::default()
    };
    cfg.congestion = Some("reno".into());
    cfg.snd_timeout = Some(Duration::from_millis(7000));
    cfg.cport = Some(cport);
    cfg.bind = Some("127.0.0.1".parse().unwrap());
    let mut obs = Sockets::default();
    let r = run_client_observed(&cfg, &mut obs).expect("test against stock iperf3 -s");
    assert!(r.report.forward.unwrap().bytes_received > 0);
    assert_eq!(obs.0.len(), 2);
    for (i, (info, v)) in obs.0.iter().enumerate() {
        assert_eq!(info.local.port(), cport + i as u16, "--cport counts up");
        assert!(get(v, "mss").parse::<u32>().unwrap() <= 1000, "{v:?}");
        assert_eq!(get(v, "nodelay"), "1");
        assert_eq!(get(v, "tos"), "32");
        assert!(get(v, "rcvbuf").parse::<u32>().unwrap() >= 256 * 1024);
        assert_eq!(get(v, "congestion"), "reno");
        assert_eq!(get(v, "user_timeout"), "7000");
        assert_eq!(get(v, "pacing"), "100000000", "--fq-rate in bytes/s");
    }
    assert_eq!(r.congestion_used.as_deref(), Some("reno"));
    let cpu = r.cpu.unwrap();
    assert!(
        cpu[0] > 0.0 && (cpu[0] - cpu[1] - cpu[2]).abs() < 1e-9,
        "{cpu:?}"
    );
}

#[test]
fn server_socket_options_reach_the_sockets() {
    let _turn = support::serial();
    let mut cfg = ServerConfig::new(0);
    cfg.listen.bind = Some("127.0.0.1".parse().unwrap());
    cfg.snd_timeout = Some(Duration::from_millis(9000));
    let mut server = Server::listen(cfg).unwrap();
    let port = server.local_addr().unwrap().port().to_string();
    let (tx, rx) = mpsc::channel();
    let th = std::thread::spawn(move || {
        let stop = AtomicBool::new(false);
        for udp in [false, true] {
            let mut obs = Sockets(Vec::new(), udp);
            let r = server
                .serve_one_observed(&stop, &mut obs)
                .unwrap()
                .unwrap()
                .expect("server test");
            tx.send((obs.0, r.congestion_used)).unwrap();
        }
    });
    let client = |args: &[&str]| {
        let out = Command::new("iperf3")
            .args(["-c", "127.0.0.1", "-p", &port, "-t", "1"])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    client(&[
        "-R",
        "-M",
        "1000",
        "-N",
        "-S",
        "0x20",
        "-C",
        "reno",
        "-w",
        "256K",
        "--fq-rate",
        "800M",
    ]);
    let (tcp, congestion) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let v = &tcp[0].1;
    assert!(get(v, "mss").parse::<u32>().unwrap() <= 1000, "{v:?}");
    assert_eq!(get(v, "nodelay"), "1");
    assert_eq!(get(v, "tos"), "32");
    assert!(get(v, "rcvbuf").parse::<u32>().unwrap() >= 256 * 1024);
    assert_eq!(get(v, "congestion"), "reno");
    assert_eq!(get(v, "user_timeout"), "9000");
    assert_eq!(get(v, "pacing"), "100000000");
    assert_eq!(congestion.as_deref(), Some("reno"));
    client(&["-u", "-R", "-S", "0x20", "--dont-fragment", "-b", "1M"]);
    let (udp, _) = rx.recv_timeout(Duration::from_secs(10)).unwrap();
    let v = &udp[0].1;
    assert_eq!(get(v, "tos"), "32");
    assert_eq!(get(v, "mtu_discover"), libc::IP_PMTUDISC_DO.to_string());
    th.join().unwrap();
}

#[test]
fn bursts_keep_the_average_rate() {
    let _turn = support::serial();
    let port = support::free_port();
    let _srv = support::iperf3_server(port);
    let mut cfg = ClientConfig::new("127.0.0.1");
    cfg.port = port;
    cfg.params = Params {
        protocol: Protocol::Udp,
        duration_s: 2,
        len: 1200,
        rate_bps: 20_000_000,
        burst: 20,
        pacing_timer_us: 2000,
        ..Params::default()
    };
    struct Bursts(u64);
    impl Observer for Bursts {
        fn interval(&mut self, iv: &HostInterval) {
            self.0 += iv.interval.streams.iter().map(|s| s.packets).sum::<u64>();
        }
    }
    cfg.interval = Duration::from_millis(500);
    let mut obs = Bursts(0);
    let r = run_client_observed(&cfg, &mut obs).unwrap();
    let f = r.report.forward.unwrap();
    // 20 Mbit/s of 1200-byte datagrams is 2083 per second; bursts of 20 do not change
    // the average. Loose bounds: this is a loaded shared machine.
    assert!(
        (10e6..26e6).contains(&f.bits_per_second_sent),
        "{} bit/s",
        f.bits_per_second_sent
    );
    assert!(f.packets_sent > 2000 && obs.0 > 2000, "{f:?}");
}

/// A server that sets up a `-R` test and then never sends.
fn silent_server(listener: TcpListener) {
    let (mut ctrl, _) = listener.accept().unwrap();
    let mut cookie = [0u8; 37];
    ctrl.read_exact(&mut cookie).unwrap();
    ctrl.write_all(&[9]).unwrap(); // PARAM_EXCHANGE
    let mut len = [0u8; 4];
    ctrl.read_exact(&mut len).unwrap();
    let mut json = vec![0u8; u32::from_be_bytes(len) as usize];
    ctrl.read_exact(&mut json).unwrap();
    ctrl.write_all(&[10]).unwrap(); // CREATE_STREAMS
    let (mut data, _) = listener.accept().unwrap();
    data.read_exact(&mut cookie).unwrap();
    ctrl.write_all(&[1, 2]).unwrap(); // TEST_START, TEST_RUNNING
    std::thread::sleep(Duration::from_secs(5));
    drop(data);
}

#[test]
fn rcv_timeout_ends_a_silent_reverse_test() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let th = std::thread::spawn(move || silent_server(listener));
    let mut cfg = ClientConfig::new("127.0.0.1");
    cfg.port = port;
    cfg.params = Params {
        duration_s: 30,
        reverse: true,
        ..Params::default()
    };
    cfg.rcv_timeout = Some(Duration::from_millis(500));
    let t = Instant::now();
    let e = linklab_perf_host::iperf3::run_client(&cfg).unwrap_err();
    assert!(matches!(e, Error::Iperf { code: 144, .. }), "{e:?}: {e}");
    assert_eq!(e.to_string(), "idle timeout for receiving data");
    assert!(t.elapsed() < Duration::from_secs(4), "{:?}", t.elapsed());
    th.join().unwrap();
}
