//! Which SYN-ACKs left, and a SYN kept from the stack (feature `smoltcp`): a
//! `smoltcp::phy::Device` in front of the device's own that notes each SYN-ACK the stack sends
//! ([`crate::rules::syn_ack`]), so the apps know which half-open connections a peer may already
//! believe complete ([`crate::evict`]), and that hides from the stack a SYN the apps defer.
//! smoltcp tells no one when a socket's SYN-ACK leaves — it may never leave, when the peer has
//! no route or does not answer ARP, as a spoofed one does.

use smoltcp::phy::{Device, DeviceCapabilities, PacketMeta, RxToken, TxToken};
use smoltcp::time::Instant;

use crate::rules::{syn_ack, syn_port, Peer};

/// SYN-ACKs noted between two drains: more than any app set has sockets (each half-open
/// socket sends one, then waits a retransmission timeout of a second or more).
pub const NOTED: usize = 32;

/// The SYN-ACKs that left (our port, the peer), oldest first; past [`NOTED`] the oldest go.
#[derive(Default)]
pub struct SynAcks(heapless::Deque<(u16, Peer), NOTED>);

impl SynAcks {
    /// None noted.
    pub const fn new() -> SynAcks {
        SynAcks(heapless::Deque::new())
    }

    /// Notes `frame` if it is a SYN-ACK (only eviction reads them: nothing without `evict`).
    fn note(&mut self, frame: &[u8]) {
        if !cfg!(feature = "evict") {
            return;
        }
        if let Some(sent) = syn_ack(frame) {
            if self.0.is_full() {
                self.0.pop_front();
            }
            let _ = self.0.push_back(sent);
        }
    }

    /// Takes the oldest one noted.
    pub fn pop(&mut self) -> Option<(u16, Peer)> {
        self.0.pop_front()
    }
}

/// `device`, with each frame sent looked at for a SYN-ACK (noted in `sent`), and the next
/// frame received hidden from the stack when it is a SYN to `hide_syn_to`.
pub struct SynAckWatch<'d, D: ?Sized> {
    /// The device.
    pub device: &'d mut D,
    /// What left.
    pub sent: &'d mut SynAcks,
    /// The next frame received, if it is a SYN to this port, reaches the stack empty (which
    /// it drops as malformed): a SYN the apps defer ([`crate::evict::Choice::Defer`]). Any
    /// other frame passes (the one the apps looked at may have been bad and skipped by the
    /// device). Cleared by that next frame.
    pub hide_syn_to: Option<u16>,
}

/// An RX token whose frame reaches the stack empty when it is the SYN to hide.
pub struct WatchedRx<T> {
    token: T,
    hide_syn_to: Option<u16>,
}

impl<T: RxToken> RxToken for WatchedRx<T> {
    fn consume<R, F>(self, f: F) -> R
    where
        F: FnOnce(&[u8]) -> R,
    {
        // Only the SYN rule hides a SYN: a build without eviction never looks.
        let hide = self.hide_syn_to.filter(|_| cfg!(feature = "evict"));
        self.token.consume(|frame| match hide {
            Some(port) if syn_port(frame) == Some(port) => f(&[]),
            _ => f(frame),
        })
    }

    fn meta(&self) -> PacketMeta {
        self.token.meta()
    }
}

/// A TX token whose frame is looked at once built.
pub struct WatchedTx<'d, T> {
    token: T,
    sent: &'d mut SynAcks,
}

impl<T: TxToken> TxToken for WatchedTx<'_, T> {
    fn consume<R, F>(self, len: usize, f: F) -> R
    where
        F: FnOnce(&mut [u8]) -> R,
    {
        let sent = self.sent;
        self.token.consume(len, |frame| {
            let r = f(frame);
            sent.note(frame);
            r
        })
    }

    fn set_meta(&mut self, meta: PacketMeta) {
        self.token.set_meta(meta)
    }
}

impl<D: Device + ?Sized> Device for SynAckWatch<'_, D> {
    type RxToken<'a>
        = WatchedRx<D::RxToken<'a>>
    where
        Self: 'a;
    type TxToken<'a>
        = WatchedTx<'a, D::TxToken<'a>>
    where
        Self: 'a;

    fn receive(&mut self, timestamp: Instant) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        let (rx, tx) = self.device.receive(timestamp)?;
        let rx = WatchedRx {
            token: rx,
            hide_syn_to: self.hide_syn_to.take(),
        };
        let tx = WatchedTx {
            token: tx,
            sent: self.sent,
        };
        Some((rx, tx))
    }

    fn transmit(&mut self, timestamp: Instant) -> Option<Self::TxToken<'_>> {
        let token = self.device.transmit(timestamp)?;
        Some(WatchedTx {
            token,
            sent: self.sent,
        })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        self.device.capabilities()
    }
}
