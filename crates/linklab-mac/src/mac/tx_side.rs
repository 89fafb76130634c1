//! The MAC's transmit half: frames built in place (in the PHY's buffer or the MAC's), the
//! inter-packet gap, PAUSE received and sent.

use crate::checksum;
use crate::frame::{self, MacAddr, FCS_LEN, MAX_WIRE_LEN, MIN_FRAME_LEN};
use crate::pause::{self, PAUSE_FRAME_LEN};
use crate::timing::{bits_ns, ipg_ns, Clock};
use crate::tx::{build, TxFormat};

use super::{PauseWatermarks, PhyTx};

/// The transmit buffer: word-aligned, and the frame built [`TX_FRAME_OFFSET`] bytes in, so
/// that it starts at [`crate::FRAME_ALIGN`] mod 4 (the preamble of [`TxFormat::Wire`] is 8
/// bytes). The stack's copy of each TCP payload into the frame (54 bytes in) is then
/// word-aligned with a socket buffer that is; from a frame at 0 mod 4 `memcpy` took its
/// misaligned path, 3.6 instructions per byte on the Cortex-M3.
#[repr(C, align(4))]
pub(super) struct TxBuffer(pub(super) [u8; TX_FRAME_OFFSET + MAX_WIRE_LEN]);

/// Where in [`TxBuffer`] a transmission starts.
pub(super) const TX_FRAME_OFFSET: usize = crate::queue::FRAME_ALIGN;

impl TxBuffer {
    fn transmission(&mut self) -> &mut [u8] {
        &mut self.0[TX_FRAME_OFFSET..]
    }
}

/// A transmission built and not yet handed over.
#[derive(Clone, Copy, Debug)]
pub(super) struct Built {
    /// Bytes to hand over.
    wire_len: usize,
    /// The frame's length.
    frame_len: usize,
    /// Built in the PHY's buffer ([`PhyTx::tx_buffer`]), not the MAC's.
    in_phy_buffer: bool,
}

/// Transmit half of the MAC.
pub(crate) struct TxSide<T: PhyTx, C: Clock> {
    pub(super) phy: T,
    pub(super) clock: C,
    pub(super) format: TxFormat,
    pub(super) line_rate_bps: u64,
    pub(super) address: MacAddr,
    pub(super) buf: TxBuffer,
    /// A built frame waiting for the gap/PAUSE.
    pub(super) deferred: Option<Built>,
    /// The PHY completes TCP/UDP checksums ([`PhyTx::completes_l4_checksums`], asked once).
    pub(super) phy_completes_l4: bool,
    /// Earliest start of the next transmission (end of the last one plus the gap).
    pub(super) gap_end_ns: u64,
    /// End of a PAUSE received from the peer.
    pub(super) paused_until_ns: u64,
    pub(super) flow: Option<PauseWatermarks>,
    /// PAUSE (quanta) waiting for the gap.
    pub(super) pause_pending: Option<u16>,
    /// We told the peer to pause and have not yet sent the resume.
    pub(super) pause_asserted: bool,
    pub(super) pause_refresh_ns: u64,
    pub(super) requests: u64,
    pub(super) packets: u64,
    pub(super) bytes: u64,
    pub(super) dropped: u64,
    pub(super) pause_frames: u64,
    /// Fill in IPv4/TCP/UDP checksums here instead of in the stack.
    pub(super) checksum_offload: bool,
}

impl<T: PhyTx, C: Clock> TxSide<T, C> {
    /// The clock's time, for line timing. Without it (rate 0) every time the MAC keeps is a
    /// past `now` plus 0 (no gap, no PAUSE time), so any `now` finds it passed: 0 serves, and
    /// the clock is not read (on an MCU a read can cost a timer access and a conversion per
    /// frame).
    fn now_ns(&self) -> u64 {
        if self.line_rate() == 0 {
            0
        } else {
            self.clock.now_ns()
        }
    }

    /// The line rate the MAC times transmissions by: 0 (no timing) under a clock that never
    /// moves ([`Clock::TIMED`]), known when the image is built, so it links no timing code.
    fn line_rate(&self) -> u64 {
        if C::TIMED {
            self.line_rate_bps
        } else {
            0
        }
    }

    /// Start of the next data transmission: after the gap and after any received PAUSE.
    pub(crate) fn ready_at_ns(&self) -> u64 {
        self.gap_end_ns.max(self.paused_until_ns)
    }

    pub(super) fn apply_received_pause(&mut self, quanta: u16) {
        let now = self.now_ns();
        // Saturating: the quanta come from the wire and the clock from the user.
        self.paused_until_ns = now.saturating_add(pause::quanta_ns(quanta, self.line_rate()));
    }

    /// Nanoseconds a transmission of a `frame_len`-byte frame occupies the line.
    fn line_ns(&self, frame_len: usize) -> u64 {
        let bytes = frame::PREAMBLE_SFD_LEN + frame_len.max(MIN_FRAME_LEN) + FCS_LEN;
        bits_ns(8 * bytes as u64, self.line_rate())
    }

    /// End of the gap after a `frame_len`-byte frame that starts at `now`: its time on the
    /// line plus 96 bit times.
    fn gap_after(&self, frame_len: usize, now: u64) -> u64 {
        now.saturating_add(self.line_ns(frame_len))
            .saturating_add(ipg_ns(self.line_rate()))
    }

