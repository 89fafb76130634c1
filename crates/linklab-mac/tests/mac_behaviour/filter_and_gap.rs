//! The address filter and the inter-packet gap, with and without a clock.

use super::*;

#[test]
#[cfg(feature = "soft-framing")]
fn address_filter_in_the_mac() {
    let q: RxQueue<Inline<16384>> = RxQueue::new();
    let p = q.producer();
    let mut mac = Mac::new(
        q.consumer(),
        Recorder::default(),
        NoClock,
        MacConfig::raw_phy(ME, 0),
    );
    let group = MacAddr([0x01, 0x00, 0x5E, 0x00, 0x00, 0x07]);
    for dst in [ME, PEER, MacAddr::BROADCAST, group] {
        assert!(p.push(&wire_frame(dst, b"x")));
    }
    let mut got = Vec::new();
    while let Some(f) = mac.receive() {
        // The law holds while the stack still holds the frame.
        mac.counters().check_conservation().unwrap();
        got.push(MacAddr(f[0..6].try_into().unwrap()));
    }
    assert_eq!(got, vec![ME, MacAddr::BROADCAST]);
    assert_eq!(mac.counters().rx_filtered, 2);

    mac.filter_mut().add_multicast(group).unwrap();
    assert!(p.push(&wire_frame(group, b"x")));
    assert!(mac.receive().is_some());
    mac.filter_mut().promiscuous = true;
    assert!(p.push(&wire_frame(PEER, b"x")));
    assert!(mac.receive().is_some());
    let c = mac.counters();
    assert_eq!((c.rx_packets, c.rx_filtered), (4, 2));
    c.check_conservation().unwrap();
}

/// `peek` shows the frame `receive` delivers next, past the filtered and bad transmissions
/// ahead of it (released and counted as `receive` counts them): a look at the queue's head
/// alone showed a filtered IPv6 multicast while `receive` delivered the TCP SYN behind it,
/// which so passed `linklab serve`'s SYN rule by and got the stack's RST.
#[test]
#[cfg(feature = "soft-framing")]
fn peek_shows_the_frame_receive_delivers_next() {
    let q: RxQueue<Inline<16384>> = RxQueue::new();
    let p = q.producer();
    let mut mac = Mac::new(
        q.consumer(),
        Recorder::default(),
        NoClock,
        MacConfig::raw_phy(ME, 0),
    );
    let mld_report = MacAddr([0x33, 0x33, 0, 0, 0, 0x16]);
    let mut bad_fcs = wire_frame(ME, b"bad");
    *bad_fcs.last_mut().unwrap() ^= 0xff;
    for frame in [
        wire_frame(mld_report, b"mld"),
        bad_fcs,
        wire_frame(ME, b"first"),
        wire_frame(ME, b"second"),
    ] {
        assert!(p.push(&frame));
    }
    let says = |word: &'static [u8]| move |f: &[u8]| f[14..].starts_with(word);
    // Looked at twice, counted once.
    assert_eq!(mac.peek(says(b"first")), Some(true));
    assert_eq!(mac.peek(says(b"first")), Some(true));
    let c = mac.counters();
    assert_eq!((c.rx_packets, c.rx_filtered, c.rx_crc_errors), (1, 1, 1));
    c.check_conservation().unwrap();
    assert!(says(b"first")(&mac.receive().unwrap()));
    // A gate's refusal drops the frame peek showed, counted as received.
    assert_eq!(mac.peek(says(b"second")), Some(true));
    assert!(mac.drop_next());
    assert_eq!(mac.counters().rx_packets, 2);
    assert_eq!(mac.peek(|_| ()), None);
    assert!(!mac.drop_next());
    assert!(mac.receive().is_none());
    mac.counters().check_conservation().unwrap();
}

#[test]
#[cfg(feature = "soft-framing")]
fn inter_packet_gap_is_96_bit_times_after_the_end() {
    let q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let rec = Recorder::default();
    let clock = ManualClock::default();
    let mut mac = Mac::new(
        q.consumer(),
        rec.clone(),
        clock.clone(),
        MacConfig::raw_phy(ME, 10_000_000),
    );
    clock.set(1_000_000);
    mac.transmit(60, |f| fill_frame(f, PEER, ME, b"")).unwrap();
    assert_eq!(rec.take().len(), 1);
    // 72 bytes on the line at 10 Mb/s = 57.6 µs, then 9.6 µs of gap.
    let end = 1_000_000 + 57_600;
    let ready = end + 9_600;
    clock.set(end + 9_599);
    // Accepted, built, but deferred: not on the wire yet.
    mac.transmit(60, |f| fill_frame(f, PEER, ME, b"")).unwrap();
    assert!(rec.take().is_empty());
    assert!(mac.tx_deferred());
    assert_eq!(mac.poll_at_ns(), Some(ready));
    // A third frame must wait for the deferred one.
    assert_eq!(
        mac.transmit(60, |_| ()),
        Err(TxError::NotReady { ready_at_ns: ready })
    );
    let c = mac.counters();
    assert_eq!((c.tx_requests, c.tx_packets, c.tx_deferred), (2, 1, 1));
    c.check_conservation().unwrap();
    clock.set(ready);
    mac.poll();
    assert_eq!(rec.take().len(), 1);
    assert!(!mac.tx_deferred());
    let c = mac.counters();
    assert_eq!((c.tx_requests, c.tx_packets, c.tx_deferred), (2, 2, 0));
    assert_eq!(c.tx_bytes, 120);
    c.check_conservation().unwrap();
}

/// A clock that never moves keeps no line timing, whatever rate the configuration names:
/// frames leave back to back and a received PAUSE holds nothing (`Clock::TIMED`; the NIC
/// images' MAC links no timing code).
#[test]
#[cfg(feature = "soft-framing")]
fn without_a_clock_there_is_no_gap_and_no_pause_time() {
    let q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let p = q.producer();
    let rec = Recorder::default();
    let mut mac = Mac::new(
        q.consumer(),
        rec.clone(),
        NoClock,
        MacConfig::raw_phy(ME, 10_000_000),
    );
    let mut buf = [0u8; 80];
    let (n, _) = build(&mut buf, TxFormat::Wire, 60, |f| {
        pause::build_pause(f, PEER, 0xFFFF)
    })
    .unwrap();
    assert!(p.push(&buf[..n]));
    assert!(mac.receive().is_none()); // consumed by the MAC
    assert_eq!(mac.paused_until_ns(), 0);
    assert_eq!(mac.counters().rx_pause_frames, 1);
    for _ in 0..3 {
        mac.transmit(60, |f| fill_frame(f, PEER, ME, b"")).unwrap();
        assert_eq!(rec.take().len(), 1);
    }
    assert!(!mac.tx_deferred());
    assert_eq!(mac.poll_at_ns(), None);
    mac.counters().check_conservation().unwrap();
}
