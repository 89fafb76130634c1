//! The receive half: zero copy, bursts, a full queue, unaligned runs, and every kind of bad
//! descriptor (bad input from the NIC): counted, dropped, the driver goes on.

use std::vec;
use std::vec::Vec;

use linklab_mac::{RxChecksums, RxTag};

use super::model::frames;
use super::*;
use crate::descriptor::*;

#[test]
fn frames_land_in_the_queues_grants_without_a_copy() {
    let m = model(qemu_phy());
    let q = queue();
    let (mut rx, _tx) = started(m, q, config(4));
    let sent = frames(20, 60, 1514);
    let mut mac = mac(q);
    let mut got = Vec::new();
    for f in &sent {
        assert!(m.deliver(f));
        assert!(m.irq(), "RXF raised");
        assert_eq!(rx.on_interrupt(), 1);
        assert!(!m.irq(), "acknowledged");
        got.extend(drain(&mut mac));
    }
    assert_eq!(got, sent);
    let written = m.0.borrow().rx_buffers.clone();
    assert_eq!(written.len(), sent.len());
    let ring = range_of(q);
    assert!(
        written.iter().all(|a| ring.contains(a) && a % 4 == 0),
        "every frame was written by the DMA into the RX queue's memory, its shift on a word"
    );
    assert_eq!(
        rx.counters(),
        RxCounters::default(),
        "nothing spilled or dropped"
    );
    mac.counters().check_conservation().unwrap();
}

/// One buffer is posted at first; once a frame came in, the whole ring, each on the RX
/// queue's memory a run's stride apart: a burst fills them all before the interrupt runs
/// and comes out whole and in order.
#[test]
fn a_burst_fills_the_ring_and_comes_out_in_order() {
    let m = model(qemu_phy());
    let q = queue();
    let (mut rx, _tx) = started(m, q, config(4));
    let first = frames(1, 100, 100).remove(0);
    assert!(m.deliver(&first));
    assert!(!m.deliver(&first), "one buffer posted at first");
    assert_eq!(rx.on_interrupt(), 1);
    assert_eq!(rx.posted(), RX_DESCRIPTORS);
    let burst = frames(RX_DESCRIPTORS, 64, 1514);
    for f in &burst {
        assert!(m.deliver(f));
    }
    assert!(!m.deliver(&first), "the ring is full");
    let at = m.0.borrow().rx_buffers[1..].to_vec();
    assert!(at
        .windows(2)
        .all(|w| w[1] - w[0] == linklab_mac::RUN_STRIDE as u32));
    assert_eq!(rx.on_interrupt(), RX_DESCRIPTORS);
    let mut mac = mac(q);
    let mut want = vec![first];
    want.extend(burst);
    assert_eq!(drain(&mut mac), want);
    mac.counters().check_conservation().unwrap();
}

/// A queue the main loop does not drain: the spill buffer is posted; what lands there while
/// the queue is full is dropped and counted missed; once it drains, frames flow again.
#[test]
fn a_full_queue_spills_counts_missed_and_recovers() {
    let m = model(qemu_phy());
    let q = queue();
    let (mut rx, _tx) = started(m, q, config(4));
    let sent = frames(30, 1000, 1514);
    let mut delivered = 0;
    for f in &sent {
        if m.deliver(f) {
            delivered += 1;
        }
        rx.on_interrupt();
    }
    assert_eq!(
        delivered,
        sent.len(),
        "the spill buffer keeps the ENET taking frames"
    );
    let mut mac = mac(q);
    let got = drain(&mut mac);
    let c = mac.counters();
    assert!(rx.counters().rx_spilled > 0);
    assert!(c.rx_missed_errors > 0);
    assert_eq!(got.len() as u64 + c.rx_missed_errors, sent.len() as u64);
    assert_eq!(
        got[..],
        sent[..got.len()],
        "the frames kept are the first, in order"
    );
    // Drained: the next frames come through again.
    let more = frames(5, 70, 700);
    for f in &more {
        assert!(m.deliver(f));
        rx.on_interrupt();
    }
    assert_eq!(drain(&mut mac), more);
    mac.counters().check_conservation().unwrap();
}

