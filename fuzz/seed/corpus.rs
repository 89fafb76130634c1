//! Turns captures of real traffic (`fuzz/seed/capture`) into seed files for each fuzz
//! target, in the layout that target reads (its doc comment):
//!
//! ```sh
//! cargo run --manifest-path fuzz/Cargo.toml --example seed_corpus -- CAPTURES OUT
//! ```
//!
//! writes `OUT/<target>/<hash>` for every `*.pcap` and `*.json` in `CAPTURES`; `scripts/fuzz
//! --cmin` then minimises them into `fuzz/corpus/<target>/`. What each target gets:
//!
//! - frames (`mac_rx` in its three formats, `device_apps` as its operations, `serial_frame`
//!   and `serial_link` as linklab-serial carries them);
//! - the same frames on the 10BASE-T line (`phy10_decode`, `phy10_frame`, `soft_phy_rx`):
//!   encoded by linklab-phy10 and, for the soft PHY's interrupt, put through linklab-sim's
//!   sample wire with the drift, jitter and noise `linklab emu riscv32-virt --image soft-phy` takes;
//! - byte streams: HTTP requests and answers (`http_parsers`), iperf3 control connections
//!   each way and the JSON in them, and stock iperf3's `-J` reports (`iperf_control`);
//! - datagrams: iperf3 UDP streams (`iperf_udp`), the packet blaster's messages
//!   (`blast_messages`), iperf 2's TCP streams and UDP datagrams (`iperf2/`, for every iperf 2
//!   target; `iperf2_datagram` also gets a UDP flow's datagrams in its layout);
//! - the configuration blob `linklab emu` writes (`device_config`).

#[path = "flows.rs"]
mod flows;

use std::collections::hash_map::DefaultHasher;
use std::hash::{Hash, Hasher};
use std::path::{Path, PathBuf};

use flows::{connections, read_pcap, segment, Record};
use linklab_mac::fcs::fcs_bytes;
use linklab_mac::impair::shift_into;
use linklab_perf::blast;
use linklab_perf::device_config::DeviceConfig;
use linklab_phy10::{encode_frame, words_for_frame, Oversample};
use linklab_serial::framing::encode;
use linklab_serial::wire::{self, Header, Kind, HEADER_LEN, MAX_FRAME, MAX_WIRE};
use linklab_sim::sample_wire::{SampleWire, SampleWireConfig};
use rand::SeedableRng;

/// Seeds per target and capture at most: the minimiser keeps what adds coverage.
const PER_CAPTURE: usize = 60;
/// Preamble and SFD.
const PREAMBLE_SFD: [u8; 8] = [0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0xD5];

/// Where seeds go, and how many each target got.
struct Out {
    dir: PathBuf,
    written: std::collections::BTreeMap<String, usize>,
}

impl Out {
    /// Writes `bytes` as a seed of `target`, named by its hash (the same seed once).
    fn seed(&mut self, target: &str, bytes: &[u8]) {
        let dir = self.dir.join(target);
        std::fs::create_dir_all(&dir).expect("create the seed directory");
        let mut h = DefaultHasher::new();
        bytes.hash(&mut h);
        let path = dir.join(format!("{:016x}", h.finish()));
        if !path.exists() {
            std::fs::write(&path, bytes).expect("write a seed");
            *self.written.entry(target.to_string()).or_default() += 1;
        }
    }
}

/// The frame as it is on the wire after the SFD: padded to 60 bytes, FCS appended.
fn with_fcs(frame: &[u8]) -> Vec<u8> {
    let mut f = frame.to_vec();
    f.resize(frame.len().max(60), 0);
    let fcs = fcs_bytes(&f);
    f.extend_from_slice(&fcs);
    f
}

/// Preamble, SFD, frame, FCS.
fn on_the_wire(frame: &[u8]) -> Vec<u8> {
    let mut w = PREAMBLE_SFD.to_vec();
    w.extend_from_slice(&with_fcs(frame));
    w
}

/// Packed samples as little-endian bytes, `samples` of them.
fn packed(words: &[u32], samples: usize) -> Vec<u8> {
    let mut b: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
    b.truncate(samples.div_ceil(8));
    b
}

