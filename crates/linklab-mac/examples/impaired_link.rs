//! Frames through TX → an impaired line → RX queue → deframe, then the counters.
//!
//! ```text
//! cargo run -p linklab-mac --features std --example impaired_link -- --seed 1 --frames 10000
//! ```
//!
//! Each frame is built by the MAC's TX path, then the line may: start the capture 0–6 bytes
//! into the preamble, shift it by 0–7 bits, invert it, flip bits (bit error rate), truncate
//! it, or lose it entirely; 2 % of frames go to another station; link test pulses wake the PHY between frames (a grant that is
//! cancelled). The receiver's main loop drains the queue only every few frames, so the
//! queue sometimes overflows. Deterministic for a given seed.
//!
//! Exits non-zero if the conservation law fails or a delivered frame differs from the
//! one sent.

use std::process::ExitCode;

use linklab_mac::impair::shift_into;
use linklab_mac::{Counters, Inline, Mac, MacAddr, MacConfig, NoClock, PhyTx, RxQueue};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;

const ME: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 1]);
const PEER: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 2]);
const OTHER: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 3]);

/// Line impairments (probabilities per frame, except the bit error rate).
struct Impairments {
    bit_error_rate: f64,
    truncate: f64,
    loss: f64,
    link_pulses: f64,
    invert: f64,
    other_station: f64,
}

/// Keeps the last transmission.
#[derive(Default)]
struct LastWire(Vec<u8>);

impl PhyTx for LastWire {
    fn transmit(&mut self, wire: &[u8]) {
        self.0.clear();
        self.0.extend_from_slice(wire);
    }
}

fn parse_args() -> Result<(u64, usize, usize), String> {
    let mut seed = 1u64;
    let mut frames = 10_000usize;
    let mut drain_every = 12usize;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let v = args.next().ok_or(format!("{a} needs a value"))?;
        match a.as_str() {
            "--seed" => {
                seed = v
                    .parse()
                    .map_err(|_| format!("--seed: not a number: {v}"))?
            }
            "--frames" => {
                frames = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=10_000_000).contains(n))
                    .ok_or(format!("--frames must be 1..=10000000, got {v}"))?
            }
            "--drain-every" => {
                drain_every = v
                    .parse()
                    .ok()
                    .filter(|n| (1..=1000).contains(n))
                    .ok_or(format!("--drain-every must be 1..=1000, got {v}"))?
            }
            _ => {
                return Err(format!(
                    "unknown option {a} (use --seed, --frames, --drain-every)"
                ))
            }
        }
    }
    Ok((seed, frames, drain_every))
}

fn main() -> ExitCode {
    let (seed, frames, drain_every) = match parse_args() {
        Ok(x) => x,
        Err(e) => {
            eprintln!("impaired_link: error: {e}");
            return ExitCode::FAILURE;
        }
    };
    let imp = Impairments {
        bit_error_rate: 2e-6,
        truncate: 0.01,
        loss: 0.01,
        link_pulses: 0.3,
        invert: 0.5,
        other_station: 0.02,
    };
    let mut rng = ChaCha8Rng::seed_from_u64(seed);

    let tx_queue: RxQueue<Inline<4096>> = RxQueue::new(); // the sender's own RX side, unused
    let mut sender = Mac::new(
        tx_queue.consumer(),
        LastWire::default(),
        NoClock,
        MacConfig::raw_phy(PEER, 0),
    );
    static RX: RxQueue<Inline<16384>> = RxQueue::new();
    let producer = RX.producer();
    let mut receiver = Mac::new(
        RX.consumer(),
        LastWire::default(),
        NoClock,
        MacConfig::raw_phy(ME, 0),
    );

    // Frames that may be delivered: (sequence, payload, must be delivered). A frame whose
    // only damage is in the preamble may still arrive (or be misaligned by a false SFD).
    let mut candidates: std::collections::VecDeque<(u64, Vec<u8>, bool)> = Default::default();
    let (mut lost, mut clean, mut delivered, mut mismatched, mut missing) =
        (0u64, 0u64, 0u64, 0u64, 0u64);
    let mut raw = vec![0u8; 1700];
    for i in 0..frames as u64 {
        let len = rng.gen_range(0..=1492usize); // + 8 bytes of sequence number = 0..=1500
        let mut payload = vec![0u8; len];
        rng.fill(&mut payload[..]);
        payload.splice(0..0, i.to_le_bytes()); // sequence number first
        let flen = 14 + payload.len();
        // A few frames are for another station: the address filter drops them.
        let for_us = !rng.gen_bool(imp.other_station);
        let dst = if for_us { ME } else { OTHER };
        sender
            .transmit(flen, |f| {
                f[0..6].copy_from_slice(&dst.0);
                f[6..12].copy_from_slice(&PEER.0);
                f[12..14].copy_from_slice(&[0x88, 0xB5]);
                f[14..].copy_from_slice(&payload);
            })
            .expect("sender transmit");
        let wire = sender.phy().0.clone();

        if rng.gen_bool(imp.link_pulses) {
            if let Ok(g) = producer.grant() {
                g.cancel(); // a link pulse woke the PHY: no frame
            }
        }
        if rng.gen_bool(imp.loss) {
            lost += 1;
            continue;
        }
        let (n, damaged, preamble_hit) = impair_into(&mut raw, &wire, &mut rng, &imp);
        let candidate = !damaged && for_us;
        if candidate {
            clean += u64::from(!preamble_hit);
            candidates.push_back((i, payload, !preamble_hit));
        }
        // The PHY's interrupt: grant, write, commit (or count the miss).
        match producer.grant() {
            Ok(mut g) => {
                g.buf()[..n].copy_from_slice(&raw[..n]);
                g.commit(n);
            }
            Err(_) => {
                producer.record_missed();
                if candidate {
                    candidates.pop_back();
                    clean -= u64::from(!preamble_hit);
                }
            }
        }
        if i as usize % drain_every == drain_every - 1 || i + 1 == frames as u64 {
            while let Some(f) = receiver.receive() {
                delivered += 1;
                let seq = u64::from_le_bytes(f[14..22].try_into().unwrap());
                // Frames are delivered in order; earlier candidates were not delivered.
                while let Some((_, _, must)) = candidates.front().filter(|(s, _, _)| *s < seq) {
                    missing += u64::from(*must);
                    candidates.pop_front();
                }
                match candidates.pop_front() {
                    Some((s, p, _)) if s == seq && f[14..14 + p.len()] == p[..] => {}
                    _ => mismatched += 1,
                }
            }
        }
    }
    missing += candidates.iter().filter(|c| c.2).count() as u64;
    let c = receiver.counters();
    let sc = sender.counters();
    let figures = (lost, clean, delivered, mismatched, missing);
    report((&c, &sc), (seed, frames, drain_every), figures)
}

