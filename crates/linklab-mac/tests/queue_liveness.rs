//! The RX queue over bbqueue: capacity rule, liveness after drain, exact frame counts, and
//! the conservation law under any sequence of grants, commits, cancels and reads; for queues
//! sized at compile time (inline storage) and at run time (heap storage).
// Its frames and sizes are in the soft PHY's formats (`TxFormat::Wire`, `RxFormat::Raw`); the
// queue itself has no code that depends on `soft-framing`.
#![cfg(feature = "soft-framing")]

mod common;

use bbqueue::nicknames::Churrasco;
use common::*;
use linklab_mac::queue::{frames_from, guaranteed_frames, FRAME_HEADER_LEN, GRANT_FOOTPRINT};
use linklab_mac::{
    Inline, Mac, MacConfig, NoClock, RxQueue, Storage, MIN_QUEUE_CAPACITY, RX_GRANT_LEN,
};
use proptest::prelude::*;

/// Moves a fresh queue's pointers to byte `w` (frames committed and drained); false if `w`
/// cannot be reached this way (every frame takes 3..=GRANT_FOOTPRINT bytes, and a frame
/// only lands at the write pointer while a whole grant fits behind it).
fn park_at<S: Storage>(q: &RxQueue<S>, w: usize) -> bool {
    // Last frame as large as possible so it starts early enough (start + g <= N); the
    // bytes before it in even steps of at most g.
    let last = w.min(GRANT_FOOTPRINT);
    let before = w - last;
    if (w > 0 && last < 3) || (before > 0 && before < 3) {
        return false;
    }
    let k = before.div_ceil(GRANT_FOOTPRINT);
    let mut steps: Vec<usize> = (0..k)
        .map(|i| before / k + usize::from(i < before % k))
        .collect();
    if w > 0 {
        steps.push(last);
    }
    let (p, c) = q.split();
    let mut pos = 0;
    for step in steps {
        assert!(
            pos + GRANT_FOOTPRINT <= q.capacity(),
            "would wrap while parking"
        );
        let g = p.grant().expect("grant while parking");
        g.commit(step - FRAME_HEADER_LEN);
        c.read().expect("parked frame").release();
        pos += step;
    }
    assert_eq!(pos, w);
    assert!(c.read().is_none());
    true
}

/// Parks a fresh queue from `new_queue` at `w`, then grants and commits `frame_len`-byte frames
/// until the queue refuses: None if `w` cannot be parked at, else the frames accepted.
fn frames_after_parking<S: Storage>(
    new_queue: &impl Fn() -> RxQueue<S>,
    w: usize,
    frame_len: usize,
) -> Option<usize> {
    let q = new_queue();
    if !park_at(&q, w) {
        return None;
    }
    let p = q.producer();
    let mut n = 0;
    while let Ok(g) = p.grant() {
        g.commit(frame_len);
        n += 1;
    }
    Some(n)
}

/// After a drain at every reachable position: a max-size grant succeeds, and the number
/// of frames accepted in a row is exactly `frames_from`, never below `guaranteed_frames`,
/// which some position attains.
fn check_every_position<S: Storage>(new_queue: impl Fn() -> RxQueue<S>, frame_lens: &[usize]) {
    let capacity = new_queue().capacity();
    for &f in frame_lens {
        let guaranteed = guaranteed_frames(capacity, f);
        assert!(guaranteed >= 1, "N {capacity} f {f}");
        let mut min_seen = usize::MAX;
        let mut parked = 0;
        for w in 0..=capacity {
            let Some(n) = frames_after_parking(&new_queue, w, f) else {
                continue;
            };
            parked += 1;
            assert!(
                n >= 1,
                "liveness: max grant failed on a drained queue at w={w}"
            );
            assert_eq!(n, frames_from(capacity, w, f), "N {capacity} w {w} f {f}");
            min_seen = min_seen.min(n);
        }
        assert!(parked >= capacity - 8, "parked at only {parked} positions");
        // A few positions cannot be parked at; the bound is attained at a parked one.
        assert_eq!(min_seen, guaranteed, "N {capacity} f {f}");
    }
}

#[test]
fn liveness_and_exact_counts_at_minimum_capacity() {
    check_every_position(
        RxQueue::<Inline<MIN_QUEUE_CAPACITY>>::new,
        &[RX_GRANT_LEN, 1527, 64],
    );
}

