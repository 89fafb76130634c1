//! Frame sizes (VLAN tags, MAC control, too long) and the TCP window formula against the queue.

use super::*;

#[test]
#[cfg(feature = "soft-framing")]
fn vlan_tagged_frames_may_be_1522_bytes() {
    let q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let mut mac = Mac::new(
        q.consumer(),
        Recorder::default(),
        NoClock,
        MacConfig::raw_phy(ME, 0),
    );
    let mut buf = vec![0u8; 1600];
    for (len, tagged, ok) in [
        (1518, true, true),
        (1519, true, false),
        (1514, false, true),
        (1515, false, false),
    ] {
        let (n, ()) = build(&mut buf, TxFormat::Wire, len.min(1518), |f| {
            f.fill(0x11);
            f[0..6].copy_from_slice(&ME.0);
            if tagged {
                f[12..14].copy_from_slice(&[0x81, 0x00]);
            }
        })
        .unwrap_or((0, ()));
        if len > 1518 {
            // TX refuses it; hand-make an over-long capture with a valid FCS instead.
            let mut w = vec![0x55u8; 7];
            w.push(0xD5);
            let mut fr = vec![0x11u8; len];
            fr[0..6].copy_from_slice(&ME.0);
            fr[12..14].copy_from_slice(&[0x81, 0x00]);
            let c = linklab_mac::fcs::fcs_bytes(&fr);
            w.extend_from_slice(&fr);
            w.extend_from_slice(&c);
            assert!(q.producer().push(&w));
        } else {
            let mut w = buf[..n].to_vec();
            if len == 1515 {
                // Untagged 1515: rebuild by hand (TX would accept 1515 as it allows tags).
                let mut fr = vec![0x11u8; 1515];
                fr[0..6].copy_from_slice(&ME.0);
                let c = linklab_mac::fcs::fcs_bytes(&fr);
                w = vec![0x55u8; 7];
                w.push(0xD5);
                w.extend_from_slice(&fr);
                w.extend_from_slice(&c);
            }
            assert!(q.producer().push(&w));
        }
        let got = mac.receive().map(|f| f.len());
        assert_eq!(got.is_some(), ok, "len {len} tagged {tagged}");
    }
    let c = mac.counters();
    assert_eq!((c.rx_packets, c.rx_long_length_errors), (2, 2));
    c.check_conservation().unwrap();
}

#[test]
#[cfg(feature = "soft-framing")]
fn tcp_window_formula() {
    // Stored length of a full segment in raw mode: 8 + 1514 + 4 + 1.
    assert_eq!(stored_len(RxFormat::Raw, 1514), 1527);
    // Find the smallest ring that always holds 9 full raw frames: Niccle's sweet spot.
    let n = (3076..40_000)
        .find(|&n| queue_frames(n, RxFormat::Raw, 1460) == 9)
        .unwrap();
    assert_eq!(tcp_rx_window(n, RxFormat::Raw, 1460), (9 - 2) * 1460);
    // Monotonic in capacity; one segment (not zero, which would stall TCP) when the queue
    // holds no more than the reserve.
    assert_eq!(tcp_rx_window(MIN_QUEUE_CAPACITY, RxFormat::Raw, 1460), 1460);
    assert_eq!(
        tcp_rx_window(capacity_for_frames(3, RxFormat::Raw), RxFormat::Raw, 1460),
        1460
    );
    let mut last = 0;
    for cap in (MIN_QUEUE_CAPACITY..40_000).step_by(97) {
        let w = tcp_rx_window(cap, RxFormat::Raw, 1460);
        assert!(w >= last);
        assert_eq!(w % 1460, 0);
        last = w;
    }
    assert_eq!(RESERVED_FRAMES, 2);
}

