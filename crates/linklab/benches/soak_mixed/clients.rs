//! The soak's real clients: stock curl (bench files, CRC-checked), stock iperf3 (TCP each way,
//! UDP), stock iperf 2 where the device speaks it, ping, TCP and UDP echo — each one run
//! as a user runs it, its outcome recorded. A client the device refuses or does not answer
//! (every socket busy, its SYN dropped while a handshake completes) tries again after 1 s,
//! for up to 60 s, as curl `--retry-connrefused` and a kernel's SYN retransmission do; a
//! stock iperf3 told the server is busy does the same. Anything else is a failure: a reset
//! after connecting, a timeout, a wrong byte, an error from the tool. Datagrams (ping, UDP
//! echo, iperf3 UDP) have no retransmission: one lost is recorded (`lost`), as a stock
//! server's would be when its host is overloaded, and the device must have counted it (the
//! soak's end checks the counters); a request not answered in three tries fails.

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use linklab_testkit::device::{Device, DEVICE, HOST};
use linklab_testkit::in_netns;
use linklab_testkit::iperf3;

/// How long a client keeps trying while refused or told the server is busy.
const PATIENCE: Duration = Duration::from_secs(60);

/// How one real client fared.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Served at its first try.
    Ok,
    /// Served after refusals or busy answers (what a stock server answers when busy).
    Busy,
    /// Not served as a stock server would have served it.
    Fail,
}

impl Verdict {
    /// The log's word for it.
    pub fn word(self) -> &'static str {
        match self {
            Verdict::Ok => "ok",
            Verdict::Busy => "busy",
            Verdict::Fail => "fail",
        }
    }
}

/// One real client's record.
pub struct Outcome {
    /// Which client (e.g. `curl /1MB.txt`).
    pub client: &'static str,
    /// How it fared.
    pub verdict: Verdict,
    /// Tries it took (1: served at once).
    pub tries: u32,
    /// Seconds from its first try to its end.
    pub secs: f64,
    /// Datagrams or pings that got no answer (sent again, or lost to iperf3 UDP).
    pub lost: u64,
    /// What it saw (the error, the figure).
    pub detail: String,
}

impl Outcome {
    /// The log line (JSON).
    pub fn json(&self, home: &str, at: f64, phase: &str) -> Value {
        json!({
            "t": (at * 10.0).round() / 10.0,
            "home": home,
            "phase": phase,
            "client": self.client,
            "verdict": self.verdict.word(),
            "tries": self.tries,
            "secs": (self.secs * 1000.0).round() / 1000.0,
            "lost": self.lost,
            "detail": self.detail,
        })
    }
}

/// What one try of a client gave.
enum Try {
    Served(String),
    /// Served, with this many datagrams unanswered on the way.
    Lossy(u64, String),
    /// Refused, unanswered or told busy: try again in a second.
    Refused(String),
    Failed(String),
}

/// Runs `one` until it is served, fails, or [`PATIENCE`] passed since its first try.
fn patiently(client: &'static str, mut one: impl FnMut() -> Try) -> Outcome {
    let started = Instant::now();
    let mut tries = 0;
    let mut lost = 0;
    let (verdict, detail) = loop {
        tries += 1;
        let (served, unanswered) = match one() {
            Try::Served(d) => (d, 0),
            Try::Lossy(n, d) => (d, n),
            Try::Failed(d) => break (Verdict::Fail, d),
            Try::Refused(d) if started.elapsed() >= PATIENCE => {
                break (Verdict::Fail, format!("not served in 60 s: {d}"))
            }
            Try::Refused(_) => {
                std::thread::sleep(Duration::from_secs(1));
                continue;
            }
        };
        lost = unanswered;
        break (
            if tries == 1 {
                Verdict::Ok
            } else {
                Verdict::Busy
            },
            served,
        );
    };
    Outcome {
        client,
        verdict,
        tries,
        secs: started.elapsed().as_secs_f64(),
        lost,
        detail,
    }
}

/// The clients, in the order the soak runs them round after round.
pub const CLIENTS: [&str; 9] = [
    "curl /10kB.txt",
    "iperf3 -n 1M",
    "ping",
    "curl /1MB.txt",
    "iperf3 -R -n 1M",
    "tcp echo",
    "iperf3 -u",
    "udp echo",
    "iperf -n 1M",
];

