//! What the network-stack adapters share (`device` for smoltcp, `embassy` for embassy-net):
//! which received frame a stack may take next, and building a frame in a transmit slot.

use crate::rx::RxStore;
use crate::tx::TxStore;
use crate::wire::{FLAG_ECHO_REPLY, FLAG_ECHO_REQUEST, MAX_FRAME};

/// True when the head of `rx` is a frame the stack may take now. Self-test echoes addressed to
/// this end are released on the way (no self-test runs behind a stack); a self-test request
/// waits for the link to answer it. While `tx` is full the frame waits for a slot for the
/// stack's reply, unless `rx` is full too: then both ends may be waiting for each other, and
/// the frame must be taken now.
pub(crate) fn frame_for_stack<const W: usize>(rx: &mut RxStore<W>, tx: &TxStore<W>) -> bool {
    loop {
        let Some((flags, _)) = rx.head() else {
            return false;
        };
        if flags & FLAG_ECHO_REQUEST != 0 {
            return false; // the link answers it once a transmit slot frees
        }
        if flags & FLAG_ECHO_REPLY == 0 {
            break;
        }
        rx.release_head(); // an echo for a self-test no one here runs
    }
    !(tx.is_full() && rx.credits() > 0)
}

/// Has the stack build a frame of `len` bytes in a transmit slot of `tx`; without a slot (a
/// token handed out with a received frame while the store was full), or longer than a slot,
/// the frame is built in scratch space and dropped, counted in `tx.dropped`.
pub(crate) fn build_frame<const W: usize, R>(
    tx: &mut TxStore<W>,
    len: usize,
    f: impl FnOnce(&mut [u8]) -> R,
) -> R {
    let mut f = Some(f);
    if let Some(r) = tx.push(0, len, |buf| (f.take().unwrap())(buf)) {
        return r;
    }
    tx.dropped += 1;
    let mut scratch = [0u8; MAX_FRAME];
    let n = len.min(MAX_FRAME);
    (f.take().unwrap())(&mut scratch[..n])
}
