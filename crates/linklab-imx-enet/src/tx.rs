//! The transmit half: linklab-mac's `PhyTx` over the ENET's transmit ring of
//! [`TX_DESCRIPTORS`] driver buffers, from the main loop (no lock: the receive half owns
//! nothing this half touches).
//!
//! The MAC builds each frame straight in a free descriptor's buffer ([`EnetTx::tx_buffer`]),
//! two bytes in, where its IPv4 header lands on a word; a frame handed over in the MAC's own
//! buffer ([`EnetTx::transmit`]) is copied there. With checksum insertion on, the MAC writes
//! only the IPv4 header checksum and leaves TCP and UDP to the ENET: the driver zeroes their
//! field (the ENET sums it in) and sets the descriptor's `PINS`. Completions raise no
//! interrupt: a buffer is taken back when the next frame needs one.

use linklab_mac::checksum::l4_checksum_field;
use linklab_mac::{PhyTx, FRAME_ALIGN};
use linklab_mmio::Registers;

use crate::descriptor::*;
use crate::regs::*;

/// What the transmit half dropped or saw fail.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct TxCounters {
    /// Frames handed over: written to a descriptor and given to the ENET.
    pub tx_frames: u64,
    /// Frames dropped: no free descriptor, or longer than a buffer.
    pub tx_dropped: u64,
    /// Frames the ENET reported an error for (underrun, late collision, ...).
    pub tx_errors: u64,
}

/// The transmit half of the ENET.
pub struct EnetTx<R: Registers> {
    regs: R,
    ring: &'static [Descriptor; TX_DESCRIPTORS],
    buffers: &'static [Buffer; TX_DESCRIPTORS],
    /// The descriptor the next frame goes to.
    next: usize,
    /// Descriptors given to the ENET and not taken back, the oldest `in_flight` before `next`.
    in_flight: usize,
    /// The buffer of descriptor `next` is lent to the MAC ([`EnetTx::tx_buffer`]).
    lent: bool,
    shift16: bool,
    insert_checksums: bool,
    counters: TxCounters,
}

impl<R: Registers> EnetTx<R> {
    pub(crate) fn new(
        regs: R,
        ring: &'static [Descriptor; TX_DESCRIPTORS],
        buffers: &'static [Buffer; TX_DESCRIPTORS],
        shift16: bool,
        insert_checksums: bool,
    ) -> Self {
        EnetTx {
            regs,
            ring,
            buffers,
            next: 0,
            in_flight: 0,
            lent: false,
            shift16,
            insert_checksums,
            counters: TxCounters::default(),
        }
    }

    /// What was sent, dropped or failed so far.
    pub fn counters(&self) -> TxCounters {
        self.counters
    }

    /// Takes back the descriptors the ENET has sent, counting the ones it flagged.
    fn reclaim(&mut self) {
        while self.in_flight > 0 {
            let oldest = (self.next + TX_DESCRIPTORS - self.in_flight) % TX_DESCRIPTORS;
            let Some(d) = self.ring.get(oldest) else {
                return;
            };
            if d.read(0) & TX_READY != 0 {
                return;
            }
            if d.read(2) & TX_ERRORS != 0 {
                self.counters.tx_errors += 1;
            }
            self.in_flight -= 1;
        }
    }

    /// True if descriptor `next` is free (after taking back what the ENET sent).
    fn free(&mut self) -> bool {
        self.reclaim();
        self.in_flight < TX_DESCRIPTORS
    }

    /// The frame area of descriptor `next`'s buffer: `len` bytes from [`FRAME_ALIGN`].
    fn frame_area(&mut self, len: usize) -> Option<&'static mut [u8]> {
        let buffer = self.buffers.get(self.next)?;
        // SAFETY: descriptor `next` is not with the ENET (`free`), so its buffer is this
        // half's alone until `send` gives it over; callers hold it no longer than that.
        let bytes = unsafe { &mut *buffer.0.get() };
        bytes.get_mut(FRAME_ALIGN..FRAME_ALIGN + len)
    }

    /// Lends descriptor `next`'s buffer (`len` bytes starting at [`FRAME_ALIGN`] mod 4) for
    /// the MAC to build the next frame in place ([`EnetTx::transmit_buffer`] sends it). None
    /// when a buffer is already lent, none is free, or `len` does not fit.
    pub fn tx_buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        if self.lent || FRAME_ALIGN + len > BUFFER_LEN || !self.free() {
            return None;
        }
        self.lent = true;
        self.frame_area(len).map(|b| &mut *b)
    }

    /// Sends the first `len` bytes of the buffer [`EnetTx::tx_buffer`] lent.
    pub fn transmit_buffer(&mut self, len: usize) {
        if !core::mem::take(&mut self.lent) {
            return;
        }
        if FRAME_ALIGN + len > BUFFER_LEN {
            self.counters.tx_dropped += 1;
            return;
        }
        self.send(len);
    }

    /// Sends one plain Ethernet frame, copied into a free buffer; dropped and counted when
    /// none is free or it does not fit.
    pub fn transmit(&mut self, frame: &[u8]) {
        if self.lent || !self.free() {
            self.counters.tx_dropped += 1;
            return;
        }
        let Some(area) = self.frame_area(frame.len()) else {
            self.counters.tx_dropped += 1;
            return;
        };
        area.copy_from_slice(frame);
        self.send(frame.len());
    }

    /// Gives descriptor `next` (its buffer holding a `len`-byte frame at [`FRAME_ALIGN`]) to
    /// the ENET and rings the doorbell.
    fn send(&mut self, len: usize) {
        let at = self.next;
        let (Some(d), Some(area)) = (self.ring.get(at), self.frame_area(len)) else {
            self.counters.tx_dropped += 1;
            return;
        };
        let mut control = 0;
        if self.insert_checksums {
            if let Some((start, offset)) = l4_checksum_field(area) {
                if let Some(field) = area.get_mut(start + offset..start + offset + 2) {
                    field.fill(0);
                    control |= TX_PINS;
                }
            }
        }
        // With TACC[SHIFT16] the ENET skips the two bytes in front of the frame, so the DMA
        // starts on the buffer's alignment; without, it starts at the frame.
        let (address, length) = match self.buffers.get(at) {
            Some(b) if self.shift16 => (b.as_ptr(), len + FRAME_ALIGN),
            Some(b) => (b.as_ptr().wrapping_add(FRAME_ALIGN), len),
            None => return,
        };
        let wrap = if at == TX_DESCRIPTORS - 1 { WRAP } else { 0 };
        d.give(
            dma_address(address),
            control,
            TX_READY | wrap | LAST | TX_CRC | length as u32,
        );
        dma_barrier();
        self.regs.write(TDAR, TDAR_ACTIVE);
        self.next = (at + 1) % TX_DESCRIPTORS;
        self.in_flight += 1;
        self.counters.tx_frames += 1;
    }
}

impl<R: Registers> PhyTx for EnetTx<R> {
    fn transmit(&mut self, wire: &[u8]) {
        EnetTx::transmit(self, wire)
    }

    fn dropped(&mut self) -> u64 {
        self.counters.tx_dropped
    }

    fn ready(&mut self) -> bool {
        !self.lent && self.free()
    }

    fn completes_l4_checksums(&mut self) -> bool {
        self.insert_checksums
    }

    fn tx_buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        EnetTx::tx_buffer(self, len)
    }

    fn transmit_buffer(&mut self, len: usize) {
        EnetTx::transmit_buffer(self, len)
    }
}
