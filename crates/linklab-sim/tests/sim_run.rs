//! The simulator as a library: runs complete with every downloaded byte right (CRC32 of the
//! body against the file), the counters conserve, a seed gives the same run every time, every
//! queue size from 2 to 1024 frames works, and bad configurations are typed errors.

use linklab_perf::payload;
use linklab_sim::device::RX_FRAMES_RANGE;
use linklab_sim::profile::Profile;
use linklab_sim::sample_wire::{SampleWireConfig, SampleWireError};
use linklab_sim::sim::{self, PhyPath, SimConfig, SimError, SimReport};

/// A short run: 2 pings and one GET of `/10kB.txt`.
fn short() -> SimConfig {
    SimConfig {
        pings: 2,
        gets: 1,
        files: vec![payload::find("/10kB.txt").expect("a bench file")],
        ..SimConfig::default()
    }
}

fn samples(drift_ppm: i32, jitter_samples: u8) -> PhyPath {
    PhyPath::Samples(SampleWireConfig {
        oversample: 8,
        drift_ppm,
        jitter_samples,
        noise: 0.0,
    })
}

/// The CRC32 of a bench file's body, computed here from its definition.
fn file_crc32(path: &str) -> (u64, u32) {
    let file = payload::find(path).expect("a bench file");
    let mut body = vec![0u8; file.len as usize];
    payload::fill(0, &mut body);
    (file.len, crc32fast::hash(&body))
}

/// Asserts the run finished, every download is whole and right, and the counters conserve.
fn assert_complete(cfg: &SimConfig, r: &SimReport) {
    assert_eq!(r.stopped, None);
    assert_eq!(r.downloads.len(), cfg.files.len() * cfg.gets as usize);
    for d in &r.downloads {
        assert_eq!(d.error, None, "{}", d.path);
        assert_eq!((d.body_bytes, d.crc32), file_crc32(&d.path), "{}", d.path);
    }
    assert_eq!(r.pings.len(), cfg.pings as usize);
    assert!(r.pings.iter().all(|p| p.rtt_ms.is_some()));
    r.check_conservation(cfg.cost.phy).unwrap();
}

#[test]
fn the_default_path_completes_and_a_seed_repeats_itself() {
    let cfg = short();
    let a = sim::run(cfg.clone()).unwrap();
    assert_complete(&cfg, &a);
    assert_eq!(a.queue_frames, 9);
    assert_eq!(a.auto_window, 7 * 1460);
    // The byte wire captures at random bit offsets and polarity; the MAC sorts that out.
    assert!(a.phy.rx_bit_offset > 0 && a.phy.rx_inverted > 0);
    let b = sim::run(cfg).unwrap();
    assert_eq!(format!("{:?}", a.downloads), format!("{:?}", b.downloads));
    assert_eq!((a.mac, a.phy, a.events), (b.mac, b.phy, b.events));
}

/// `--phy samples`: the device's receive interrupt decodes every capture straight into the
/// MAC's grant; with 0.5 % drift and ±1 sample of jitter every byte still arrives right.
#[test]
fn the_sample_path_delivers_every_byte() {
    let cfg = SimConfig {
        phy_path: samples(5000, 1),
        ..short()
    };
    let r = sim::run(cfg.clone()).unwrap();
    assert_complete(&cfg, &r);
    // Decoded frames start after the SFD: a smaller ring holds the same 9 frames.
    assert_eq!(r.queue_frames, 9);
    assert_eq!(r.queue_capacity, 15_236);
    assert_eq!((r.phy.rx_bit_offset, r.phy.rx_inverted), (0, 0));
    assert_eq!(r.mac.rx_frame_errors, 0, "no SFD search in the MAC");
    assert!(r.mac.rx_packets > 10, "{:?}", r.mac);
    // Deterministic per seed on this path too.
    let again = sim::run(cfg).unwrap();
    assert_eq!(
        (r.mac, r.phy, r.events),
        (again.mac, again.phy, again.events)
    );
}

/// A bit-banged PHY whose interrupt comes too late (Niccle's first MAC) loses frames on the
/// sample path as on the byte wire: the capture starts mid-frame, the decoder finds no frame
/// or garbage the MAC rejects; TCP recovers and every count still balances.
#[test]
fn late_interrupts_lose_samples_and_the_counters_say_where() {
    let profile = Profile::NiccleInitial;
    let cfg = SimConfig {
        profile,
        cost: profile.cost(),
        pings: 0,
        phy_path: samples(0, 0),
        ..short()
    };
    let r = sim::run(cfg.clone()).unwrap();
    assert_complete(&cfg, &r);
    assert!(r.phy.rx_truncated > 0, "{:?}", r.phy);
    let lost = r.phy.rx_sample_errors
        + r.mac.rx_crc_errors
        + r.mac.rx_short_length_errors
        + r.mac.rx_long_length_errors
        + r.phy.rx_idle_line;
    assert!(lost > 0, "{:?} {:?}", r.phy, r.mac);
}

#[test]
fn every_queue_size_from_2_to_1024_frames_runs() {
    for frames in [2, 3, 100, 1024] {
        for phy_path in [PhyPath::Bytes, samples(0, 0)] {
            let cfg = SimConfig {
                rx_frames: frames,
                pings: 1,
                phy_path,
                ..short()
            };
            let r = sim::run(cfg.clone()).unwrap();
            assert_complete(&cfg, &r);
            assert_eq!(r.queue_frames, frames, "{phy_path:?}");
            // The window that cannot overrun the queue, at least one segment.
            assert_eq!(r.auto_window, frames.saturating_sub(2).max(1) * 1460);
            assert_eq!(r.mac.rx_missed_errors, 0);
        }
    }
}

#[test]
fn bad_configurations_are_typed_errors() {
    for frames in [0, 1, *RX_FRAMES_RANGE.end() + 1] {
        let cfg = SimConfig {
            rx_frames: frames,
            ..short()
        };
        let e = sim::run(cfg).unwrap_err();
        assert_eq!(e, SimError::RxFrames(frames));
        assert!(e.to_string().contains("2..=1024"), "{e}");
    }
    let cfg = SimConfig {
        phy_path: PhyPath::Samples(SampleWireConfig {
            oversample: 9,
            drift_ppm: 0,
            jitter_samples: 0,
            noise: 0.0,
        }),
        ..short()
    };
    assert_eq!(
        sim::run(cfg).unwrap_err(),
        SimError::SampleWire(SampleWireError::Oversample(9))
    );
}