    /// Hands the built transmission to the PHY now and starts the gap.
    fn emit(&mut self, b: Built, now: u64) {
        if b.in_phy_buffer {
            self.phy.transmit_buffer(b.wire_len);
        } else {
            let wire = self.buf.transmission().get(..b.wire_len).unwrap_or(&[]);
            self.phy.transmit(wire);
        }
        self.gap_end_ns = self.gap_after(b.frame_len, now);
        self.packets += 1;
        self.bytes += b.frame_len as u64;
    }

    /// Builds a frame (the caller has checked there is no deferred frame and counted the
    /// request), in the PHY's buffer if it lends one, else in the MAC's, and sends it now or
    /// defers it. Always calls `fill`.
    pub(crate) fn send<R>(&mut self, len: usize, fill: impl FnOnce(&mut [u8]) -> R) -> R {
        let len = len.min(frame::MAX_VLAN_FRAME_LEN);
        let offload = self.checksum_offload;
        // A PHY that completes transport checksums gets pseudo-header sums whatever filled
        // the rest (the stack, or the MAC's offload).
        let partial = self.phy_completes_l4;
        let wire_len = self.format.wire_len(len);
        let lent = self.phy.tx_buffer(wire_len).filter(|b| b.len() >= wire_len);
        let in_phy_buffer = lent.is_some();
        let out = match lent {
            Some(b) => b,
            None => self.buf.transmission(),
        };
        let built = build(out, self.format, len, |frame| {
            let r = fill(frame);
            if partial {
                checksum::fill_partial(frame);
            } else if offload {
                checksum::fill(frame);
            }
            r
        });
        let (wire_len, r) = match built {
            Ok(x) => x,
            // Unreachable: len is capped, the MAC's buffer holds MAX_WIRE_LEN and a lent one
            // at least wire_len.
            Err(_) => unreachable_tx(),
        };
        let b = Built {
            wire_len,
            frame_len: len,
            in_phy_buffer,
        };
        let now = self.now_ns();
        if now >= self.ready_at_ns() {
            self.emit(b, now);
        } else {
            self.deferred = Some(b);
        }
        r
    }

    #[cfg_attr(not(feature = "embassy"), allow(dead_code))]
    pub(crate) fn has_deferred(&self) -> bool {
        self.deferred.is_some()
    }

    /// True while a frame built now could not go: one is deferred (the gap, a PAUSE), or
    /// the PHY has no room for one ([`PhyTx::ready`]: a driver whose transmit buffers are
    /// all in flight drops what it is handed). The stack then keeps its frame and tries
    /// again; a TCP segment handed over and dropped would wait for the retransmission
    /// timer (1 s and more) instead.
    #[cfg_attr(not(feature = "smoltcp"), allow(dead_code))]
    pub(crate) fn blocked(&mut self) -> bool {
        self.deferred.is_some() || !self.phy.ready()
    }

    #[cfg_attr(not(any(feature = "smoltcp", feature = "embassy")), allow(dead_code))]
    pub(crate) fn count_request(&mut self) {
        self.requests += 1;
    }

    #[cfg_attr(not(feature = "embassy"), allow(dead_code))]
    pub(crate) fn clock(&self) -> &C {
        &self.clock
    }

    /// Sends what time allows: PAUSE frames first (they ignore a received PAUSE), then a
    /// deferred data frame.
    pub(super) fn service(&mut self, occupancy: usize) {
        let now = self.now_ns();
        if let Some(wm) = self.flow {
            if self.pause_pending.is_none() {
                if !self.pause_asserted && occupancy >= wm.high_bytes {
                    self.pause_pending = Some(wm.quanta);
                } else if self.pause_asserted && occupancy <= wm.low_bytes {
                    self.pause_pending = Some(0);
                } else if self.pause_asserted
                    && self.pause_refresh_ns != NEVER
                    && now >= self.pause_refresh_ns
                {
                    self.pause_pending = Some(wm.quanta);
                }
            }
        }
        if let Some(quanta) = self.pause_pending {
            if now >= self.gap_end_ns {
                self.send_pause(quanta, now);
            }
        }
        if let Some(b) = self.deferred {
            let now = self.now_ns();
            if now >= self.ready_at_ns() {
                self.deferred = None;
                self.emit(b, now);
            }
        }
    }

    fn send_pause(&mut self, quanta: u16, now: u64) {
        let mut out = [0u8; frame::PREAMBLE_SFD_LEN + PAUSE_FRAME_LEN + FCS_LEN];
        let src = self.address;
        let built = build(&mut out, self.format, PAUSE_FRAME_LEN, |f| {
            pause::build_pause(f, src, quanta)
        });
        if let Ok((n, _)) = built {
            debug!("tx: PAUSE for {} quanta", quanta);
            self.phy.transmit(out.get(..n).unwrap_or(&[]));
            self.gap_end_ns = self.gap_after(PAUSE_FRAME_LEN, now);
            self.pause_frames += 1;
        }
        self.pause_pending = None;
        self.pause_asserted = quanta != 0;
        // Refresh at half the pause time. Without line timing (rate 0) that time is unknown
        // (it would be 0, a PAUSE on every poll): no refresh, only the watermark crossings.
        let hold_ns = pause::quanta_ns(quanta, self.line_rate());
        self.pause_refresh_ns = if hold_ns == 0 {
            NEVER
        } else {
            now.saturating_add(hold_ns / 2)
        };
    }
}

/// A clock time that never comes (no PAUSE refresh scheduled).
pub(super) const NEVER: u64 = u64::MAX;

#[cold]
fn unreachable_tx() -> ! {
    unreachable!("TX buffer holds every capped frame")
}
