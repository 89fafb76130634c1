//! `RxRun`: several receive buffers lent at once. A model NIC writes a frame into every
//! buffer as soon as it is lent (as DMA may) and completes them in order, while a consumer
//! drains at random and scribbles over what it read; every frame must come out whole and
//! in order, and a buffer the NIC holds must never move or be handed to anyone else.

use linklab_mac::{
    deframe, Inline, RxChecksums, RxFormat, RxQueue, RxRun, Storage, RUN_SLOT_LEN, RUN_STRIDE,
};
use proptest::prelude::*;
use std::collections::VecDeque;

/// Buffers the model NIC may hold at once (virtio-net's queue of 8 descriptors, 2 each).
const POSTED: usize = 4;

fn frame(seq: u32, len: usize) -> Vec<u8> {
    (0..len).map(|i| (seq as usize * 7 + i) as u8).collect()
}

#[test]
fn a_run_grows_behind_its_first_buffer_and_keeps_its_buffers_in_place() {
    let q: RxQueue<Inline<16384>> = RxQueue::new();
    let (p, c) = q.split();
    let mut run = p.grant_run().unwrap();
    assert_eq!((run.slots(), run.slot(0).len()), (1, RUN_SLOT_LEN));
    run.slot(0)[..60].copy_from_slice(&frame(0, 60));
    // Nothing behind the first: stored at its own length, and the run grows to four.
    assert!(run.commit_first_tagged(60, RxChecksums::Valid, 0, POSTED));
    assert_eq!(run.slots(), POSTED);
    let at: Vec<usize> = (0..POSTED).map(|k| run.slot(k).as_ptr() as usize).collect();
    assert!(at.windows(2).all(|w| w[1] - w[0] == RUN_STRIDE));
    assert!(run.slot(POSTED).is_empty());
    run.slot(0)[..1514].copy_from_slice(&frame(1, 1514));
    run.slot(1)[..100].copy_from_slice(&frame(2, 100));
    // Three held behind: the first fills its buffer, the others stay where they were.
    assert!(run.commit_first_tagged(1514, RxChecksums::Unchecked, 3, POSTED));
    assert_eq!(run.slot(0).as_ptr() as usize, at[1]);
    assert!(run.commit_first_tagged(100, RxChecksums::Valid, 2, POSTED));
    drop(run);
    for (seq, len) in [(0, 60), (1, 1514), (2, 100)] {
        let mut r = c.read().unwrap();
        let range = deframe(r.buf(), RxFormat::Tagged).unwrap();
        assert_eq!(&r.buf()[range], &frame(seq, len)[..]);
    }
    assert!(c.read().is_none());
    // The run dropped with its buffers: nothing left over.
    assert_eq!(q.occupancy(), 0);
}

#[test]
fn a_full_ring_lends_no_run_until_the_consumer_frees_room() {
    let q: RxQueue<Inline<4096>> = RxQueue::new();
    let (p, c) = q.split();
    let mut run = p.grant_run().unwrap();
    let mut committed = 0;
    // Commit full frames, the NIC holding every buffer, until no buffer is left to post.
    loop {
        run.slot(0)[..1514].copy_from_slice(&frame(committed, 1514));
        committed += 1;
        let held = run.slots() - 1;
        if !run.commit_first_tagged(1514, RxChecksums::Valid, held, POSTED) {
            break;
        }
        assert!(
            committed <= 8,
            "a 4096-byte ring took more than 8 full frames"
        );
    }
    assert!(p.grant_run().is_err(), "a run was lent from a full ring");
    let mut seen = 0;
    while let Some(mut r) = c.read() {
        let range = deframe(r.buf(), RxFormat::Tagged).unwrap();
        assert_eq!(&r.buf()[range], &frame(seen, 1514)[..]);
        seen += 1;
    }
    assert_eq!(seen, committed);
    assert!(p.grant_run().is_ok());
}