/// The frame `wire` as the receiving PHY sees it, into `raw`: a few preamble bytes skipped,
/// shifted off its byte, perhaps inverted, with bit errors and perhaps truncated. Returns its
/// length, whether the frame (from the SFD on) was damaged, and whether the preamble was.
fn impair_into(
    raw: &mut [u8],
    wire: &[u8],
    rng: &mut ChaCha8Rng,
    imp: &Impairments,
) -> (usize, bool, bool) {
    let skip = rng.gen_range(0..=6usize);
    let offset = rng.gen_range(0..8usize);
    let invert = rng.gen_bool(imp.invert);
    let mut n = shift_into(raw, &wire[skip..], offset, invert);
    let (mut damaged, mut preamble_hit) = (false, false);
    for bit in 0..8 * n {
        if rng.gen_bool(imp.bit_error_rate) {
            raw[bit / 8] ^= 1 << (bit % 8);
            // Bits from the SFD on belong to the frame; earlier ones to the preamble.
            if bit >= 8 * (7 - skip) + offset {
                damaged = true;
            } else {
                preamble_hit = true;
            }
        }
    }
    if rng.gen_bool(imp.truncate) {
        n = rng.gen_range(1..n);
        damaged = true;
    }
    (n, damaged, preamble_hit)
}

/// Prints what happened and checks it: the receiver's counters conserve, every delivered
/// frame is the one sent, no clean frame is missing.
fn report(
    (c, sc): (&Counters, &Counters),
    (seed, frames, drain_every): (u64, usize, usize),
    (lost, clean, delivered, mismatched, missing): (u64, u64, u64, u64, u64),
) -> ExitCode {
    println!("seed {seed}, {frames} frames sent, drain every {drain_every} frames");
    println!(
        "line: lost {lost}, clean and queued {clean}, link pulses {}",
        c.rx_cancelled
    );
    println!("sender: tx packets {} bytes {}", sc.tx_packets, sc.tx_bytes);
    println!("receiver counters:\n{c}");
    println!(
        "delivered {delivered}, mismatched {mismatched}, clean but missing {missing}; rx_length_errors {}, rx_errors {}",
        c.rx_length_errors(),
        c.rx_errors()
    );
    match c.check_conservation() {
        Ok(()) => println!(
            "conservation: {} transmissions = {} packets + {} errors + {} filtered + {} pause + {} pending",
            c.rx_transmissions,
            c.rx_packets,
            c.rx_errors(),
            c.rx_filtered,
            c.rx_pause_frames,
            c.rx_pending()
        ),
        Err(e) => {
            println!("conservation FAILED: {e}");
            return ExitCode::FAILURE;
        }
    }
    if mismatched != 0 || missing != 0 || delivered < clean || delivered != c.rx_packets {
        println!("FAILED: a delivered frame differs or a clean frame is missing");
        return ExitCode::FAILURE;
    }
    ExitCode::SUCCESS
}
