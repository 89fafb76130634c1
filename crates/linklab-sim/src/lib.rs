//! linklab-sim: a deterministic virtual-time link simulator with an MCU cost model — the
//! experiment of Niccle's MAC write-up (a bit-banged 10BASE-T NIC on an ESP32-C6 running
//! smoltcp, pinged and downloading over HTTP from a PC) end to end, without hardware.
//!
//! * [`wire`]: line rate, preamble, gap, propagation, duplex, impairments.
//! * [`cost`]: the device's cost model (what each part of its work costs in time).
//! * [`counts`]: the counted profiles' data (instructions per part, counted on linklab's
//!   firmware images; versioned files with the command that writes each).
//! * [`profile`]: the named profiles: `ideal`, the write-up's `niccle-*`, the counted ones.
//! * [`device`]: the device's MAC (linklab-mac's queue sized at run time, `Mac`, smoltcp
//!   `Device`).
//! * [`host`]: the PC (smoltcp + linklab-perf's HTTP server + ICMP echo).
//! * [`app`]: the device application (pings, GETs) with linklab-perf's HTTP client.
//! * [`sim`]: the event loop that ties them together ([`sim::run`]), including the device's
//!   receive interrupt (on the sample path, linklab-phy10's `RxInterrupt` decoding into the
//!   MAC's grant).
//! * [`limit`]: the theoretical TCP goodput limit of the link.
//! * [`pcap`]: the capture of the wire.
//! * [`sample_wire`]: linklab-phy10's sample-level line (`--phy samples`).
//! * [`name`]: the error of the `FromStr` impls for named values (profiles, rates, duplex).

pub mod app;
pub mod cost;
pub mod counts;
pub mod device;
pub mod host;
pub mod limit;
pub mod name;
pub mod pcap;
pub mod profile;
pub mod sample_wire;
pub mod sim;
pub mod wire;
