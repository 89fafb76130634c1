//! The logging shim (linklab-fmt) with feature `log`: the MAC's diagnostics reach the `log`
//! facade with their level and arguments, e.g. a TX frame refused for its length and a
//! received PAUSE. (With `defmt` the same call sites go to defmt; the cross builds in
//! scripts/check compile that path.)
#![cfg(feature = "log")]

mod common;

use std::sync::Mutex;

use common::*;
use linklab_mac::pause::build_pause;
use linklab_mac::tx::{build, TxFormat};
use linklab_mac::{Inline, Mac, MacConfig, NoClock, RxQueue, TxError, MIN_QUEUE_CAPACITY};

/// Every record logged, as `LEVEL message`.
static RECORDS: Mutex<Vec<String>> = Mutex::new(Vec::new());

struct Recording;

impl log::Log for Recording {
    fn enabled(&self, _: &log::Metadata) -> bool {
        true
    }
    fn log(&self, record: &log::Record) {
        let line = format!("{} {}", record.level(), record.args());
        RECORDS.lock().unwrap().push(line);
    }
    fn flush(&self) {}
}

#[test]
fn the_mac_logs_a_refused_frame_and_a_pause_through_log() {
    log::set_logger(&Recording).unwrap();
    log::set_max_level(log::LevelFilter::Trace);

    let q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let mut mac = Mac::new(
        q.consumer(),
        Recorder::default(),
        NoClock,
        MacConfig::raw_phy(ME, 0),
    );
    assert_eq!(mac.transmit(1600, |_| ()), Err(TxError::TooLong));
    let mut buf = [0u8; 80];
    let (n, _) = build(&mut buf, TxFormat::Wire, 60, |f| build_pause(f, PEER, 7)).unwrap();
    assert!(q.producer().push(&buf[..n]));
    assert!(mac.receive().is_none());

    let records = RECORDS.lock().unwrap().clone();
    assert!(
        records.contains(&"WARN tx: 1600 byte frame dropped (over 1518)".to_string()),
        "{records:?}"
    );
    assert!(
        records.contains(&"DEBUG rx: PAUSE for 7 quanta".to_string()),
        "{records:?}"
    );
}