/// Runs client `name` (one of [`CLIENTS`]) against `dev`; None when the device does not
/// serve it (iperf 2 on a device without it).
pub fn run(dev: &Device, name: &'static str, iperf2: bool) -> Option<Outcome> {
    Some(match name {
        "curl /10kB.txt" => patiently(name, || curl(dev, "/10kB.txt")),
        "curl /1MB.txt" => patiently(name, || curl(dev, "/1MB.txt")),
        "iperf3 -n 1M" => patiently(name, || iperf3(dev, &["-n", "1M"])),
        "iperf3 -R -n 1M" => patiently(name, || iperf3(dev, &["-R", "-n", "1M"])),
        "iperf3 -u" => patiently(name, || iperf3(dev, &["-u", "-b", "5M", "-t", "2"])),
        "iperf -n 1M" if iperf2 => patiently(name, || iperf2_client(dev)),
        "ping" => patiently(name, || ping(dev)),
        "tcp echo" => patiently(name, || tcp_echo(dev)),
        "udp echo" => patiently(name, || udp_echo(dev)),
        _ => return None,
    })
}

/// Stock curl downloads `path` into memory (no retries of its own); the body's length and
/// CRC32 must be the bench file's.
fn curl(dev: &Device, path: &str) -> Try {
    let file = linklab_perf::payload::find(path).expect("a bench file");
    let url = format!("http://{DEVICE}{path}");
    let out = dev
        .ns
        .command(&["curl", "-sS", "-m", "60", "--connect-timeout", "30", &url])
        .output()
        .expect("curl");
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    match out.status.code() {
        Some(0) => {}
        // Refused (every socket busy): a stock client tries again.
        Some(7) => return Try::Refused(err),
        _ => return Try::Failed(format!("curl {}: {err}", out.status)),
    }
    let body = out.stdout;
    let crc = crc32fast::hash(&body);
    let expected = linklab_perf::http::expected_crc32(file);
    if body.len() as u64 != file.len || crc != expected {
        return Try::Failed(format!(
            "{} bytes, CRC32 {crc:08x} (expected {} bytes, {expected:08x})",
            body.len(),
            file.len
        ));
    }
    Try::Served(format!("{} bytes, CRC32 {crc:08x}", body.len()))
}