/// Runs whose buffers are not aligned for the DMA are given back; the spill buffer takes
/// every frame, which is copied: all of them arrive.
#[test]
fn unaligned_runs_fall_back_to_the_spill_buffer_and_lose_nothing() {
    let m = model(qemu_phy());
    let q = queue();
    let (mut rx, _tx) = started(m, q, config(1 << 20));
    let sent = frames(12, 60, 1514);
    for f in &sent {
        assert!(m.deliver(f));
        assert_eq!(rx.on_interrupt(), 1);
    }
    let mut mac = mac(q);
    assert_eq!(drain(&mut mac), sent);
    let c = rx.counters();
    assert_eq!(c.rx_spilled, sent.len() as u64);
    assert!(c.rx_unaligned_runs > 0);
    let ring = range_of(q);
    assert!(m.0.borrow().rx_buffers.iter().all(|a| !ring.contains(a)));
}

/// Each error bit a descriptor can come back with: the frame is dropped and counted by
/// kind, the good frame behind it passes.
#[test]
fn every_error_bit_is_counted_and_the_next_frame_passes() {
    type Counter = fn(&RxCounters) -> u64;
    let cases: [(u32, u32, Counter); 8] = [
        (RX_CR, 0, |c| c.rx_crc_errors),
        (RX_OV, 0, |c| c.rx_fifo_errors),
        (0, RX_ME, |c| c.rx_fifo_errors),
        (RX_NO, 0, |c| c.rx_frame_errors),
        (RX_LG, 0, |c| c.rx_length_errors),
        (RX_TR, 0, |c| c.rx_length_errors),
        (0, RX_PE, |c| c.rx_phy_errors),
        (0, RX_CE, |c| c.rx_phy_errors),
    ];
    for (flags, status, counter) in cases {
        let m = model(qemu_phy());
        let q = queue();
        let (mut rx, _tx) = started(m, q, config(4));
        let f = frames(3, 200, 600);
        assert!(m.deliver(&f[0]));
        rx.on_interrupt();
        assert!(m.deliver_with(&f[1], flags, status, 0));
        assert!(m.deliver(&f[2]));
        assert_eq!(rx.on_interrupt(), 1, "flags {flags:#x} status {status:#x}");
        assert_eq!(
            counter(&rx.counters()),
            1,
            "flags {flags:#x} status {status:#x}"
        );
        let mut mac = mac(q);
        assert_eq!(drain(&mut mac), vec![f[0].clone(), f[2].clone()]);
        mac.counters().check_conservation().unwrap();
    }
}

/// A frame longer than the truncation length (a jumbo from a host with a large MTU) comes
/// back cut, in one descriptor, flagged: dropped, counted, the next one passes.
#[test]
fn a_frame_longer_than_the_buffer_is_truncated_dropped_and_counted() {
    let m = model(qemu_phy());
    let q = queue();
    let (mut rx, _tx) = started(m, q, config(4));
    let mut jumbo = vec![0x5A; 9000];
    jumbo[..6].copy_from_slice(&MAC);
    let good = frames(1, 500, 500).remove(0);
    assert!(m.deliver(&good));
    rx.on_interrupt();
    assert!(m.deliver(&jumbo));
    assert!(m.deliver(&good));
    assert_eq!(rx.on_interrupt(), 1);
    assert_eq!(rx.counters().rx_length_errors, 1);
    assert_eq!(m.0.borrow().rx_buffers.len(), 3, "one descriptor each");
    let mut mac = mac(q);
    assert_eq!(drain(&mut mac), vec![good.clone(), good]);
}

/// An ENET whose buffers are smaller than a frame spreads it over descriptors: every part is
/// dropped, the frame counted once, the frames around it pass.
#[test]
fn a_frame_spread_over_descriptors_is_dropped_whole() {
    let m = model(qemu_phy());
    let q = queue();
    let (mut rx, _tx) = started(m, q, config(4));
    let small = frames(1, 100, 100).remove(0);
    assert!(m.deliver(&small));
    rx.on_interrupt();
    m.0.borrow_mut().regs[crate::regs::MRBR / 4] = 256;
    let long = frames(1, 1000, 1000).remove(0);
    assert!(m.deliver(&long));
    assert_eq!(
        m.0.borrow().rx_buffers.len(),
        1 + 4,
        "1006 bytes in 256-byte parts"
    );
    assert!(m.deliver(&small));
    assert_eq!(rx.on_interrupt(), 1);
    assert_eq!(rx.counters().rx_length_errors, 1);
    let mut mac = mac(q);
    assert_eq!(drain(&mut mac), vec![small.clone(), small]);
    mac.counters().check_conservation().unwrap();
}

