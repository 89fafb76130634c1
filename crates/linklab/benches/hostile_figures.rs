//! The figures of docs/serve.md's hostile-peer tables, on `serve`, the riscv32 main-loop
//! firmware and the riscv32 embassy image (needs root and QEMU, as the hostile tests):
//!
//! ```sh
//! cargo bench -p linklab --bench hostile_figures             # all; `-- holders` or `-- udp` for one
//! ```
//!
//! `LINKLAB_BIN=/path/to/linklab` measures another build instead (e.g. an older one, for a
//! before/after table; its `linklab emu` builds that tree's firmware image);
//! `HOLDERS_TARGETS=serve,riscv32-virt,riscv32-virt-embassy` picks the devices (a board, or
//! a board with `-embassy` for its embassy image) and `HOLDERS_ROUNDS=3` the rounds per
//! figure.
//!
//! **Idle holders**: how long a new client waits for `GET /10kB.txt` while N idle holders sit
//! on the device's HTTP sockets (2 on `serve` and on the firmware). A holder connects to port
//! 80 (again 1 s after a refusal, like the client), sends a request head cut short (every
//! other holder) or nothing, and holds the connection until the device closes it. Two kinds:
//! holders that then stop ("once"), and holders that connect again at once ("reconnect", a
//! pool of clients that keep their connections up). The holders start 2 s before the client.
//! The client is stock curl retrying every second while refused (`--retry-connrefused
//! --retry-delay 1`), for at most 60 s.
//!
//! **Spoofed UDP burst**: 40 UDP echo requests from hosts that never answer ARP, then at once
//! one real request, sent again every 250 ms until answered (at most 5 s): whether the first
//! request was answered, and when the first answer came.
//!
//! **Real clients reset** (`-- resets`; `RESETS_CLIENTS=200` clients per pressure): real
//! clients in turn — `GET /10kB.txt` on port 80, a round trip on TCP echo (7), stock `iperf3
//! -n 10K` (5201) — under two pressures: spoofed SYNs at 40/s to the three ports from hosts
//! that do not exist (the hostile campaign's flood), and 20 idle HTTP holders that reconnect
//! at once (4 clients at a time there, as they wait for an eviction; under the flood one
//! client every 100 ms, so they meet it over ~30 s). A client refused or
//! unanswered tries again after 1 s, as curl `--retry-connrefused` and a kernel's SYN
//! retransmission do, for up to 60 s. Counted: clients served, clients **reset after their
//! connection was established** (the device's defences hurting a real client), clients not
//! served in 60 s, and the device's `reclaimed_answered` / `listen_drops` where it has them.
//! `RESETS_PRESSURE=flood` or `=holders` measures one pressure.

// The integration tests' helpers (a device on a TAP, the hostile campaign's peers).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linklab_testkit::device::{Device, DEVICE, HOST};
use linklab_testkit::holders::{Holders, Kind};
use linklab_testkit::hostile::wait_quiet;
use linklab_testkit::spoof::spoofed_udp;

/// The holder counts measured.
const HOLDERS: [usize; 4] = [0, 2, 6, 20];
/// The longest a client is given.
const CAP: Duration = Duration::from_secs(60);

