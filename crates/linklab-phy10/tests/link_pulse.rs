//! Link integrity: NLP timing from the timer, NLP and FLP pulses on the wire, and the
//! decoder telling pulses from frames and noise.

mod common;

use common::reshape;
use linklab_phy10::link_pulse::{
    FLP_CLOCK_PERIOD_NS, FLP_DATA_OFFSET_NS, NLP_INTERVAL_MAX_US, NLP_INTERVAL_MIN_US,
    NLP_INTERVAL_NOMINAL_US,
};
use linklab_phy10::{encode_link_pulse, Capture, Decoder, LinkCodeWord, LinkPulseTimer};
use linklab_phy10::{Oversample, RxOutcome};

#[test]
fn timer_rejects_intervals_outside_8_to_24_ms() {
    assert!(LinkPulseTimer::new(NLP_INTERVAL_MIN_US - 1, 0).is_err());
    assert!(LinkPulseTimer::new(NLP_INTERVAL_MAX_US + 1, 0).is_err());
    assert!(LinkPulseTimer::new(NLP_INTERVAL_MIN_US, 0).is_ok());
    assert!(LinkPulseTimer::new(NLP_INTERVAL_MAX_US, 0).is_ok());
}

/// Runs the timer for `duration_us`, polled every `poll_us`, with frames sent at `tx_at`;
/// returns the gaps between consecutive link activities (pulses and frames).
fn activity_gaps(start_us: u32, duration_us: u32, poll_us: u32, tx_at: &[u32]) -> Vec<u32> {
    let mut timer = LinkPulseTimer::new(NLP_INTERVAL_NOMINAL_US, start_us).unwrap();
    let mut last = start_us;
    let mut gaps = Vec::new();
    let mut elapsed = 0;
    while elapsed < duration_us {
        elapsed += poll_us;
        let now = start_us.wrapping_add(elapsed);
        if tx_at.contains(&elapsed) {
            timer.note_transmission(now);
            gaps.push(now.wrapping_sub(last));
            last = now;
        } else if timer.poll(now) {
            gaps.push(now.wrapping_sub(last));
            last = now;
        }
    }
    gaps
}

#[test]
fn idle_link_pulses_every_16_ms_within_8_to_24() {
    let gaps = activity_gaps(0, 10_000_000, 100, &[]);
    assert_eq!(gaps.len(), 625, "10 s / 16 ms");
    assert!(
        gaps.iter().all(|&gap| gap == NLP_INTERVAL_NOMINAL_US),
        "{gaps:?}"
    );
}

#[test]
fn late_polling_stays_inside_24_ms() {
    // Polled every 7 ms: pulses come 21 ms apart, still legal.
    let gaps = activity_gaps(0, 1_000_000, 7_000, &[]);
    assert!(!gaps.is_empty());
    for gap in gaps {
        assert!(
            (NLP_INTERVAL_MIN_US..=NLP_INTERVAL_MAX_US).contains(&gap),
            "{gap}"
        );
    }
}

#[test]
fn frames_restart_the_interval_and_the_clock_may_wrap() {
    // Frames every 5 ms for 100 ms suppress pulses; the clock wraps through u32::MAX.
    let tx: Vec<u32> = (1..=20).map(|k| k * 5_000).collect();
    let start = u32::MAX - 50_000;
    let gaps = activity_gaps(start, 200_000, 100, &tx);
    assert!(gaps[..20].iter().all(|&gap| gap == 5_000), "{gaps:?}");
    assert!(
        gaps[20..].iter().all(|&gap| gap == NLP_INTERVAL_NOMINAL_US),
        "{gaps:?}"
    );
    let timer = LinkPulseTimer::new(NLP_INTERVAL_NOMINAL_US, start).unwrap();
    assert_eq!(timer.due_in_us(start.wrapping_add(6_000)), 10_000);
    assert_eq!(timer.due_in_us(start.wrapping_add(20_000)), 0);
}

#[test]
fn link_pulse_is_100_ns_and_decodes_as_a_link_pulse_either_polarity() {
    for n in Oversample::MIN..=Oversample::MAX {
        let os = Oversample::new(n).unwrap();
        let mut words = [0u32; 4];
        let width = encode_link_pulse(os, &mut words).unwrap();
        assert_eq!(width, os.samples_per_bit(), "one bit time = 100 ns");
        assert_eq!(words[0], (1u32 << width) - 1);
        for invert in [false, true] {
            // Idle before and after the pulse, as a capture triggered on activity shows it.
            let (rx, len) = reshape(&words, 128, 0, invert, 0);
            let mut padded = vec![if invert { u32::MAX } else { 0 }; 2];
            padded.extend_from_slice(&rx);
            let outcome = Decoder::new(os).decode(&Capture::new(&padded, 64 + len), &mut []);
            assert_eq!(outcome, RxOutcome::LinkPulse, "os {n} invert {invert}");
        }
    }
}

#[test]
fn too_wide_or_too_close_pulses_are_noise() {
    let os = Oversample::X4;
    let mut out = [0u8; 8];
    // 300 ns pulse.
    let wide = [0x0000_0FFF_u32 << 8, 0, 0];
    assert_eq!(
        Decoder::new(os).decode(&Capture::from_words(&wide), &mut out),
        RxOutcome::Noise
    );
    // Two 100 ns pulses 200 ns apart: not link pulses (and too short to be a frame).
    let close = [0x0000_F00F_u32 << 8, 0, 0];
    assert_eq!(
        Decoder::new(os).decode(&Capture::from_words(&close), &mut out),
        RxOutcome::Noise
    );
}

#[test]
fn flp_burst_advertises_10base_t_half_and_full() {
    let half = LinkCodeWord::ten_base_t(false);
    let full = LinkCodeWord::ten_base_t(true);
    assert_eq!(half.0, 0x0021);
    assert_eq!(full.0, 0x0061);
    let pulses: Vec<u32> = full.flp_pulse_offsets_ns().collect();
    // 17 clock pulses + data pulses for bits 0 (selector), 5 and 6.
    assert_eq!(pulses.len(), 20);
    assert!(pulses.windows(2).all(|w| w[0] < w[1]));
    let clocks: Vec<u32> = (0..17).map(|k| k * FLP_CLOCK_PERIOD_NS).collect();
    assert!(clocks.iter().all(|c| pulses.contains(c)));
    for bit in 0..16u32 {
        let data = bit * FLP_CLOCK_PERIOD_NS + FLP_DATA_OFFSET_NS;
        assert_eq!(
            pulses.contains(&data),
            (full.0 >> bit) & 1 == 1,
            "bit {bit}"
        );
    }
    // The burst lasts 2 ms.
    assert_eq!(*pulses.last().unwrap(), 2_000_000);
    assert_eq!(half.flp_pulse_offsets_ns().count(), 19);
}

#[test]
fn flp_pulses_in_one_capture_decode_as_link_pulses() {
    // Clock and data pulse 62.5 us apart at 4x: 2500 samples.
    let os = Oversample::X4;
    let mut words = vec![0u32; 100];
    for start in [64usize, 64 + 2500] {
        for i in start..start + 4 {
            words[i / 32] |= 1 << (i % 32);
        }
    }
    let outcome = Decoder::new(os).decode(&Capture::from_words(&words), &mut [0u8; 16]);
    assert_eq!(outcome, RxOutcome::LinkPulse);
}
