//! The MAC over an Ethernet controller that hands over frames with their FCS
//! (`MacConfig::aligned_fcs`) accounts for every frame and hands frames over unchanged.
//! `scripts/check` runs this file both with the default features and with
//! `--no-default-features`, the build the NIC images link (no `soft-framing`); the TAP
//! format's tests are in `mac_behaviour.rs`, which runs in both builds too.

mod common;

use common::*;
use linklab_mac::frame::MIN_FRAME_LEN;
use linklab_mac::{Inline, Mac, MacAddr, MacConfig, NoClock, RxProducer, RxQueue, TxError};
use proptest::prelude::*;

/// A frame of `len` bytes (header + a counting payload) to `dst`.
fn frame(dst: MacAddr, len: usize) -> Vec<u8> {
    let payload: Vec<u8> = (0..len - 14).map(|i| (i * 7 + 3) as u8).collect();
    let mut f = vec![0u8; len];
    fill_frame(&mut f, dst, PEER, &payload);
    f
}

/// `f` followed by its FCS, computed by an independent CRC-32 (crc-fast), least significant
/// byte first: what a controller that keeps the FCS puts in its RX FIFO.
fn with_fcs(f: &[u8]) -> Vec<u8> {
    let crc = crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, f) as u32;
    let mut w = f.to_vec();
    w.extend_from_slice(&crc.to_le_bytes());
    w
}

/// The queue's storage in these tests: room for a few full frames.
type Storage = Inline<8192>;

/// Runs `f` with a MAC in `config` over a fresh queue, the queue's producer (the driver's
/// side) and what the MAC transmitted.
fn with_mac<R>(
    config: MacConfig,
    f: impl FnOnce(RxProducer<'_, Storage>, &mut Mac<'_, Storage, Recorder, NoClock>, &Recorder) -> R,
) -> R {
    let q: RxQueue<Storage> = RxQueue::new();
    let sent = Recorder::default();
    let mut mac = Mac::new(q.consumer(), sent.clone(), NoClock, config);
    f(q.producer(), &mut mac, &sent)
}

#[test]
fn aligned_fcs_accounts_for_every_frame() {
    with_mac(MacConfig::aligned_fcs(ME), |p, mac, _| {
        let good = frame(ME, 100);
        let mut corrupt = with_fcs(&frame(ME, 100));
        corrupt[40] ^= 0x10;
        let cases = [
            with_fcs(&good),
            corrupt,
            with_fcs(&frame(ME, MIN_FRAME_LEN - 1)),
            with_fcs(&frame(ME, 1515)),
            with_fcs(&frame(PEER, 100)),
            with_fcs(&frame(MacAddr::BROADCAST, MIN_FRAME_LEN)),
        ];
        for c in &cases {
            assert!(p.push(c));
        }
        let mut got = Vec::new();
        while let Some(f) = mac.receive() {
            mac.counters().check_conservation().unwrap();
            got.push(f.to_vec());
        }
        assert_eq!(got, vec![good, frame(MacAddr::BROADCAST, MIN_FRAME_LEN)]);
        let c = mac.counters();
        let buckets = (
            c.rx_packets,
            c.rx_crc_errors,
            c.rx_short_length_errors,
            c.rx_long_length_errors,
            c.rx_filtered,
        );
        assert_eq!(buckets, (2, 1, 1, 1, 1));
        assert_eq!(rx_outcomes(&c), cases.len() as u64);
        c.check_conservation().unwrap();
    });
}

#[test]
fn plain_transmit_is_the_frame_as_built() {
    with_mac(MacConfig::aligned_fcs(ME), |_, mac, sent| {
        for len in [42, MIN_FRAME_LEN, 1514, 1518] {
            let want = frame(PEER, len);
            mac.transmit(len, |f| f.copy_from_slice(&want)).unwrap();
            // No padding, no FCS: the controller adds them.
            assert_eq!(sent.take(), vec![want]);
        }
        assert_eq!(mac.transmit(1519, |_| ()), Err(TxError::TooLong));
        assert!(sent.take().is_empty());
        let c = mac.counters();
        assert_eq!((c.tx_packets, c.tx_dropped), (4, 1));
    });
}

proptest! {
    /// Any frame a controller hands over with a good FCS arrives unchanged; any single bit
    /// flipped anywhere in it (the FCS included) is a CRC error, never a delivered frame.
    #[test]
    fn aligned_fcs_delivers_good_frames_and_drops_flipped_bits(
        len in MIN_FRAME_LEN..=1514usize,
        bit in any::<prop::sample::Index>(),
    ) {
        with_mac(MacConfig::aligned_fcs(ME), |p, mac, _| {
            let f = frame(ME, len);
            let wire = with_fcs(&f);
            let mut flipped = wire.clone();
            let b = bit.index(wire.len() * 8);
            flipped[b / 8] ^= 1 << (b % 8);
            prop_assert!(p.push(&wire));
            prop_assert!(p.push(&flipped));
            let got: Vec<u8> = mac.receive().map(|r| r.to_vec()).unwrap_or_default();
            prop_assert_eq!(got, f);
            prop_assert!(mac.receive().is_none());
            let c = mac.counters();
            prop_assert_eq!((c.rx_packets, c.rx_crc_errors), (1, 1));
            prop_assert!(c.check_conservation().is_ok());
            Ok(())
        })?;
    }
}
