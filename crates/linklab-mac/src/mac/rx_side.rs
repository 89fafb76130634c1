//! The MAC's receive half: a queued transmission classified (deframed, filtered, PAUSE
//! taken out) and a good frame lent to the stack in place ([`RxFrame`]).

use core::ops::{Deref, DerefMut, Range};

use crate::deframe::{deframe, RxChecksums, RxError, RxFormat, RxTag};
use crate::filter::AddressFilter;
use crate::frame::{self, ETHERTYPE_MAC_CONTROL};
use crate::pause::{self, MacControl, PAUSE_DESTINATION};
use crate::queue::{RxConsumer, RxRead, Storage};

/// A good frame for the stack, read in place from the RX queue (destination..payload,
/// without FCS). Dropping it releases the queue space.
pub struct RxFrame<'q, S: Storage> {
    pub(super) read: RxRead<'q, S>,
    pub(super) range: Range<usize>,
}

impl<S: Storage> Deref for RxFrame<'_, S> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        self.read.bytes().get(self.range.clone()).unwrap_or(&[])
    }
}

impl<S: Storage> DerefMut for RxFrame<'_, S> {
    fn deref_mut(&mut self) -> &mut [u8] {
        let r = self.range.clone();
        self.read.buf().get_mut(r).unwrap_or(&mut [])
    }
}

/// What the MAC did with one dequeued transmission.
pub(super) enum Outcome {
    Deliver(Range<usize>),
    Pause(u16),
    Filtered,
    Error(RxError),
}

/// Receive half of the MAC (private; a separate struct so the smoltcp tokens can borrow
/// the transmit half while a frame is held).
pub(super) struct RxSide<'q, S: Storage> {
    pub(super) consumer: RxConsumer<'q, S>,
    pub(super) format: RxFormat,
    pub(super) filter: AddressFilter,
    pub(super) packets: u64,
    pub(super) bytes: u64,
    pub(super) pause_frames: u64,
    pub(super) filtered: u64,
    pub(super) frame_errors: u64,
    pub(super) crc_errors: u64,
    pub(super) short_errors: u64,
    pub(super) long_errors: u64,
    /// Verify IPv4/TCP/UDP checksums here instead of in the stack.
    pub(super) checksum_offload: bool,
    pub(super) checksum_errors: u64,
    /// The good frame [`super::Mac::peek`] took out of the queue for the next receive.
    pub(super) staged: Option<RxFrame<'q, S>>,
}

impl<S: Storage> RxSide<'_, S> {
    /// True if the NIC's tag after the frame says its checksums are good
    /// ([`RxFormat::Tagged`]).
    pub(super) fn nic_vouches(&self, transmission: &[u8]) -> bool {
        self.format == RxFormat::Tagged
            && RxTag::of(transmission).is_some_and(|t| t.checksums == RxChecksums::Valid)
    }

    pub(super) fn classify(&self, buf: &mut [u8]) -> Outcome {
        let range = match deframe(buf, self.format) {
            Ok(r) => r,
            Err(e) => return Outcome::Error(e),
        };
        let frame = buf.get(range.clone()).unwrap_or(&[]);
        let dst = match frame::destination(frame) {
            Some(d) => d,
            None => return Outcome::Error(RxError::TooShort),
        };
        if frame::ethertype(frame) == Some(ETHERTYPE_MAC_CONTROL) {
            // MAC Control frames are for the MAC, never for the stack.
            if dst != PAUSE_DESTINATION && dst != self.filter.address {
                return Outcome::Filtered;
            }
            return match pause::parse(frame) {
                Some(MacControl::Pause { quanta }) => Outcome::Pause(quanta),
                _ => Outcome::Filtered,
            };
        }
        if self.filter.accepts(dst) {
            Outcome::Deliver(range)
        } else {
            Outcome::Filtered
        }
    }
}
