//! The counted profiles in the simulator (deterministic, so exact relations hold): every one
//! completes a transfer both ways with every byte right (the host's sink checks what the
//! device sent) and follows the clock — halving the MHz, or doubling the CPI, halves a
//! CPU-bound transfer's rate; the device advertises the window its image advertised; bytes
//! copied off their word slow receiving; an embassy-shaped loop makes more passes per
//! segment sent than the main loop with the same counts; and a pass takes in the frames that
//! arrive while it is still taking frames in, as the firmware's ingress loops until the
//! queue is empty.

use linklab_perf::payload;
use linklab_sim::counts::{Clock, LoopShape};
use linklab_sim::profile::Profile;
use linklab_sim::sim::{self, SimConfig, SimReport, DEVICE_MAC};
use linklab_sim::wire::{Duplex, LinkConfig, Rate};

/// The counted profiles.
fn counted() -> impl Iterator<Item = Profile> {
    Profile::ALL
        .into_iter()
        .filter(|p| p.counts().is_some() && *p != Profile::NiccleMeasured)
}

/// A 1 MB transfer with `profile` at `clock` over a 1 Gbit/s full-duplex wire (far faster
/// than the CPU, like the emulator's TAP), configured as `linklab bench` configures a counted
/// profile: the image's window with its burst cap, its send buffer, no line timing in the MAC.
fn config(profile: Profile, clock: Clock, device_sends: bool) -> SimConfig {
    let d = profile.counts().expect("counted").device;
    SimConfig {
        profile,
        cost: profile.cost_at(clock),
        rx_frames: d.rx_queue_frames,
        tcp_window: Some(d.tcp_window),
        burst_cap: true,
        send_buffer: d.iperf3_send_buffer,
        mac_line_timing: false,
        pings: 1,
        gets: 1,
        files: vec![payload::find("/1MB.txt").expect("a bench file")],
        device_sends,
        link: LinkConfig {
            rate: Rate::G1,
            duplex: Duplex::Full,
            propagation_ns: 10,
        },
        ..SimConfig::default()
    }
}

fn run(cfg: SimConfig) -> SimReport {
    let r = sim::run(cfg.clone()).expect("a valid configuration");
    assert_eq!(r.stopped, None, "{}", cfg.profile);
    let mut body = vec![0u8; 1_000_000];
    payload::fill(0, &mut body);
    let d = &r.downloads[0];
    assert_eq!(d.error, None);
    assert_eq!((d.body_bytes, d.crc32), (1_000_000, crc32fast::hash(&body)));
    r.check_conservation(cfg.cost.phy).unwrap();
    r
}

fn rate(r: &SimReport) -> f64 {
    r.downloads[0].bytes_per_s
}

fn clock(mhz: f64, cpi: f64) -> Clock {
    Clock { mhz, cpi }
}

#[test]
fn every_counted_profile_completes_both_ways_and_follows_the_clock() {
    for profile in counted() {
        for sends in [false, true] {
            // Clocks at which every profile's CPU is the bottleneck: at 62.5 MHz the faster
            // images (mps2-measured since the receive and send fast paths: 17.9 MB/s) spend a share of the transfer
            // on what does not scale with the clock (the host's turn, the wire).
            let fast = rate(&run(config(profile, clock(31.25, 1.0), sends)));
            let slow = rate(&run(config(profile, clock(15.625, 1.0), sends)));
            let slow_cpi = rate(&run(config(profile, clock(31.25, 2.0), sends)));
            let ratio = fast / slow;
            assert!(
                (1.8..=2.2).contains(&ratio),
                "{profile} sends {sends}: {fast} / {slow}"
            );
            // The same instruction rate gives the same run.
            assert!(
                (slow - slow_cpi).abs() < 1e-6 * slow,
                "{profile}: {slow} vs {slow_cpi}"
            );
        }
    }
}

/// The TCP windows the device advertised in the run's capture (IPv4, no options).
fn device_windows(r: &SimReport) -> Vec<u16> {
    let mut bytes = Vec::new();
    r.pcap
        .as_ref()
        .expect("a capture")
        .write_to(&mut bytes)
        .unwrap();
    let mut windows = Vec::new();
    let mut at = 24; // pcap's global header
    while at + 16 <= bytes.len() {
        let len = u32::from_le_bytes(bytes[at + 8..at + 12].try_into().unwrap()) as usize;
        let frame = &bytes[at + 16..at + 16 + len];
        at += 16 + len;
        let ipv4_tcp = frame.len() >= 54 && frame[12..14] == [8, 0] && frame[23] == 6;
        if frame[6..12] == DEVICE_MAC && ipv4_tcp {
            let tcp = 14 + usize::from(frame[14] & 0xf) * 4;
            windows.push(u16::from_be_bytes([frame[tcp + 14], frame[tcp + 15]]));
        }
    }
    windows
}

