//! The figures of the linklab-serial README, on the simulated line of tests/common (virtual
//! time: deterministic, the same on every machine):
//!
//! 1. goodput efficiency per payload size on a clean 115 200 baud line, one way;
//! 2. recovery after a burst (garbage, or the line cut for a while) in a 1500-byte stream;
//! 3. round-trip histogram of the self-test per size at 115 200 baud.
//!
//! `cargo run --release -p linklab-serial --example serial_figures`

#[path = "../tests/common/mod.rs"]
mod common;

use common::Sim;
use linklab_serial::impair::Impairment;
use linklab_serial::selftest::{Event, PhaseKind, Plan, Tester};

const BAUD115200: u64 = 11_520;
const MBAUD3: u64 = 300_000;

/// Streams `n` frames of `size` bytes A → B; returns (payload bytes, A's line bytes, virtual
/// µs from first send to last delivery, delivery times).
fn stream(sim: &mut Sim, size: usize, n: u32, dt: u64) -> (u64, u64, u64, Vec<u64>) {
    // Handshake first, so it is not in the figure.
    while sim.a.state() != linklab_serial::State::Established {
        sim.advance(dt, 100_000);
    }
    let (start, bytes0) = (sim.now, sim.a.counters().tx_bytes);
    let (mut sent, mut got, mut payload) = (0, 0, 0u64);
    let mut times = Vec::new();
    while got < n {
        while sent < n && sim.a.can_send() {
            sim.a.send(size, |b| b.fill(0x5A)).unwrap();
            sent += 1;
        }
        while let Some(f) = sim.b.receive() {
            payload += f.payload().len() as u64;
            got += 1;
            times.push(sim.now);
        }
        sim.advance(dt, 100_000);
    }
    (
        payload,
        sim.a.counters().tx_bytes - bytes0,
        sim.now - start,
        times,
    )
}

fn efficiency() {
    println!("## Goodput per payload size, clean line, one way (115 200 baud = 11 520 bytes/s)\n");
    println!("| payload (B) | goodput (B/s) | goodput / raw byte rate | payload / line bytes |");
    println!("|---|---|---|---|");
    for size in [16, 64, 128, 256, 512, 1024, 1500, 1514] {
        let mut sim = Sim::new(BAUD115200, Impairment::default(), 1);
        let n = (300_000 / size).clamp(50, 2000) as u32;
        let (payload, line, us, _) = stream(&mut sim, size, n, 200);
        let goodput = payload as f64 / (us as f64 / 1e6);
        println!(
            "| {size} | {goodput:.0} | {:.1} % | {:.1} % |",
            goodput * 100.0 / BAUD115200 as f64,
            payload as f64 * 100.0 / line as f64
        );
    }
}