/// Stock `iperf3 -c DEVICE -J EXTRA`: served when it reports no error and its sender sent
/// every byte (TCP; the receiver's count stops at the test's end, with bytes still in
/// flight, stock to stock too) or its datagrams (UDP, the lost ones recorded).
fn iperf3(dev: &Device, extra: &[&str]) -> Try {
    let mut argv = vec!["iperf3", "-c", DEVICE, "-J", "--connect-timeout", "5000"];
    argv.extend_from_slice(extra);
    let out = dev.ns.command(&argv).output().expect("iperf3");
    let Ok(report) = serde_json::from_slice::<iperf3::Report>(&out.stdout) else {
        return Try::Failed(format!(
            "no report: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    };
    if let Some(e) = report.error.as_deref() {
        // Told busy, refused, or its SYNs unanswered (dropped while every socket is busy):
        // a stock client's user tries again.
        let connect = e.starts_with("unable to connect to server");
        if e.contains("busy") || (connect && (e.contains("refused") || e.contains("timed out"))) {
            return Try::Refused(e.to_string());
        }
        return Try::Failed(e.to_string());
    }
    let end = &report.end;
    let bytes = |sum: &Option<iperf3::Sum>| sum.as_ref().map_or(0, |s| s.bytes);
    if extra.contains(&"-u") {
        let packets = end.sum.as_ref().and_then(|s| s.packets).unwrap_or(0);
        let lost = end.sum.as_ref().and_then(|s| s.lost_packets);
        let Some(lost) = lost.filter(|_| packets > 0) else {
            return Try::Failed(format!("UDP: no datagrams reported: {end:?}"));
        };
        return Try::Lossy(lost, format!("UDP: {lost} of {packets} datagrams lost"));
    }
    let (sent, received) = (bytes(&end.sum_sent), bytes(&end.sum_received));
    if sent < 1_048_576 || received == 0 {
        return Try::Failed(format!("TCP: {sent} bytes sent, {received} received"));
    }
    Try::Served(format!(
        "TCP: {sent} bytes sent, {received} counted by the receiver, {:.1} Mbit/s",
        end.sum_received.as_ref().map_or(0.0, |s| s.bits_per_second) / 1e6
    ))
}

/// Stock `iperf -c DEVICE -n 1M` (iperf 2.1.8): served when it reports the transfer.
fn iperf2_client(dev: &Device) -> Try {
    let out = dev
        .ns
        .command(&[
            "timeout", "60", "iperf", "-c", DEVICE, "-n", "1M", "-y", "C",
        ])
        .output()
        .expect("iperf");
    let text = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let err = String::from_utf8_lossy(&out.stderr).trim().to_string();
    if err.contains("refused") {
        return Try::Refused(err);
    }
    // CSV: ..., interval, bytes, bits per second.
    let bytes: u64 = text
        .lines()
        .last()
        .and_then(|l| l.split(',').nth(7))
        .and_then(|b| b.parse().ok())
        .unwrap_or(0);
    if !out.status.success() || bytes < 1_048_576 {
        return Try::Failed(format!("iperf {}: {text} {err}", out.status));
    }
    Try::Served(format!("{bytes} bytes"))
}

/// Stock `ping -c 5`: served when any request was answered (the rest recorded as lost).
fn ping(dev: &Device) -> Try {
    let out = dev
        .ns
        .command(&["ping", "-c", "5", "-i", "0.2", "-W", "2", "-q", DEVICE])
        .output()
        .expect("ping");
    let text = String::from_utf8_lossy(&out.stdout);
    let summary = text
        .lines()
        .find(|l| l.contains("packets transmitted"))
        .unwrap_or("no summary")
        .to_string();
    // "5 packets transmitted, 5 received, 0% packet loss, time 801ms"
    let count = |word: &str| -> Option<u64> {
        let at = summary.find(word)?;
        summary[..at].split_whitespace().last()?.parse().ok()
    };
    match (count(" packets transmitted"), count(" received")) {
        (Some(sent), Some(got)) if got > 0 => Try::Lossy(sent - got.min(sent), summary),
        _ => Try::Failed(summary),
    }
}

/// One TCP echo connection: 2000 bytes out, the same 2000 back.
fn tcp_echo(dev: &Device) -> Try {
    in_netns(&dev.ns, || {
        let device: SocketAddr = format!("{DEVICE}:7").parse().unwrap();
        let mut s = match TcpStream::connect_timeout(&device, Duration::from_secs(30)) {
            Ok(s) => s,
            Err(e) if e.kind() == ErrorKind::ConnectionRefused => {
                return Try::Refused(e.to_string())
            }
            Err(e) => return Try::Failed(format!("connect: {e}")),
        };
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let sent: Vec<u8> = (0..2000u32).map(|i| (i * 7 + 3) as u8).collect();
        let mut back = vec![0u8; sent.len()];
        let r = s.write_all(&sent).and_then(|_| s.read_exact(&mut back));
        match r {
            Ok(()) if back == sent => Try::Served("2000 bytes back".into()),
            Ok(()) => Try::Failed("bytes came back altered".into()),
            Err(e) => Try::Failed(format!("{e}")),
        }
    })
}

/// Three UDP echo requests, each sent again (up to 3 times, 1 s apart) until answered, as a
/// UDP client does: served when each was answered by itself, the requests sent again
/// recorded as lost.
fn udp_echo(dev: &Device) -> Try {
    in_netns(&dev.ns, || {
        let sock = UdpSocket::bind(format!("{HOST}:0")).unwrap();
        sock.set_read_timeout(Some(Duration::from_secs(1))).unwrap();
        let mut resent = 0;
        for i in 0..3u8 {
            let request = [b'u', b'd', b'p', i, 0xa5, 0x5a];
            let mut answered = false;
            for _ in 0..3 {
                sock.send_to(&request, format!("{DEVICE}:7")).unwrap();
                let mut b = [0u8; 64];
                match sock.recv_from(&mut b) {
                    Ok((n, _)) if b[..n] == request => {
                        answered = true;
                        break;
                    }
                    Ok((n, _)) => return Try::Failed(format!("answered {:?}", &b[..n])),
                    Err(_) => resent += 1,
                }
            }
            if !answered {
                return Try::Failed(format!("request {i} not answered in 3 tries"));
            }
        }
        Try::Lossy(resent, format!("3 requests answered, {resent} sent again"))
    })
}
