//! Shared helpers for the linklab-mac integration tests.
#![allow(dead_code)]

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use linklab_mac::{Clock, Counters, MacAddr, PhyTx};

/// Our address in the tests.
pub const ME: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x01]);
/// The peer's address.
pub const PEER: MacAddr = MacAddr([0x02, 0x00, 0x00, 0x00, 0x00, 0x02]);
/// A local experimental EtherType.
pub const ETHERTYPE: [u8; 2] = [0x88, 0xB5];

/// A PHY sink that records every transmission (shared so the test can look while the MAC
/// owns the sink).
#[derive(Clone, Default)]
pub struct Recorder(pub Rc<RefCell<Vec<Vec<u8>>>>);

impl PhyTx for Recorder {
    fn transmit(&mut self, wire: &[u8]) {
        self.0.borrow_mut().push(wire.to_vec());
    }
}

impl Recorder {
    /// Takes all recorded transmissions.
    pub fn take(&self) -> Vec<Vec<u8>> {
        std::mem::take(&mut self.0.borrow_mut())
    }
}

/// A manual clock the test advances.
#[derive(Clone, Default)]
pub struct ManualClock(pub Rc<Cell<u64>>);

impl Clock for ManualClock {
    fn now_ns(&self) -> u64 {
        self.0.get()
    }
}

impl ManualClock {
    /// Sets the time.
    pub fn set(&self, t: u64) {
        self.0.set(t)
    }
    /// Advances the time.
    pub fn advance(&self, dt: u64) {
        self.0.set(self.0.get() + dt)
    }
}

/// Writes a frame header (dst, src, our EtherType) and `payload` into `f`.
pub fn fill_frame(f: &mut [u8], dst: MacAddr, src: MacAddr, payload: &[u8]) {
    f[0..6].copy_from_slice(&dst.0);
    f[6..12].copy_from_slice(&src.0);
    f[12..14].copy_from_slice(&ETHERTYPE);
    f[14..14 + payload.len()].copy_from_slice(payload);
}

/// The sum of all RX outcome buckets (everything a transmission can end in).
pub fn rx_outcomes(c: &Counters) -> u64 {
    c.rx_packets
        + c.rx_pause_frames
        + c.rx_filtered
        + c.rx_frame_errors
        + c.rx_crc_errors
        + c.rx_short_length_errors
        + c.rx_long_length_errors
        + c.rx_missed_errors
        + c.rx_checksum_errors
}

/// The error buckets only.
pub fn rx_error_buckets(c: &Counters) -> [u64; 5] {
    [
        c.rx_frame_errors,
        c.rx_crc_errors,
        c.rx_short_length_errors,
        c.rx_long_length_errors,
        c.rx_missed_errors,
    ]
}

/// A PHY with a ring of `free` transmit buffers that completes nothing until the test says
/// so, and drops what it is handed while full (as linklab-virtio-net does).
#[derive(Clone, Default)]
pub struct Ring {
    /// Buffers free now.
    pub free: Rc<Cell<usize>>,
    /// What it sent.
    pub sent: Rc<RefCell<Vec<Vec<u8>>>>,
    /// What it dropped.
    pub dropped: Rc<Cell<u64>>,
}

impl PhyTx for Ring {
    fn transmit(&mut self, wire: &[u8]) {
        match self.free.get() {
            0 => self.dropped.set(self.dropped.get() + 1),
            n => {
                self.free.set(n - 1);
                self.sent.borrow_mut().push(wire.to_vec());
            }
        }
    }
    fn dropped(&mut self) -> u64 {
        self.dropped.get()
    }
    fn ready(&mut self) -> bool {
        self.free.get() > 0
    }
}
