//! The driver against a register model of the W5500 (tests/model): bring-up, bursts into the
//! MAC's queue, the transactions each costs, the rings' wrap, a full queue, refused length
//! headers, sending while the last frame is on the line, refused SENDs (tests/smoltcp.rs:
//! smoltcp answering a ping through linklab-mac over it).

mod model;

use std::cell::RefCell;
use std::rc::Rc;

use linklab_mac::{Inline, Mac, MacAddr, MacConfig, NoClock, PhyTx, RxQueue};
use linklab_w5500::{
    regs, Config, Counters, InitError, Next, Runner, SharedCounters, TxQueue, W5500Tx, W5500,
};
use model::{block_on, Chip, ModelBus, ModelClock, ModelCs, ModelDelay, ModelInt, Shared};

const MAC: [u8; 6] = [0x02, 0x4c, 0x4c, 0x00, 0x00, 0x02];
/// Four full frames: the queue a test fills.
const QUEUE: usize = linklab_mac::window::capacity_for_frames(4, linklab_w5500::RX_FORMAT);

type Queue = RxQueue<Inline<QUEUE>>;
type TestRunner<'a> =
    Runner<'a, ModelBus, ModelCs, ModelInt, ModelDelay, ModelClock, Inline<QUEUE>, fn(bool), 3>;

/// A frame to our MAC of `len` bytes, its payload counting from `seed`.
fn frame(len: usize, seed: u8) -> Vec<u8> {
    let mut f: Vec<u8> = (0..len).map(|i| seed.wrapping_add(i as u8)).collect();
    f[..6].copy_from_slice(&MAC);
    f[6..12].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[12..14].copy_from_slice(&[0x88, 0xb5]);
    f
}

/// The chip brought up, its runner over `queue` and `tx`.
fn runner<'a>(
    chip: &Shared,
    queue: &'a Queue,
    tx: &'a TxQueue<3>,
    counters: &'a SharedCounters,
) -> TestRunner<'a> {
    let w = W5500::new(ModelBus(chip.clone()), ModelCs(chip.clone()));
    let mut rst = ModelCs(Rc::new(RefCell::new(Chip::new())));
    let up = block_on(w.init(
        Some(&mut rst),
        Config::new(MAC),
        &mut ModelDelay(chip.clone()),
    ))
    .expect("the model answers");
    fn link(_: bool) {}
    Runner::new(
        up,
        ModelInt(chip.clone()),
        ModelDelay(chip.clone()),
        ModelClock(chip.clone()),
        queue.producer(),
        tx,
        counters,
        link as fn(bool),
    )
}

/// A MAC reading `queue`, sending through `tx`.
fn mac<'a>(
    queue: &'a Queue,
    tx: W5500Tx<'a, 3>,
) -> Mac<'a, Inline<QUEUE>, W5500Tx<'a, 3>, NoClock> {
    Mac::new(queue.consumer(), tx, NoClock, MacConfig::tap(MacAddr(MAC)))
}

fn new_chip() -> Shared {
    Rc::new(RefCell::new(Chip::new()))
}

#[test]
fn init_opens_macraw_with_the_filter_and_the_whole_buffers() {
    let chip = new_chip();
    let (q, tx, c) = (Queue::new(), TxQueue::new(), SharedCounters::new());
    let _r = runner(&chip, &q, &tx, &c);
    let m = chip.borrow();
    assert_eq!(m.socket[0x03], regs::SR_MACRAW);
    assert_eq!(
        m.socket[0x00],
        0x04 | 0x80 | 0x10 | 0x20,
        "MACRAW, MFEN, MIP6B, MMB"
    );
    assert_eq!((m.socket[0x1e], m.socket[0x1f]), (16, 16));
    assert_eq!((m.socket[0x2c], m.common[0x18]), (regs::IR_RECV, 1));
    assert_eq!(&m.common[0x09..0x0f], &MAC);
    drop(m);
    // No W5500 on the bus: every byte reads 0, so VERSIONR too.
    let other = new_chip();
    other.borrow_mut().absent = true;
    let w = W5500::new(ModelBus(other.clone()), ModelCs(other.clone()));
    let r = block_on(w.init::<ModelCs>(None, Config::new(MAC), &mut ModelDelay(other.clone())));
    assert_eq!(r.err(), Some(InitError::NotFound(0)));
}