/// Seconds until a retrying curl got /10kB.txt, or None if it did not within [`CAP`].
fn time_to_serve(dev: &Device) -> Option<f64> {
    let cap = CAP.as_secs().to_string();
    let started = Instant::now();
    let out = dev.curl(
        &[
            "--retry",
            "100",
            "--retry-connrefused",
            "--retry-delay",
            "1",
            "--retry-max-time",
            &cap,
            "-m",
            &cap,
        ],
        "/10kB.txt",
    );
    let waited = started.elapsed();
    let served = String::from_utf8_lossy(&out.stdout) == "200" && waited < CAP;
    if !served {
        println!(
            "  not served after {:.2} s: {} {}",
            waited.as_secs_f64(),
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    served.then_some(waited.as_secs_f64())
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// The devices to measure (started one at a time from `LINKLAB_BIN` or this build), and the
/// rounds per figure.
fn targets() -> (impl Iterator<Item = (String, Device)>, usize) {
    let bin =
        std::env::var_os("LINKLAB_BIN").map_or_else(linklab_testkit::linklab_bin, PathBuf::from);
    let targets = std::env::var("HOLDERS_TARGETS")
        .unwrap_or("serve,riscv32-virt,riscv32-virt-embassy".into());
    let rounds: usize = std::env::var("HOLDERS_ROUNDS").map_or(3, |r| r.parse().unwrap());
    println!("linklab: {}", bin.display());
    let devices = targets
        .split(',')
        .map(str::to_string)
        .collect::<Vec<_>>()
        .into_iter()
        .map(move |target| {
            let dev = match target.as_str() {
                "serve" => Device::serve_with(&bin, "fig"),
                t => match t.strip_suffix("-embassy") {
                    Some(board) => Device::emu_with(&bin, board, &["--image", "embassy"]),
                    None => Device::emu_with(&bin, t, &[]),
                },
            };
            (target, dev)
        });
    (devices, rounds)
}

fn main() {
    let only: Vec<String> = std::env::args()
        .skip(1)
        .filter(|a| !a.starts_with('-'))
        .collect();
    let wanted = |name: &str| only.is_empty() || only.iter().any(|o| o == name);
    if wanted("holders") {
        time_to_serve_a_new_client_with_idle_holders();
    }
    if wanted("udp") {
        udp_echo_right_after_a_spoofed_burst();
    }
    if wanted("resets") {
        real_clients_reset_under_pressure();
    }
}

/// How one real client fared (see the module docs).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Fate {
    Served,
    /// Reset after its connection was established.
    Reset,
    NotServed,
}

/// One real client of `service` (0: HTTP, 1: TCP echo, 2: iperf3), retrying a refusal or an
/// unanswered SYN every second for up to 60 s.
fn real_client(dev: &Device, service: usize) -> Fate {
    let deadline = Instant::now() + CAP;
    if service == 2 {
        while Instant::now() < deadline {
            let out = dev
                .ns
                .command(&[
                    "iperf3",
                    "-c",
                    DEVICE,
                    "-n",
                    "10K",
                    "--connect-timeout",
                    "3000",
                ])
                .output()
                .expect("iperf3");
            let text = String::from_utf8_lossy(&out.stdout).to_string()
                + &String::from_utf8_lossy(&out.stderr);
            if out.status.success() {
                return Fate::Served;
            }
            if text.contains("reset") || text.contains("Broken pipe") {
                println!("  iperf3 reset: {}", text.trim());
                return Fate::Reset;
            }
            // Busy (a test of the last client still closing), refused or unanswered.
            std::thread::sleep(Duration::from_secs(1));
        }
        return Fate::NotServed;
    }
    linklab_testkit::in_netns(&dev.ns, move || {
        let port = if service == 0 { 80 } else { 7 };
        let device: SocketAddr = format!("{DEVICE}:{port}").parse().unwrap();
        while Instant::now() < deadline {
            let Ok(mut s) = TcpStream::connect_timeout(&device, Duration::from_secs(3)) else {
                std::thread::sleep(Duration::from_secs(1));
                continue;
            };
            s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
            let mut exchange = || -> std::io::Result<bool> {
                if service == 0 {
                    s.write_all(b"GET /10kB.txt HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")?;
                    let mut body = Vec::new();
                    s.read_to_end(&mut body)?;
                    Ok(body.len() > 10_000)
                } else {
                    s.write_all(b"ping")?;
                    let mut b = [0u8; 4];
                    s.read_exact(&mut b)?;
                    Ok(&b == b"ping")
                }
            };
            return match exchange() {
                Ok(true) => Fate::Served,
                Err(e)
                    if matches!(e.kind(), ErrorKind::ConnectionReset | ErrorKind::BrokenPipe) =>
                {
                    Fate::Reset
                }
                _ => Fate::NotServed,
            };
        }
        Fate::NotServed
    })
}

fn real_clients_reset_under_pressure() {
    let clients: usize = std::env::var("RESETS_CLIENTS").map_or(200, |r| r.parse().unwrap());
    let (devices, _) = targets();
    for (target, dev) in devices {
        let only = std::env::var("RESETS_PRESSURE").unwrap_or_default();
        for pressure in ["syn flood 40/s", "20 idle holders"] {
            if !pressure.contains(only.as_str()) {
                continue;
            }
            let stats = |d: &Device| {
                let s = d.stats();
                let sum = |name: &str| -> u64 {
                    ["http", "iperf"]
                        .iter()
                        .map(|a| s.try_counter(a, name).unwrap_or(0))
                        .sum::<u64>()
                        + s.try_counter("echo", &format!("tcp_{name}")).unwrap_or(0)
                };
                (
                    sum("reclaimed_answered"),
                    sum("listen_drops"),
                    sum("evicted"),
                )
            };
            // Read before the pressure starts: 20 holders that reconnect at once can keep
            // /stats's own connection out for longer than its retries (3 runs of 17).
            let before = stats(&dev);
            let stop = Arc::new(AtomicBool::new(false));
            let (flood, holders, services, parallel) = if pressure.starts_with("syn") {
                let t = dev.target();
                let flood = dev.flood(40, stop.clone(), move |n: u32| {
                    let port = [80, 7, 5201][(n % 3) as usize];
                    let ghost = [198, 18, 1, (n % 250) as u8 + 1];
                    linklab_testkit::spoof::spoofed_syn(t, ghost, 30000 + (n % 30000) as u16, port)
                });
                (Some(flood), None, 3, 1)
            } else {
                (None, Some(Holders::start(&dev, 20, Kind::Reconnect)), 1, 4)
            };
            std::thread::sleep(Duration::from_secs(2));
            let started = Instant::now();
            let fates: Vec<Fate> = std::thread::scope(|scope| {
                let dev = &dev;
                let workers: Vec<_> = (0..parallel)
                    .map(|w| {
                        scope.spawn(move || {
                            (w..clients)
                                .step_by(parallel)
                                .map(|i| {
                                    // Under the flood, one client every 100 ms: the clients
                                    // meet the spoofed SYNs over the whole run.
                                    if services > 1 {
                                        std::thread::sleep(Duration::from_millis(100));
                                    }
                                    real_client(dev, i % services)
                                })
                                .collect::<Vec<_>>()
                        })
                    })
                    .collect();
                workers
                    .into_iter()
                    .flat_map(|w| w.join().unwrap())
                    .collect()
            });
            let took = started.elapsed().as_secs_f64();
            stop.store(true, Ordering::Relaxed);
            if let Some(f) = flood {
                let _ = f.join();
            }
            drop(holders);
            let after = stats(&dev);
            let count = |f: Fate| fates.iter().filter(|x| **x == f).count();
            println!(
                "{target:>12} | {pressure} | {clients} real clients: {} served, {} reset after connecting, {} not served in {} s | {took:.0} s | device: reclaimed_answered +{}, listen_drops +{}, evicted +{}",
                count(Fate::Served),
                count(Fate::Reset),
                count(Fate::NotServed),
                CAP.as_secs(),
                after.0.saturating_sub(before.0),
                after.1.saturating_sub(before.1),
                after.2.saturating_sub(before.2),
            );
            wait_quiet(&dev, Duration::from_secs(30));
        }
    }
}

fn udp_echo_right_after_a_spoofed_burst() {
    let (devices, rounds) = targets();
    for (target, dev) in devices {
        let mut first_answered = 0;
        let mut answered = Vec::new();
        for round in 0..rounds {
            let frames = (0..40u8)
                .map(|i| {
                    spoofed_udp(
                        dev.target(),
                        [198, 18, 0, 100 + i],
                        5000 + round as u16,
                        7,
                        b"x",
                    )
                })
                .collect();
            dev.inject(frames);
            let (first, at) = linklab_testkit::in_netns(&dev.ns, || {
                let sock = UdpSocket::bind(format!("{HOST}:0")).unwrap();
                sock.set_read_timeout(Some(Duration::from_millis(250)))
                    .unwrap();
                let started = Instant::now();
                let mut sent = 0;
                while started.elapsed() < Duration::from_secs(5) {
                    sock.send_to(&[sent], format!("{DEVICE}:7")).unwrap();
                    sent += 1;
                    let mut b = [0u8; 4];
                    if let Ok((1, _)) = sock.recv_from(&mut b) {
                        return (b[0] == 0, Some(started.elapsed().as_secs_f64()));
                    }
                }
                (false, None)
            });
            first_answered += usize::from(first);
            answered.extend(at);
            std::thread::sleep(Duration::from_secs(2));
        }
        let figure = if answered.is_empty() {
            "never answered within 5 s".to_string()
        } else {
            format!(
                "first answer after median {:.1} ms, max {:.1} ms",
                median(answered.clone()) * 1e3,
                answered.iter().cloned().fold(0.0, f64::max) * 1e3
            )
        };
        let ms: Vec<f64> = answered.iter().map(|s| s * 1e3).collect();
        println!(
            "{target:>12} | UDP echo after 40 spoofed | first request answered in {first_answered} of {rounds} | {figure} | rounds (ms) {ms:.1?}"
        );
    }
}

fn time_to_serve_a_new_client_with_idle_holders() {
    let (devices, rounds) = targets();
    for (target, dev) in devices {
        for kind in [Kind::Once, Kind::Reconnect] {
            for n in HOLDERS {
                if n == 0 && kind == Kind::Reconnect {
                    continue;
                }
                let mut served = Vec::new();
                let mut missed = 0;
                for _ in 0..rounds {
                    let holders = Holders::start(&dev, n, kind);
                    std::thread::sleep(Duration::from_secs(2));
                    match time_to_serve(&dev) {
                        Some(s) => served.push(s),
                        None => missed += 1,
                    }
                    drop(holders);
                    wait_quiet(&dev, Duration::from_secs(30));
                }
                let figure = if served.is_empty() {
                    format!("not served within {} s", CAP.as_secs())
                } else {
                    format!(
                        "median {:.2} s, max {:.2} s",
                        median(served.clone()),
                        served.iter().cloned().fold(0.0, f64::max)
                    )
                };
                println!(
                    "{target:>12} | {kind:?} | {n:>2} holders | {figure} | {missed} of {rounds} not served within {} s | rounds {served:.2?}",
                    CAP.as_secs()
                );
            }
        }
    }
}
