//! The host's clocks as the sans-IO apps count time: [`now_us`], microseconds on this
//! process's monotonic clock (one epoch for iperf3 and iperf 2 alike), and
//! [`wall_offset_us`], what turns it into UNIX time (iperf 2 stamps its UDP datagrams so).

use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use linklab_perf::time::Micros;

/// Microseconds since the first call in this process (monotonic).
pub fn now_us() -> Micros {
    static EPOCH: OnceLock<Instant> = OnceLock::new();
    EPOCH.get_or_init(Instant::now).elapsed().as_micros() as Micros
}

/// What to add to [`now_us`] to get UNIX time in microseconds (the clock iperf 2's UDP
/// datagrams are stamped with), measured once.
pub fn wall_offset_us() -> i64 {
    static OFFSET: OnceLock<i64> = OnceLock::new();
    *OFFSET.get_or_init(|| {
        let wall = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_micros() as i64);
        wall - now_us() as i64
    })
}

/// Seconds since the UNIX epoch, now.
pub fn unix_time() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}
