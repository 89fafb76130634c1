use super::*;

#[test]
fn grant_commit_read_release() {
    let q: RxQueue<Inline<4096>> = RxQueue::new();
    let (p, c) = q.split();
    let mut g = p.grant().unwrap();
    assert_eq!(g.buf().len(), RX_GRANT_LEN);
    g.buf()[..3].copy_from_slice(&[1, 2, 3]);
    g.commit(3);
    assert_eq!(q.occupancy(), 5);
    let r = c.read().unwrap();
    assert_eq!(r.bytes(), &[1, 2, 3]);
    drop(r);
    assert!(c.read().is_none());
    assert_eq!(q.occupancy(), 0);
    p.grant().unwrap().cancel();
    assert!(c.read().is_none());
    assert_eq!(q.producer_counters.cancelled.load(Ordering::Relaxed), 1);
}

#[test]
fn padded_commits_start_the_next_grant_at_frame_align() {
    // Large enough that these frames never wrap (a local's storage may sit at any byte).
    let q: RxQueue<Inline<16384>> = RxQueue::new();
    let (p, c) = q.split();
    for len in [60, 61, 62, 63, 1514, 1513] {
        let mut g = p.grant().unwrap();
        g.buf()[..len].fill(0xAB);
        g.commit_padded(len);
        let mut next = p.grant().unwrap();
        assert_eq!(next.buf().as_ptr() as usize % 4, FRAME_ALIGN, "after {len}");
        drop(next);
        let r = c.read().unwrap();
        assert!(r.bytes().len() - len < 4);
        assert!(r.bytes().len() <= 1514 && r.bytes().len() >= len);
        assert!(r.bytes()[..len].iter().all(|&b| b == 0xAB));
        assert!(r.bytes()[len..].iter().all(|&b| b == 0));
    }
}

#[test]
fn tagged_commits_carry_the_tag_and_align_the_next_grant() {
    let q: RxQueue<Inline<16384>> = RxQueue::new();
    let (p, c) = q.split();
    for (len, checksums) in [(60, RxChecksums::Valid), (61, RxChecksums::Unchecked)] {
        let mut g = p.grant().unwrap();
        g.buf()[..len].fill(0xAB);
        g.commit_tagged(len, checksums);
        let mut next = p.grant().unwrap();
        assert_eq!(next.buf().as_ptr() as usize % 4, FRAME_ALIGN);
        drop(next);
        let mut r = c.read().unwrap();
        let tag = RxTag::of(r.bytes()).unwrap();
        assert_eq!(tag.checksums, checksums);
        assert_eq!(crate::deframe(r.buf(), crate::RxFormat::Tagged), Ok(0..len));
    }
}

#[test]
fn peek_leaves_the_transmission_in_the_queue() {
    let q: RxQueue<Inline<4096>> = RxQueue::new();
    let (p, c) = q.split();
    assert_eq!(c.peek(|b| b.len()), None);
    assert!(p.push(&[7, 8, 9]));
    assert_eq!(
        c.peek(|b| <[u8; 3]>::try_from(b).ok()),
        Some(Some([7, 8, 9]))
    );
    assert_eq!(c.peek(|b| b.len()), Some(3));
    assert_eq!(q.dequeued.load(Ordering::Relaxed), 0);
    assert_eq!(c.read().unwrap().bytes(), &[7, 8, 9]);
    assert!(c.peek(|_| ()).is_none());
}

#[test]
fn works_from_a_static() {
    static Q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    static P: RxProducer<'static, Inline<{ MIN_QUEUE_CAPACITY }>> = Q.producer();
    assert!(P.push(&[9; 100]));
    let c = Q.consumer();
    assert_eq!(c.read().unwrap().bytes().len(), 100);
    assert_eq!(Q.capacity(), MIN_QUEUE_CAPACITY);
}

#[test]
fn storage_below_the_rule_is_refused() {
    let small = RxQueue::with_storage(Inline::<{ MIN_QUEUE_CAPACITY - 1 }>::new());
    assert_eq!(
        small.err(),
        Some(QueueTooSmall {
            capacity: MIN_QUEUE_CAPACITY - 1
        })
    );
    let q = RxQueue::with_storage(Inline::<{ MIN_QUEUE_CAPACITY }>::new()).unwrap();
    assert_eq!(q.capacity(), MIN_QUEUE_CAPACITY);
    assert!(q.producer().push(&[1; 60]));
}

#[test]
fn guaranteed_frames_matches_niccle_size() {
    // A ring for ten full frames guarantees fewer: the wrap wastes up to one grant.
    let n = 10 * (1526 + 2);
    assert!(guaranteed_frames(n, 1526) >= 8);
    assert_eq!(guaranteed_frames(MIN_QUEUE_CAPACITY, RX_GRANT_LEN), 1);
    assert_eq!(guaranteed_frames(MIN_QUEUE_CAPACITY - 1, 64), 0);
}