#[test]
#[cfg_attr(
    miri,
    ignore = "huge loop for Miri: every one of 8 193 positions; the minimum-capacity queue covers the same code"
)]
fn liveness_and_exact_counts_at_8k() {
    check_every_position(RxQueue::<Inline<8192>>::new, &[RX_GRANT_LEN, 1527, 72]);
}

#[test]
#[cfg_attr(
    miri,
    ignore = "huge loop for Miri: every one of 15 281 positions; the minimum-capacity queue covers the same code"
)]
fn liveness_and_exact_counts_niccle_sized() {
    // Niccle's queue: room for ten 1526-byte frames plus headers.
    check_every_position(RxQueue::<Inline<{ 10 * 1528 }>>::new, &[1527]);
}

/// Queues sized at run time (heap storage, feature `alloc`: on in `cargo test --workspace`,
/// or `cargo test -p linklab-mac --features alloc`).
#[cfg(feature = "alloc")]
mod run_time_sizes {
    use super::*;
    use linklab_mac::window::{capacity_for_frames, stored_len};
    use linklab_mac::{QueueTooSmall, RxFormat};

    /// Queues sized at run time, as `linklab bench` and `linklab serve` build them from
    /// `--rx-frames`, and at sizes no frame count gives: the same liveness, position by position.
    #[test]
    #[cfg_attr(miri, ignore = "huge loop for Miri: every position of six queues")]
    fn liveness_and_exact_counts_at_run_time_sizes() {
        let sizes = [
            MIN_QUEUE_CAPACITY,
            MIN_QUEUE_CAPACITY + 1,
            capacity_for_frames(2, RxFormat::Raw),
            capacity_for_frames(3, RxFormat::Aligned { fcs: true }),
            capacity_for_frames(9, RxFormat::Aligned { fcs: false }),
            9_999,
        ];
        for capacity in sizes {
            check_every_position(
                || RxQueue::boxed(capacity).expect("within the rule"),
                &[RX_GRANT_LEN, 1518, 64],
            );
        }
    }

    /// The largest queue the CLI builds (`--rx-frames 1024`, 1.5 MB): every position is too many
    /// to park at one by one, so the ends, the points where the wrap rule changes, and random
    /// positions between them.
    #[test]
    #[cfg_attr(
        miri,
        ignore = "huge loop for Miri: a 1.5 MB queue filled at 50 positions"
    )]
    fn liveness_and_exact_counts_at_1024_frames() {
        let capacity = capacity_for_frames(1024, RxFormat::Raw);
        let new_queue = || RxQueue::boxed(capacity).expect("within the rule");
        let g = GRANT_FOOTPRINT;
        let p = capacity - g;
        let mut positions = vec![0, 1, 3, g - 1, g, g + 1, p - 1, p, p + 1, capacity];
        let mut x: usize = 12345;
        for _ in 0..40 {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            positions.push((x >> 16) % (capacity + 1));
        }
        // A full-size segment as a raw capture stores 1527 bytes: the size the ring was made for.
        let full = stored_len(RxFormat::Raw, 1514);
        assert_eq!(guaranteed_frames(capacity, full), 1024);
        for f in [RX_GRANT_LEN, full, 64] {
            let guaranteed = guaranteed_frames(capacity, f);
            for &w in &positions {
                let Some(n) = frames_after_parking(&new_queue, w, f) else {
                    continue;
                };
                assert_eq!(n, frames_from(capacity, w, f), "w {w} f {f}");
                assert!(n >= guaranteed, "w {w} f {f}");
            }
        }
    }

    #[test]
    fn run_time_sizes_below_the_rule_are_refused() {
        for capacity in [0, 1, GRANT_FOOTPRINT, MIN_QUEUE_CAPACITY - 1] {
            assert_eq!(
                RxQueue::boxed(capacity).err(),
                Some(QueueTooSmall { capacity })
            );
        }
        assert!(RxQueue::boxed(MIN_QUEUE_CAPACITY).is_ok());
    }
}

/// The minimum of `frames_from` over every position, the definition `guaranteed_frames`
/// computes in closed form.
fn min_over_positions(capacity: usize, frame_len: usize) -> usize {
    (0..=capacity)
        .map(|w| frames_from(capacity, w, frame_len))
        .min()
        .unwrap_or(0)
}

