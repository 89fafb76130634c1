//! The soft PHY's and its MAC's counters where the stack's core can read them (for the
//! board's `/stats`): the receive side publishes the PHY's after every slice of samples
//! (on the RP2040/RP2350 it runs on the PHY's core), the MAC's driver publishes the MAC's
//! ([`crate::mac::CountingDriver`]). Keys and laws are those of the emulated soft-PHY
//! image's `/stats` (`"mac"`, `"conservation"`, `"phy"`, `"phy_conservation"`), plus what
//! only a sampling board has: the framer's cut transmissions and the ring's overruns.

use core::cell::Cell;
use core::fmt::Write;
use core::sync::atomic::{AtomicU32, Ordering};

use critical_section::Mutex;
use linklab_mac::Counters;
use linklab_phy10::RxCounters;

use crate::framer::FramerCounters;

/// The receive side's counters, as the PHY's core last published them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhySnapshot {
    /// Transmissions the framer cut out of the sample stream.
    pub captures: u32,
    /// Frames that ended cleanly, committed.
    pub frames: u32,
    /// Frames cut short, committed (the MAC's FCS or length check counts them).
    pub truncated: u32,
    /// Locked preambles with no whole byte after them.
    pub empty: u32,
    /// Link pulses.
    pub link_pulses: u32,
    /// Activity that was neither.
    pub noise: u32,
    /// Transmissions lost for want of room in the MAC's RX queue.
    pub missed: u32,
    /// Transmissions longer than the capture buffer, handed over cut.
    pub overlong: u32,
    /// Times the PHY's core fell more than the sample ring behind the line (the samples
    /// in between lost; each counted as a missed frame by the MAC).
    pub overruns: u32,
}

/// Which equation across the PHY and the MAC failed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhyLawError {
    /// A capture outside every bucket.
    Captures,
    /// The MAC committed other than the PHY's frames and truncated ones.
    Committed,
    /// The MAC's missed frames are not the PHY's missed ones plus its overruns.
    Missed,
}

impl PhyLawError {
    /// The equation that failed, as text.
    pub fn as_str(self) -> &'static str {
        match self {
            PhyLawError::Captures => {
                "captures != frames + truncated + empty + link_pulses + noise + missed"
            }
            PhyLawError::Committed => "mac.rx_committed != phy.frames + phy.truncated",
            PhyLawError::Missed => "mac.rx_missed_errors != phy.missed + phy.overruns",
        }
    }
}

impl PhySnapshot {
    /// The law across the PHY and the MAC: every capture lands in one bucket, and the MAC
    /// saw exactly what the PHY committed and missed. The two sides are published by
    /// different cores at different moments, so it holds while no frame is in flight
    /// between them; the grants cancelled for link pulses and noise are left out (a partner
    /// pulses every 16 ms whether frames flow or not, and the MAC's side is published when
    /// frames flow).
    pub fn check_with(&self, mac: &Counters) -> Result<(), PhyLawError> {
        let buckets = self.frames as u64
            + self.truncated as u64
            + self.empty as u64
            + self.link_pulses as u64
            + self.noise as u64
            + self.missed as u64;
        if self.captures as u64 != buckets {
            return Err(PhyLawError::Captures);
        }
        if mac.rx_committed != self.frames as u64 + self.truncated as u64 {
            return Err(PhyLawError::Committed);
        }
        if mac.rx_missed_errors != self.missed as u64 + self.overruns as u64 {
            return Err(PhyLawError::Missed);
        }
        Ok(())
    }

    /// Its fields by name, in a fixed order.
    pub fn fields(&self) -> [(&'static str, u32); 9] {
        [
            ("captures", self.captures),
            ("frames", self.frames),
            ("truncated", self.truncated),
            ("empty", self.empty),
            ("link_pulses", self.link_pulses),
            ("noise", self.noise),
            ("missed", self.missed),
            ("overlong", self.overlong),
            ("overruns", self.overruns),
        ]
    }
}

/// The receive side's counters, written by the PHY's core and read by the stack's.
pub struct PhyCounters {
    cells: [AtomicU32; 9],
}

impl Default for PhyCounters {
    fn default() -> Self {
        Self::new()
    }
}

impl PhyCounters {
    /// All zero (for a `static`).
    pub const fn new() -> Self {
        PhyCounters {
            cells: [const { AtomicU32::new(0) }; 9],
        }
    }

    /// Publishes the decoder's and the framer's counters and the overruns.
    pub fn publish(&self, rx: RxCounters, framer: FramerCounters, overruns: u32) {
        let values = [
            framer.captures,
            rx.frames as u32,
            rx.truncated as u32,
            rx.empty as u32,
            rx.link_pulses as u32,
            rx.noise as u32,
            rx.missed as u32,
            framer.overlong,
            overruns,
        ];
        for (cell, v) in self.cells.iter().zip(values) {
            cell.store(v, Ordering::Relaxed);
        }
    }

