//! A sweep document read back: an older file is upgraded once, and its words.

use linklab_results::sweep::text::{limit_line, summary};
use linklab_results::sweep::{KneeRule, Limit, Step, SweepReport};

/// A file written before the limits existed (a sender-side shaper, knee 300 by loss
/// alone) is classified and its knee recomputed once; a current file is left alone.
#[test]
fn older_files_are_upgraded_once() {
    let text = include_str!("data/sweep_before_limits.json");
    let mut r: SweepReport = serde_json::from_str(text).unwrap();
    assert_eq!(r.knee_bps, Some(300e6));
    let note = r.upgrade().expect("an older file");
    assert!(note.contains("300 Mbit/s, by loss < 0.1 % alone"), "{note}");
    assert_eq!(r.knee_bps, Some(150e6));
    assert_eq!(
        r.knee_rule,
        Some(KneeRule {
            confirm: 1,
            ..KneeRule::default()
        })
    );
    let at = r.limited_at.clone().unwrap();
    assert_eq!(at.offered_bps, 200e6);
    assert!(at.limits.contains(&Limit::Sender));
    assert!(r.steps[..3].iter().all(|s| s.limits.is_empty()));
    assert!(r.steps[3..]
        .iter()
        .all(|s| s.limits.contains(&Limit::Sender)));
    // Written again, it is a current file.
    let again: SweepReport = serde_json::from_str(&serde_json::to_string(&r).unwrap()).unwrap();
    let mut again = again;
    assert_eq!(again.upgrade(), None);
    assert_eq!(again.knee_bps, Some(150e6));
    let text = summary(&again);
    assert!(text.contains("knee: 150 Mbit/s (highest offered rate with received within 5 % of offered and loss < 0.1 %; each rate measured once)"), "{text}");
    assert!(
        text.contains("limit: receiver loss + sender could not keep up at 200 Mbit/s offered (sent 146 Mbit/s, received 146 Mbit/s, loss 0.168 %)"),
        "{text}"
    );
}

#[test]
fn no_limit_reached_says_so() {
    let step = |mbit: f64| Step {
        offered_bps: mbit * 1e6,
        sent_bps: mbit * 1e6,
        received_bps: mbit * 1e6,
        ..Step::default()
    };
    let r = SweepReport {
        kind: "sweep".into(),
        host: "h".into(),
        port: 5201,
        protocol: "udp".into(),
        iperf: "iperf3".into(),
        reverse: false,
        duration_s: 1,
        length: None,
        steps: vec![step(10.0), step(20.0)],
        knee_rule: Some(KneeRule::default()),
        knee_bps: Some(20e6),
        limited_at: None,
        peak: None,
        collapse: None,
    };
    assert_eq!(
        limit_line(&r),
        "none reached: every step up to 20.0 Mbit/s tracked, the knee is at or above it"
    );
}