fn recovery() {
    println!("\n## Recovery after a burst, 1500-byte stream one way\n");
    println!("| line | burst | longest pause in delivery | clean gap | time lost over the run | retransmissions |");
    println!("|---|---|---|---|---|---|");
    for (rate, name) in [(BAUD115200, "115 200 baud"), (MBAUD3, "3 Mbaud")] {
        let frame_us = 1_521 * 1_000_000 / rate;
        let n = 60;
        let mut clean = Sim::new(rate, Impairment::default(), 2);
        let (_, _, clean_us, _) = stream(&mut clean, 1500, n, 100);
        for (burst, cut_us, garbage) in [
            ("64 garbage bytes", 0, 64),
            ("line cut for 1 ms", 1_000, 0),
            ("line cut for 1 frame time", frame_us, 0),
            ("line cut for 1 s", 1_000_000, 0),
        ] {
            let mut sim = Sim::new(rate, Impairment::default(), 2);
            // Disturb the line once, 20 frame times into the stream.
            let at = 20 * frame_us;
            let mut done = false;
            let mut retx0 = None;
            // Run the stream by hand to inject the burst.
            while sim.a.state() != linklab_serial::State::Established {
                sim.advance(100, 100_000);
            }
            let start = sim.now;
            let (mut sent, mut got) = (0u32, 0u32);
            let mut times = Vec::new();
            while got < n {
                while sent < n && sim.a.can_send() {
                    sim.a.send(1500, |b| b.fill(0x5A)).unwrap();
                    sent += 1;
                }
                while sim.b.receive().is_some() {
                    got += 1;
                    times.push(sim.now);
                }
                if !done && sim.now - start >= at {
                    retx0 = Some(sim.a.counters().tx_retransmissions);
                    if garbage > 0 {
                        let junk: Vec<u8> = (0..garbage).map(|i| (i * 37 + 11) as u8).collect();
                        sim.b.handle_input(sim.now, &junk);
                    } else {
                        sim.ab.connected = false;
                        let end = sim.now + cut_us;
                        while sim.now < end {
                            sim.step(100);
                        }
                        sim.ab.connected = true;
                    }
                    done = true;
                }
                sim.advance(100, 100_000);
            }
            let pause = times.windows(2).map(|w| w[1] - w[0]).max().unwrap_or(0);
            let lost = (sim.now - start).saturating_sub(clean_us);
            println!(
                "| {name} | {burst} | {:.1} ms | {:.1} ms | {:.1} ms | {} |",
                pause as f64 / 1000.0,
                frame_us as f64 / 1000.0,
                lost as f64 / 1000.0,
                sim.a.counters().tx_retransmissions - retx0.unwrap_or(0)
            );
        }
    }
}

fn rtt_histogram() {
    println!("\n## Self-test round trips at 115 200 baud (one frame at a time, 200 per size)\n");
    let sizes = [16, 64, 256, 1024, 1514];
    let mut sim = Sim::new(BAUD115200, Impairment::default(), 3);
    let mut tester = Tester::new(
        Plan {
            sizes: &sizes,
            rtt_frames: 200,
            stream_frames: 50,
        },
        0x5E1F,
    );
    let mut rtts: Vec<Vec<u64>> = vec![Vec::new(); sizes.len()];
    let mut eff = vec![0.0; sizes.len()];
    while !tester.is_done() {
        tester.poll(&mut sim.a, sim.now, |e| match e {
            Event::Reply(s) if s.phase == PhaseKind::RoundTrip => {
                let i = sizes.iter().position(|&x| x == s.size).unwrap();
                rtts[i].push(s.rtt_us);
            }
            Event::PhaseDone(p) if p.kind == PhaseKind::Stream => {
                let i = sizes.iter().position(|&x| x == p.size).unwrap();
                eff[i] = p.goodput_bytes_per_s() / BAUD115200 as f64;
            }
            _ => {}
        });
        sim.advance(100, 100_000);
    }
    println!("| payload (B) | min | p50 | p99 | max | wire time of request + echo | echo goodput / raw |");
    println!("|---|---|---|---|---|---|---|");
    for (i, &size) in sizes.iter().enumerate() {
        let v = &mut rtts[i];
        v.sort_unstable();
        let q = |p: f64| v[((v.len() - 1) as f64 * p) as usize] as f64 / 1000.0;
        // Request and echo each: payload + 14 header/CRC + COBS + 2 delimiters.
        let wire = 2 * (size + 14 + (size + 14).div_ceil(254) + 2);
        println!(
            "| {size} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms | {:.1} % |",
            q(0.0),
            q(0.5),
            q(0.99),
            q(1.0),
            wire as f64 * 1000.0 / BAUD115200 as f64,
            eff[i] * 100.0
        );
    }
}

fn main() {
    println!(
        "Link<8> holds {} bytes (all buffers inline), Link<16> {}\n",
        std::mem::size_of::<linklab_serial::Link<8>>(),
        std::mem::size_of::<linklab_serial::Link<16>>()
    );
    efficiency();
    recovery();
    rtt_histogram();
}
