//! PAUSE both ways: received PAUSE holds the transmitter, receive watermarks send PAUSE and resume.

use super::*;

#[test]
#[cfg(feature = "soft-framing")]
fn received_pause_holds_transmitter_for_the_quanta() {
    let q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let rec = Recorder::default();
    let clock = ManualClock::default();
    let mut mac = Mac::new(
        q.consumer(),
        rec.clone(),
        clock.clone(),
        MacConfig::raw_phy(ME, 10_000_000),
    );
    let mut buf = [0u8; 80];
    let (n, _) = build(&mut buf, TxFormat::Wire, 60, |f| {
        pause::build_pause(f, PEER, 100)
    })
    .unwrap();
    assert!(q.producer().push(&buf[..n]));
    clock.set(5_000);
    assert!(mac.receive().is_none()); // consumed by the MAC
    assert_eq!(mac.counters().rx_pause_frames, 1);
    // 100 quanta × 512 bit times at 10 Mb/s = 5.12 ms.
    let until = 5_000 + 5_120_000;
    assert_eq!(mac.paused_until_ns(), until);
    mac.transmit(60, |f| fill_frame(f, PEER, ME, b"")).unwrap();
    assert!(rec.take().is_empty(), "paused");
    clock.set(until - 1);
    mac.poll();
    assert!(rec.take().is_empty(), "still paused");
    clock.set(until);
    mac.poll();
    assert_eq!(rec.take().len(), 1);

    // A PAUSE with zero quanta resumes at once.
    let (n, _) = build(&mut buf, TxFormat::Wire, 60, |f| {
        pause::build_pause(f, PEER, 0xFFFF)
    })
    .unwrap();
    assert!(q.producer().push(&buf[..n]));
    assert!(mac.receive().is_none());
    let (n, _) = build(&mut buf, TxFormat::Wire, 60, |f| {
        pause::build_pause(f, PEER, 0)
    })
    .unwrap();
    assert!(q.producer().push(&buf[..n]));
    clock.advance(1_000_000);
    assert!(mac.receive().is_none());
    mac.transmit(60, |f| fill_frame(f, PEER, ME, b"")).unwrap();
    assert_eq!(rec.take().len(), 1);
    let c = mac.counters();
    assert_eq!(c.rx_pause_frames, 3);
    c.check_conservation().unwrap();
}

/// A PAUSE from the wire near the end of the clock's range saturates instead of
/// overflowing (the quanta are wire input, the clock is the user's).
#[test]
#[cfg(feature = "soft-framing")]
fn received_pause_at_the_end_of_time_does_not_overflow() {
    let q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let clock = ManualClock::default();
    let mut mac = Mac::new(
        q.consumer(),
        Recorder::default(),
        clock.clone(),
        MacConfig::raw_phy(ME, 1),
    );
    let mut buf = [0u8; 80];
    let (n, _) = build(&mut buf, TxFormat::Wire, 60, |f| {
        pause::build_pause(f, PEER, 0xFFFF)
    })
    .unwrap();
    assert!(q.producer().push(&buf[..n]));
    clock.set(u64::MAX - 10);
    assert!(mac.receive().is_none());
    assert_eq!(mac.paused_until_ns(), u64::MAX);
    mac.transmit(60, |f| fill_frame(f, PEER, ME, b"")).unwrap();
    assert!(mac.tx_deferred());
    mac.counters().check_conservation().unwrap();
}

#[test]
#[cfg(feature = "soft-framing")]
fn rx_watermarks_send_pause_and_resume() {
    let q: RxQueue<Inline<16384>> = RxQueue::new();
    let p = q.producer();
    let rec = Recorder::default();
    let clock = ManualClock::default();
    let mut cfg = MacConfig::raw_phy(ME, 10_000_000);
    cfg.flow_control = Some(PauseWatermarks {
        high_bytes: 6000,
        low_bytes: 2000,
        quanta: 1000,
    });
    let mut mac = Mac::new(q.consumer(), rec.clone(), clock.clone(), cfg);
    let frame = wire_frame(ME, &[7; 1400]);
    for _ in 0..5 {
        assert!(p.push(&frame));
    }
    assert!(q.occupancy() >= 6000);
    clock.set(1_000);
    mac.poll();
    let sent = rec.take();
    assert_eq!(sent.len(), 1);
    let f = &sent[0][8..sent[0].len() - 4];
    assert_eq!(&f[0..6], &PAUSE_DESTINATION.0);
    assert_eq!(&f[6..12], &ME.0);
    assert_eq!(pause::parse(f), Some(MacControl::Pause { quanta: 1000 }));
    // Drain below the low watermark: a resume (quanta 0) follows once the gap has passed.
    clock.advance(1_000_000);
    let mut n = 0;
    while mac.receive().is_some() {
        n += 1;
    }
    assert_eq!(n, 5);
    mac.poll();
    let sent = rec.take();
    assert_eq!(sent.len(), 1);
    let f = &sent[0][8..sent[0].len() - 4];
    assert_eq!(pause::parse(f), Some(MacControl::Pause { quanta: 0 }));
    assert_eq!(mac.counters().tx_pause_frames, 2);
    // Off by default: the same fill sends nothing.
    let q2: RxQueue<Inline<16384>> = RxQueue::new();
    let rec2 = Recorder::default();
    let mut quiet = Mac::new(
        q2.consumer(),
        rec2.clone(),
        NoClock,
        MacConfig::raw_phy(ME, 10_000_000),
    );
    for _ in 0..5 {
        assert!(q2.producer().push(&frame));
    }
    quiet.poll();
    assert!(rec2.take().is_empty());
}

/// Without line timing (rate 0, a TAP) the pause time is unknown: PAUSE goes out once when
/// the queue crosses the high watermark, not on every poll.
#[test]
fn watermark_pause_without_line_timing_is_not_repeated_every_poll() {
    let q: RxQueue<Inline<16384>> = RxQueue::new();
    let rec = Recorder::default();
    let mut cfg = MacConfig::tap(ME);
    cfg.flow_control = Some(PauseWatermarks {
        high_bytes: 6000,
        low_bytes: 2000,
        quanta: 1000,
    });
    let mut mac = Mac::new(q.consumer(), rec.clone(), NoClock, cfg);
    let mut frame = vec![0u8; 1400];
    frame[..6].copy_from_slice(&ME.0);
    for _ in 0..5 {
        assert!(q.producer().push(&frame));
    }
    for _ in 0..10 {
        mac.poll();
    }
    let sent = rec.take();
    assert_eq!(sent.len(), 1, "one PAUSE, not one per poll");
    assert_eq!(
        pause::parse(&sent[0]),
        Some(MacControl::Pause { quanta: 1000 })
    );
    assert_eq!(mac.poll_at_ns(), None, "no refresh to wait for");
    while mac.receive().is_some() {}
    mac.poll();
    let sent = rec.take();
    assert_eq!(sent.len(), 1);
    assert_eq!(
        pause::parse(&sent[0]),
        Some(MacControl::Pause { quanta: 0 })
    );
    assert_eq!(mac.counters().tx_pause_frames, 2);
}
