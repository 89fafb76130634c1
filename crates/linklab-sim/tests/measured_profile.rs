//! The `riscv32-measured` profile in the simulator (deterministic, so exact relations hold):
//! both directions complete with every byte right (the host's sink checks what the device
//! sent), and the throughput follows the clock — halving the MHz, or doubling the CPI, halves
//! a CPU-bound transfer's rate.

use linklab_perf::payload;
use linklab_sim::measured::Clock;
use linklab_sim::profile::Profile;
use linklab_sim::sim::{self, SimConfig, SimReport};
use linklab_sim::wire::{Duplex, LinkConfig, Rate};

/// One 1 MB transfer at `clock` over a 1 Gbit/s full-duplex wire (far faster than the CPU,
/// like the emulator's TAP).
fn run(clock: Clock, device_sends: bool) -> SimReport {
    let profile = Profile::Riscv32Measured;
    let cfg = SimConfig {
        profile,
        cost: profile.cost_at(clock),
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
    };
    let r = sim::run(cfg.clone()).expect("a valid configuration");
    assert_eq!(r.stopped, None);
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

#[test]
fn both_directions_complete_and_follow_the_clock() {
    for sends in [false, true] {
        let fast = rate(&run(
            Clock {
                mhz: 62.5,
                cpi: 1.0,
            },
            sends,
        ));
        let slow = rate(&run(
            Clock {
                mhz: 31.25,
                cpi: 1.0,
            },
            sends,
        ));
        let slow_cpi = rate(&run(
            Clock {
                mhz: 62.5,
                cpi: 2.0,
            },
            sends,
        ));
        let ratio = fast / slow;
        assert!(
            (1.8..=2.2).contains(&ratio),
            "sends {sends}: {fast} / {slow}"
        );
        // The same instruction rate gives the same run.
        assert!(
            (slow - slow_cpi).abs() < 1e-6 * slow,
            "{slow} vs {slow_cpi}"
        );
    }
}
