//! The documents of `linklab emu`'s measuring verbs: what an image costs (`cost`), its
//! throughput (`throughput`), the simulator against it (`predict`), the packet blaster's
//! ceiling (`blast`), the soft PHY's decoder per wire bit (`phy10`), the chips it predicts
//! (`chips`), and the rows of a counted profile's transfers (`parts`: the profile's file
//! itself is `linklab_sim::counts::CountedProfile`).
//!
//! Each document starts with its `kind` and `schema_version` (a file written before they
//! existed reads with version 0) and has a JSON Schema in this crate's `schema/` folder.

pub mod blast;
pub mod chips;
pub mod cost;
pub mod document;
pub mod parts;
pub mod phy10;
pub mod predict;
pub mod rate;
pub mod throughput;
