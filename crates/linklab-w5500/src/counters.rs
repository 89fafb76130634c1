//! What the driver counts: every frame it moved, every one it or the chip refused, and every
//! recovery. The runner writes them; anyone (an HTTP `/stats` route on another task) reads
//! a [`Counters`] snapshot. Single writer, so plain atomic loads and stores (no
//! compare-and-swap: the RP2040's Cortex-M0+ has none).

use core::sync::atomic::{AtomicU32, Ordering};

/// The driver's counts at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Counters {
    /// Frames read from the chip and committed to the MAC's RX queue.
    pub rx_frames: u32,
    /// Their bytes (without the length headers).
    pub rx_bytes: u32,
    /// Services of the chip that found frames (each reads every frame it can).
    pub rx_bursts: u32,
    /// Length headers that made no sense (under 60 or over 1514 bytes of frame), refused:
    /// the header is read again, and if it still makes no sense the driver resynchronises.
    pub rx_bad_headers: u32,
    /// Times the read pointer was moved to the chip's write pointer after a header that
    /// made no sense twice: the frames between were given up ([`Counters::rx_dropped_bytes`]).
    pub rx_resyncs: u32,
    /// Bytes given up by resynchronising or reopening the socket.
    pub rx_dropped_bytes: u32,
    /// Times frames were left in the chip because the MAC's RX queue had no room (they wait
    /// there; the chip's 16 KB buffer is the larger queue).
    pub rx_queue_full: u32,
    /// Times the chip's RX buffer was found without room for a full-size frame: it then
    /// drops what does not fit and counts nothing itself, so this is the only trace.
    pub rx_chip_full: u32,
    /// Frames written to the chip and sent.
    pub tx_frames: u32,
    /// Their bytes.
    pub tx_bytes: u32,
    /// SENDs issued again because the last one had not completed in time (a SEND refused).
    pub tx_send_retries: u32,
    /// Frames the driver dropped: too long, no room in its queue when handed over, or lost
    /// with a socket reopened.
    pub tx_dropped: u32,
    /// Times socket 0 was closed and opened again, a SEND not completing after a retry.
    pub socket_reopens: u32,
    /// SPI transfers that failed (the bus or the chip select reported an error).
    pub spi_errors: u32,
}

/// Declares [`SharedCounters`] with one atomic per field of [`Counters`].
macro_rules! shared {
    ($($field:ident),* $(,)?) => {
        /// [`Counters`] as atomics: written by the runner, read from anywhere.
        #[derive(Debug, Default)]
        pub struct SharedCounters {
            $($field: AtomicU32,)*
        }

        impl SharedCounters {
            /// All zero (for a `static`).
            pub const fn new() -> Self {
                SharedCounters { $($field: AtomicU32::new(0),)* }
            }

            /// The counts now.
            pub fn snapshot(&self) -> Counters {
                Counters { $($field: self.$field.load(Ordering::Relaxed),)* }
            }
        }

        /// Which counter to move.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        #[allow(non_camel_case_types, missing_docs)]
        pub(crate) enum Counter { $($field,)* }

        impl SharedCounters {
            fn cell(&self, c: Counter) -> &AtomicU32 {
                match c { $(Counter::$field => &self.$field,)* }
            }
        }
    };
}

shared!(
    rx_frames,
    rx_bytes,
    rx_bursts,
    rx_bad_headers,
    rx_resyncs,
    rx_dropped_bytes,
    rx_queue_full,
    rx_chip_full,
    tx_frames,
    tx_bytes,
    tx_send_retries,
    tx_dropped,
    socket_reopens,
    spi_errors,
);

impl SharedCounters {
    /// Adds `n` to counter `c` (wrapping). Only one writer: a load and a store.
    pub(crate) fn add(&self, c: Counter, n: u32) {
        let cell = self.cell(c);
        cell.store(
            cell.load(Ordering::Relaxed).wrapping_add(n),
            Ordering::Relaxed,
        );
    }

    /// Adds one to counter `c`.
    pub(crate) fn bump(&self, c: Counter) {
        self.add(c, 1);
    }
}

impl Counters {
    /// Writes the counts as the members of a JSON object (`"rx_frames":1,...`, no braces),
    /// for a `/stats` route.
    pub fn write_json(&self, w: &mut impl core::fmt::Write) -> core::fmt::Result {
        let fields: [(&str, u32); 14] = [
            ("rx_frames", self.rx_frames),
            ("rx_bytes", self.rx_bytes),
            ("rx_bursts", self.rx_bursts),
            ("rx_bad_headers", self.rx_bad_headers),
            ("rx_resyncs", self.rx_resyncs),
            ("rx_dropped_bytes", self.rx_dropped_bytes),
            ("rx_queue_full", self.rx_queue_full),
            ("rx_chip_full", self.rx_chip_full),
            ("tx_frames", self.tx_frames),
            ("tx_bytes", self.tx_bytes),
            ("tx_send_retries", self.tx_send_retries),
            ("tx_dropped", self.tx_dropped),
            ("socket_reopens", self.socket_reopens),
            ("spi_errors", self.spi_errors),
        ];
        for (k, (name, value)) in fields.iter().enumerate() {
            let comma = if k == 0 { "" } else { "," };
            write!(w, "{comma}\"{name}\":{value}")?;
        }
        Ok(())
    }
}
