//! What a run produced: the PHY's counters, snapshots per file, the report, and the
//! conservation check over all of it.

use std::fmt;

use linklab_mac::{ConservationError as MacLawBroken, Counters};

use crate::app::{DownloadResult, PingResult};
use crate::cost::PhyKind;
use crate::host::HostCounters;
use crate::pcap::PcapWriter;
use crate::wire::ImpairmentCounters;

/// The simulated PHY's own counters (the "PHY TX/RX" lines of Niccle's MAC write-up).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct PhyCounters {
    /// Device transmissions.
    pub tx_packets: u64,
    /// Device link test pulses sent.
    pub tx_ltps: u64,
    /// Host transmissions that reached the device PHY.
    pub rx_packets: u64,
    /// ... of which the interrupt entered after the preamble (captured from the middle,
    /// or not at all).
    pub rx_truncated: u64,
    /// Link test pulses that woke the RX interrupt (grant cancelled).
    pub rx_ltps: u64,
    /// Transmissions lost because the queue had no room for a grant (the write-up's "OOM").
    pub rx_queue_full: u64,
    /// Byte wire: captures delivered at a bit offset other than 0.
    pub rx_bit_offset: u64,
    /// Byte wire: captures delivered with inverted polarity.
    pub rx_inverted: u64,
    /// Sample-level wire: host transmissions whose capture the device's receive interrupt
    /// (linklab-phy10) decoded as no frame: a link pulse, noise, or a preamble without a
    /// whole byte after it (grant cancelled; without a grant, nothing was lost).
    pub rx_sample_errors: u64,
    /// Sample-level wire: host transmissions the device's receive interrupt decoded cut
    /// short (committed: the MAC's FCS check counts them).
    pub rx_sample_truncated: u64,
    /// Sample-level wire: device transmissions the host's PHY decoded as no frame.
    pub tx_sample_errors: u64,
    /// Sample-level wire: device transmissions the host's PHY decoded cut short.
    pub tx_sample_truncated: u64,
    /// Transmissions the interrupt entered too late to see at all (idle line, grant
    /// cancelled).
    pub rx_idle_line: u64,
    /// Interrupt wake-ups with nothing to capture (link pulse, idle line, a capture with no
    /// frame in it) that found no grant to cancel because the queue was full.
    pub rx_empty_without_grant: u64,
}

/// A snapshot of the counters after the GETs of one file.
#[derive(Clone, Debug)]
pub struct FileStats {
    /// The file.
    pub path: String,
    /// PHY counters.
    pub phy: PhyCounters,
    /// Device MAC counters.
    pub mac: Counters,
}

/// What a run produced.
#[derive(Clone, Debug)]
pub struct SimReport {
    /// Ping results.
    pub pings: Vec<PingResult>,
    /// Download results.
    pub downloads: Vec<DownloadResult>,
    /// Counter snapshots per file.
    pub file_stats: Vec<FileStats>,
    /// Device PHY counters at the end.
    pub phy: PhyCounters,
    /// Device MAC counters at the end.
    pub mac: Counters,
    /// Host NIC counters.
    pub host: HostCounters,
    /// Impairments, host → device.
    pub to_device: ImpairmentCounters,
    /// Impairments, device → host.
    pub to_host: ImpairmentCounters,
    /// The window the device advertised (socket buffer).
    pub tcp_window: usize,
    /// The window linklab-mac computes for this queue.
    pub auto_window: usize,
    /// Queue capacity (bytes).
    pub queue_capacity: usize,
    /// Full-size frames the queue holds.
    pub queue_frames: usize,
    /// Virtual time at the end (ns).
    pub virtual_ns: u64,
    /// Virtual time the device's CPU spent working (its receive interrupt and main-loop
    /// passes, with what they transmitted), ns: the rest it waited for the wire or the host.
    pub cpu_busy_ns: u64,
    /// Main-loop passes the device ran.
    pub main_passes: u64,
    /// Events processed.
    pub events: u64,
    /// The capture, if asked for.
    pub pcap: Option<PcapWriter>,
    /// Why the watchdog stopped the run before the application finished, if it did.
    pub stopped: Option<String>,
}

