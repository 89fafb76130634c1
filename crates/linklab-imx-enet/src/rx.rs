//! The receive half: the ENET's receive ring filled with buffers of linklab-mac's RX queue,
//! served from the ENET's interrupt ([`EnetRx::on_interrupt`]).
//!
//! The buffers are one `RxRun` of the queue (one grant cut into 1536-byte buffers): each
//! descriptor gets a buffer's address less two bytes, where `RACC[SHIFT16]` puts the two
//! bytes that word-align the frame's IPv4 header, so the frame itself starts exactly where
//! the queue stores it and is committed in place (those two bytes are where the queue writes
//! the frame's length when it is committed). The ENET writes the FCS after the frame; the
//! driver commits the frame without it. The run keeps the buffers the ENET still holds in
//! place and grows behind them; new ones are posted as descriptors come back.
//!
//! The DMA needs aligned buffer addresses on silicon ([`crate::EnetConfig::rx_align`]). A
//! run whose buffers are not aligned is given back and the driver's spill buffer posted
//! instead, as when the queue has no room: a frame that lands there is copied into a grant
//! if one has come free, else dropped and counted missed (`rx_missed_errors`), as a NIC
//! whose ring ran dry. The copies move the queue's write position, so a later run starts
//! elsewhere.
//!
//! A descriptor handed back with an error bit, a frame spread over more than one descriptor
//! (longer than the buffer), or a length no frame has is dropped and counted by kind
//! ([`RxCounters`]); with buffers of the run still posted behind it, its buffer is passed on
//! empty (the MAC counts it short) so they stay where they are.

use linklab_mac::{RxChecksums, RxProducer, RxRun, Storage, RUN_SLOT_LEN};
use linklab_mmio::Registers;

use crate::descriptor::*;
use crate::regs::*;

/// Bytes `SHIFT16` writes in front of each frame.
const SHIFT: usize = 2;
/// The FCS the ENET writes after each frame.
const FCS: usize = 4;
/// The shortest frame passed on: an Ethernet header.
const MIN_FRAME: usize = 14;

/// What the receive half dropped or copied, by kind (Linux's netdev names where one fits).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RxCounters {
    /// Frames with a length no frame has: longer than a buffer (spread over more than one
    /// descriptor), truncated (`TR`), longer than `RCR[MAX_FL]` (`LG`), or shorter than an
    /// Ethernet header.
    pub rx_length_errors: u64,
    /// Frames with a bad FCS (`CR`).
    pub rx_crc_errors: u64,
    /// Frames that were not a whole number of octets (`NO`).
    pub rx_frame_errors: u64,
    /// Frames cut by a receive FIFO overrun (`OV`, or a MAC error `ME`).
    pub rx_fifo_errors: u64,
    /// Frames the PHY flagged (`PE`) or that collided (`CE`).
    pub rx_phy_errors: u64,
    /// Frames that landed in the spill buffer (copied into a grant if one was free, else
    /// also counted missed by the queue).
    pub rx_spilled: u64,
    /// Runs given back because their buffers were not aligned for the DMA.
    pub rx_unaligned_runs: u64,
    /// `EIR[EBERR]`: the DMA hit a bus error.
    pub rx_bus_errors: u64,
}

/// Why a completed descriptor's frame is not passed on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reject {
    Length,
    Crc,
    Frame,
    Fifo,
    Phy,
}

/// The receive half of the ENET: its ring, and the buffers of the RX queue posted to it.
pub struct EnetRx<S: Storage + 'static, R: Registers> {
    regs: R,
    producer: RxProducer<'static, S>,
    ring: &'static [Descriptor; RX_DESCRIPTORS],
    spill: &'static Buffer,
    /// The run whose first `posted` buffers are posted, in ring order from `next`.
    run: Option<RxRun<'static, S>>,
    /// True while the spill buffer is posted (alone, at `next`).
    spill_posted: bool,
    /// Descriptors posted and not handed back yet.
    posted: usize,
    /// The descriptor the ENET fills next.
    next: usize,
    /// Inside a frame spread over descriptors: drop through its last.
    dropping: bool,
    rx_align: usize,
    hw_checksums: bool,
    counters: RxCounters,
}

