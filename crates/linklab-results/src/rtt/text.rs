//! The words of an rtt document for people: `linklab rtt`'s tables.

use std::fmt::Write as _;

use super::distribution::Distribution;
use super::document::{RttReport, SizeReport};

/// The human-readable tables: round trips, then inter-arrival times, one row per size.
pub fn tables(r: &RttReport) -> String {
    let mut s = String::new();
    for (title, pick) in [
        (
            "round-trip time (µs)",
            (|x: &SizeReport| &x.rtt) as fn(&SizeReport) -> &Distribution,
        ),
        (
            "inter-arrival time of the replies (µs)",
            |x: &SizeReport| &x.interarrival,
        ),
    ] {
        let _ = writeln!(s, "\n{title}");
        let _ = writeln!(
            s,
            "{:>6} {:>7} {:>7} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>10}",
            "size",
            "sent",
            "recv",
            "loss%",
            "min",
            "p50",
            "p90",
            "p99",
            "p99.9",
            "max",
            "mean",
            "stddev",
            "Mbit/s"
        );
        for x in &r.sizes {
            let d = pick(x);
            let _ =
                writeln!(
                s,
                "{:>6} {:>7} {:>7} {:>7.2} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>9.1} {:>10.3}",
                x.size, x.sent, x.received, x.loss_pct, d.min_us, d.p50_us, d.p90_us, d.p99_us, d.p999_us, d.max_us,
                d.mean_us, d.stddev_us, x.realized_bps / 1e6
            );
        }
    }
    s
}