/// One model run over a queue of storage `S`: `steps` of (frame length, frames the consumer
/// reads before the next completion). Lengths of 0 are a device's bad completions, passed
/// on empty. Returns (frames committed, runs with buffers held behind, wraps).
fn model_nic<S: Storage>(q: &RxQueue<S>, steps: &[(usize, usize)]) -> (u32, u32, u32) {
    let (p, c) = q.split();
    let mut run: Option<RxRun<'_, S>> = None;
    // Frames written into the posted buffers, oldest first: (sequence number, length).
    let mut posted: VecDeque<(u32, usize)> = VecDeque::new();
    let mut want: VecDeque<(u32, usize)> = VecDeque::new();
    let mut lengths = steps.iter().map(|&(len, _)| len);
    let (mut next_seq, mut committed, mut held_runs, mut wraps) = (0u32, 0u32, 0u32, 0u32);
    let mut last_at = 0usize;
    for &(_, reads) in steps {
        if run.is_none() {
            run = p.grant_run().ok();
        }
        if let Some(r) = run.as_mut() {
            // The NIC writes into every buffer it is given, at once.
            while posted.len() < r.slots() {
                let Some(len) = lengths.next() else { break };
                let k = posted.len();
                r.slot(k)[..len].copy_from_slice(&frame(next_seq, len));
                posted.push_back((next_seq, len));
                next_seq += 1;
            }
            if let Some((seq, len)) = posted.pop_front() {
                let behind = posted.len();
                let second = (behind > 0).then(|| r.slot(1).as_ptr() as usize);
                let at = r.slot(0).as_ptr() as usize;
                if at < last_at {
                    wraps += 1;
                }
                last_at = at;
                if !r.commit_first_tagged(len, RxChecksums::Valid, behind, POSTED) {
                    assert_eq!(behind, 0, "a run with buffers held behind was spent");
                    run = None;
                }
                if let (Some(s), Some(r)) = (second, run.as_mut()) {
                    held_runs += 1;
                    assert_eq!(r.slot(0).as_ptr() as usize, s, "a held buffer moved");
                }
                committed += 1;
                want.push_back((seq, len));
            }
        }
        for _ in 0..reads {
            let Some(mut r) = c.read() else { break };
            let (seq, len) = want.pop_front().expect("read more than was committed");
            match deframe(r.buf(), RxFormat::Tagged) {
                Ok(range) => assert_eq!(&r.buf()[range], &frame(seq, len)[..]),
                Err(_) => assert!(len < 14, "frame {seq} of {len} bytes lost"),
            }
            // What the consumer does with its bytes is its own business.
            r.buf().fill(0xEE);
        }
    }
    while let Some(mut r) = c.read() {
        let (seq, len) = want.pop_front().expect("read more than was committed");
        if let Ok(range) = deframe(r.buf(), RxFormat::Tagged) {
            assert_eq!(&r.buf()[range], &frame(seq, len)[..]);
        }
        r.buf().fill(0xEE);
    }
    assert!(want.is_empty(), "committed frames never read");
    (committed, held_runs, wraps)
}

fn steps() -> impl Strategy<Value = Vec<(usize, usize)>> {
    proptest::collection::vec(
        (
            prop_oneof![Just(0usize), 14usize..=60, 61usize..=1514],
            0usize..4,
        ),
        1..300,
    )
}

proptest! {
    /// The firmware's ring sizes (full and minimal) and the smallest a queue may have.
    #[test]
    fn frames_come_out_whole_and_in_order(steps in steps()) {
        let full: RxQueue<Inline<15364>> = RxQueue::new();
        let minimal: RxQueue<Inline<13828>> = RxQueue::new();
        let smallest: RxQueue<Inline<3076>> = RxQueue::new();
        model_nic(&full, &steps);
        model_nic(&minimal, &steps);
        model_nic(&smallest, &steps);
    }
}

/// The model reaches what it is for: runs with buffers held behind, and wraps of the ring.
#[test]
fn the_model_holds_buffers_and_wraps() {
    // Under Miri (which checks the lending's pointers on every step) a fifth of the steps.
    let n: u32 = if cfg!(miri) { 400 } else { 2000 };
    let steps: Vec<(usize, usize)> = (0..n as usize)
        .map(|i| (1 + (i * 577) % 1514, (i * 7) % 4))
        .map(|(len, reads)| (len.max(14), reads))
        .collect();
    let q: RxQueue<Inline<15364>> = RxQueue::new();
    let (committed, held, wraps) = model_nic(&q, &steps);
    assert!(committed > n / 2, "{committed} frames committed");
    assert!(held > n / 20, "{held} runs with buffers held behind");
    assert!(wraps > n / 200, "{wraps} wraps");
}