/// A frame the counters do not account for: which law broke, with the figures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ConservationError {
    /// linklab-mac's own law.
    Mac(MacLawBroken),
    /// Host transmissions minus the lost ones must equal the arrivals at the device PHY.
    Wire {
        /// Host transmissions.
        transmissions: u64,
        /// Lost on the wire.
        lost: u64,
        /// Arrived at the device's PHY.
        arrived: u64,
    },
    /// Every arrival is a MAC transmission, an idle-line wake-up or a capture without a
    /// frame.
    Phy {
        /// Arrivals at the device's PHY.
        arrived: u64,
        /// MAC transmissions (committed or missed).
        mac_transmissions: u64,
        /// Idle-line wake-ups.
        idle_line: u64,
        /// Captures the sample-level PHY decoded as no frame.
        sample_errors: u64,
    },
    /// Every empty wake-up cancels a grant or finds none.
    WakeUps {
        /// Grants cancelled.
        cancelled: u64,
        /// Empty wake-ups without a grant.
        without_grant: u64,
        /// Empty wake-ups.
        empty: u64,
    },
}

impl fmt::Display for ConservationError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            ConservationError::Mac(e) => write!(f, "linklab-mac: {e}"),
            ConservationError::Wire {
                transmissions,
                lost,
                arrived,
            } => write!(
                f,
                "wire: {transmissions} transmissions - {lost} lost != {arrived} arrived"
            ),
            ConservationError::Phy {
                arrived,
                mac_transmissions,
                idle_line,
                sample_errors,
            } => write!(
                f,
                "phy: {arrived} arrivals != {mac_transmissions} MAC transmissions + {idle_line} idle-line wake-ups + {sample_errors} captures without a frame"
            ),
            ConservationError::WakeUps {
                cancelled,
                without_grant,
                empty,
            } => write!(
                f,
                "phy: {cancelled} cancelled grants + {without_grant} wake-ups without grant != {empty} empty wake-ups"
            ),
        }
    }
}

impl std::error::Error for ConservationError {}

impl SimReport {
    /// Checks that every frame is accounted for: linklab-mac's laws, and the simulator's
    /// (every host transmission was lost on the wire or reached the device PHY; every
    /// arrival became a MAC transmission, hit an idle line or was decoded as no frame; every
    /// empty wake-up cancelled a grant or found none).
    pub fn check_conservation(&self, phy_kind: PhyKind) -> Result<(), ConservationError> {
        self.mac
            .check_conservation()
            .map_err(ConservationError::Mac)?;
        let p = &self.phy;
        let arrived = self.to_device.transmissions - self.to_device.lost;
        if arrived != p.rx_packets {
            return Err(ConservationError::Wire {
                transmissions: self.to_device.transmissions,
                lost: self.to_device.lost,
                arrived: p.rx_packets,
            });
        }
        if p.rx_packets != self.mac.rx_transmissions + p.rx_idle_line + p.rx_sample_errors {
            return Err(ConservationError::Phy {
                arrived: p.rx_packets,
                mac_transmissions: self.mac.rx_transmissions,
                idle_line: p.rx_idle_line,
                sample_errors: p.rx_sample_errors,
            });
        }
        let woken = match phy_kind {
            PhyKind::BitBanged => p.rx_ltps + p.rx_idle_line,
            PhyKind::Dma => 0,
        };
        let empty = woken + p.rx_sample_errors;
        if self.mac.rx_cancelled + p.rx_empty_without_grant != empty {
            return Err(ConservationError::WakeUps {
                cancelled: self.mac.rx_cancelled,
                without_grant: p.rx_empty_without_grant,
                empty,
            });
        }
        Ok(())
    }
}
