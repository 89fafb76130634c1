//! The soft NIC on a TAP: the TAP plays the PHY for linklab-mac. Its "interrupt" side moves
//! each frame the kernel hands over into a grant of the MAC's RX queue (or counts it missed
//! when the queue is full); its transmit side writes the MAC's plain frames back to the TAP.

use std::io;

use linklab_mac::{PhyTx, RxProducer, Storage};

use crate::tap::Tap;

/// Most frames moved from the TAP per round, so a flood cannot starve the main loop (the
/// kernel keeps the rest in the TAP's own queue, like a NIC's FIFO).
pub const MAX_FRAMES_PER_ROUND: usize = 256;

/// The TAP as the MAC's transmit PHY; counts what the kernel refused.
#[derive(Debug)]
pub struct TapPhy<'t> {
    tap: &'t Tap,
    /// Frames the kernel refused (TAP queue full or interface down).
    pub refused: u64,
    /// Frames that failed with another error.
    pub errors: u64,
}

impl<'t> TapPhy<'t> {
    /// A transmit PHY writing to `tap`.
    pub fn new(tap: &'t Tap) -> TapPhy<'t> {
        TapPhy {
            tap,
            refused: 0,
            errors: 0,
        }
    }
}

impl PhyTx for TapPhy<'_> {
    fn transmit(&mut self, wire: &[u8]) {
        match self.tap.send(wire) {
            Ok(true) => {}
            Ok(false) => self.refused += 1,
            Err(_) => self.errors += 1,
        }
    }
}

/// Moves the frames waiting in the TAP into the RX queue, as a PHY interrupt would: grant,
/// let the "hardware" (read(2)) write into it, commit the length. When the queue has no
/// room, the frame is still taken off the wire and counted missed (`rx_missed_errors`), so
/// overruns are real. Returns the frames committed.
pub fn pump_rx<S: Storage>(
    tap: &Tap,
    producer: &RxProducer<'_, S>,
    scratch: &mut [u8],
) -> io::Result<usize> {
    let mut committed = 0;
    for _ in 0..MAX_FRAMES_PER_ROUND {
        match producer.grant() {
            Ok(mut grant) => match tap.recv(grant.buf())? {
                Some(len) => {
                    grant.commit(len);
                    committed += 1;
                }
                // A wake-up without a frame: the grant goes back (`rx_cancelled`).
                None => {
                    grant.cancel();
                    break;
                }
            },
            Err(_) => match tap.recv(scratch)? {
                Some(_) => producer.record_missed(),
                None => break,
            },
        }
    }
    Ok(committed)
}
