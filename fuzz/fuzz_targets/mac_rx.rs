//! Fuzz the RX path of linklab-mac: arbitrary bytes as PHY captures through the queue and
//! the MAC in every RX format. Must never panic, and the counters must balance.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_mac::{deframe, Inline, Mac, MacAddr, MacConfig, NoClock, RxFormat, RxQueue, TxFormat};

const ME: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 1]);

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let rx_format = match mode % 3 {
        0 => RxFormat::Raw,
        1 => RxFormat::Aligned { fcs: true },
        _ => RxFormat::Aligned { fcs: false },
    };

    // The deframer alone, on a copy of the whole input.
    let mut copy = rest.to_vec();
    if let Ok(r) = deframe(&mut copy, rx_format) {
        assert!(r.end <= copy.len());
    }

    // The whole path: input split into transmissions by 2-byte lengths; a high bit in
    // the mode byte makes the main loop read only every other transmission.
    let q: RxQueue<Inline<8192>> = RxQueue::new();
    let p = q.producer();
    let mut config = MacConfig::raw_phy(ME, 10_000_000);
    config.rx_format = rx_format;
    config.tx_format = TxFormat::Wire;
    let mut mac = Mac::new(q.consumer(), |_: &[u8]| {}, NoClock, config);
    mac.filter_mut().promiscuous = mode & 0x40 != 0;
    let mut input = rest;
    let mut i = 0u32;
    while input.len() >= 2 {
        let len = u16::from_le_bytes([input[0], input[1]]) as usize % 1700;
        input = &input[2..];
        let take = len.min(input.len());
        let (tx, tail) = input.split_at(take);
        input = tail;
        if tx.is_empty() {
            // A link pulse: grant and cancel.
            if let Ok(g) = p.grant() {
                g.cancel();
            }
        } else {
            p.push(tx);
        }
        if mode & 0x80 == 0 || i % 2 == 1 {
            while let Some(f) = mac.receive() {
                assert!(f.len() >= 14 && f.len() <= 1518);
            }
        }
        i += 1;
        let c = mac.counters();
        assert_eq!(c.check_conservation(), Ok(()), "{c:?}");
    }
    while mac.receive().is_some() {}
    let c = mac.counters();
    assert_eq!(c.check_conservation(), Ok(()));
    assert_eq!(c.rx_pending(), 0);
});
