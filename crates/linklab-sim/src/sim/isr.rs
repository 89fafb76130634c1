//! The device's PHY and its receive interrupt: when the interrupt enters and leaves (on the
//! CPU timeline), what it captures (an interrupt that enters late loses the start of the
//! transmission), and what it commits to the MAC's grant.
//!
//! The grant is taken when the interrupt enters, before anything is known about what is
//! coming; at the exit the PHY writes into it and the grant is committed or cancelled:
//! * byte wire: the captured bits, at a random bit offset and polarity (raw format; the MAC
//!   finds the SFD and realigns);
//! * sample-level wire: linklab-phy10's [`RxInterrupt`](linklab_phy10::RxInterrupt) decodes
//!   the samples from the interrupt's entry on straight into the grant (bytes after the SFD,
//!   FCS included; the MAC checks the FCS).

use linklab_mac::{BoxedSlice, RxGrant};
use linklab_phy10::RxOutcome;
use rand::Rng;

use super::events::{Ev, LineRx};
use super::main_loop::MainState;
use super::Sim;
use crate::cost::PhyKind;

/// Bits of preamble before the SFD: an interrupt entering later has lost the frame's start.
const PREAMBLE_BITS: u64 = 56;

/// Writes the byte wire's capture into `out`: the bits of `wire` from `start_bit` on (shifted
/// down in place in `wire`), `shift` idle bits late, inverted if `invert`. Returns the bytes
/// written (0: nothing captured).
fn capture_bytes(
    wire: &mut [u8],
    start_bit: usize,
    shift: usize,
    invert: bool,
    out: &mut [u8],
) -> usize {
    let n = linklab_mac::deframe::realign(wire, start_bit, false);
    linklab_mac::impair::shift_into(out, wire.get(..n).unwrap_or(&[]), shift, invert)
}

/// Bytes [`capture_bytes`] writes for a `wire_len`-byte wire (given room).
fn captured_len(wire_len: usize, start_bit: usize, shift: usize) -> usize {
    (wire_len * 8).saturating_sub(start_bit) / 8 + usize::from(!shift.is_multiple_of(8))
}

