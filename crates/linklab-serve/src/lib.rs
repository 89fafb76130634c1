//! The soft NIC on a Linux host: linklab-mac, smoltcp and linklab-perf's apps on a TAP
//! (`linklab serve`), and linklab-serial's reliable link on a serial port (`linklab serial`:
//! bridged to a TAP, the device side with the same apps, or the link's self-test).
//!
//! Where this crate sits among the others: the repository's ARCHITECTURE.md.

pub mod serial;
pub mod serve;