/// `mac_rx`: windows of frames as transmissions (2-byte length, bytes) in each RX format.
fn mac_rx(out: &mut Out, frames: &[&[u8]]) {
    for (n, window) in frames.chunks(4).take(PER_CAPTURE / 3).enumerate() {
        for mode in 0u8..3 {
            let mut seed = vec![mode | if n % 2 == 1 { 0x40 } else { 0 }];
            for (i, f) in window.iter().enumerate() {
                let tx = match mode {
                    0 => {
                        // A sampling PHY: the wire image a few bits late, every other one
                        // inverted (linklab-mac's impair).
                        let wire = on_the_wire(f);
                        let mut raw = vec![0u8; wire.len() + 2];
                        let len = shift_into(&mut raw, &wire, 3 + i, i % 2 == 1);
                        raw.truncate(len);
                        raw
                    }
                    1 => with_fcs(f),
                    _ => f.to_vec(),
                };
                seed.extend_from_slice(&(tx.len() as u16).to_le_bytes());
                seed.extend_from_slice(&tx);
            }
            out.seed("mac_rx", &seed);
        }
    }
}

/// `phy10_decode`, `phy10_frame` and `soft_phy_rx`: frames on the 10BASE-T line.
fn line(out: &mut Out, frames: &[&[u8]]) {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(53);
    for (n, f) in frames.iter().take(PER_CAPTURE).enumerate() {
        let wire = on_the_wire(f);
        // phy10_decode: byte 0 the factor (2 + mode % 7), byte 1 the buffer / 8.
        let os = 2 + (n % 7) as u8;
        let factor = Oversample::new(os).expect("2..=8");
        let mut words = vec![0u32; words_for_frame(wire.len(), factor) + 1];
        if let Ok(samples) = encode_frame(&wire, factor, &mut words) {
            let mut seed = vec![os - 2, 190];
            seed.extend_from_slice(&packed(&words, samples + 32));
            out.seed("phy10_decode", &seed);
        }
        // phy10_frame: mode, buffer / 8, samples cut, payload / 8, payload (frame + FCS).
        let payload = with_fcs(f);
        let eighths = (payload.len() / 8).min(255);
        let mut seed = vec![(os - 2) | if n % 5 == 4 { 0x80 } else { 0 }, 190, 0];
        seed.push(eighths as u8);
        seed.extend_from_slice(&payload[..eighths * 8]);
        out.seed("phy10_frame", &seed);
    }
    // soft_phy_rx: byte 0 the factor (4 + mode % 5) and the drain rate; then captures from
    // the sample wire `linklab emu riscv32-virt --image soft-phy` runs (transmitter at 2x, as a real PHY).
    let impairments = [(0, 0, 0.0), (500, 0, 0.0), (-2000, 1, 0.0), (5000, 1, 1e-4)];
    for (n, window) in frames.chunks(3).take(PER_CAPTURE / 2).enumerate() {
        let os = 4 + (n % 5) as u8;
        let (drift_ppm, jitter_samples, noise) = impairments[n % impairments.len()];
        let Ok(sample_wire) = SampleWire::new(SampleWireConfig {
            oversample: os,
            drift_ppm,
            jitter_samples,
            noise,
        }) else {
            continue;
        };
        let mut wire_line = sample_wire.with_transmitter(Oversample::X2);
        let mut seed = vec![(os - 4) | ((n % 3) as u8) << 4];
        for f in window {
            let capture = wire_line.capture(&on_the_wire(f), 0, &mut rng);
            let (words, samples) = (capture.words().to_vec(), capture.len());
            let bytes = packed(&words, samples);
            seed.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
            seed.extend_from_slice(&bytes);
        }
        let pulse = wire_line.pulse_capture(&mut rng);
        let bytes = packed(pulse.words(), pulse.len());
        seed.extend_from_slice(&(bytes.len() as u16).to_le_bytes());
        seed.extend_from_slice(&bytes);
        out.seed("soft_phy_rx", &seed);
    }
}

/// `serial_frame` and `serial_link`: the frames as linklab-serial's DATA frames.
fn serial(out: &mut Out, frames: &[&[u8]]) {
    let header = |seq: u8| Header {
        kind: Kind::Data,
        flags: 0,
        seq,
        ack: 0,
        credits: 8,
        sack: 0,
        src_epoch: 0x4242,
        dst_epoch: 0x1717,
    };
    for (n, window) in frames.chunks(4).take(PER_CAPTURE / 2).enumerate() {
        // serial_frame: byte 0 is where the reads split; then COBS-encoded frames.
        let mut seed = vec![37];
        let mut ops = Vec::new();
        for (i, f) in window.iter().enumerate() {
            let len = f.len().min(wire::MAX_PAYLOAD);
            let mut frame = [0u8; MAX_FRAME];
            frame[HEADER_LEN..HEADER_LEN + len].copy_from_slice(&f[..len]);
            let seq = (n * 4 + i) as u8;
            let sealed = wire::seal(&mut frame, &header(seq), len);
            let mut wire_bytes = [0u8; MAX_WIRE];
            let m = encode(&frame[..sealed], i == 0, &mut wire_bytes);
            seed.extend_from_slice(&wire_bytes[..m]);
            // serial_link: op 1 (a well-formed frame: header fields, length, payload), then a
            // receive (4), an output poll (5) and a millisecond (2).
            let short = &f[..f.len().min(255)];
            ops.extend_from_slice(&[1, 2, seq, 0, 8, 0, 0, 0, 0, short.len() as u8]);
            ops.extend_from_slice(short);
            ops.extend_from_slice(&[4, 5, 2, 1]);
        }
        out.seed("serial_frame", &seed);
        out.seed("serial_link", &ops);
    }
}

