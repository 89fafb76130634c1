//! `EmbassyMac` as an `embassy_net_driver::Driver`, driven by hand with counting wakers: RX
//! wakes on commit (also from another thread, as from an interrupt) and lends the frame in
//! place; a frame deferred by the gap or a PAUSE asks the timer for a wake-up at the right
//! time and goes out then; the link comes from a signal or a polled closure; the counters
//! balance.
#![cfg(feature = "embassy")]

mod common;

use std::cell::{Cell, RefCell};
use std::rc::Rc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{Context, Wake, Waker};

use common::*;
use embassy_net_driver::{Driver, HardwareAddress, LinkState, RxToken, TxToken};
use linklab_mac::embassy::{
    Admit, AlwaysUp, EmbassyMac, FrameGate, LinkSignal, WakeAt, LINK_POLL_NS,
};
use linklab_mac::pause::build_pause;
use linklab_mac::{Clock, Inline, Mac, MacConfig, RxConsumer, RxQueue};

const N: usize = 8192;
const RATE: u64 = 10_000_000;

/// A MAC on a TAP's frame format over `consumer`, recording what it sends, on `clock`.
fn tap_mac<C: Clock>(
    consumer: RxConsumer<'_, Inline<N>>,
    clock: C,
) -> Mac<'_, Inline<N>, Recorder, C> {
    Mac::new(consumer, Recorder::default(), clock, MacConfig::tap(ME))
}

/// A waker that counts its wake-ups.
#[derive(Default)]
struct CountingWaker(AtomicUsize);

impl Wake for CountingWaker {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
    fn wake_by_ref(self: &Arc<Self>) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }
}

fn counting_waker() -> (Arc<CountingWaker>, Waker) {
    let count = Arc::new(CountingWaker::default());
    (count.clone(), Waker::from(count))
}

/// A manual clock whose timer records what it was asked (time, waker).
#[derive(Clone, Default)]
struct TestTimer {
    now: Rc<Cell<u64>>,
    asked: Rc<RefCell<Vec<(u64, Waker)>>>,
}

impl Clock for TestTimer {
    fn now_ns(&self) -> u64 {
        self.now.get()
    }
}

impl WakeAt for TestTimer {
    fn wake_at(&self, at_ns: u64, waker: &Waker) {
        self.asked.borrow_mut().push((at_ns, waker.clone()));
    }
}

impl TestTimer {
    fn take(&self) -> Vec<(u64, Waker)> {
        std::mem::take(&mut self.asked.borrow_mut())
    }
}

/// A 60-byte frame from the peer to us carrying `tag`.
fn frame_to_me(tag: u8) -> Vec<u8> {
    let mut f = vec![0u8; 60];
    fill_frame(&mut f, ME, PEER, &[tag; 8]);
    f
}

#[test]
fn rx_wakes_on_commit_from_another_thread_and_lends_the_frame_in_place() {
    let q: RxQueue<Inline<N>> = RxQueue::new();
    let (producer, consumer) = q.split();
    let mac = tap_mac(consumer, linklab_mac::NoClock);
    let mut dev = EmbassyMac::new(mac, AlwaysUp);
    let (count, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);

    assert!(dev.receive(&mut cx).is_none(), "empty queue");
    assert_eq!(count.0.load(Ordering::SeqCst), 0);

    // The "interrupt": another thread commits a frame.
    std::thread::scope(|s| {
        s.spawn(|| assert!(producer.push(&frame_to_me(7))));
    });
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        1,
        "the commit woke the task"
    );

    let ring = &q as *const _ as usize..&q as *const _ as usize + std::mem::size_of_val(&q);
    let (rx, _tx) = dev.receive(&mut cx).expect("a frame");
    let (addr, tag) = rx.consume(|f: &mut [u8]| (f.as_ptr() as usize, f[14]));
    assert!(
        ring.contains(&addr),
        "the frame is lent in place in the queue"
    );
    assert_eq!(tag, 7);

    // Registered again by the empty read: the next commit wakes again.
    assert!(dev.receive(&mut cx).is_none());
    assert!(producer.push(&frame_to_me(8)));
    assert_eq!(count.0.load(Ordering::SeqCst), 2);

    // A bad frame is counted and dropped; None, and the task is still registered.
    let (rx, _) = dev.receive(&mut cx).expect("frame 8");
    drop(rx);
    assert!(producer.push(&[0u8; 5]));
    assert!(dev.receive(&mut cx).is_none());
    assert!(producer.push(&frame_to_me(9)));
    assert_eq!(count.0.load(Ordering::SeqCst), 4);

    let c = dev.mac().counters();
    assert_eq!(
        (c.rx_packets, c.rx_short_length_errors, c.rx_pending()),
        (2, 1, 1)
    );
    c.check_conservation().unwrap();
}

