//! The soak's hostile peers, a phase of a minute each, in turn, for as long as the soak runs:
//!
//! 1. `syn flood`: spoofed SYNs at 40/s to ports 80, 7, 5201 and 5001 from hosts that do not
//!    exist (the hostile campaign's flood, `Device::flood`, with iperf 2's port);
//! 2. `holders`: 20 idle HTTP holders that connect again when reset (`linklab_testkit::holders`);
//! 3. `malformed`: 100 kB POSTs, request heads of 16 kB, bytes that are no protocol to 80, 7
//!    and 5201, iperf3 control connections with a cookie and then a parameter length of 4 GB,
//!    state bytes out of order, or nothing;
//! 4. `bad udp`: spoofed UDP echo requests from hosts that never answer ARP, and frames with
//!    wrong UDP, TCP and IPv4 checksums and lengths (`linklab_testkit::spoof`);
//! 5. `all`: the four at once.
//!
//! Every hostile peer is a thread in the device's namespace or frames written on its TAP;
//! none is held to account (the real clients are).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use linklab_testkit::device::{Device, DEVICE};
use linklab_testkit::enter_netns;
use linklab_testkit::holders::{Holders, Kind};
use linklab_testkit::spoof::{ipv4_frame, spoofed_syn, spoofed_udp, Target};

/// How long each phase lasts.
pub const PHASE: Duration = Duration::from_secs(60);

/// The phases, in turn.
pub const PHASES: [&str; 5] = ["syn flood", "holders", "malformed", "bad udp", "all"];

/// Runs the phases against `dev` in turn until `stop`; `phase` counts the phases begun (the
/// one running is `PHASES[(phase - 1) % 5]`).
pub fn run(dev: &Device, stop: &AtomicBool, phase: &AtomicU64) {
    let mut n = 0;
    while !stop.load(Ordering::Relaxed) {
        phase.store(n + 1, Ordering::Relaxed);
        run_phase(dev, PHASES[n as usize % PHASES.len()], stop);
        n += 1;
    }
}

/// The name of the phase running when `phase` phases have begun.
pub fn name(phase: u64) -> &'static str {
    match phase {
        0 => "warm-up",
        n => PHASES[(n - 1) as usize % PHASES.len()],
    }
}