    /// What was last published.
    pub fn snapshot(&self) -> PhySnapshot {
        let v = |i: usize| self.cells[i].load(Ordering::Relaxed);
        PhySnapshot {
            captures: v(0),
            frames: v(1),
            truncated: v(2),
            empty: v(3),
            link_pulses: v(4),
            noise: v(5),
            missed: v(6),
            overlong: v(7),
            overruns: v(8),
        }
    }
}

/// The MAC's counters as its driver last published them.
pub struct MacCounters(Mutex<Cell<Counters>>);

impl Default for MacCounters {
    fn default() -> Self {
        Self::new()
    }
}

impl MacCounters {
    /// All zero (for a `static`).
    pub const fn new() -> Self {
        MacCounters(Mutex::new(Cell::new(Counters {
            rx_transmissions: 0,
            rx_committed: 0,
            rx_dequeued: 0,
            rx_cancelled: 0,
            rx_packets: 0,
            rx_bytes: 0,
            rx_pause_frames: 0,
            rx_filtered: 0,
            rx_frame_errors: 0,
            rx_crc_errors: 0,
            rx_short_length_errors: 0,
            rx_long_length_errors: 0,
            rx_missed_errors: 0,
            rx_checksum_errors: 0,
            tx_requests: 0,
            tx_packets: 0,
            tx_bytes: 0,
            tx_dropped: 0,
            tx_deferred: 0,
            tx_pause_frames: 0,
        })))
    }

    /// Publishes `counters`.
    pub fn publish(&self, counters: Counters) {
        critical_section::with(|cs| self.0.borrow(cs).set(counters));
    }

    /// What was last published.
    pub fn get(&self) -> Counters {
        critical_section::with(|cs| self.0.borrow(cs).get())
    }
}

/// Writes `"mac":{..},"conservation":{..},"phy":{..},"phy_conservation":{..}` (the members
/// a board's `/stats` object adds) into `w`; `phy` gets the transmitter's refused frames
/// too (`tx_refused`: frames the MAC handed over that never went out).
pub fn write_json(
    mac: &Counters,
    phy: &PhySnapshot,
    tx_refused: u64,
    w: &mut impl Write,
) -> core::fmt::Result {
    w.write_str("\"mac\":{")?;
    for (i, (name, value)) in mac.fields().iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        write!(w, "{sep}\"{name}\":{value}")?;
    }
    match mac.check_conservation() {
        Ok(()) => w.write_str("},\"conservation\":{\"holds\":true}")?,
        Err(e) => write!(
            w,
            "}},\"conservation\":{{\"holds\":false,\"error\":\"{e:?}\"}}"
        )?,
    }
    w.write_str(",\"phy\":{")?;
    for (i, (name, value)) in phy.fields().iter().enumerate() {
        let sep = if i > 0 { "," } else { "" };
        write!(w, "{sep}\"{name}\":{value}")?;
    }
    write!(w, ",\"tx_refused\":{tx_refused}")?;
    match phy.check_with(mac) {
        Ok(()) => w.write_str("},\"phy_conservation\":{\"holds\":true}"),
        Err(e) => write!(
            w,
            "}},\"phy_conservation\":{{\"holds\":false,\"error\":\"{}\"}}",
            e.as_str()
        ),
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::string::String;

    fn json(mac: &Counters, phy: &PhySnapshot) -> String {
        let mut s = String::new();
        write_json(mac, phy, 7, &mut s).unwrap();
        s
    }

    #[test]
    fn both_laws_hold_and_a_broken_one_is_named() {
        let mut mac = Counters {
            rx_transmissions: 3,
            rx_committed: 2,
            rx_dequeued: 2,
            rx_packets: 2,
            rx_missed_errors: 1,
            rx_cancelled: 4,
            ..Counters::default()
        };
        let phy = PhySnapshot {
            captures: 6,
            frames: 2,
            link_pulses: 4,
            overruns: 1,
            ..PhySnapshot::default()
        };
        let s = json(&mac, &phy);
        assert!(s.starts_with("\"mac\":{\"rx_transmissions\":3,"), "{s}");
        assert!(
            s.contains("},\"conservation\":{\"holds\":true},\"phy\":{\"captures\":6,"),
            "{s}"
        );
        assert!(
            s.contains("\"overruns\":1,\"tx_refused\":7},\"phy_conservation\":{\"holds\":true}"),
            "{s}"
        );
        mac.rx_missed_errors = 0;
        mac.rx_transmissions = 2;
        let s = json(&mac, &phy);
        assert!(
            s.ends_with("\"error\":\"mac.rx_missed_errors != phy.missed + phy.overruns\"}"),
            "{s}"
        );
    }
}
