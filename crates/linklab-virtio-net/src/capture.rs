//! virtio-net standing in for a soft PHY's sampler: a capture peripheral with DMA.
//!
//! A microcontroller that is its own 10BASE-T PHY records the line with a shifter (SPI, I2S,
//! PIO) and DMA into a buffer of packed samples, and raises an interrupt when the line has
//! idled; to transmit, it hands a DMA channel a buffer of samples to shift out. QEMU has no
//! such peripheral, so here a virtio-net device plays it: each "packet" it delivers is one
//! capture (bit-packed samples, `u32` words little endian, LSB first: linklab-phy10's
//! layout), and each "packet" the firmware sends is a buffer of samples to put on the line.
//! The program at the other end of QEMU's `-netdev stream` socket is the line (`linklab emu
//! riscv32-virt --image soft-phy`); nothing on this path is an Ethernet frame.
//!
//! The buffers are word-aligned `u32` arrays sized by the caller (`RX_WORDS`, `TX_WORDS`):
//! a full-length frame at 8x is about 12 KB of samples, far more than a network buffer. The
//! device writes its 12-byte virtio 1.x header first (three words), so the samples start
//! word-aligned. The queues are this crate's ([`crate::queue`]), their memory part of the
//! device: [`CaptureDevice::new_in`] builds it where it stays (a static), and
//! [`CaptureDevice::start`] then sets the queues up.

use core::mem::MaybeUninit;
use core::ptr::addr_of_mut;

use crate::mmio::{self, feature, Mmio, Registers};
use crate::queue::{Buf, QueueMemory, Virtqueue, QUEUE_SIZE};
use crate::{InitError, Slot, HEADER_LEN};

/// Capture buffers kept posted.
pub const RX_BUFFERS: usize = 4;
/// Sample buffers to send.
pub const TX_BUFFERS: usize = 8;

/// Counters of what the capture device could not do.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct CaptureCounters {
    /// Captures completed by the device and handed to the handler.
    pub captures: u64,
    /// Completed buffers the device reported with a length the driver cannot use (dropped).
    pub bad_length: u64,
    /// Sample buffers not sent: no free buffer, or the samples did not fit.
    pub tx_dropped: u64,
}

/// One DMA buffer of words.
#[repr(C, align(16))]
struct Words<const N: usize>([u32; N]);

impl<const N: usize> Words<N> {
    /// The buffer as the device sees it: (address, bytes).
    fn buf(&self, bytes: usize, device_writes: bool) -> Buf {
        Buf {
            addr: self.0.as_ptr() as usize,
            len: bytes.min(N * 4),
            device_writes,
        }
    }
}

/// The virtio 1.x header: 12 bytes, three words.
const HEADER_WORDS: usize = HEADER_LEN / 4;

/// The device's queues, once set up.
struct Queues {
    rx: Virtqueue,
    tx: Virtqueue,
}

/// A virtio-net device used as a sampler: captures in, sample buffers out.
pub struct CaptureDevice<const RX_WORDS: usize, const TX_WORDS: usize> {
    regs: Mmio,
    rx_memory: QueueMemory,
    tx_memory: QueueMemory,
    queues: Option<Queues>,
    rx: [Words<RX_WORDS>; RX_BUFFERS],
    rx_head: [Option<u16>; RX_BUFFERS],
    tx: [Words<TX_WORDS>; TX_BUFFERS],
    tx_head: [Option<u16>; TX_BUFFERS],
    irq: u32,
    counters: CaptureCounters,
}

impl<const RX_WORDS: usize, const TX_WORDS: usize> CaptureDevice<RX_WORDS, TX_WORDS> {
    /// Samples one capture buffer holds.
    pub const RX_SAMPLES: usize = (RX_WORDS - HEADER_WORDS) * 32;

    /// Brings up the device in `slot` to feature negotiation, building it in `place`: the
    /// buffers (a soft PHY's are tens of KB: 77 KB for 8x) are zeroed where they live,
    /// instead of being built in a value on the stack and moved into a static.
    /// [`CaptureDevice::start`] sets up its queues and posts the buffers.
    ///
    /// # Safety
    /// `slot` is a virtio-mmio network device used by nothing else.
    pub unsafe fn new_in(
        place: &mut MaybeUninit<Self>,
        slot: Slot,
    ) -> Result<&mut Self, InitError> {
        // SAFETY: forwarded from the caller.
        let regs = unsafe { Mmio::new(slot.base) };
        mmio::negotiate(&regs, feature::VERSION_1)?;
        info!(
            "virtio-net capture: up at {:#x}, irq {}",
            slot.base, slot.irq
        );
        let at = place.as_mut_ptr();
        // SAFETY: `at` points to the (uninitialised) device; each field is written once,
        // through a raw pointer and without reading it, before the whole is assumed
        // initialised. The buffers are zeroed in place: all zeros is a valid array of words.
        unsafe {
            addr_of_mut!((*at).regs).write(regs);
            addr_of_mut!((*at).rx_memory).write(QueueMemory::new());
            addr_of_mut!((*at).tx_memory).write(QueueMemory::new());
            addr_of_mut!((*at).queues).write(None);
            addr_of_mut!((*at).rx).write_bytes(0, 1);
            addr_of_mut!((*at).rx_head).write([None; RX_BUFFERS]);
            addr_of_mut!((*at).tx).write_bytes(0, 1);
            addr_of_mut!((*at).tx_head).write([None; TX_BUFFERS]);
            addr_of_mut!((*at).irq).write(slot.irq);
            addr_of_mut!((*at).counters).write(CaptureCounters::default());
            Ok(place.assume_init_mut())
        }
    }