impl<S: Storage + 'static, R: Registers> EnetRx<S, R> {
    pub(crate) fn new(
        regs: R,
        producer: RxProducer<'static, S>,
        ring: &'static [Descriptor; RX_DESCRIPTORS],
        spill: &'static Buffer,
        rx_align: usize,
        hw_checksums: bool,
    ) -> Self {
        EnetRx {
            regs,
            producer,
            ring,
            spill,
            run: None,
            spill_posted: false,
            posted: 0,
            next: 0,
            dropping: false,
            rx_align: rx_align.max(1),
            hw_checksums,
            counters: RxCounters::default(),
        }
    }

    /// What was dropped or copied so far.
    pub fn counters(&self) -> RxCounters {
        self.counters
    }

    /// Descriptors posted to the ENET now.
    pub fn posted(&self) -> usize {
        self.posted
    }

    /// Posts what has room and tells the ENET (`RDAR`).
    pub(crate) fn start(&mut self) {
        self.post();
        self.regs.write(RDAR, RDAR_ACTIVE);
    }

    /// Hands descriptor `at` the DMA buffer at `address`.
    fn give(&self, at: usize, address: *const u8) {
        let wrap = if at == RX_DESCRIPTORS - 1 { WRAP } else { 0 };
        if let Some(d) = self.ring.get(at) {
            d.give(dma_address(address), RX_INT, RX_EMPTY | wrap);
        }
    }

    /// Posts the run's buffers not posted yet, taking a run if there is none (given back if
    /// its buffers are not aligned); the spill buffer when nothing else can be posted.
    fn post(&mut self) {
        if self.spill_posted {
            return;
        }
        if self.posted == 0 {
            if self.run.is_none() {
                self.run = self.producer.grant_run().ok();
            }
            if let Some(run) = self.run.as_mut() {
                let first = run.slot(0).as_ptr() as usize;
                if !first.wrapping_sub(SHIFT).is_multiple_of(self.rx_align) {
                    self.counters.rx_unaligned_runs += 1;
                    self.run = None;
                }
            }
            if self.run.is_none() {
                self.give(self.next, self.spill.as_ptr());
                self.spill_posted = true;
                return;
            }
        }
        while self.posted < RX_DESCRIPTORS {
            let Some(run) = self.run.as_mut() else {
                break;
            };
            let slot = run.slot(self.posted);
            if slot.is_empty() {
                break;
            }
            let address = slot.as_ptr().wrapping_sub(SHIFT);
            self.give((self.next + self.posted) % RX_DESCRIPTORS, address);
            self.posted += 1;
        }
    }

    /// The interrupt handler's work: acknowledges the receive events, passes on every frame
    /// the ENET wrote (oldest first), posts what has room, tells the ENET, and looks again
    /// (QEMU delivers frames it held back while the doorbell is written). The frames
    /// committed to the queue.
    pub fn on_interrupt(&mut self) -> usize {
        let events = self.regs.read(EIR) & (EIR_RXF | EIR_RXB | EIR_EBERR | EIR_BABR);
        self.regs.write(EIR, events);
        if events & EIR_EBERR != 0 {
            self.counters.rx_bus_errors += 1;
        }
        let mut committed = 0;
        loop {
            let mut took = false;
            while self.posted > 0 || self.spill_posted {
                let Some(d) = self.ring.get(self.next) else {
                    return committed;
                };
                let word0 = d.read(0);
                if word0 & RX_EMPTY != 0 {
                    break;
                }
                took = true;
                let status = d.read(2);
                let protocol = d.read(3);
                self.next = (self.next + 1) % RX_DESCRIPTORS;
                if self.take(word0, status, protocol) {
                    committed += 1;
                }
            }
            if !took {
                return committed;
            }
            self.post();
            dma_barrier();
            self.regs.write(RDAR, RDAR_ACTIVE);
        }
    }

    /// The frame's length without the shift and the FCS, or why it is dropped.
    fn verdict(&mut self, word0: u32, status: u32) -> Result<usize, Reject> {
        if word0 & LAST == 0 {
            // Part of a frame longer than the buffer: drop it through its last descriptor,
            // which counts it.
            self.dropping = true;
            return Err(Reject::Length);
        }
        if core::mem::take(&mut self.dropping) || word0 & (RX_TR | RX_LG) != 0 {
            return Err(Reject::Length);
        }
        if word0 & RX_CR != 0 {
            return Err(Reject::Crc);
        }
        if word0 & RX_NO != 0 {
            return Err(Reject::Frame);
        }
        if word0 & RX_OV != 0 || status & RX_ME != 0 {
            return Err(Reject::Fifo);
        }
        if status & (RX_PE | RX_CE) != 0 {
            return Err(Reject::Phy);
        }
        let len = (word0 & LENGTH) as usize;
        let frame = len.saturating_sub(SHIFT + FCS);
        if !(MIN_FRAME..=RUN_SLOT_LEN - FCS).contains(&frame) {
            return Err(Reject::Length);
        }
        Ok(frame)
    }

    /// Counts a dropped frame (once per frame: not for the leading parts of a long one).
    fn count(&mut self, why: Reject, word0: u32) {
        let c = &mut self.counters;
        match why {
            Reject::Length if word0 & LAST == 0 => return,
            Reject::Length => c.rx_length_errors += 1,
            Reject::Crc => c.rx_crc_errors += 1,
            Reject::Frame => c.rx_frame_errors += 1,
            Reject::Fifo => c.rx_fifo_errors += 1,
            Reject::Phy => c.rx_phy_errors += 1,
        }
        debug!("imx-enet: RX descriptor {:#x} dropped", word0);
    }

    /// What the descriptor says of the frame's checksums: vouched for only where the
    /// ENET's accelerator checked an IPv4 TCP or UDP frame and found no error (QEMU's ENET
    /// checks nothing and leaves these words as the driver wrote them: unchecked).
    fn checksums(&self, status: u32, protocol: u32) -> RxChecksums {
        let proto = (protocol >> RX_PROTOCOL_SHIFT) & 0xFF;
        let clean = status & (RX_ICE | RX_PCR | RX_IPV6 | RX_FRAG) == 0;
        if self.hw_checksums && clean && (proto == 6 || proto == 17) {
            RxChecksums::Valid
        } else {
            RxChecksums::Unchecked
        }
    }

    /// Passes on (or drops) the frame of the descriptor just handed back. True if committed.
    fn take(&mut self, word0: u32, status: u32, protocol: u32) -> bool {
        let verdict = self.verdict(word0, status);
        if let Err(why) = verdict {
            self.count(why, word0);
        }
        let checksums = self.checksums(status, protocol);
        if self.spill_posted {
            self.spill_posted = false;
            let Ok(len) = verdict else {
                return false;
            };
            self.counters.rx_spilled += 1;
            return self.commit_spilled(len, checksums);
        }
        self.posted = self.posted.saturating_sub(1);
        let Some(run) = self.run.as_mut() else {
            return false;
        };
        let (len, checksums, good) = match verdict {
            Ok(len) => (len, checksums, true),
            Err(_) => (0, RxChecksums::Unchecked, false),
        };
        // With buffers behind (the ENET's), pass a bad one on empty (the MAC counts it
        // short) to keep them where they are; with none behind, give it back.
        if !good && self.posted == 0 {
            self.run = None;
            return false;
        }
        if !run.commit_first_tagged(len, checksums, self.posted, RX_DESCRIPTORS) {
            self.run = None;
        }
        good
    }

    /// Copies the frame in the spill buffer into a grant, if one is free; else counts it
    /// missed.
    fn commit_spilled(&mut self, len: usize, checksums: RxChecksums) -> bool {
        let Ok(mut grant) = self.producer.grant() else {
            self.producer.record_missed();
            return false;
        };
        // SAFETY: the spill buffer is this half's alone; the ENET handed it back (its
        // descriptor is no longer empty) and it is posted again only after this copy.
        let spill = unsafe { &*self.spill.0.get() };
        let buf = grant.buf();
        let n = len.min(buf.len()).min(BUFFER_LEN - SHIFT);
        buf[..n].copy_from_slice(&spill[SHIFT..SHIFT + n]);
        grant.commit_tagged(n, checksums);
        true
    }
}