#[test]
#[cfg_attr(miri, ignore = "arithmetic, no unsafe: huge loops for Miri")]
fn closed_form_equals_the_minimum_over_every_position() {
    // Every capacity up to three minimum queues (including those below the rule), for frame
    // lengths at the edges of the slot arithmetic.
    for frame_len in [0, 1, 64, 1000, 1518, RX_GRANT_LEN, RX_GRANT_LEN + 1] {
        for capacity in 0..=3 * MIN_QUEUE_CAPACITY {
            assert_eq!(
                guaranteed_frames(capacity, frame_len),
                min_over_positions(capacity, frame_len),
                "N {capacity} f {frame_len}"
            );
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The same for large run-time capacities (up to the 1024-frame queue).
    #[test]
    #[cfg_attr(miri, ignore = "arithmetic, no unsafe: huge loops for Miri")]
    fn closed_form_equals_the_minimum_for_large_queues(
        capacity in MIN_QUEUE_CAPACITY..=1_600_000usize,
        frame_len in 0usize..=1600,
    ) {
        prop_assert_eq!(
            guaranteed_frames(capacity, frame_len),
            min_over_positions(capacity, frame_len)
        );
    }
}

/// The trap the capacity rule avoids (bbqueue issue #129): with a ring just under two
/// grant footprints, an *empty* queue parked at the wrong position never grants again.
#[test]
fn undersized_ring_stalls_forever_when_empty() {
    const C: usize = 2 * GRANT_FOOTPRINT - 2;
    let bb: Churrasco<C> = Churrasco::new();
    let p = bb.framed_producer();
    let c = bb.framed_consumer();
    // Park read = write = w with w + g > C and w <= g.
    let w = C - GRANT_FOOTPRINT + 1;
    let g = p.grant((w - 2) as u16).unwrap();
    g.commit((w - 2) as u16);
    c.read().unwrap().release();
    assert!(c.read().is_err(), "queue is empty");
    for _ in 0..10 {
        assert!(p.grant(RX_GRANT_LEN as u16).is_err(), "stall expected");
    }
    // With the rule's capacity the same position is fine, sized at compile or run time.
    let q: RxQueue<Inline<{ 2 * GRANT_FOOTPRINT }>> = RxQueue::new();
    assert!(park_at(&q, w));
    assert!(q.producer().grant().is_ok());
    #[cfg(feature = "alloc")]
    {
        let q = RxQueue::boxed(2 * GRANT_FOOTPRINT).unwrap();
        assert!(park_at(&q, w));
        assert!(q.producer().grant().is_ok());
    }
}

/// What a test transmission is, so the model knows which bucket it must land in.
#[derive(Clone, Debug)]
enum Tx {
    Good,
    Corrupt,
    NotForUs,
    Pause,
    Runt,
    Garbage,
}

#[derive(Clone, Debug)]
enum Op {
    Commit(Tx, u16),
    Cancel,
    Receive,
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (prop_oneof![
            Just(Tx::Good), Just(Tx::Corrupt), Just(Tx::NotForUs),
            Just(Tx::Pause), Just(Tx::Runt), Just(Tx::Garbage)
        ], 0u16..1500).prop_map(|(t, n)| Op::Commit(t, n)),
        1 => Just(Op::Cancel),
        3 => Just(Op::Receive),
    ]
}

fn make_wire(t: &Tx, payload_len: usize) -> Vec<u8> {
    use linklab_mac::tx::{build, TxFormat};
    let mut buf = vec![0u8; 1600];
    let payload = vec![0xA5u8; payload_len];
    let (n, ()) = match t {
        Tx::Pause => build(&mut buf, TxFormat::Wire, 60, |f| {
            linklab_mac::pause::build_pause(f, PEER, 0);
        })
        .unwrap(),
        Tx::NotForUs => build(&mut buf, TxFormat::Wire, 14 + payload_len, |f| {
            fill_frame(f, linklab_mac::MacAddr([2, 9, 9, 9, 9, 9]), PEER, &payload)
        })
        .unwrap(),
        _ => build(&mut buf, TxFormat::Wire, 14 + payload_len, |f| {
            fill_frame(f, ME, PEER, &payload)
        })
        .unwrap(),
    };
    buf.truncate(n);
    match t {
        Tx::Corrupt => {
            let last = buf.len() - 1;
            buf[last] ^= 0x40;
        }
        Tx::Runt => buf.truncate(8 + 40),
        Tx::Garbage => buf.iter_mut().for_each(|b| *b = 0),
        _ => {}
    }
    buf
}

proptest! {
    // Under Miri a case is a full run under the interpreter: a few.
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 4 } else { 128 }))]

    /// After every step of any sequence of grants, commits, cancels and reads, the law holds,
    /// and every bucket equals what the model predicts.
    #[test]
    fn conservation_under_any_sequence(ops in proptest::collection::vec(op(), 1..80)) {
        let q: RxQueue<Inline<8192>> = RxQueue::new();
        let p = q.producer();
        let mut mac = Mac::new(q.consumer(), Recorder::default(), NoClock, MacConfig::raw_phy(ME, 0));
        let mut want = linklab_mac::Counters::default();
        let mut queued: std::collections::VecDeque<Tx> = Default::default();
        for op in ops {
            match op {
                Op::Commit(t, n) => {
                    let wire = make_wire(&t, n as usize);
                    match p.grant() {
                        Ok(mut g) => {
                            g.buf()[..wire.len()].copy_from_slice(&wire);
                            g.commit(wire.len());
                            want.rx_transmissions += 1;
                            want.rx_committed += 1;
                            queued.push_back(t);
                        }
                        Err(_) => {
                            p.record_missed();
                            want.rx_transmissions += 1;
                            want.rx_missed_errors += 1;
                        }
                    }
                }
                Op::Cancel => {
                    if let Ok(g) = p.grant() {
                        g.cancel();
                        want.rx_cancelled += 1;
                    }
                }
                Op::Receive => {
                    let got = mac.receive().map(|f| f.len());
                    // The model: drop queued non-deliverables until a Good one.
                    let mut delivered = None;
                    while let Some(t) = queued.pop_front() {
                        want.rx_dequeued += 1;
                        match t {
                            Tx::Good => { want.rx_packets += 1; delivered = Some(()); break; }
                            Tx::Corrupt => want.rx_crc_errors += 1,
                            Tx::NotForUs => want.rx_filtered += 1,
                            Tx::Pause => want.rx_pause_frames += 1,
                            Tx::Runt => want.rx_short_length_errors += 1,
                            Tx::Garbage => want.rx_frame_errors += 1,
                        }
                    }
                    prop_assert_eq!(got.is_some(), delivered.is_some());
                }
            }
            let c = mac.counters();
            prop_assert_eq!(c.check_conservation(), Ok(()));
            let mut c2 = c;
            c2.rx_bytes = 0;
            prop_assert_eq!(c2, want);
        }
    }
}