#[test]
fn a_burst_is_read_whole_into_the_queue_in_few_transactions() {
    let chip = new_chip();
    let (q, tx, c) = (Queue::new(), TxQueue::new(), SharedCounters::new());
    let mut r = runner(&chip, &q, &tx, &c);
    let frames: Vec<Vec<u8>> = (0..4)
        .map(|k| frame([60, 1514, 700, 61][k], k as u8))
        .collect();
    for f in &frames {
        assert!(chip.borrow_mut().receive(f));
    }
    chip.borrow_mut().log.clear();
    assert_eq!(block_on(r.service()), Next::Idle);
    let log = chip.borrow().log.clone();
    // Sn_IR cleared, one pointer read, one SPI frame per received frame, Sn_RX_RD and RECV.
    assert_eq!(log.len(), 2 + frames.len() + 2, "{log:#?}");
    assert_eq!((log[0].block, log[0].offset, log[0].write), (1, 0x02, true));
    assert_eq!(
        (log[1].offset, log[1].data),
        (0x22, 6),
        "Sn_TX_RD..Sn_RX_RSR at once"
    );
    for (t, f) in log[2..6].iter().zip(&frames) {
        assert_eq!(
            (t.block, t.write, t.data),
            (3, false, 2 + f.len()),
            "header and frame together"
        );
        // Every frame by DMA, the header polled.
        assert_eq!(t.dma_bytes, f.len());
    }
    assert_eq!((log[6].offset, log[7].offset), (0x28, 0x01));
    assert_eq!(chip.borrow().rsr(), 0, "RECV released them all");
    assert!(!chip.borrow().int_low());
    let mut m = mac(&q, tx.producer());
    for f in &frames {
        assert_eq!(&m.receive().expect("a frame")[..], &f[..]);
    }
    let n = c.snapshot();
    assert_eq!((n.rx_frames, n.rx_bursts, n.rx_bad_headers), (4, 1, 0));
    assert_eq!(n.rx_bytes, 60 + 1514 + 700 + 61);
}

#[test]
fn pointers_wrap_both_rings_and_the_16_bit_counters() {
    let chip = new_chip();
    let (q, tx, c) = (Queue::new(), TxQueue::new(), SharedCounters::new());
    let mut r = runner(&chip, &q, &tx, &c);
    let mut m = mac(&q, tx.producer());
    // 60 000 bytes each way: the 16 KB rings wrap three times, the 16-bit pointers once.
    let mut seed = 0u8;
    let mut moved = 0;
    while moved < 60_000 {
        let f = frame(1000 + seed as usize, seed);
        assert!(chip.borrow_mut().receive(&f));
        block_on(r.service());
        assert_eq!(&m.receive().expect("the frame")[..], &f[..]);
        m.transmit(f.len(), |b| b.copy_from_slice(&f))
            .expect("sent");
        block_on(r.service());
        chip.borrow_mut().advance(200_000);
        assert_eq!(
            chip.borrow().sent.last(),
            Some(&f),
            "the frame left as it was built"
        );
        moved += f.len();
        seed = seed.wrapping_add(7);
    }
    let n = c.snapshot();
    assert_eq!(n.rx_frames, n.tx_frames);
    assert_eq!(
        (n.rx_bad_headers, n.tx_send_retries, n.spi_errors),
        (0, 0, 0)
    );
}