#[test]
fn a_frame_deferred_by_the_gap_asks_the_timer_and_goes_out_on_time() {
    let q: RxQueue<Inline<N>> = RxQueue::new();
    let timer = TestTimer::default();
    let phy = Recorder::default();
    let mac = Mac::new(
        q.consumer(),
        phy.clone(),
        timer.clone(),
        MacConfig::raw_phy(ME, RATE),
    );
    let mut dev = EmbassyMac::new(mac, AlwaysUp);
    let (count, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);

    // First frame leaves at t = 0; the second, built at once, must wait for the gap.
    let t = dev.transmit(&mut cx).expect("idle line");
    t.consume(60, |f: &mut [u8]| fill_frame(f, PEER, ME, b"one"));
    assert_eq!(phy.take().len(), 1);
    assert!(
        timer.take().is_empty(),
        "nothing waits, nothing to wake for"
    );

    let t = dev.transmit(&mut cx).expect("nothing deferred yet");
    t.consume(60, |f: &mut [u8]| fill_frame(f, PEER, ME, b"two"));
    assert!(phy.take().is_empty(), "held for the gap");
    // 8 + 60 + 4 bytes on the line at 10 Mb/s, then 96 bit times.
    let ready = (8 + 60 + 4) * 8 * 100 + 9_600;
    let asked = timer.take();
    assert_eq!(asked.len(), 1);
    assert_eq!(asked[0].0, ready);
    // The stack's task is the one woken (by its effect: `will_wake` compares vtable
    // pointers, which Rust does not promise unique, and Miri does not make them so).
    asked[0].1.wake_by_ref();
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        1,
        "the stack's task is the one woken"
    );

    // No tokens while deferred; each refusal asks for the same wake-up.
    assert!(dev.transmit(&mut cx).is_none());
    assert!(dev.receive(&mut cx).is_none());
    assert!(timer.take().iter().all(|(at, _)| *at == ready));

    timer.now.set(ready - 1);
    assert!(dev.transmit(&mut cx).is_none(), "one ns early");
    timer.now.set(ready);
    // An unused token sends nothing (it is dropped at once).
    let _ = dev.transmit(&mut cx).expect("the gap is over");
    let sent = phy.take();
    assert_eq!(sent.len(), 1, "the deferred frame went out first");
    assert_eq!(&sent[0][8 + 14..8 + 17], b"two");

    let c = dev.mac().counters();
    assert_eq!((c.tx_requests, c.tx_packets, c.tx_deferred), (2, 2, 0));
    c.check_conservation().unwrap();
}

#[test]
fn a_received_pause_holds_the_next_frame_until_it_ends() {
    let q: RxQueue<Inline<N>> = RxQueue::new();
    let (producer, consumer) = q.split();
    let timer = TestTimer::default();
    let phy = Recorder::default();
    let mac = Mac::new(
        consumer,
        phy.clone(),
        timer.clone(),
        MacConfig {
            line_rate_bps: RATE,
            ..MacConfig::tap(ME)
        },
    );
    let mut dev = EmbassyMac::new(mac, AlwaysUp);
    let (_count, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);

    let mut pause = [0u8; 60];
    build_pause(&mut pause, PEER, 100).unwrap();
    timer.now.set(1_000_000);
    assert!(producer.push(&pause));
    assert!(dev.receive(&mut cx).is_none(), "PAUSE is for the MAC");
    let until = 1_000_000 + 100 * 512 * 100;
    assert_eq!(dev.mac().paused_until_ns(), until);

    let t = dev.transmit(&mut cx).expect("building is allowed");
    t.consume(60, |f: &mut [u8]| fill_frame(f, PEER, ME, b"held"));
    assert!(phy.take().is_empty());
    assert_eq!(timer.take().last().map(|a| a.0), Some(until));

    timer.now.set(until);
    assert!(dev.transmit(&mut cx).is_some());
    assert_eq!(phy.take().len(), 1);
    let c = dev.mac().counters();
    assert_eq!((c.rx_pause_frames, c.tx_packets), (1, 1));
    c.check_conservation().unwrap();
}