#[test]
fn the_device_advertises_the_window_its_image_advertised() {
    for profile in counted() {
        let d = profile.counts().unwrap().device;
        let mut cfg = config(profile, clock(62.5, 1.0), false);
        cfg.pcap = true;
        let windows = device_windows(&run(cfg.clone()));
        assert_eq!(
            windows.iter().copied().max().map(usize::from),
            Some(d.advertised_window),
            "{profile}"
        );
        // Without the cap, the socket buffer's whole free space (the window lesson).
        cfg.burst_cap = false;
        let uncapped = device_windows(&run(cfg));
        assert_eq!(
            uncapped.iter().copied().max().map(usize::from),
            Some(d.tcp_window),
            "{profile}"
        );
    }
}

#[test]
fn bytes_copied_off_their_word_slow_receiving() {
    let c = clock(62.5, 1.0);
    let aligned = run(config(Profile::Riscv32Measured, c, false));
    let mut cfg = config(Profile::Riscv32Measured, c, false);
    cfg.cost = Profile::Riscv32Measured
        .cost_for(
            c,
            &linklab_sim::cost::Workload {
                rx_misaligned: 1.0,
                ..Default::default()
            },
        )
        .unwrap();
    let misaligned = run(cfg);
    assert!(rate(&misaligned) < 0.95 * rate(&aligned));
    assert!(misaligned.cpu_busy_ns > aligned.cpu_busy_ns);
}

#[test]
fn an_executor_sends_in_more_passes_than_the_main_loop() {
    let c = clock(62.5, 1.0);
    let main = run(config(Profile::Riscv32Measured, c, true));
    let mut cfg = config(Profile::Riscv32Measured, c, true);
    cfg.cost.shape = LoopShape::Executor;
    let executor = run(cfg);
    let per_segment = |r: &SimReport| r.main_passes as f64 / r.mac.tx_packets as f64;
    // The main loop sends what its app queued in the same pass: two segments per pass from
    // a two-segment buffer; the executor's runner sends it a pass later.
    assert!(per_segment(&main) < 0.7, "{}", per_segment(&main));
    assert!(
        per_segment(&executor) > 1.3 * per_segment(&main),
        "{} vs {}",
        per_segment(&executor),
        per_segment(&main)
    );
}

/// Receiving, the host's window arrives while the device's pass takes its first segments in
/// (the wire is far faster than the CPU), and that pass takes them all: one main-loop pass,
/// and one ACK, per window, whatever the clock; a pass that took in only what was committed
/// when it started would need two or more. (An executor's runner passes alternate with the
/// apps' and the window updates they cause: more passes per window, shown above.)
#[test]
fn a_pass_takes_in_what_arrives_while_it_takes_frames_in() {
    let main_loops = counted().filter(|p| {
        let c = p.counts().expect("counted");
        *p != Profile::Riscv32SoftPhy && c.device.shape == LoopShape::MainLoop
    });
    for profile in main_loops {
        let window = profile.counts().expect("counted").device.tcp_window;
        let segments = (window / 1460) as f64;
        for mhz in [125.0, 31.25] {
            let r = run(config(profile, clock(mhz, 1.0), false));
            let per_frame = r.main_passes as f64 / r.mac.rx_packets as f64;
            assert!(
                per_frame <= 1.15 / segments,
                "{profile} at {mhz} MHz: {per_frame:.3} passes per frame, window {segments} segments"
            );
        }
    }
}

/// The device's TCP is the firmware's: smoltcp without a congestion window (this crate
/// builds smoltcp with CUBIC for the host, which would make it every socket's default), so
/// from a three-segment send buffer it sends whole segments. With CUBIC's 2 048-byte first
/// window it settled into 1 460 + 588 and 1 460 + 872 byte flights: a third more frames.
#[test]
fn the_device_sends_whole_segments_as_the_firmware_does() {
    let mut cfg = config(Profile::Riscv32EmbassyMeasured, clock(125.0, 1.0), true);
    cfg.send_buffer = 3 * 1460;
    let r = run(cfg);
    let segments = 1_000_000u64.div_ceil(1460);
    // The data segments, the handshake's and the close's, one ping.
    assert!(
        (segments..=segments + 6).contains(&r.mac.tx_packets),
        "{} frames sent for {segments} segments",
        r.mac.tx_packets
    );
}
