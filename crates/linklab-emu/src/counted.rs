//! Any ELF on QEMU's mps2-an385, its every instruction counted by our own TCG plugin
//! (`counted/insncount.c`): the lab the lwIP side-by-side bench and `linklab track` measure
//! images in, linklab's and the lwIP peer's alike. The lab is the one every verb boots in
//! ([`crate::lab`]); the ELF is read by [`crate::elf`].

pub mod counter;
pub mod image;
pub mod measure;
pub mod throughput;
