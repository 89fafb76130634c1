//! The device crates' diagnostics, embassy's way, in one place.
//!
//! Each device crate (linklab-mac, linklab-phy10, linklab-perf, linklab-lan9118,
//! linklab-virtio-net) has two optional features, `defmt` and `log`, and logs through the
//! macros here: [`trace!`], [`debug!`], [`info!`], [`warn!`], [`error!`]. A `macro_rules!`
//! body is expanded in the crate that calls it, so the `#[cfg(feature = ...)]` inside is the
//! *caller's* feature, and `::defmt` / `::log` are the caller's dependencies. With `defmt` on,
//! a message goes to defmt; with `log` on, to the `log` facade; with neither it compiles to
//! nothing (the arguments are still type-checked, so a message cannot rot).
//!
//! The format strings use the subset both loggers understand: `{}`, `{:?}` and `{:#x}` (the
//! arguments then implement both `defmt::Format` and `Debug`/`Display`).
//!
//! A caller declares, in its `lib.rs`, and logs:
//!
//! ```
//! #[macro_use]
//! extern crate linklab_fmt;
//! linklab_fmt::exclusive_features!(); // both `defmt` and `log` on: one error naming the fix
//!
//! fn on_frame(len: usize) {
//!     trace!("frame of {} bytes", len); // to defmt, to log, or (here) to nothing
//! }
//! # fn main() { on_frame(60) }
//! ```
#![no_std]

/// Refuses to build a crate that has both `defmt` and `log` on (they exclude each other, as in
/// embassy). Call once at the crate root.
#[macro_export]
macro_rules! exclusive_features {
    () => {
        #[cfg(all(feature = "defmt", feature = "log"))]
        compile_error!(concat!(
            env!("CARGO_PKG_NAME"),
            ": features `defmt` and `log` exclude each other; turn on one of them for this crate \
             (`defmt` for a defmt logger, `log` for the log facade), not both"
        ));
    };
}

/// One log level: to defmt, to log, or to nothing, by the caller's features.
#[doc(hidden)]
#[macro_export]
macro_rules! log_at {
    ($level:ident, $fmt:literal $(, $arg:expr)* $(,)?) => {{
        #[cfg(feature = "defmt")]
        ::defmt::$level!($fmt $(, $arg)*);
        #[cfg(feature = "log")]
        ::log::$level!($fmt $(, $arg)*);
        #[cfg(not(any(feature = "defmt", feature = "log")))]
        {
            let _ = ($(&$arg,)*);
        }
    }};
}

/// Per-frame detail.
#[macro_export]
macro_rules! trace {
    ($($t:tt)*) => { $crate::log_at!(trace, $($t)*) };
}

/// State changes worth seeing while debugging (a PAUSE, a bad frame, a reclaimed connection).
#[macro_export]
macro_rules! debug {
    ($($t:tt)*) => { $crate::log_at!(debug, $($t)*) };
}

/// Rare, notable events (link up/down, device found).
#[macro_export]
macro_rules! info {
    ($($t:tt)*) => { $crate::log_at!(info, $($t)*) };
}

/// Something went wrong that the code handled (a frame dropped, a device refused).
#[macro_export]
macro_rules! warn {
    ($($t:tt)*) => { $crate::log_at!(warn, $($t)*) };
}

/// Something went wrong that the user should act on.
#[macro_export]
macro_rules! error {
    ($($t:tt)*) => { $crate::log_at!(error, $($t)*) };
}
