//! The crate's diagnostics, embassy's way: with feature `defmt` they go to defmt, with
//! feature `log` to the `log` facade, and with neither they compile to nothing (the
//! arguments are still type-checked, so a message cannot rot). The two features exclude
//! each other. The format strings use the subset both understand: `{}` and `{:?}` (the
//! arguments then implement `defmt::Format` and `Debug`).
#![allow(unused_macros)]

#[cfg(all(feature = "defmt", feature = "log"))]
compile_error!("features `defmt` and `log` are mutually exclusive: enable at most one");

/// One log level: to defmt, to log, or to nothing.
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

/// Per-frame detail (off in release builds unless asked for).
macro_rules! trace {
    ($($t:tt)*) => { log_at!(trace, $($t)*) };
}

/// State changes worth seeing while debugging.
macro_rules! debug {
    ($($t:tt)*) => { log_at!(debug, $($t)*) };
}

/// Rare, notable events (link up/down, device found).
macro_rules! info {
    ($($t:tt)*) => { log_at!(info, $($t)*) };
}

/// Something went wrong that the code handled (a frame dropped, a device refused).
macro_rules! warn {
    ($($t:tt)*) => { log_at!(warn, $($t)*) };
}

/// Something went wrong that the user should act on.
macro_rules! error {
    ($($t:tt)*) => { log_at!(error, $($t)*) };
}