#[test]
fn a_full_queue_leaves_frames_in_the_chip_until_there_is_room() {
    let chip = new_chip();
    let (q, tx, c) = (Queue::new(), TxQueue::new(), SharedCounters::new());
    let mut r = runner(&chip, &q, &tx, &c);
    let frames: Vec<Vec<u8>> = (0..9).map(|k| frame(1514, k)).collect();
    for f in &frames {
        assert!(chip.borrow_mut().receive(f));
    }
    assert_eq!(
        block_on(r.service()),
        Next::Retry,
        "no room: look again later"
    );
    let held = c.snapshot().rx_frames as usize;
    assert!((4..9).contains(&held), "the queue took {held}");
    assert!(chip.borrow().rsr() > 0, "the rest wait in the chip");
    let mut m = mac(&q, tx.producer());
    let mut got = Vec::new();
    while got.len() < frames.len() {
        while let Some(f) = m.receive() {
            got.push(f.to_vec());
        }
        block_on(r.service());
    }
    assert_eq!(got, frames, "every frame, in order, none lost");
    let n: Counters = c.snapshot();
    assert!(n.rx_queue_full >= 1);
    assert_eq!(m.counters().rx_missed_errors, 0);
}

#[test]
fn a_glitched_length_header_is_refused_counted_and_read_again() {
    let chip = new_chip();
    chip.borrow_mut().corrupt_every = 3;
    let (q, tx, c) = (Queue::new(), TxQueue::new(), SharedCounters::new());
    let mut r = runner(&chip, &q, &tx, &c);
    let mut m = mac(&q, tx.producer());
    let mut got = 0;
    for k in 0..40u8 {
        let f = frame(100 + k as usize, k);
        assert!(chip.borrow_mut().receive(&f));
        block_on(r.service());
        while block_on(r.service()) != Next::Idle {}
        assert_eq!(&m.receive().expect("the frame, whole")[..], &f[..]);
        got += 1;
    }
    assert_eq!(got, 40);
    let n = c.snapshot();
    assert_eq!(
        n.rx_bad_headers,
        chip.borrow().corrupted,
        "each glitch counted once"
    );
    assert!(n.rx_bad_headers >= 10);
    assert_eq!(
        (n.rx_resyncs, n.rx_dropped_bytes),
        (0, 0),
        "a glitch passes: nothing given up"
    );
}

#[test]
fn a_corrupt_ring_is_given_up_counted_and_the_driver_goes_on() {
    let chip = new_chip();
    let (q, tx, c) = (Queue::new(), TxQueue::new(), SharedCounters::new());
    let mut r = runner(&chip, &q, &tx, &c);
    let mut m = mac(&q, tx.producer());
    for k in 0..3 {
        chip.borrow_mut().receive(&frame(200, k));
    }
    // The first frame's header itself is wrong in the chip: every read of it says 3.
    chip.borrow_mut().smash(0, 3);
    while block_on(r.service()) != Next::Idle {}
    let n = c.snapshot();
    assert_eq!((n.rx_bad_headers, n.rx_resyncs), (1, 1));
    assert_eq!(n.rx_dropped_bytes, 3 * 202);
    assert!(
        m.receive().is_none(),
        "nothing of the corrupt ring was trusted"
    );
    let f = frame(300, 9);
    chip.borrow_mut().receive(&f);
    while block_on(r.service()) != Next::Idle {}
    assert_eq!(&m.receive().expect("the next frame")[..], &f[..]);
}

