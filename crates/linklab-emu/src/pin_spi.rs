//! The emulated Pico as an SPI device (`linklab emu pico --image spi-link`, and `linklab
//! serial --spi-emu`): the harness's board `pico-spi` puts an SPI master model on the chip's
//! pins (emulators/rp2040js/spi-master.mjs) and asks the host, over a unix socket, for one
//! transfer at a time; the host's end is linklab-serve's SPI line ([`linklab_serve::serial`]),
//! bridged to a TAP ([`SpiBridge`]) or running any mode of `linklab serial`.

use std::os::unix::net::UnixStream;
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::Context;
use linklab_results::bail_usage;
use linklab_serve::serial::StopPipe;
use linklab_tap::Tap;

/// The SPI master model's settings: the clock and the host's gaps between transfers.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpiMaster {
    /// The SPI clock, 1 to 31.25 MHz.
    pub hz: u32,
    /// The gap between one transfer's CS rise and the next one's fall, ns (CBA's Pi: 10 µs).
    pub gap_ns: u32,
    /// The gap now and then instead (CBA's Pi: "sometimes 50 µs"), ns.
    pub tail_ns: u32,
    /// How often the tail comes, per mille (assumed 50: one transfer in twenty).
    pub tail_per_mille: u32,
    /// Idle half periods after each byte (assumed 0: spidev's DMA feeds the FIFO).
    pub byte_gap: u32,
    /// The seed of the tail's draws.
    pub seed: u32,
}

impl Default for SpiMaster {
    fn default() -> Self {
        SpiMaster {
            hz: 20_000_000,
            gap_ns: 10_000,
            tail_ns: 50_000,
            tail_per_mille: 50,
            byte_gap: 0,
            seed: 0x5eed,
        }
    }
}

/// The lowest and highest SPI clock of the master model.
pub const MIN_HZ: u32 = 1_000_000;
/// The highest (PIO at 125 MHz with its synchronisers bypassed; docs/spi.md).
pub const MAX_HZ: u32 = 31_250_000;

impl SpiMaster {
    /// Checks the settings: one usage line for the first out of range.
    pub fn check(&self) -> anyhow::Result<()> {
        if !(MIN_HZ..=MAX_HZ).contains(&self.hz) {
            bail_usage!("--spi-hz {}: {MIN_HZ}..={MAX_HZ}", self.hz);
        }
        if self.gap_ns > 1_000_000_000 || self.tail_ns > 1_000_000_000 {
            bail_usage!("--spi-gap-us and --spi-tail-us: at most 1 s");
        }
        if self.tail_per_mille > 1000 {
            bail_usage!("--spi-tail-per-mille {}: 0..=1000", self.tail_per_mille);
        }
        if self.byte_gap > 64 {
            bail_usage!("--spi-byte-gap {}: 0..=64 half periods", self.byte_gap);
        }
        Ok(())
    }

    /// The harness's options for them (harness.mjs `--master-*`).
    pub fn harness_args(&self) -> Vec<String> {
        [
            ("--master-gap-ns", self.gap_ns),
            ("--master-tail-ns", self.tail_ns),
            ("--master-tail-per-mille", self.tail_per_mille),
            ("--master-byte-gap", self.byte_gap),
            ("--master-seed", self.seed),
        ]
        .iter()
        .flat_map(|(flag, v)| [flag.to_string(), v.to_string()])
        .collect()
    }
}

/// The link bridged to a TAP over the emulated Pico's SPI, in a thread of its own.
pub struct SpiBridge {
    stop: Arc<StopPipe>,
    thread: Option<JoinHandle<anyhow::Result<String>>>,
}

impl SpiBridge {
    /// Starts the bridge on `tap` (named `name`) over the harness's connected `stream`.
    pub fn start(tap: Tap, name: &str, stream: UnixStream, hz: u32) -> anyhow::Result<SpiBridge> {
        let stop = Arc::new(StopPipe::new().context("a stop pipe for the SPI bridge")?);
        let given = stop.clone();
        let name = name.to_string();
        let thread = std::thread::Builder::new()
            .name("spi-bridge".into())
            .spawn(move || {
                linklab_serve::serial::bridge_spi_emu(
                    stream,
                    hz,
                    "the emulated Pico",
                    tap,
                    &name,
                    &*given,
                )
            })
            .context("cannot start the SPI bridge's thread")?;
        Ok(SpiBridge {
            stop,
            thread: Some(thread),
        })
    }

    /// True once the bridge ended by itself (the harness closed its socket, an error).
    pub fn broken(&self) -> bool {
        self.thread.as_ref().is_none_or(JoinHandle::is_finished)
    }

    /// Stops it; the link's counters as one line, or why it ended.
    pub fn stop(mut self) -> String {
        self.stop.stop();
        match self.thread.take().map(JoinHandle::join) {
            Some(Ok(Ok(counters))) => counters,
            Some(Ok(Err(e))) => format!("the SPI bridge ended: {e:#}"),
            Some(Err(_)) => "the SPI bridge's thread panicked".to_string(),
            None => String::new(),
        }
    }
}

impl Drop for SpiBridge {
    fn drop(&mut self) {
        self.stop.stop();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_are_checked_and_passed_to_the_harness() {
        let m = SpiMaster::default();
        m.check().unwrap();
        let args = m.harness_args();
        assert_eq!(args[..2], ["--master-gap-ns", "10000"]);
        assert_eq!(args.len(), 10);
        let fast = SpiMaster {
            hz: 40_000_000,
            ..SpiMaster::default()
        };
        assert!(fast.check().unwrap_err().to_string().contains("--spi-hz"));
        let often = SpiMaster {
            tail_per_mille: 1001,
            ..SpiMaster::default()
        };
        assert!(often.check().is_err());
    }
}
