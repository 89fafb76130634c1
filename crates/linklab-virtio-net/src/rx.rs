//! The receive side of [`VirtioNet`]: posting the RX queue's run (or the spill buffer),
//! the interrupt handler that commits what the device wrote, and the checksum tags.

use super::*;

impl<S: Storage + 'static, R: Registers> VirtioNet<S, R> {
    /// Posts the run's buffers that are not posted yet, taking a run if there is none; the
    /// spill buffer when the queue has no room and nothing is posted.
    pub(crate) fn post_rx(&mut self) {
        if self.spill_posted {
            return;
        }
        if self.run.is_none() && self.posted == 0 {
            self.run = self.producer.grant_run().ok();
            if self.run.is_none() {
                let spill = Buf {
                    addr: self.mem.spill as usize,
                    len: BUFFER_LEN,
                    device_writes: true,
                };
                self.spill_posted = self.post_chain(spill);
                self.notify_rx();
                return;
            }
        }
        let mut added = false;
        while let Some(run) = self.run.as_mut() {
            let slot = run.slot(self.posted);
            if slot.is_empty() {
                break;
            }
            let frame = Buf {
                addr: slot.as_mut_ptr() as usize,
                len: slot.len(),
                device_writes: true,
            };
            if !self.post_chain(frame) {
                break; // Cannot happen: RX_POSTED chains of two fill the queue exactly.
            }
            added = true;
        }
        if added {
            self.notify_rx();
        }
    }

    /// Offers `frame` behind the next chain's header; true if the queue took it.
    pub(crate) fn post_chain(&mut self, frame: Buf) -> bool {
        let number = self.used.wrapping_add(self.posted) % RX_POSTED;
        let header = Buf {
            addr: self.header(number) as usize,
            len: HEADER_LEN,
            device_writes: true,
        };
        match self.rx.add(&[header, frame]) {
            Some(head) => {
                self.heads[number] = head;
                self.posted += 1;
                true
            }
            None => false,
        }
    }

    /// Receive header `number` (taken modulo [`RX_POSTED`]): its first byte's address.
    pub(crate) fn header(&self, number: usize) -> *mut u8 {
        self.mem.rx_headers.wrapping_add(number % RX_POSTED).cast()
    }

    /// Tells the device the receive queue has new buffers.
    pub(crate) fn notify_rx(&mut self) {
        // Always notified, whatever the device's no-notify flag says: a missed notification
        // with nothing else posted stops receiving for good. And one can be missed under
        // QEMU: on a single-vCPU guest TCG drops our fence, so the flag read may pass the
        // index store while the device thread re-enables notifications and re-reads the
        // index, each side seeing the other's old value (seen after UDP floods: the device's
        // available index one behind ours, notifications on, no interrupt; a probe run in
        // ~30). A notification is a register write per interrupt.
        self.regs.write(mmio::reg::QUEUE_NOTIFY, RX_QUEUE);
    }

    /// What receive header `number` says of its frame's checksums.
    pub(crate) fn rx_checksums(&self, number: usize) -> RxChecksums {
        // Volatile: the device wrote it.
        // SAFETY: the first byte of receive header `number` of our 'static memory (see
        // `header`), which the device finished writing (its chain was used).
        let flags = unsafe { core::ptr::read_volatile(self.header(number)) };
        if self.features & feature::GUEST_CSUM != 0
            && flags & (HDR_F_NEEDS_CSUM | HDR_F_DATA_VALID) != 0
        {
            RxChecksums::Valid
        } else {
            RxChecksums::Unchecked
        }
    }

    /// The interrupt handler's work: acknowledges the interrupt, commits every frame the
    /// device wrote, oldest first (from the run, or from the spill buffer into a grant if
    /// one is free now, else counted missed), posts what has room, and looks again: QEMU
    /// hands over a frame it held as the notification is written, and taking it here costs
    /// less than another interrupt. Returns the frames committed.
    pub fn on_interrupt(&mut self) -> usize {
        mmio::ack_interrupt(&self.regs);
        let mut committed = 0;
        loop {
            let mut took = false;
            while let Some((head, written)) = self.rx.pop_used() {
                let number = self.used % RX_POSTED;
                if self.posted == 0 || head != self.heads[number] {
                    // Not the chain posted first: the device is broken; stop receiving.
                    return committed;
                }
                took = true;
                self.used = self.used.wrapping_add(1);
                self.posted -= 1;
                let len = (written as usize).saturating_sub(HEADER_LEN);
                if self.take_frame(len, number) {
                    committed += 1;
                }
            }
            if !took {
                return committed;
            }
            self.post_rx();
        }
    }

    /// Commits the frame of `len` bytes the device wrote into the oldest posted chain
    /// (header `number`): from the run, or copied from the spill buffer. True if committed.
    pub(crate) fn take_frame(&mut self, len: usize, number: usize) -> bool {
        let checksums = self.rx_checksums(number);
        if self.spill_posted {
            self.spill_posted = false;
            if (1..=BUFFER_LEN).contains(&len) {
                self.counters.rx_spilled += 1;
                return self.commit_spilled(len, checksums);
            }
        } else if let Some(run) = self.run.as_mut() {
            if (1..=RUN_SLOT_LEN).contains(&len) {
                if !run.commit_first_tagged(len, checksums, self.posted, RX_POSTED) {
                    self.run = None;
                }
                return true;
            }
            // With buffers behind (the device's), pass this one on empty (the MAC counts it
            // short) to keep them where they are; else give it back.
            if self.posted == 0
                || !run.commit_first_tagged(0, RxChecksums::Unchecked, self.posted, RX_POSTED)
            {
                self.run = None;
            }
        }
        debug!("virtio-net: RX buffer with a bad length dropped");
        self.counters.rx_bad_length += 1;
        false
    }

    /// Copies the frame in the spill buffer into a grant, if one is free; else counts it
    /// missed.
    pub(crate) fn commit_spilled(&mut self, len: usize, checksums: RxChecksums) -> bool {
        let Ok(mut grant) = self.producer.grant() else {
            self.producer.record_missed();
            return false;
        };
        let buf = grant.buf();
        let n = len.min(buf.len()).min(BUFFER_LEN);
        // SAFETY: the spill buffer is BUFFER_LEN bytes of our 'static memory, which the device
        // finished writing (its chain was used) and nothing else references; `buf` is the
        // grant's, elsewhere.
        unsafe { core::ptr::copy_nonoverlapping(self.mem.spill, buf.as_mut_ptr(), n) };
        grant.commit_tagged(n, checksums);
        true
    }
}