/// Producer and consumer on two threads over a static queue: nothing lost or double
/// counted, and the law holds at the end.
#[test]
fn two_threads_static_queue() {
    static Q: RxQueue<Inline<16384>> = RxQueue::new();
    // Under Miri (which checks the two threads' accesses for data races) a few hundred.
    const FRAMES: usize = if cfg!(miri) { 300 } else { 20_000 };
    let producer = std::thread::spawn(|| {
        let p = Q.producer();
        let good = make_wire(&Tx::Good, 100);
        let bad = make_wire(&Tx::Corrupt, 100);
        let mut sent_good = 0u64;
        for i in 0..FRAMES {
            let w = if i % 3 == 0 { &bad } else { &good };
            // Spin until there is room: no transmission is lost in this test.
            loop {
                if let Ok(mut g) = p.grant() {
                    g.buf()[..w.len()].copy_from_slice(w);
                    g.commit(w.len());
                    break;
                }
                std::thread::yield_now();
            }
            if i % 3 != 0 {
                sent_good += 1;
            }
        }
        sent_good
    });
    let mut mac = Mac::new(
        Q.consumer(),
        Recorder::default(),
        NoClock,
        MacConfig::raw_phy(ME, 0),
    );
    let mut got = 0u64;
    loop {
        if let Some(f) = mac.receive() {
            assert_eq!(f.len(), 114);
            got += 1;
        }
        let c = mac.counters();
        c.check_conservation().unwrap();
        if c.rx_dequeued == FRAMES as u64 {
            break;
        }
        std::thread::yield_now();
    }
    let sent_good = producer.join().unwrap();
    let c = mac.counters();
    assert_eq!(got, sent_good);
    assert_eq!(c.rx_packets, sent_good);
    assert_eq!(c.rx_crc_errors, FRAMES as u64 - sent_good);
    assert_eq!(c.rx_pending(), 0);
    c.check_conservation().unwrap();
}