/// `device_apps`: the segments clients sent the device, as the harness's operations (a
/// 12-byte head: kind, length, flags and port pick, service, sequence, acknowledgment).
fn device_apps(out: &mut Out, records: &[Record], device: [u8; 4]) {
    let mut ops = Vec::new();
    let mut last_us = 0;
    let mut seeds = 0;
    for r in records {
        let Some(seg) = segment(&r.frame) else {
            // ARP and the like, whole when short enough.
            if r.frame.len() <= 255 {
                ops.extend_from_slice(&[2, r.frame.len() as u8, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
                ops.extend_from_slice(&r.frame);
            }
            continue;
        };
        if seg.dst.0 != device {
            continue;
        }
        let service = match seg.dst.1 {
            80 => 0u8,
            7 => 1,
            5201 => 2,
            _ => continue,
        };
        let elapsed = r.at_us.saturating_sub(last_us) / 1000;
        if elapsed > 0 {
            let ms = (elapsed.min(0xff_ffff) as u32).to_le_bytes();
            ops.extend_from_slice(&[3, 0, 0, 0, ms[0], ms[1], ms[2], 0, 0, 0, 0, 0]);
            last_us = r.at_us;
        }
        let payload = &seg.payload[..seg.payload.len().min(255)];
        let head = if seg.protocol == 6 {
            let mut h = [0u8; 12];
            h[0] = 0;
            h[2] = (seg.flags & 0x3f) << 2 | (seg.src.1 % 4) as u8;
            h[3] = service;
            h[4..8].copy_from_slice(&seg.seq.to_be_bytes());
            h[8..12].copy_from_slice(&seg.ack.to_be_bytes());
            h
        } else {
            // UDP: the harness sends to 7 (service 0) or 5201 (1).
            [1, 0, 0, service / 2, 0, 0, 0, 0, 0, 0, 0, 0]
        };
        ops.extend_from_slice(&head);
        let at = ops.len() - 11;
        ops[at] = payload.len() as u8;
        ops.extend_from_slice(payload);
        // The harness runs 64 operations per input.
        if ops.len() > 4000 || ops.len() / 12 >= 60 {
            out.seed("device_apps", &ops);
            ops.clear();
            seeds += 1;
            if seeds == PER_CAPTURE {
                return;
            }
        }
    }
    if !ops.is_empty() {
        out.seed("device_apps", &ops);
    }
}

/// The byte streams: HTTP, iperf3 control (and its JSON), iperf 2 streams.
fn streams(out: &mut Out, records: &[Record]) {
    let mut cookies = std::collections::HashSet::new();
    for c in connections(records) {
        match c.server.1 {
            80 => {
                if !c.upstream.is_empty() {
                    out.seed("http_parsers", &c.upstream[..c.upstream.len().min(4096)]);
                }
                if !c.downstream.is_empty() {
                    out.seed(
                        "http_parsers",
                        &c.downstream[..c.downstream.len().min(2048)],
                    );
                }
            }
            5201 if c.upstream.len() >= 37 => {
                // The control connection is the first with its cookie; streams repeat it.
                if !cookies.insert(c.upstream[..37].to_vec()) {
                    continue;
                }
                out.seed("iperf_control", &c.upstream);
                out.seed("iperf_control", &c.downstream);
                for json in json_blobs(&c.upstream).chain(json_blobs(&c.downstream)) {
                    out.seed("iperf_control", json);
                }
            }
            5001 => {
                out.seed("iperf2", &c.upstream[..c.upstream.len().min(256)]);
                if !c.downstream.is_empty() {
                    out.seed("iperf2", &c.downstream[..c.downstream.len().min(256)]);
                }
            }
            _ => {}
        }
    }
}

/// The JSON objects of an iperf3 control stream (each after its 4-byte length).
fn json_blobs(stream: &[u8]) -> impl Iterator<Item = &[u8]> {
    (0..stream.len().saturating_sub(4)).filter_map(move |i| {
        let len = u32::from_be_bytes(stream[i..i + 4].try_into().ok()?) as usize;
        let body = stream.get(i + 4..i + 4 + len)?;
        (len > 1 && body.first() == Some(&b'{') && body.last() == Some(&b'}')).then_some(body)
    })
}

/// The datagrams: iperf3 UDP streams, the blaster's messages, iperf 2's UDP.
fn datagrams(out: &mut Out, records: &[Record]) {
    let mut iperf3 = Vec::new();
    let (mut blasts, mut iperf2) = (0, 0);
    // iperf2_datagram: two mode bytes, then datagrams as a length byte and that many bytes.
    let mut iperf2_run = vec![1u8, 0];
    for r in records {
        let Some(seg) = segment(&r.frame) else {
            continue;
        };
        if seg.protocol != 17 {
            continue;
        }
        if seg.dst.1 == 5201 || seg.src.1 == 5201 {
            if iperf3.len() < 64 * 17 {
                // The harness reads 17-byte datagrams: the header of each.
                iperf3.extend_from_slice(&seg.payload[..seg.payload.len().min(17)]);
                if seg.payload.len() < 17 {
                    iperf3.resize(iperf3.len() + 17 - seg.payload.len(), 0);
                }
            }
            if seg.payload.len() <= 64 {
                out.seed("iperf_udp", seg.payload);
            }
        } else if (seg.dst.1 == blast::PORT || seg.src.1 == blast::PORT) && blasts < PER_CAPTURE {
            if seg.payload.len() < 64 || blasts < 4 {
                out.seed("blast_messages", seg.payload);
                blasts += 1;
            }
        } else if (seg.dst.1 == 5001 || seg.src.1 == 5001) && iperf2 < PER_CAPTURE {
            out.seed("iperf2", &seg.payload[..seg.payload.len().min(256)]);
            iperf2 += 1;
            if seg.dst.1 == 5001 && iperf2_run.len() < 2048 {
                let d = &seg.payload[..seg.payload.len().min(255)];
                iperf2_run.push(d.len() as u8);
                iperf2_run.extend_from_slice(d);
            }
        }
    }
    if iperf2_run.len() > 2 {
        out.seed("iperf2_datagram", &iperf2_run);
    }
    if !iperf3.is_empty() {
        let take = iperf3.len().min(17 * 64);
        out.seed("iperf_udp", &iperf3[..take]);
    }
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [captures, dir] = args.as_slice() else {
        eprintln!("usage: seed_corpus CAPTURES OUT (see fuzz/seed/README.md)");
        std::process::exit(2);
    };
    let mut out = Out {
        dir: PathBuf::from(dir),
        written: Default::default(),
    };
    let mut files: Vec<PathBuf> = std::fs::read_dir(captures)
        .unwrap_or_else(|e| panic!("{captures}: {e}"))
        .flatten()
        .map(|e| e.path())
        .collect();
    files.sort();
    for path in &files {
        let bytes = std::fs::read(path).expect("read a capture");
        match path.extension().and_then(|e| e.to_str()) {
            Some("json") => out.seed("iperf_control", &bytes),
            Some("pcap") => from_pcap(&mut out, path, &bytes),
            _ => {}
        }
    }
    // The blob `linklab emu` writes (crates/linklab/src/emu.rs), for the device it runs here.
    for (ip, prefix) in [
        ([198, 18, 0, 2], 24),
        ([198, 18, 7, 2], 24),
        ([10, 0, 0, 9], 8),
    ] {
        let config = DeviceConfig {
            ip,
            prefix,
            mac: DeviceConfig::DEFAULT.mac,
        };
        out.seed("device_config", &config.to_bytes());
    }
    for (target, n) in &out.written {
        println!("{target}: {n} seeds");
    }
}

fn from_pcap(out: &mut Out, path: &Path, bytes: &[u8]) {
    let Some(records) = read_pcap(bytes) else {
        eprintln!("{}: not a classic Ethernet pcap; skipped", path.display());
        return;
    };
    // Frames of every kind, the long ones thinned (a bulk transfer is many alike).
    let mut frames: Vec<&[u8]> = Vec::new();
    let mut long = 0;
    for r in &records {
        if r.frame.len() > 600 {
            long += 1;
            if long % 50 != 1 {
                continue;
            }
        }
        frames.push(&r.frame);
    }
    mac_rx(out, &frames);
    line(out, &frames);
    serial(out, &frames);
    device_apps(out, &records, [198, 18, 0, 2]);
    streams(out, &records);
    datagrams(out, &records);
}