#[test]
fn link_from_a_signal_wakes_on_change() {
    static LINK: LinkSignal = LinkSignal::new(false);
    let q: RxQueue<Inline<N>> = RxQueue::new();
    let timer = TestTimer::default();
    let mac = tap_mac(q.consumer(), timer.clone());
    let mut dev = EmbassyMac::new(mac, &LINK);
    let (count, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);

    assert!(dev.link_state(&mut cx) == LinkState::Down);
    std::thread::scope(|s| {
        s.spawn(|| LINK.set(true));
    });
    assert_eq!(
        count.0.load(Ordering::SeqCst),
        1,
        "the change woke the task"
    );
    assert!(dev.link_state(&mut cx) == LinkState::Up);
    LINK.set(true);
    assert_eq!(count.0.load(Ordering::SeqCst), 1, "no change, no wake-up");
    assert!(timer.take().is_empty(), "a signal needs no polling");
}

#[test]
fn a_polled_link_is_read_every_call_and_timed_every_interval() {
    let q: RxQueue<Inline<N>> = RxQueue::new();
    let timer = TestTimer::default();
    let mac = tap_mac(q.consumer(), timer.clone());
    // Up from 5 ms to 250 ms: a carrier bit read through a closure.
    let reads = Cell::new(0);
    let link = |now_ns: u64| {
        reads.set(reads.get() + 1);
        (5_000_000..250_000_000).contains(&now_ns)
    };
    let mut dev = EmbassyMac::new(mac, link);
    let (_count, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);

    assert!(dev.link_state(&mut cx) == LinkState::Down);
    assert_eq!(
        timer.take().iter().map(|a| a.0).collect::<Vec<_>>(),
        [LINK_POLL_NS]
    );
    timer.now.set(5_000_000);
    assert!(dev.link_state(&mut cx) == LinkState::Up);
    assert!(
        timer.take().is_empty(),
        "the wake-up at 100 ms is still pending"
    );
    timer.now.set(LINK_POLL_NS);
    assert!(dev.link_state(&mut cx) == LinkState::Up);
    assert_eq!(timer.take()[0].0, 2 * LINK_POLL_NS);
    timer.now.set(250_000_000);
    assert!(dev.link_state(&mut cx) == LinkState::Down);
    assert_eq!(reads.get(), 4);
}

#[test]
fn capabilities_and_address() {
    let q: RxQueue<Inline<N>> = RxQueue::new();
    let mac = tap_mac(q.consumer(), linklab_mac::NoClock);
    let burst = mac.max_burst_size();
    let dev = EmbassyMac::new(mac, AlwaysUp);
    let caps = dev.capabilities();
    assert_eq!(caps.max_transmission_unit, 1514);
    assert_eq!(caps.max_burst_size, burst);
    assert!(burst.is_some());
    assert!(dev.hardware_address() == HardwareAddress::Ethernet(ME.0));
}

/// Holds frames tagged 1 while `open` is false, drops frames tagged 3; records the frames
/// it saw received and sent; refuses transmit tokens while `hold_tx` is set.
#[derive(Default)]
struct TestGate {
    open: Rc<Cell<bool>>,
    seen: Rc<RefCell<Vec<u8>>>,
    sent: Rc<RefCell<Vec<usize>>>,
    hold_tx: Rc<Cell<bool>>,
}

impl FrameGate for TestGate {
    fn admit(&mut self, f: &[u8], _w: &Waker) -> Admit {
        self.seen.borrow_mut().push(f[14]);
        match f[14] {
            1 if !self.open.get() => Admit::Hold,
            3 => Admit::Drop,
            _ => Admit::Pass,
        }
    }

    fn sent(&mut self, frame: &[u8]) {
        self.sent.borrow_mut().push(frame.len());
    }

    fn hold_tx(&mut self, _waker: &Waker) -> bool {
        self.hold_tx.get()
    }
}

