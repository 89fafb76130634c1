//! Several receive buffers of the RX queue lent at once, for a NIC that takes more than one
//! posted buffer (a virtio-net receive queue, a DMA descriptor ring).
//!
//! bbqueue lends one grant at a time, so a driver that posts each frame's buffer straight
//! into the queue (zero copy) can post only one: the NIC then holds the next frame until the
//! interrupt posts the next buffer, and an emulator's NIC (QEMU's virtio-net over a TAP)
//! reads no further frame from its host until then. An [`RxRun`] is one grant cut into
//! buffers [`RUN_STRIDE`] bytes apart: the NIC fills them in order, and
//! [`RxRun::commit_first_tagged`] hands the first frame to the consumer as a stored frame
//! that fills its buffer, so the next frame's stored place is exactly the next buffer, which
//! the new grant (taken at once, at the same place) still covers. New buffers join behind
//! the last only where the ring has room before its end (and before the frames the
//! consumer has not read), so a run never wraps while the NIC holds its buffers. A ring
//! sized with `window::capacity_for_frames(n, RxFormat::Tagged)` counts every frame at a
//! whole buffer, so it holds `n` full frames whether or not they came from a run.

use bbqueue::prod_cons::framed::FramedGrantW;

use crate::counters::ProducerCounters;
use crate::deframe::RxChecksums;
use crate::queue::{
    tag_frame, Bbq, QueueFull, RxProducer, RxQueue, Storage, FRAME_HEADER_LEN, RX_GRANT_LEN,
};

/// Ring bytes from one buffer of a run to the next: a stored frame of [`RUN_SLOT_LEN`] bytes
/// and the next one's length header. A multiple of 4, so every buffer starts on the first's
/// alignment.
pub const RUN_STRIDE: usize = RX_GRANT_LEN;
/// Bytes of each buffer of a run: a frame without FCS of up to 1518 bytes (802.1Q tagged),
/// its padding and its tag fit.
pub const RUN_SLOT_LEN: usize = RUN_STRIDE - FRAME_HEADER_LEN;
/// The most buffers one run lends: its grant's length is a `u16`.
pub const MAX_RUN_SLOTS: usize = u16::MAX as usize / RUN_STRIDE;

/// Buffers of the RX queue lent in a row: buffer `k` is [`RxRun::slot`]`(k)`. Take one with
/// [`RxProducer::grant_run`]; dropping a run gives every buffer back (`rx_cancelled`), so a
/// driver drops one only when its NIC holds none of them.
pub struct RxRun<'q, S: Storage> {
    inner: Option<FramedGrantW<&'q Bbq<S>>>,
    slots: usize,
    queue: &'q RxQueue<S>,
}

impl<'q, S: Storage> RxProducer<'q, S> {
    /// A run of one buffer where the next grant goes (more join it as frames are committed,
    /// [`RxRun::commit_first_tagged`]), or [`QueueFull`].
    pub fn grant_run(&self) -> Result<RxRun<'q, S>, QueueFull> {
        let queue = self.queue;
        match queue.bbq.framed_producer().grant(RUN_SLOT_LEN as u16) {
            Ok(g) => Ok(RxRun {
                inner: Some(g),
                slots: 1,
                queue,
            }),
            Err(_) => Err(QueueFull),
        }
    }
}

impl<'q, S: Storage> RxRun<'q, S> {
    /// How many buffers the run has.
    pub fn slots(&self) -> usize {
        self.slots
    }

    /// Buffer `k` ([`RUN_SLOT_LEN`] bytes), empty past the last. (The slice is taken
    /// through the whole grant, while the NIC may be writing the other buffers: nothing
    /// reads or writes those bytes through it.)
    pub fn slot(&mut self, k: usize) -> &mut [u8] {
        match self.inner.as_mut() {
            Some(g) if k < self.slots => &mut g[k * RUN_STRIDE..k * RUN_STRIDE + RUN_SLOT_LEN],
            _ => &mut [],
        }
    }

    /// Hands the frame in the first buffer to the consumer (its `used` bytes without FCS,
    /// then its tag, as [`crate::RxGrant::commit_tagged`] stores them) and keeps the `held`
    /// buffers behind it that the NIC holds as the run, where they are, with new buffers
    /// behind those up to `slots` in all (at most [`MAX_RUN_SLOTS`]), as many as fit before
    /// the ring's end and the consumer's unread frames. False when the run is spent: the NIC
    /// held none behind and no new buffer fits there (take a new run with
    /// [`RxProducer::grant_run`]). In place, so a build for size copies no run around.
    ///
    /// With buffers held behind it the stored frame fills its buffer (the tag at its end),
    /// so the next stored frame starts at the next buffer; without, it takes only its length
    /// (and 0–3 bytes to keep the next on its word), as a single grant's would, and buffers
    /// of the run the NIC was not given yet are cut again behind it.
    pub fn commit_first_tagged(
        &mut self,
        used: usize,
        checksums: RxChecksums,
        held: usize,
        slots: usize,
    ) -> bool {
        let Some(mut g) = self.inner.take() else {
            return false;
        };
        let queue = self.queue;
        let behind = held.min(self.slots - 1);
        let slots = slots.min(MAX_RUN_SLOTS);
        self.slots = 0;
        let fill = (behind > 0).then_some(RUN_SLOT_LEN);
        let stored = tag_frame(&mut g[..RUN_SLOT_LEN], used, checksums, fill);
        let (ring, capacity) = queue.ring();
        // Where the next stored frame's header goes: right behind this one.
        let next = g.as_ptr() as usize - ring + stored;
        queue.commit(g, stored);
        // A run of `n` buffers there takes `n * RUN_STRIDE` bytes; placed only where that
        // fits before the end, bbqueue grants it there or not at all (it wraps only a grant
        // that does not fit before the end). The buffers behind always fit: they lie in the
        // grant just committed, and the consumer only ever frees room.
        let fit = capacity.saturating_sub(next) / RUN_STRIDE;
        let mut n = slots.min(fit).max(behind);
        while n > 0 {
            let len = (n * RUN_STRIDE - FRAME_HEADER_LEN) as u16;
            if let Ok(g) = queue.bbq.framed_producer().grant(len) {
                self.inner = Some(g);
                self.slots = n;
                return true;
            }
            if n == behind {
                // Cannot happen (see above); the NIC's buffers are then lost to it.
                break;
            }
            n -= 1;
        }
        false
    }
}

impl<S: Storage> Drop for RxRun<'_, S> {
    fn drop(&mut self) {
        if let Some(g) = self.inner.take() {
            ProducerCounters::bump(&self.queue.producer_counters.cancelled, 1);
            g.abort();
        }
    }
}
