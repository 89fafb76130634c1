//! The transmit side of [`VirtioNet`]: buffers lent to the MAC or copied into, offered to
//! the device with the checksum request, and [`SharedTx`], the main loop's way in.

use super::*;

impl<S: Storage + 'static, R: Registers> VirtioNet<S, R> {
    /// Reclaims the transmit buffers the device has finished with.
    pub(crate) fn reclaim_tx(&mut self) {
        while let Some((head, _)) = self.tx.pop_used() {
            if let Some(slot) = self.tx_heads.iter_mut().find(|h| **h == Some(head)) {
                *slot = None;
            }
        }
    }

    /// A transmit buffer neither in flight nor lent, after reclaiming what the device
    /// finished.
    pub(crate) fn free_tx(&mut self) -> Option<usize> {
        self.reclaim_tx();
        let lent = self.lent;
        (0..TX_BUFFERS).find(|&i| self.tx_heads[i].is_none() && lent != Some(i))
    }

    /// True if a transmit buffer is free now (after reclaiming what the device finished).
    pub fn tx_ready(&mut self) -> bool {
        self.free_tx().is_some()
    }

    /// Lends a free transmit buffer's frame area (`len` bytes, starting at
    /// `linklab_mac::FRAME_ALIGN` mod 4, behind room for the header) for the MAC to build
    /// the next frame in place ([`VirtioNet::transmit_buffer`] sends it): no copy. None
    /// when no buffer is free or `len` does not fit.
    pub fn tx_buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        if self.lent.is_some() || LENT_AT + HEADER_LEN + len > BUFFER_LEN {
            return None;
        }
        let i = self.free_tx()?;
        self.lent = Some(i);
        Some(&mut self.mem.tx[i].0[LENT_AT + HEADER_LEN..LENT_AT + HEADER_LEN + len])
    }

    /// Sends the first `len` bytes of the frame area [`VirtioNet::tx_buffer`] lent.
    pub fn transmit_buffer(&mut self, len: usize) {
        let Some(i) = self.lent.take() else {
            return;
        };
        if LENT_AT + HEADER_LEN + len > BUFFER_LEN {
            self.counters.tx_dropped += 1;
            return;
        }
        self.send_slot(i, LENT_AT, len);
    }

    /// Sends one plain Ethernet frame: copied behind its header into a free transmit
    /// buffer, or dropped and counted when none is free.
    pub fn transmit(&mut self, frame: &[u8]) {
        let Some(i) = self.free_tx() else {
            self.counters.tx_dropped += 1;
            return;
        };
        // Start the header where the frame after it lands at the same offset mod 4 as
        // `frame` (buffers are 16-byte aligned): the copy is then word by word.
        let at = (frame.as_ptr() as usize + 4 - HEADER_LEN % 4) % 4;
        let Some(dst) = self.mem.tx[i]
            .0
            .get_mut(at + HEADER_LEN..at + HEADER_LEN + frame.len())
        else {
            self.counters.tx_dropped += 1;
            return;
        };
        dst.copy_from_slice(frame);
        self.send_slot(i, at, frame.len());
    }

    /// Offers transmit buffer `i` to the device: its header at `at` (with
    /// `VIRTIO_NET_F_CSUM`, asking the device to complete the TCP or UDP checksum), the
    /// `len`-byte frame behind it.
    pub(crate) fn send_slot(&mut self, i: usize, at: usize, len: usize) {
        let buf = &mut self.mem.tx[i].0[at..at + HEADER_LEN + len];
        let mut header = [0u8; HEADER_LEN];
        if self.features & feature::CSUM != 0 {
            if let Some((start, offset)) = l4_checksum_field(&buf[HEADER_LEN..]) {
                header[0] = HDR_F_NEEDS_CSUM;
                header[6..8].copy_from_slice(&(start as u16).to_le_bytes());
                header[8..10].copy_from_slice(&(offset as u16).to_le_bytes());
            }
        }
        buf[..HEADER_LEN].copy_from_slice(&header);
        let chain = [Buf {
            addr: buf.as_ptr() as usize,
            len: buf.len(),
            device_writes: false,
        }];
        match self.tx.add(&chain) {
            Some(head) => {
                self.tx_heads[i] = Some(head);
                if self.tx.needs_notify() {
                    self.regs.write(mmio::reg::QUEUE_NOTIFY, TX_QUEUE);
                }
            }
            None => self.counters.tx_dropped += 1,
        }
    }
}

/// Where in a transmit buffer a lent frame's header starts: the frame behind it then
/// starts at `linklab_mac::FRAME_ALIGN` mod 4 (buffers are 16-byte aligned), as the MAC's
/// own buffer does, so the stack's copies into it are word-aligned.
const LENT_AT: usize = (linklab_mac::FRAME_ALIGN + 4 - HEADER_LEN % 4) % 4;

/// The main loop's transmit side of a [`VirtioNet`] that the interrupt handler also uses:
/// every access runs inside the board's critical section `with_device` (interrupts
/// masked).
pub struct SharedTx<S: Storage + 'static, F> {
    with_device: F,
    storage: PhantomData<S>,
}

impl<S: Storage + 'static, F: FnMut(&mut dyn FnMut(&mut VirtioNet<S>))> SharedTx<S, F> {
    /// `with_device` must run its argument on the device with interrupts masked.
    pub fn new(with_device: F) -> Self {
        SharedTx {
            with_device,
            storage: PhantomData,
        }
    }
}

impl<S: Storage + 'static, F: FnMut(&mut dyn FnMut(&mut VirtioNet<S>))> PhyTx for SharedTx<S, F> {
    fn transmit(&mut self, wire: &[u8]) {
        (self.with_device)(&mut |dev| dev.transmit(wire));
    }

    fn dropped(&mut self) -> u64 {
        let mut n = 0;
        (self.with_device)(&mut |dev| n = dev.counters().tx_dropped);
        n
    }

    fn ready(&mut self) -> bool {
        let mut free = false;
        (self.with_device)(&mut |dev| free = dev.tx_ready());
        free
    }

    fn completes_l4_checksums(&mut self) -> bool {
        let mut on = false;
        (self.with_device)(&mut |dev| on = dev.completes_l4_checksums());
        on
    }

    fn tx_buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        let mut lent = None;
        (self.with_device)(&mut |dev| {
            lent = dev.tx_buffer(len).map(|b| (b.as_mut_ptr(), b.len()));
        });
        // SAFETY: the transmit buffers are the main loop's alone (the interrupt handler
        // touches only the receive queue), and the driver leaves a lent one untouched until
        // transmit_buffer; the slice borrows `self`, so no other call on it comes first.
        lent.map(|(p, n)| unsafe { core::slice::from_raw_parts_mut(p, n) })
    }

    fn transmit_buffer(&mut self, len: usize) {
        (self.with_device)(&mut |dev| dev.transmit_buffer(len));
    }
}