#[test]
fn frames_are_written_while_the_last_is_sent_and_never_sent_before_it_left() {
    let chip = new_chip();
    let (q, tx, c) = (Queue::new(), TxQueue::new(), SharedCounters::new());
    let mut r = runner(&chip, &q, &tx, &c);
    let mut m = mac(&q, tx.producer());
    // Full frames take 412 µs to write and 123 µs on the line; a 60-byte one written
    // after a full one is written in 17 µs, while the full one is still on the line.
    let frames: Vec<Vec<u8>> = (0..30)
        .map(|k| frame(if k % 3 == 0 { 60 } else { 1514 }, k))
        .collect();
    let mut next = 0;
    while chip.borrow().sent.len() < frames.len() {
        // As the MAC's Device and Driver do: a frame only while a slot is free.
        while next < frames.len() && m.phy_mut().ready() {
            let f = &frames[next];
            m.transmit(f.len(), |b| b.copy_from_slice(f))
                .expect("queued");
            next += 1;
        }
        block_on(r.service());
        chip.borrow_mut().advance(1_000);
    }
    let model = chip.borrow();
    assert_eq!(model.sent, frames, "in order, as built");
    assert_eq!(
        model.send_while_busy, 0,
        "no SEND before the last one's frame left"
    );
    let frame_writes: Vec<_> = model.log.iter().filter(|t| t.block == 2).collect();
    assert_eq!(frame_writes.len(), frames.len());
    assert!(frame_writes.iter().all(|t| t.dma_bytes == t.data));
    // Registers polled.
    assert!(model
        .log
        .iter()
        .filter(|t| t.block == 1)
        .all(|t| t.dma_bytes == 0));
    assert_eq!(c.snapshot().tx_frames, 30);
}

#[test]
fn a_refused_send_is_issued_again_and_twice_refused_the_socket_reopens() {
    let chip = new_chip();
    chip.borrow_mut().refuse_every = 4;
    let (q, tx, c) = (Queue::new(), TxQueue::new(), SharedCounters::new());
    let mut r = runner(&chip, &q, &tx, &c);
    let mut m = mac(&q, tx.producer());
    for k in 0..12u8 {
        let f = frame(500, k);
        m.transmit(f.len(), |b| b.copy_from_slice(&f))
            .expect("queued");
        while block_on(r.service()) != Next::Idle {}
        chip.borrow_mut()
            .advance(linklab_w5500::SEND_TIMEOUT_NS + 1);
        while block_on(r.service()) != Next::Idle {}
        chip.borrow_mut().advance(100_000);
    }
    let n = c.snapshot();
    assert_eq!(chip.borrow().sent.len(), 12, "every frame left");
    assert_eq!(
        n.tx_send_retries,
        chip.borrow().refused,
        "each refusal retried once"
    );
    assert_eq!(n.socket_reopens, 0);
    // Every SEND refused: retried, then the socket reopened; the driver goes on.
    chip.borrow_mut().refuse_every = 1;
    let f = frame(100, 1);
    m.transmit(f.len(), |b| b.copy_from_slice(&f))
        .expect("queued");
    block_on(r.service());
    chip.borrow_mut()
        .advance(linklab_w5500::SEND_TIMEOUT_NS + 1);
    block_on(r.service());
    chip.borrow_mut()
        .advance(linklab_w5500::SEND_TIMEOUT_NS + 1);
    block_on(r.service());
    assert_eq!(c.snapshot().socket_reopens, 1);
    assert_eq!(chip.borrow().socket[0x03], regs::SR_MACRAW, "open again");
    chip.borrow_mut().refuse_every = 0;
    let g = frame(100, 2);
    m.transmit(g.len(), |b| b.copy_from_slice(&g))
        .expect("queued");
    while block_on(r.service()) != Next::Idle {}
    chip.borrow_mut().advance(100_000);
    assert_eq!(chip.borrow().sent.last(), Some(&g));
}

#[test]
fn a_frame_to_send_interrupts_a_burst_after_one_frame() {
    let chip = new_chip();
    let (q, tx, c) = (Queue::new(), TxQueue::new(), SharedCounters::new());
    let mut r = runner(&chip, &q, &tx, &c);
    let mut m = mac(&q, tx.producer());
    for k in 0..3 {
        chip.borrow_mut().receive(&frame(1514, k));
    }
    let ack = frame(60, 0xaa);
    m.transmit(ack.len(), |b| b.copy_from_slice(&ack))
        .expect("queued");
    assert_eq!(
        block_on(r.service()),
        Next::Again,
        "the ACK went between, more to read"
    );
    assert_eq!(c.snapshot().rx_frames, 1);
    assert_eq!(c.snapshot().tx_frames, 1);
    while block_on(r.service()) != Next::Idle {}
    assert_eq!(c.snapshot().rx_frames, 3);
}