    /// Sets up the queues, posts every capture buffer and lets the device run. Call once,
    /// when the value has reached its final place in memory (the device keeps the
    /// addresses of the queues and buffers) and stays there.
    pub fn start(&mut self) -> Result<(), InitError> {
        if self.queues.is_some() {
            return Err(InitError::Device);
        }
        // SAFETY: the caller keeps `self` in place for the device's life; each queue's
        // memory is reached only through its queue from now on.
        let (rx, mut tx) = unsafe {
            (
                Virtqueue::new(core::ptr::addr_of_mut!(self.rx_memory)),
                Virtqueue::new(core::ptr::addr_of_mut!(self.tx_memory)),
            )
        };
        tx.set_interrupts(false);
        mmio::setup_queue(&self.regs, 0, QUEUE_SIZE, rx.areas())?;
        mmio::setup_queue(&self.regs, 1, QUEUE_SIZE, tx.areas())?;
        mmio::driver_ok(&self.regs);
        self.queues = Some(Queues { rx, tx });
        for i in 0..RX_BUFFERS {
            self.post_rx(i)?;
        }
        Ok(())
    }

    fn post_rx(&mut self, i: usize) -> Result<(), InitError> {
        let Some(q) = self.queues.as_mut() else {
            return Err(InitError::Device);
        };
        let head =
            q.rx.add(&[self.rx[i].buf(RX_WORDS * 4, true)])
                .ok_or(InitError::Device)?;
        self.rx_head[i] = Some(head);
        // Always notified, as `VirtioNet` does (a notification missed under QEMU's TCG leaves
        // the device without the buffers the firmware thinks it has: see its `post_rx`).
        self.regs.write(mmio::reg::QUEUE_NOTIFY, 0);
        Ok(())
    }

    /// The interrupt this device raises.
    pub fn irq(&self) -> u32 {
        self.irq
    }

    /// What the device could not do, and the captures it delivered.
    pub fn counters(&self) -> CaptureCounters {
        self.counters
    }

    /// The capture-complete interrupt's work: acknowledges the interrupt and hands each
    /// completed capture to `on_capture` as (words, number of samples), in place in its DMA
    /// buffer, then posts the buffer again. Returns the captures handed over.
    pub fn on_interrupt(&mut self, mut on_capture: impl FnMut(&[u32], usize)) -> usize {
        mmio::ack_interrupt(&self.regs);
        let mut handed = 0;
        while let Some((head, written)) = self.queues.as_mut().and_then(|q| q.rx.pop_used()) {
            let Some(i) = self.rx_head.iter().position(|h| *h == Some(head)) else {
                break;
            };
            self.rx_head[i] = None;
            let written = written as usize;
            match written.checked_sub(HEADER_LEN) {
                Some(len) if written <= RX_WORDS * 4 => {
                    // Clear what an earlier, longer capture left in the last word.
                    let end_word = written.div_ceil(4);
                    let w = &mut self.rx[i].0;
                    let keep = written % 4;
                    if keep != 0 {
                        // Volatile: the device wrote it.
                        // SAFETY: in bounds (end_word <= RX_WORDS).
                        let last = unsafe { core::ptr::read_volatile(&w[end_word - 1]) };
                        w[end_word - 1] = last & (u32::MAX >> (8 * (4 - keep)));
                    }
                    let words = &self.rx[i].0[HEADER_WORDS..end_word];
                    self.counters.captures += 1;
                    on_capture(words, len * 8);
                    handed += 1;
                }
                _ => self.counters.bad_length += 1,
            }
            if self.post_rx(i).is_err() {
                break;
            }
        }
        handed
    }

    /// Reclaims the transmit buffers the device has finished with.
    fn reclaim_tx(&mut self) {
        let Some(q) = self.queues.as_mut() else {
            return;
        };
        while let Some((head, _)) = q.tx.pop_used() {
            if let Some(slot) = self.tx_head.iter_mut().find(|h| **h == Some(head)) {
                *slot = None;
            }
        }
    }

    /// Sends one buffer of samples: `fill` writes them into the free buffer's words (zeroed)
    /// and returns how many samples it wrote, or None to send nothing. No free buffer, or a
    /// count past the buffer, drops and counts it.
    pub fn transmit_with(&mut self, fill: impl FnOnce(&mut [u32]) -> Option<usize>) {
        self.reclaim_tx();
        let Some(i) = self.tx_head.iter().position(Option::is_none) else {
            self.counters.tx_dropped += 1;
            return;
        };
        let words = &mut self.tx[i].0;
        words.fill(0);
        let Some(samples) = fill(&mut words[HEADER_WORDS..]) else {
            return;
        };
        if samples > (TX_WORDS - HEADER_WORDS) * 32 {
            self.counters.tx_dropped += 1;
            return;
        }
        // The header stays zero: no checksum, no segmentation.
        let len = HEADER_LEN + samples.div_ceil(8);
        let buf = self.tx[i].buf(len, false);
        let Some(q) = self.queues.as_mut() else {
            self.counters.tx_dropped += 1;
            return;
        };
        match q.tx.add(&[buf]) {
            Some(head) => {
                self.tx_head[i] = Some(head);
                if q.tx.needs_notify() {
                    self.regs.write(mmio::reg::QUEUE_NOTIFY, 1);
                }
            }
            None => self.counters.tx_dropped += 1,
        }
    }
}
