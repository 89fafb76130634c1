//! The soft PHY's receive interrupt as firmware runs it (firmware/riscv32-virt's
//! `phy10_line` image): arbitrary captures, each decoded by linklab-phy10's `RxInterrupt`
//! straight into a grant of linklab-mac's RX queue (committed or cancelled), or counted
//! missed when the queue is full; the MAC checks the FCS (`MacConfig::decoding_phy`). Must
//! never panic, and the law across PHY and MAC must hold after every capture.
//!
//! Input layout: byte 0 picks the oversampling factor (4..=8) and how often the main loop
//! drains the queue; then captures, each a 2-byte little-endian length and that many bytes
//! of packed samples.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_mac::{Inline, Mac, MacAddr, MacConfig, NoClock, RxQueue};
use linklab_phy10::{Capture, Oversample, RxInterrupt};

const ME: MacAddr = MacAddr([0x02, 0x4c, 0x4c, 0, 0, 2]);

fuzz_target!(|data: &[u8]| {
    let Some((&mode, mut input)) = data.split_first() else {
        return;
    };
    let os = Oversample::new(4 + mode % 5).expect("4..=8");
    let drain_every = 1 + (mode >> 4) as u32;
    let q: RxQueue<Inline<8192>> = RxQueue::new();
    let producer = q.producer();
    let mut mac = Mac::new(
        q.consumer(),
        |_: &[u8]| {},
        NoClock,
        MacConfig::decoding_phy(ME, 0),
    );
    let mut rx = RxInterrupt::new(os);
    let mut i = 0u32;
    while input.len() >= 2 {
        let len = u16::from_le_bytes([input[0], input[1]]) as usize % 16_000;
        input = &input[2..];
        let (capture, tail) = input.split_at(len.min(input.len()));
        input = tail;
        let words: Vec<u32> = capture
            .chunks(4)
            .map(|c| c.iter().rev().fold(0u32, |w, &b| (w << 8) | b as u32))
            .collect();
        let capture = Capture::new(&words, capture.len() * 8);
        match producer.grant() {
            Ok(mut grant) => {
                let n = rx.receive(&capture, grant.buf());
                assert!(n <= grant.buf().len());
                grant.commit(n);
            }
            Err(_) => {
                if rx.receive_without_grant(&capture) {
                    producer.record_missed();
                }
            }
        }
        i += 1;
        if i % drain_every == 0 {
            while let Some(f) = mac.receive() {
                assert!(f.len() >= 14 && f.len() <= 1518);
            }
        }
        let c = mac.counters();
        let p = rx.counters();
        assert_eq!(c.check_conservation(), Ok(()), "{c:?}");
        assert_eq!(c.rx_committed, p.frames + p.truncated, "{c:?} {p:?}");
        assert_eq!(
            c.rx_cancelled,
            p.empty + p.link_pulses + p.noise,
            "{c:?} {p:?}"
        );
        assert_eq!(c.rx_missed_errors, p.missed, "{c:?} {p:?}");
        let buckets = p.frames + p.truncated + p.empty + p.link_pulses + p.noise + p.missed;
        assert_eq!(u64::from(i), buckets, "{p:?}");
    }
});
