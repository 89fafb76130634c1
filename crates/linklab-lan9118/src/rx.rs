//! The receive half, for the NIC's interrupt handler: every frame in the RX FIFOs into a
//! grant of linklab-mac's RX queue, its checksums summed on the way.

use linklab_mac::{RxProducer, Storage, RX_GRANT_LEN};

use crate::{fifo, reg, verdict, Registers, RX_DATA_OFFSET};

/// RX status: error summary bit.
const RX_STS_ES: u32 = 1 << 15;

/// What the receive half saw that the MAC does not (frames it never committed).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct RxCounters {
    /// Frames taken off the controller into grants.
    pub frames: u64,
    /// Frames read out and dropped because the queue was full (also `rx_missed_errors`).
    pub missed: u64,
    /// Frames the controller flagged bad: dropped, unless the FCS is kept (then committed and
    /// the MAC's FCS check counts them).
    pub flagged: u64,
}

/// The receive half, for the NIC's interrupt handler.
pub struct Lan9118Rx<R: Registers> {
    pub(crate) regs: R,
    pub(crate) counters: RxCounters,
    pub(crate) keep_fcs: bool,
}

impl<R: Registers> Lan9118Rx<R> {
    /// Commit frames with their FCS and untagged (for `RxFormat::Aligned { fcs: true }`), so
    /// the MAC checks the FCS, and the checksums itself; off by default (see the crate docs
    /// for why QEMU needs it off).
    pub fn set_keep_fcs(&mut self, keep: bool) {
        self.keep_fcs = keep;
    }

    /// The format the MAC reads this half's frames in: [`crate::RX_FORMAT`], or with the
    /// FCS kept `Aligned { fcs: true }`.
    pub fn format(&self) -> linklab_mac::RxFormat {
        if self.keep_fcs {
            linklab_mac::RxFormat::Aligned { fcs: true }
        } else {
            crate::RX_FORMAT
        }
    }

    /// The interrupt handler's work: acknowledges the RX interrupt, then moves every frame
    /// waiting in the controller into a grant of `producer`. Returns the frames committed.
    ///
    /// The interrupt is acknowledged *before* the FIFO is drained, so a frame arriving while
    /// this runs raises it again instead of waiting unnoticed.
    pub fn on_interrupt<S: Storage>(&mut self, producer: &RxProducer<'_, S>) -> usize {
        self.regs.write(reg::INT_STS, crate::INT_RSFL);
        let mut committed = 0;
        // Bounded: the status FIFO never holds more frames than it can (176 on QEMU).
        for _ in 0..256 {
            let waiting = (self.regs.read(reg::RX_FIFO_INF) >> 16) & 0xff;
            if waiting == 0 {
                break;
            }
            let status = self.regs.read(reg::RX_STATUS_FIFO);
            // The frame's bytes with its FCS, behind the data offset's bytes.
            let len = ((status >> 16) & 0x3fff) as usize;
            let words = (RX_DATA_OFFSET + len).div_ceil(4);
            if status & RX_STS_ES != 0 {
                debug!("lan9118: frame flagged bad, status {:#x}", status);
                self.counters.flagged += 1;
                if !self.keep_fcs {
                    self.skip(words);
                    continue;
                }
            }
            let keep = if self.keep_fcs {
                len
            } else {
                len.saturating_sub(4)
            };
            match producer.grant() {
                Ok(mut grant) if keep > 0 && 4 * words - RX_DATA_OFFSET <= RX_GRANT_LEN => {
                    let buf = grant.buf();
                    let sum = read_frame(&self.regs, buf, words);
                    if self.keep_fcs {
                        grant.commit(keep);
                    } else {
                        let body = &buf[4 - RX_DATA_OFFSET..4 * words - RX_DATA_OFFSET];
                        // SAFETY: every bit pattern is a valid u32; align_to only splits.
                        let (_, aligned, _) = unsafe { body.align_to::<u32>() };
                        let checksums = match sum {
                            Some(s) => verdict::checksums(&buf[..keep], aligned, s),
                            None => linklab_mac::RxChecksums::Unchecked,
                        };
                        grant.commit_tagged(keep, checksums);
                    }
                    self.counters.frames += 1;
                    committed += 1;
                }
                other => {
                    // No room (or a length no frame has): drop it in the controller.
                    drop(other);
                    self.skip(words);
                    producer.record_missed();
                    self.counters.missed += 1;
                }
            }
        }
        committed
    }

    /// Discards the current frame's `words` data words by reading them out. The datasheet's
    /// fast-forward (`RX_DP_CTRL.RX_FFWD`) would be cheaper for long frames, but QEMU 7.2's
    /// model does not give the skipped words back to its FIFO accounting, which then fills up
    /// for good after a few hundred dropped frames; reading works on silicon and model alike.
    fn skip(&self, words: usize) {
        for _ in 0..words {
            let _ = self.regs.read(reg::RX_DATA_FIFO);
        }
    }

    /// What this half counted.
    pub fn counters(&self) -> RxCounters {
        self.counters
    }
}

/// Reads the current frame's `words` FIFO words (`words >= 1`) into `buf` as bytes from the
/// frame's first on: the first word holds [`RX_DATA_OFFSET`] bytes of offset and then the
/// frame's first two bytes, so every later word lands on a word of memory when `buf` starts
/// at 2 mod 4 (as the queue's grants do). Returns the one's complement sum of those later
/// words, or None when `buf` is not so aligned (then the words are copied one by one and
/// the MAC sums the frame itself).
fn read_frame<R: Registers>(regs: &R, buf: &mut [u8], words: usize) -> Option<u32> {
    let first = regs.read(reg::RX_DATA_FIFO).to_le_bytes();
    buf[..4 - RX_DATA_OFFSET].copy_from_slice(&first[RX_DATA_OFFSET..]);
    let body = &mut buf[4 - RX_DATA_OFFSET..4 * words - RX_DATA_OFFSET];
    // SAFETY: every bit pattern is a valid u32; align_to_mut only splits the slice.
    let (head, aligned, _) = unsafe { body.align_to_mut::<u32>() };
    if head.is_empty() {
        return Some(fifo::read_summed(regs, aligned));
    }
    for w in body.chunks_exact_mut(4) {
        w.copy_from_slice(&regs.read(reg::RX_DATA_FIFO).to_le_bytes());
    }
    None
}
