//! Time as every app counts it: microseconds on a monotonic clock the caller chooses. The
//! apps take `now` in and give deadlines out in it, so none of them reads a clock itself.

/// Microseconds on a monotonic clock chosen by the caller (any epoch).
pub type Micros = u64;
