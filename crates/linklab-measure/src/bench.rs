//! The experiment of Niccle's MAC write-up — pings, then HTTP GETs of each bench file — on a
//! simulated link (linklab-sim): `linklab bench`. Its document is a [`BenchReport`]
//! (linklab-results), its text the write-up's format with a summary against the link's
//! theoretical TCP goodput limit ([`BenchRun::write_up`]).
//!
//! ```
//! use linklab_measure::bench::{self, BenchOptions};
//! let options = BenchOptions {
//!     sizes: vec![bench::bench_file("10kB").unwrap()],
//!     pings: 2,
//!     gets: 1,
//!     ..BenchOptions::default()
//! };
//! let report = bench::run(&options)?;
//! assert_eq!(report.downloads.len(), 1);
//! assert!(report.downloads[0].crc_ok());
//! # Ok::<(), anyhow::Error>(())
//! ```

mod config;
mod document;
mod limit;
mod options;
mod write_up;

use anyhow::bail;
use linklab_sim::sim::{self, SimConfig, SimReport};

pub use config::config;
pub use linklab_perf::payload::{BenchFile, BENCH_FILES};
pub use linklab_results::bench::BenchReport;
pub use linklab_sim::device::RX_FRAMES_RANGE;
pub use linklab_sim::host::HostTcp;
pub use linklab_sim::profile::Profile;
pub use linklab_sim::sample_wire::MAX_DRIFT_PPM;
pub use linklab_sim::wire::{Duplex, Rate};
pub use options::{bench_file, BenchOptions, Phy, SendingApp};

/// A simulated run: its options, the simulator's configuration and what it reported (with
/// the capture when asked for).
pub struct BenchRun {
    /// The options it ran with.
    pub options: BenchOptions,
    /// The simulator's configuration made of them.
    pub config: SimConfig,
    /// What the simulator reported.
    pub report: SimReport,
}

impl BenchRun {
    /// The run's document.
    pub fn document(&self) -> BenchReport {
        document::document(&self.config, &self.options, &self.report)
    }

    /// The run as Niccle's MAC write-up prints it.
    pub fn write_up(&self) -> String {
        write_up::write_up(&self.config, &self.options, &self.report)
    }

    /// Whether the run went as it should: an error when a watchdog stopped it, the counters
    /// do not account for every transmission, or a download failed or had a wrong CRC32.
    pub fn verdict(&self) -> anyhow::Result<()> {
        let r = &self.report;
        if let Some(why) = &r.stopped {
            bail!("{why}");
        }
        if let Err(e) = r.check_conservation(self.config.cost.phy) {
            bail!("counters do not conserve: {e}");
        }
        let bad = r
            .downloads
            .iter()
            .filter(|d| d.error.is_some() || d.crc32 != d.expected_crc32)
            .count();
        if bad > 0 {
            bail!(
                "{bad} of {} downloads failed or had a wrong CRC32",
                r.downloads.len()
            );
        }
        Ok(())
    }
}

/// Simulates what `options` ask for. An error when the options are wrong or the simulator
/// could not run; a run that went wrong is still a run (see [`BenchRun::verdict`]).
pub fn simulate(options: &BenchOptions) -> anyhow::Result<BenchRun> {
    let config = config(options)?;
    let report = sim::run(config.clone())?;
    Ok(BenchRun {
        options: options.clone(),
        config,
        report,
    })
}

/// Simulates what `options` ask for: the document of the run. Its `stopped`, `conservation`
/// and downloads say whether the run went as it should.
pub fn run(options: &BenchOptions) -> anyhow::Result<BenchReport> {
    simulate(options).map(|r| r.document())
}