/// Runs one phase for [`PHASE`] (or until `stop`).
fn run_phase(dev: &Device, phase: &str, stop: &AtomicBool) {
    let ends = Instant::now() + PHASE;
    let mine = Arc::new(AtomicBool::new(false));
    let all = phase == "all";
    let flood = (phase == "syn flood" || all).then(|| {
        let target = dev.target();
        dev.flood(40, mine.clone(), move |n: u32| {
            let port = [80, 7, 5201, 5001][(n % 4) as usize];
            let ghost = [198, 18, 1, (n % 250) as u8 + 1];
            spoofed_syn(target, ghost, 30000 + (n % 30000) as u16, port)
        })
    });
    let holders = (phase == "holders" || all).then(|| Holders::start(dev, 20, Kind::Reconnect));
    let malformed = (phase == "malformed" || all).then(|| malformed_peers(dev, mine.clone()));
    let mut round = 0u32;
    while Instant::now() < ends && !stop.load(Ordering::Relaxed) {
        if phase == "bad udp" || all {
            dev.inject(bad_frames(dev.target(), round));
            round += 1;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    mine.store(true, Ordering::Relaxed);
    if let Some(f) = flood {
        let _ = f.join();
    }
    drop(holders);
    if let Some(m) = malformed {
        let _ = m.join();
    }
}

/// One batch of bad frames (every 250 ms: ~120 frames a second): spoofed UDP echo requests
/// from hosts that never answer ARP, and frames whose checksums or lengths are wrong.
fn bad_frames(to: Target, round: u32) -> Vec<Vec<u8>> {
    let ghost = |i: u32| [198, 18, 2, ((round * 7 + i) % 250) as u8 + 1];
    let mut frames = Vec::new();
    for i in 0..10 {
        frames.push(spoofed_udp(
            to,
            ghost(i),
            6000 + i as u16,
            7,
            b"spoofed echo",
        ));
    }
    for i in 0..5u32 {
        // A wrong UDP checksum, to the UDP echo and the iperf3 port.
        let mut f = spoofed_udp(to, ghost(i), 6100, [7, 5201][i as usize % 2], b"bad sum");
        f[40] ^= 0x5a;
        frames.push(f);
        // A wrong TCP checksum on a SYN.
        let mut f = spoofed_syn(to, ghost(i), 6200 + i as u16, 80);
        f[50] ^= 0x33;
        frames.push(f);
        // A wrong IPv4 header checksum.
        let mut f = spoofed_udp(to, ghost(i), 6300, 7, b"bad ip sum");
        f[24] ^= 0x01;
        frames.push(f);
        // A UDP length past the datagram's end (checksum 0: none, so only the length is
        // wrong).
        let mut udp = vec![0u8; 8];
        udp[0..2].copy_from_slice(&6400u16.to_be_bytes());
        udp[2..4].copy_from_slice(&7u16.to_be_bytes());
        udp[4..6].copy_from_slice(&900u16.to_be_bytes());
        udp.extend_from_slice(b"short");
        frames.push(ipv4_frame(to, ghost(i), 17, &udp));
        // An IPv4 total length shorter than its header.
        let mut f = spoofed_udp(to, ghost(i), 6500, 7, b"x");
        f[16..18].copy_from_slice(&12u16.to_be_bytes());
        frames.push(f);
    }
    frames
}

/// Threads in the device's namespace sending malformed requests in turn until `stop`.
fn malformed_peers(dev: &Device, stop: Arc<AtomicBool>) -> JoinHandle<()> {
    let path = format!("/run/netns/{}", dev.ns.name);
    std::thread::spawn(move || {
        enter_netns(&path);
        let mut n = 0usize;
        while !stop.load(Ordering::Relaxed) {
            let (port, bytes) = malformed(n);
            send_and_leave(port, &bytes);
            n += 1;
            std::thread::sleep(Duration::from_millis(200));
        }
    })
}

/// The `n`th malformed request: its port and bytes.
fn malformed(n: usize) -> (u16, Vec<u8>) {
    let noise =
        |len: usize| -> Vec<u8> { (0..len).map(|i| ((i * 131 + n * 17) % 251) as u8).collect() };
    let cookie = format!("{:0>36}\0", format!("soak{n}")).into_bytes();
    match n % 8 {
        0 => {
            let mut post =
                b"POST /10kB.txt HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n".to_vec();
            post.extend(std::iter::repeat_n(b'x', 100_000));
            (80, post)
        }
        1 => {
            let mut head = b"GET /10kB.txt HTTP/1.1\r\nX-Long: ".to_vec();
            head.extend(std::iter::repeat_n(b'a', 16_384));
            head.extend_from_slice(b"\r\n\r\n");
            (80, head)
        }
        2 => (80, noise(3000)),
        3 => (7, noise(5000)),
        4 => (5201, noise(600)),
        5 => {
            // A cookie, then a parameter length of 4 GB and a little JSON.
            let mut c = cookie;
            c.extend_from_slice(&0xffff_fff0u32.to_be_bytes());
            c.extend_from_slice(b"{\"tcp\":true");
            (5201, c)
        }
        6 => {
            // A cookie, then state bytes a client never sends, in no order.
            let mut c = cookie;
            c.extend_from_slice(&[14, 2, 0xff, 16, 1, 13, 0, 9]);
            (5201, c)
        }
        _ => (
            80,
            b"GET /\0\r\n\r\nHTTP/1.1\r\n\r\nGET /10kB.txt HTTP/9.9\r\n\r\n".to_vec(),
        ),
    }
}

/// Connects to the device's `port`, writes `bytes` (as much as it takes in 2 s), reads for
/// a moment and leaves (closes, or the device reset it). Refusals are not retried.
fn send_and_leave(port: u16, bytes: &[u8]) {
    let device: SocketAddr = format!("{DEVICE}:{port}").parse().unwrap();
    let Ok(mut s) = TcpStream::connect_timeout(&device, Duration::from_secs(2)) else {
        return;
    };
    let _ = s.set_write_timeout(Some(Duration::from_secs(2)));
    let _ = s.set_read_timeout(Some(Duration::from_millis(300)));
    let _ = s.write_all(bytes);
    let mut sink = [0u8; 4096];
    let _ = s.read(&mut sink);
}