/// The window is safe: a peer that sends a whole window of full segments plus the two
/// reserved frames back to back never overruns the queue, from any drained position.
#[test]
#[cfg(feature = "soft-framing")]
fn a_full_window_burst_never_overruns() {
    const N: usize = 16384;
    let window = tcp_rx_window(N, RxFormat::Raw, 1460);
    let segments = window / 1460;
    assert!(segments >= 5, "window {window}");
    let seg = wire_frame(ME, &[0x42; 1500]); // 14 + 1500 bytes: a full TCP/IPv4 segment
    let mut capture = vec![0u8; seg.len() + 1];
    let n = linklab_mac::impair::shift_into(&mut capture, &seg, 5, false);
    assert_eq!(n, stored_len(RxFormat::Raw, 1514));
    for start in (0..N).step_by(61) {
        let q: RxQueue<Inline<N>> = RxQueue::new();
        let p = q.producer();
        let mut mac = Mac::new(
            q.consumer(),
            Recorder::default(),
            NoClock,
            MacConfig::raw_phy(ME, 0),
        );
        // Move the pointers to `start`, drained: steps of at most one grant footprint
        // (the last one as large as possible so it never wraps), none shorter than 3 bytes
        // (2 of header, 1 of data).
        let mut moved = 0;
        while moved < start {
            let left = start - moved;
            let step = if left <= GRANT_FOOTPRINT {
                left
            } else {
                (left - GRANT_FOOTPRINT).clamp(3, GRANT_FOOTPRINT)
            };
            if step < 3 {
                break; // 1 or 2 bytes short: not reachable with whole frames
            }
            assert!(p.push(&vec![0u8; step - FRAME_HEADER_LEN]));
            moved += step;
            while mac.receive().is_some() {}
        }
        assert!(start - moved < 3, "parked at {moved}, wanted {start}");
        assert!(q.occupancy() == 0 && mac.counters().rx_pending() == 0);
        for _ in 0..segments + RESERVED_FRAMES {
            assert!(p.push(&capture[..n]), "overrun at start {start}");
        }
        let mut got = 0;
        while mac.receive().is_some() {
            got += 1;
        }
        assert_eq!(got, segments + RESERVED_FRAMES);
        let c = mac.counters();
        assert_eq!(c.rx_missed_errors, 0);
        c.check_conservation().unwrap();
    }
}

#[test]
#[cfg(feature = "soft-framing")]
fn mac_control_other_than_pause_is_filtered_and_too_long_tx_dropped() {
    let q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let rec = Recorder::default();
    let mut mac = Mac::new(
        q.consumer(),
        rec.clone(),
        NoClock,
        MacConfig::raw_phy(ME, 0),
    );
    let mut buf = [0u8; 80];
    // PAUSE addressed to our unicast address is honoured like the multicast one.
    let (n, _) = build(&mut buf, TxFormat::Wire, 60, |f| {
        pause::build_pause(f, PEER, 1);
        f[0..6].copy_from_slice(&ME.0);
    })
    .unwrap();
    assert!(q.producer().push(&buf[..n]));
    // A PFC frame (opcode 0x0101) and a PAUSE to a third station are dropped.
    let (n2, _) = build(&mut buf, TxFormat::Wire, 60, |f| {
        pause::build_pause(f, PEER, 1);
        f[14..16].copy_from_slice(&[0x01, 0x01]);
    })
    .unwrap();
    let pfc = buf[..n2].to_vec();
    let (n3, _) = build(&mut buf, TxFormat::Wire, 60, |f| {
        pause::build_pause(f, PEER, 1);
        f[0..6].copy_from_slice(&[2, 7, 7, 7, 7, 7]);
    })
    .unwrap();
    assert!(q.producer().push(&pfc));
    assert!(q.producer().push(&buf[..n3]));
    assert!(mac.receive().is_none());
    let c = mac.counters();
    assert_eq!((c.rx_pause_frames, c.rx_filtered, c.rx_packets), (1, 2, 0));
    // TX: a frame above 1518 bytes is refused and counted.
    assert_eq!(mac.transmit(1519, |_| ()), Err(TxError::TooLong));
    assert!(rec.take().is_empty());
    let c = mac.counters();
    assert_eq!((c.tx_requests, c.tx_dropped, c.tx_packets), (1, 1, 0));
    c.check_conservation().unwrap();
}
