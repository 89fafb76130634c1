//! A pcap writer for the frames on the simulated wire: nanosecond timestamps (magic
//! `0xa1b23c4d`), `LINKTYPE_ETHERNET`, each frame from the destination address through
//! the FCS (preamble and SFD stripped), as Wireshark and tshark expect.

use std::io::{self, Write};

/// `LINKTYPE_ETHERNET`.
pub const LINKTYPE_ETHERNET: u32 = 1;

/// Largest frame we record.
const SNAPLEN: u32 = 65_535;

/// Collects a pcap file in memory (a run's capture is small: frames, not samples).
#[derive(Debug, Clone)]
pub struct PcapWriter {
    bytes: Vec<u8>,
    frames: u64,
}

impl Default for PcapWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl PcapWriter {
    /// A capture with its global header written.
    pub fn new() -> PcapWriter {
        let mut bytes = Vec::with_capacity(1 << 20);
        bytes.extend_from_slice(&0xa1b2_3c4du32.to_le_bytes());
        bytes.extend_from_slice(&2u16.to_le_bytes());
        bytes.extend_from_slice(&4u16.to_le_bytes());
        bytes.extend_from_slice(&0i32.to_le_bytes());
        bytes.extend_from_slice(&0u32.to_le_bytes());
        bytes.extend_from_slice(&SNAPLEN.to_le_bytes());
        bytes.extend_from_slice(&LINKTYPE_ETHERNET.to_le_bytes());
        PcapWriter { bytes, frames: 0 }
    }

    /// Records one frame (destination..FCS) seen at virtual time `t_ns`.
    pub fn record(&mut self, t_ns: u64, frame: &[u8]) {
        let len = frame.len().min(SNAPLEN as usize);
        self.bytes
            .extend_from_slice(&((t_ns / 1_000_000_000) as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&((t_ns % 1_000_000_000) as u32).to_le_bytes());
        self.bytes.extend_from_slice(&(len as u32).to_le_bytes());
        self.bytes
            .extend_from_slice(&(frame.len() as u32).to_le_bytes());
        self.bytes.extend_from_slice(&frame[..len]);
        self.frames += 1;
    }

    /// Frames recorded.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// Writes the capture out.
    pub fn write_to(&self, mut w: impl Write) -> io::Result<()> {
        w.write_all(&self.bytes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_one_record() {
        let mut p = PcapWriter::new();
        p.record(1_500_000_001, &[1, 2, 3]);
        let mut out = Vec::new();
        p.write_to(&mut out).unwrap();
        assert_eq!(out.len(), 24 + 16 + 3);
        assert_eq!(&out[24..28], &1u32.to_le_bytes());
        assert_eq!(&out[28..32], &500_000_001u32.to_le_bytes());
        assert_eq!(p.frames(), 1);
    }
}