#[test]
fn a_gate_holds_a_frame_at_the_head_until_it_lets_it_go() {
    let q: RxQueue<Inline<N>> = RxQueue::new();
    let (producer, consumer) = q.split();
    let mac = tap_mac(consumer, linklab_mac::NoClock);
    let gate = TestGate::default();
    let (open, seen, sent) = (gate.open.clone(), gate.seen.clone(), gate.sent.clone());
    let mut dev = EmbassyMac::new(mac, AlwaysUp).with_gate(gate);
    let (_count, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    assert!(producer.push(&frame_to_me(1)));
    assert!(producer.push(&frame_to_me(2)));
    assert!(dev.receive(&mut cx).is_none(), "held");
    assert!(
        dev.receive(&mut cx).is_none(),
        "still held; nothing behind it passes"
    );
    // The held frame is out of the queue, counted and kept for the stack; the next waits.
    let c = dev.mac().counters();
    assert_eq!((c.rx_packets, c.rx_pending()), (1, 1));
    open.set(true);
    for want in [1, 2] {
        let (rx, _) = dev.receive(&mut cx).expect("let go, in order");
        assert_eq!(rx.consume(|f: &mut [u8]| f[14]), want);
    }
    assert_eq!(*seen.borrow(), [1, 1, 1, 2]);
    // A dropped frame never reaches the stack; the one behind it does.
    assert!(producer.push(&frame_to_me(3)));
    assert!(producer.push(&frame_to_me(4)));
    let (rx, _) = dev
        .receive(&mut cx)
        .expect("the frame behind the dropped one");
    assert_eq!(rx.consume(|f: &mut [u8]| f[14]), 4);
    assert_eq!(dev.mac().counters().rx_pending(), 0);
    // What the stack sends is shown to the gate once built.
    let tx = dev.transmit(&mut cx).expect("a TX token");
    tx.consume(60, |f: &mut [u8]| f.fill(0));
    assert_eq!(*sent.borrow(), [60]);
    dev.mac().counters().check_conservation().unwrap();
}

#[test]
fn a_gate_holding_transmission_gets_the_stack_no_token_and_receiving_goes_on() {
    let q: RxQueue<Inline<N>> = RxQueue::new();
    let (producer, consumer) = q.split();
    let mac = tap_mac(consumer, linklab_mac::NoClock);
    let gate = TestGate::default();
    gate.open.set(true);
    gate.hold_tx.set(true);
    let (hold, sent) = (gate.hold_tx.clone(), gate.sent.clone());
    let mut dev = EmbassyMac::new(mac, AlwaysUp).with_gate(gate);
    let (_count, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    assert!(dev.transmit(&mut cx).is_none(), "held: no token");
    // Received frames still reach the stack (with the token pair for a reply).
    assert!(producer.push(&frame_to_me(2)));
    let (rx, _) = dev.receive(&mut cx).expect("receiving is not held");
    assert_eq!(rx.consume(|f: &mut [u8]| f[14]), 2);
    hold.set(false);
    let tx = dev.transmit(&mut cx).expect("let go: a token");
    tx.consume(60, |f: &mut [u8]| f.fill(0));
    assert_eq!(*sent.borrow(), [60]);
    let c = dev.mac().counters();
    assert_eq!((c.tx_requests, c.tx_packets), (1, 1));
    c.check_conservation().unwrap();
}

#[test]
fn a_full_transmit_ring_hands_out_no_token_and_asks_to_look_again() {
    let q: RxQueue<Inline<N>> = RxQueue::new();
    let timer = TestTimer::default();
    let ring = Ring::default();
    ring.free.set(2);
    // No line timing (rate 0): only the ring holds frames back.
    let mac = Mac::new(
        q.consumer(),
        ring.clone(),
        timer.clone(),
        MacConfig::raw_phy(ME, 0),
    );
    let mut dev = EmbassyMac::new(mac, AlwaysUp);
    let (count, waker) = counting_waker();
    let mut cx = Context::from_waker(&waker);
    for tag in [b"one", b"two"] {
        let t = dev.transmit(&mut cx).expect("a buffer is free");
        t.consume(60, |f: &mut [u8]| fill_frame(f, PEER, ME, tag));
    }
    assert!(timer.take().is_empty());
    // The ring is full: no token (a frame built now would be dropped), and the timer is
    // asked to wake the stack to look again; a received frame waits too.
    timer.now.set(1_000);
    assert!(dev.transmit(&mut cx).is_none());
    q.producer().push(&frame_to_me(7));
    assert!(dev.receive(&mut cx).is_none());
    let asked = timer.take();
    assert!(!asked.is_empty());
    assert!(asked
        .iter()
        .all(|(at, _)| *at == 1_000 + linklab_mac::embassy::TX_FULL_RETRY_NS));
    // ... and the stack's task is the one woken.
    for (_, w) in &asked {
        w.wake_by_ref();
    }
    assert_eq!(count.0.load(Ordering::SeqCst), asked.len());
    // A buffer completes: the next frame goes, nothing was dropped.
    ring.free.set(1);
    let t = dev.transmit(&mut cx).expect("a buffer freed");
    t.consume(60, |f: &mut [u8]| fill_frame(f, PEER, ME, b"three"));
    assert_eq!(ring.sent.borrow().len(), 3);
    assert_eq!(ring.dropped.get(), 0);
    let c = dev.mac().counters();
    assert_eq!((c.tx_requests, c.tx_packets, c.tx_dropped), (3, 3, 0));
    c.check_conservation().unwrap();
}
