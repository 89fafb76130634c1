//! The receive interrupt's seam: what is committed to the MAC's grant, what cancels it, and
//! what counts as a lost transmission, for clean frames, late starts, a full grant, link
//! pulses, noise and a missing grant.

mod common;

use common::{after_sfd, reshape, wire_frame};
use linklab_phy10::{
    encode_frame, encode_link_pulse, words_for_frame, Capture, Oversample, RxCounters, RxInterrupt,
    RxOutcome,
};

const OS: Oversample = Oversample::X4;

/// `wire` encoded at 4x, its first `skip` samples lost, 16 idle bit times after it.
fn capture_of(wire: &[u8], skip: usize) -> (Vec<u32>, usize) {
    let mut tx = vec![0u32; words_for_frame(wire.len(), OS)];
    let samples = encode_frame(wire, OS, &mut tx).unwrap();
    reshape(&tx, samples, skip, false, 16 * OS.samples_per_bit())
}

fn frame(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 29 + 5) as u8).collect()
}

#[test]
fn a_clean_frame_is_committed_with_its_fcs() {
    let wire = wire_frame(&frame(200));
    let (rx, n) = capture_of(&wire, 0);
    let mut grant = [0u8; 1536];
    let mut isr = RxInterrupt::new(OS);
    let commit = isr.receive(&Capture::new(&rx, n), &mut grant);
    assert_eq!(commit, 204);
    assert_eq!(&grant[..commit], after_sfd(&wire));
    assert_eq!(isr.last_outcome(), RxOutcome::Frame { len: 204 });
    assert_eq!(
        isr.counters(),
        RxCounters {
            frames: 1,
            ..RxCounters::default()
        }
    );
}

#[test]
fn an_interrupt_entering_inside_the_preamble_still_gets_the_frame() {
    let wire = wire_frame(&frame(64));
    // 7.5 bit times late (Niccle's 750 ns interrupt latency): 48 preamble bits remain.
    let (rx, n) = capture_of(&wire, 30);
    let mut grant = [0u8; 1536];
    let mut isr = RxInterrupt::new(OS);
    let commit = isr.receive(&Capture::new(&rx, n), &mut grant);
    assert_eq!(&grant[..commit], after_sfd(&wire));
}

#[test]
fn an_interrupt_entering_after_the_preamble_commits_nothing_good() {
    // The capture starts 20 bytes into the frame: no preamble left to lock on.
    let wire = wire_frame(&[0u8; 100]);
    let skip = 4 * 8 * 20; // 20 bytes late: in the middle of the frame
    let (rx, n) = capture_of(&wire, skip);
    let mut grant = [0u8; 1536];
    let mut isr = RxInterrupt::new(OS);
    let commit = isr.receive(&Capture::new(&rx, n), &mut grant);
    let c = isr.counters();
    // Whatever it makes of the rest, it is never the frame: either nothing is committed or
    // the bytes are not the frame's (the MAC's FCS check rejects them).
    assert!(
        commit == 0 || grant[..commit] != *after_sfd(&wire),
        "{:?}",
        isr.last_outcome()
    );
    assert_eq!(
        c.frames + c.truncated + c.empty + c.noise + c.link_pulses,
        1
    );
}

#[test]
fn a_grant_too_small_is_filled_and_committed_cut_short() {
    let wire = wire_frame(&frame(300));
    let (rx, n) = capture_of(&wire, 0);
    let mut grant = [0u8; 100];
    let mut isr = RxInterrupt::new(OS);
    assert_eq!(isr.receive(&Capture::new(&rx, n), &mut grant), 100);
    assert_eq!(&grant[..], &after_sfd(&wire)[..100]);
    assert_eq!(isr.counters().truncated, 1);
}

#[test]
fn link_pulses_and_noise_cancel_the_grant() {
    let mut pulse = [0u32; 2];
    encode_link_pulse(OS, &mut pulse).unwrap();
    let mut isr = RxInterrupt::new(OS);
    let mut grant = [0xEEu8; 64];
    assert_eq!(isr.receive(&Capture::new(&pulse, 64), &mut grant), 0);
    assert_eq!(isr.last_outcome(), RxOutcome::LinkPulse);
    // Noise: an irregular burst of edges.
    let noise = [0b1011_0010_1110_0001_0100_1101_1000_0110u32, 0];
    assert_eq!(isr.receive(&Capture::new(&noise, 64), &mut grant), 0);
    // A capture of idle line: nothing at all.
    assert_eq!(isr.receive(&Capture::new(&[0, 0], 64), &mut grant), 0);
    let c = isr.counters();
    assert_eq!((c.link_pulses, c.noise, c.frames), (1, 2, 0));
    assert!(grant.iter().all(|&b| b == 0xEE), "nothing written");
}

#[test]
fn without_a_grant_only_transmissions_are_lost() {
    let wire = wire_frame(&frame(1500));
    let (rx, n) = capture_of(&wire, 0);
    let mut pulse = [0u32; 2];
    encode_link_pulse(OS, &mut pulse).unwrap();
    let mut isr = RxInterrupt::new(OS);
    assert!(isr.receive_without_grant(&Capture::new(&rx, n)));
    assert!(!isr.receive_without_grant(&Capture::new(&pulse, 64)));
    let c = isr.counters();
    assert_eq!((c.missed, c.link_pulses), (1, 1));
}

/// Preamble and SFD with the line going idle right after (found by the fuzz target
/// `soft_phy_rx`): the decoder calls it a frame of 0 bytes; the seam commits nothing and
/// counts it `empty`, so the MAC's cancelled grants match the PHY's counters.
#[test]
fn an_sfd_with_nothing_after_it_is_empty_not_a_frame() {
    let wire = [0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0xD5];
    let (rx, n) = capture_of(&wire, 0);
    let mut grant = [0xA5u8; 1536];
    let mut isr = RxInterrupt::new(OS);
    let commit = isr.receive(&Capture::new(&rx, n), &mut grant);
    assert_eq!(commit, 0, "{:?}", isr.last_outcome());
    assert_eq!(
        isr.counters(),
        RxCounters {
            empty: 1,
            ..RxCounters::default()
        },
        "{:?}",
        isr.last_outcome()
    );
}