impl Sim<'_> {
    /// A link pulse from the host: a bit-banged PHY's interrupt wakes up for it.
    pub(super) fn device_ltp(&mut self) {
        self.phy.rx_ltps += 1;
        if self.cfg.cost.phy == PhyKind::Dma {
            return; // The PHY chip handles link pulses.
        }
        let entry = self.now.max(self.cpu_busy_until) + self.cfg.cost.irq_latency_ns;
        let exit = entry + self.cfg.cost.isr_ns(0);
        self.cpu_busy_until = exit;
        self.busy_ns += exit - entry;
        self.schedule(entry, Ev::IsrEnter);
        self.schedule(
            exit,
            Ev::IsrExit {
                line: LineRx::Nothing,
            },
        );
    }

    /// The first bit of a host transmission reaches the device: places the receive
    /// interrupt on the CPU timeline and decides what it will have captured.
    pub(super) fn device_rx_start(&mut self, wire: Vec<u8>) {
        self.phy.rx_packets += 1;
        let cost = self.cfg.cost;
        let bit_ps = self.cfg.link.rate.bit_ps();
        let total_bits = wire.len() as u64 * 8;
        let end = self.now + self.cfg.link.rate.bytes_ns(wire.len());
        // Byte wire: the sampler's start is uncertain by a few bits, and the pair may be
        // swapped. (The sample-level wire has its own sampling phase.)
        let (shift, invert) = match self.samples {
            None => (self.rng.gen_range(0..8), self.rng.gen_bool(0.5)),
            Some(_) => (0, false),
        };
        let (entry, exit, start_bit) = match cost.phy {
            PhyKind::BitBanged => {
                let entry = self.now.max(self.cpu_busy_until) + cost.irq_latency_ns;
                let late_bits = ((entry - self.now) * 1000).div_ceil(bit_ps);
                let capture_len = total_bits.saturating_sub(late_bits).div_ceil(8) as usize;
                let exit = entry.max(end) + cost.isr_ns(capture_len);
                (entry, exit, late_bits)
            }
            PhyKind::Dma => {
                let entry = end.max(self.cpu_busy_until) + cost.irq_latency_ns;
                let exit = entry + cost.isr_ns(wire.len());
                (entry, exit, 0)
            }
        };
        self.cpu_busy_until = exit;
        self.busy_ns += exit - entry;
        let line = if start_bit < total_bits {
            if start_bit > PREAMBLE_BITS {
                self.phy.rx_truncated += 1;
            }
            let start_bit = start_bit as usize;
            match &self.samples {
                None => {
                    self.phy.rx_bit_offset += u64::from(shift != 0);
                    self.phy.rx_inverted += u64::from(invert);
                    LineRx::Bytes {
                        wire,
                        start_bit,
                        shift,
                        invert,
                    }
                }
                Some(line) => LineRx::Samples {
                    wire,
                    first_sample: start_bit * line.samples_per_bit(),
                },
            }
        } else {
            // The interrupt came after the whole frame: it finds an idle line.
            self.phy.rx_truncated += 1;
            self.phy.rx_idle_line += 1;
            LineRx::Nothing
        };
        self.schedule(entry, Ev::IsrEnter);
        self.schedule(exit, Ev::IsrExit { line });
    }

    /// Interrupt entry: preempts the main loop and takes the MAC's grant.
    pub(super) fn isr_enter(&mut self) {
        self.isr_active = true;
        if let MainState::Working {
            gen,
            remaining,
            resumed_at: Some(r),
            rx,
            pass,
            tail,
        } = self.main
        {
            self.main = MainState::Working {
                gen,
                remaining: remaining.saturating_sub(self.now - r),
                resumed_at: None,
                rx,
                pass,
                tail,
            };
        }
        self.grant = self.producer.grant().ok();
    }

    /// Interrupt exit: the PHY writes what it captured into the grant and commits it (or
    /// cancels, or counts the transmission missed if there was no grant); the main loop
    /// resumes.
    pub(super) fn isr_exit(&mut self, line: LineRx) {
        self.isr_active = false;
        let committed = match self.grant.take() {
            Some(grant) => self.commit_capture(grant, line),
            None => {
                self.without_grant(line);
                0
            }
        };
        if committed > 0 {
            self.committed.push_back(committed);
            self.join_pass(committed);
        }
        if let MainState::Working {
            remaining,
            resumed_at: None,
            rx,
            pass,
            tail,
            ..
        } = self.main
        {
            // A new generation: the MainDone scheduled before the preemption is stale.
            self.main_gen += 1;
            let g = self.main_gen;
            self.main = MainState::Working {
                gen: g,
                remaining,
                resumed_at: Some(self.now),
                rx,
                pass,
                tail,
            };
            self.schedule(self.now + remaining, Ev::MainDone(g));
        } else {
            self.kick_main();
        }
    }

    /// Writes the capture into `grant` and commits it; returns the committed length (0: the
    /// grant was cancelled).
    fn commit_capture(&mut self, mut grant: RxGrant<'_, BoxedSlice>, line: LineRx) -> usize {
        let n = match line {
            LineRx::Nothing => 0,
            LineRx::Bytes {
                mut wire,
                start_bit,
                shift,
                invert,
            } => capture_bytes(&mut wire, start_bit, shift, invert, grant.buf()),
            LineRx::Samples { wire, first_sample } => {
                let Some(line) = self.samples.as_mut() else {
                    return 0; // Only the sample-level wire makes sample captures.
                };
                let capture = line.wire.capture(&wire, first_sample, &mut self.rng);
                let n = line.device.receive(&capture, grant.buf());
                match line.device.last_outcome() {
                    _ if n == 0 => self.phy.rx_sample_errors += 1,
                    RxOutcome::Truncated { .. } => self.phy.rx_sample_truncated += 1,
                    _ => {}
                }
                n
            }
        };
        grant.commit(n); // 0 cancels.
        n
    }

    /// The queue had no room for a grant: a transmission on the line is lost.
    fn without_grant(&mut self, line: LineRx) {
        let lost = match line {
            LineRx::Nothing => false,
            LineRx::Bytes {
                wire,
                start_bit,
                shift,
                ..
            } => captured_len(wire.len(), start_bit, shift) > 0,
            LineRx::Samples { wire, first_sample } => {
                let Some(line) = self.samples.as_mut() else {
                    return;
                };
                let capture = line.wire.capture(&wire, first_sample, &mut self.rng);
                let lost = line.device.receive_without_grant(&capture);
                if !lost {
                    self.phy.rx_sample_errors += 1;
                }
                lost
            }
        };
        if lost {
            self.producer.record_missed();
            self.phy.rx_queue_full += 1;
        } else {
            self.phy.rx_empty_without_grant += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn captured_len_matches_what_capture_bytes_writes() {
        let wire: Vec<u8> = (0..40u8).map(|i| i.wrapping_mul(37)).collect();
        for start_bit in [0, 1, 7, 8, 100, 313, 319, 320] {
            for shift in 0..8 {
                let mut w = wire.clone();
                let mut out = [0u8; 64];
                let n = capture_bytes(&mut w, start_bit, shift, false, &mut out);
                assert_eq!(
                    n,
                    captured_len(wire.len(), start_bit, shift),
                    "{start_bit} {shift}"
                );
            }
        }
    }
}
