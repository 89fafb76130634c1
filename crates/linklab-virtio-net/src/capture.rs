//! virtio-net standing in for a soft PHY's sampler: a capture peripheral with DMA.
//!
//! A microcontroller that is its own 10BASE-T PHY records the line with a shifter (SPI, I2S,
//! PIO) and DMA into a buffer of packed samples, and raises an interrupt when the line has
//! idled; to transmit, it hands a DMA channel a buffer of samples to shift out. QEMU has no
//! such peripheral, so here a virtio-net device plays it: each "packet" it delivers is one
//! capture (bit-packed samples, `u32` words little endian, LSB first: linklab-phy10's
//! layout), and each "packet" the firmware sends is a buffer of samples to put on the line.
//! The program at the other end of QEMU's `-netdev stream` socket is the line (`linklab emu
//! --phy10-line`); nothing on this path is an Ethernet frame.
//!
//! The buffers are word-aligned `u32` arrays sized by the caller (`RX_WORDS`, `TX_WORDS`):
//! a full-length frame at 8x is about 12 KB of samples, far more than a network buffer. The
//! device writes its 12-byte virtio 1.x header first (three words), so the samples start
//! word-aligned; the legacy 10-byte header is refused.

use crate::{open, InitError, Raw, Slot, RX_BUFFERS, TX_BUFFERS};

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
    /// The buffer as the bytes the device reads or writes.
    fn bytes(&self) -> &[u8] {
        // SAFETY: the same memory, u8 has no alignment or validity requirements.
        unsafe { core::slice::from_raw_parts(self.0.as_ptr().cast::<u8>(), N * 4) }
    }

    fn bytes_mut(&mut self) -> &mut [u8] {
        // SAFETY: as above; the borrow of self is exclusive.
        unsafe { core::slice::from_raw_parts_mut(self.0.as_mut_ptr().cast::<u8>(), N * 4) }
    }
}

/// A virtio-net device used as a sampler: captures in, sample buffers out.
pub struct CaptureDevice<const RX_WORDS: usize, const TX_WORDS: usize> {
    raw: Raw,
    rx: [Words<RX_WORDS>; RX_BUFFERS],
    rx_token: [Option<u16>; RX_BUFFERS],
    tx: [Words<TX_WORDS>; TX_BUFFERS],
    tx_token: [Option<(u16, usize)>; TX_BUFFERS],
    irq: u32,
    counters: CaptureCounters,
}

/// The virtio 1.x header: 12 bytes, three words.
const HEADER_WORDS: usize = 3;

impl<const RX_WORDS: usize, const TX_WORDS: usize> CaptureDevice<RX_WORDS, TX_WORDS> {
    /// Samples one capture buffer holds.
    pub const RX_SAMPLES: usize = (RX_WORDS - HEADER_WORDS) * 32;

    /// Brings up the device in `slot`; [`CaptureDevice::start`] posts the buffers.
    ///
    /// # Safety
    /// As [`crate::VirtioNet::new`]: `slot` is a virtio-mmio network device used by nothing
    /// else, and this is called once (the DMA pool is static).
    pub unsafe fn new(slot: Slot) -> Result<Self, InitError> {
        // SAFETY: forwarded from the caller.
        let raw = unsafe { open(slot) }?;
        // The 10-byte legacy header would leave the samples unaligned.
        let mut probe = [0u8; 16];
        if raw.fill_buffer_header(&mut probe) != Ok(HEADER_WORDS * 4) {
            warn!("virtio-net capture: legacy interface, samples would be unaligned");
            return Err(InitError::Device);
        }
        info!(
            "virtio-net capture: up at {:#x}, irq {}",
            slot.base, slot.irq
        );
        Ok(CaptureDevice {
            raw,
            rx: [const { Words([0; RX_WORDS]) }; RX_BUFFERS],
            rx_token: [None; RX_BUFFERS],
            tx: [const { Words([0; TX_WORDS]) }; TX_BUFFERS],
            tx_token: [None; TX_BUFFERS],
            irq: slot.irq,
            counters: CaptureCounters::default(),
        })
    }

    /// Posts every capture buffer and enables the device's interrupts. Call once the value
    /// has reached its final place in memory (the device keeps the buffers' addresses).
    pub fn start(&mut self) -> Result<(), InitError> {
        for i in 0..RX_BUFFERS {
            self.post_rx(i)?;
        }
        self.raw.enable_interrupts();
        Ok(())
    }

    fn post_rx(&mut self, i: usize) -> Result<(), InitError> {
        // SAFETY: the buffer stays untouched until the device gives it back.
        let token = unsafe { self.raw.receive_begin(self.rx[i].bytes_mut()) }
            .map_err(|_| InitError::Device)?;
        self.rx_token[i] = Some(token);
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
        let _ = self.raw.ack_interrupt();
        let mut handed = 0;
        while let Some(token) = self.raw.poll_receive() {
            let Some(i) = self.rx_token.iter().position(|t| *t == Some(token)) else {
                break;
            };
            self.rx_token[i] = None;
            // SAFETY: the same buffer that was posted with this token.
            let got = unsafe { self.raw.receive_complete(token, self.rx[i].bytes_mut()) };
            match got {
                Ok((hdr, len)) if hdr == HEADER_WORDS * 4 && hdr + len <= RX_WORDS * 4 => {
                    // Clear what an earlier, longer capture left in the last word.
                    let end = hdr + len;
                    let last_word_end = end.div_ceil(4) * 4;
                    self.rx[i].bytes_mut()[end..last_word_end].fill(0);
                    let words = &self.rx[i].0[HEADER_WORDS..last_word_end / 4];
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
        while let Some(token) = self.raw.poll_transmit() {
            let Some(i) = self
                .tx_token
                .iter()
                .position(|t| matches!(t, Some((tok, _)) if *tok == token))
            else {
                break;
            };
            let len = self.tx_token[i].map_or(0, |(_, len)| len);
            // SAFETY: the same slice that was submitted with this token.
            if unsafe {
                self.raw
                    .transmit_complete(token, &self.tx[i].bytes()[..len])
            }
            .is_err()
            {
                break;
            }
            self.tx_token[i] = None;
        }
    }

    /// Sends one buffer of samples: `fill` writes them into the free buffer's words (zeroed)
    /// and returns how many samples it wrote, or None to send nothing. No free buffer, or a
    /// count past the buffer, drops and counts it.
    pub fn transmit_with(&mut self, fill: impl FnOnce(&mut [u32]) -> Option<usize>) {
        self.reclaim_tx();
        let Some(i) = self.tx_token.iter().position(Option::is_none) else {
            self.counters.tx_dropped += 1;
            return;
        };
        let words = &mut self.tx[i].0[HEADER_WORDS..];
        words.fill(0);
        let Some(samples) = fill(words) else {
            return;
        };
        if samples > (TX_WORDS - HEADER_WORDS) * 32 {
            self.counters.tx_dropped += 1;
            return;
        }
        if self.raw.fill_buffer_header(self.tx[i].bytes_mut()).is_err() {
            self.counters.tx_dropped += 1;
            return;
        }
        let len = HEADER_WORDS * 4 + samples.div_ceil(8);
        // SAFETY: the buffer is not touched again until transmit_complete reclaims it.
        match unsafe { self.raw.transmit_begin(&self.tx[i].bytes()[..len]) } {
            Ok(token) => self.tx_token[i] = Some((token, len)),
            Err(_) => self.counters.tx_dropped += 1,
        }
    }
}