/// Lengths no frame has, from a broken device: counted, dropped, nothing read past a
/// buffer, no panic; a first part without its last is dropped with it.
#[test]
fn lengths_no_frame_has_are_dropped() {
    let m = model(qemu_phy());
    let q = queue();
    let (mut rx, _tx) = started(m, q, config(4));
    let good = frames(1, 300, 300).remove(0);
    assert!(m.deliver(&good));
    rx.on_interrupt();
    for word0 in [LAST, LAST | 5, LAST | 19, LAST | 0xFFFF, LAST | 1543] {
        assert!(m.hand_back_raw(word0));
    }
    assert!(m.hand_back_raw(1536), "a first part");
    assert!(m.hand_back_raw(LAST | 100), "its last");
    assert!(m.deliver(&good));
    assert_eq!(rx.on_interrupt(), 1);
    assert_eq!(rx.counters().rx_length_errors, 6);
    let mut mac = mac(q);
    assert_eq!(drain(&mut mac), vec![good.clone(), good]);
    mac.counters().check_conservation().unwrap();
}

/// With the receive status trusted, an IPv4 TCP or UDP frame the accelerator passed is
/// tagged valid; one it flagged, or any other, is left for the MAC to check. QEMU's
/// configuration trusts nothing.
#[test]
fn the_checksum_status_tags_frames_only_when_trusted() {
    let tags = |trusted: bool, status: u32, protocol: u32| {
        let m = model(qemu_phy());
        let q = queue();
        let cfg = EnetConfig {
            rx_checksum_status: trusted,
            ..config(4)
        };
        let (mut rx, _tx) = started(m, q, cfg);
        let f = frames(1, 100, 100).remove(0);
        assert!(m.deliver_with(&f, 0, status, protocol << RX_PROTOCOL_SHIFT));
        rx.on_interrupt();
        let r = q.consumer().read().unwrap();
        RxTag::of(r.bytes()).map(|t| t.checksums)
    };
    assert_eq!(tags(true, 0, 6), Some(RxChecksums::Valid));
    assert_eq!(tags(true, 0, 17), Some(RxChecksums::Valid));
    assert_eq!(tags(true, RX_PCR, 6), Some(RxChecksums::Unchecked));
    assert_eq!(tags(true, RX_ICE, 17), Some(RxChecksums::Unchecked));
    assert_eq!(tags(true, RX_FRAG, 17), Some(RxChecksums::Unchecked));
    assert_eq!(
        tags(true, 0, 1),
        Some(RxChecksums::Unchecked),
        "ICMP is not checked"
    );
    assert_eq!(tags(false, 0, 6), Some(RxChecksums::Unchecked));
}

/// A long random mix of good frames, error bits, truncated frames and lengths no frame
/// has, with the main loop draining at random: nothing panics, and every frame the ENET
/// handed back is in exactly one place: committed to the queue, counted by kind, or missed.
#[test]
fn random_descriptors_never_panic_and_every_frame_is_accounted() {
    for (seed, align) in [(1u64, 4usize), (7, 16), (42, 64), (9, 1 << 20)] {
        let m = model(qemu_phy());
        let q = queue();
        let (mut rx, _tx) = started(m, q, config(align));
        let mut mac = mac(q);
        let mut state = seed;
        let mut next = |n: u64| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) % n
        };
        let pool = frames(64, 14, 1514);
        let errors = [0, 0, 0, RX_CR, RX_OV, RX_NO, RX_LG];
        let (mut handed_back, mut committed, mut passed) = (0u64, 0u64, 0u64);
        for _ in 0..3000 {
            let took = match next(10) {
                0 => m.hand_back_raw(LAST | next(0x1_0000) as u32),
                1 => {
                    let mut long = vec![0xA5; 1529 + next(3000) as usize];
                    long[..6].copy_from_slice(&MAC);
                    m.deliver(&long)
                }
                _ => {
                    let f = &pool[next(64) as usize];
                    let e = errors[next(errors.len() as u64) as usize];
                    m.deliver_with(f, e, 0, 0)
                }
            };
            handed_back += u64::from(took);
            if next(3) == 0 {
                committed += rx.on_interrupt() as u64;
            }
            if next(4) == 0 {
                passed += drain(&mut mac).len() as u64;
            }
        }
        committed += rx.on_interrupt() as u64;
        passed += drain(&mut mac).len() as u64;
        let c = rx.counters();
        let mc = mac.counters();
        let dropped = c.rx_length_errors
            + c.rx_crc_errors
            + c.rx_fifo_errors
            + c.rx_frame_errors
            + c.rx_phy_errors;
        assert_eq!(
            committed + dropped + mc.rx_missed_errors,
            handed_back,
            "seed {seed}, alignment {align}: {c:?} {mc:?}"
        );
        assert!(
            passed <= committed && passed > handed_back / 4,
            "{passed} of {committed}"
        );
        mc.check_conservation().unwrap();
    }
}
