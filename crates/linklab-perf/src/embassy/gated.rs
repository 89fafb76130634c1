//! The apps' [`ServiceGate`] on any embassy-net driver: [`GatedDriver`] wraps a driver that
//! gives no look at a frame before the stack takes it (embassy-net-wiznet's, a HAL's
//! Ethernet) and shows the gate each frame, received and sent, as linklab-mac's
//! `EmbassyMac::with_gate` does from inside its queue.
//!
//! embassy-net's driver interface lends a received frame once, to be consumed: there is no
//! peek. So the wrapper looks at the frame as the stack consumes it; a frame the gate holds
//! (a SYN waiting for its service's turn, a UDP echo request waiting for the reply before
//! it) is copied aside and the stack is given an empty frame (smoltcp ignores one), and
//! until the gate lets it pass the wrapper lends the stack nothing else — the frames behind
//! it wait in the driver's own queue, as behind a held frame at the head of linklab-mac's
//! queue. A frame the gate drops (a SYN its service dropped unanswered) reaches the stack
//! as an empty frame too. Frames the gate passes are lent in place, uncopied.

use core::task::{Context, Waker};

use embassy_net::driver::{Capabilities, Driver, HardwareAddress, LinkState, RxToken, TxToken};

use super::gate::{Admit, ServiceGate};

/// The largest frame a [`GatedDriver`] holds aside: an Ethernet frame without its FCS.
/// A longer one the gate holds is dropped instead (no Ethernet driver lends one).
pub const MAX_HELD_FRAME: usize = 1514;

/// The frame the gate holds, copied aside (`len` 0: none).
pub struct HeldFrame {
    bytes: [u8; MAX_HELD_FRAME],
    len: usize,
}

/// An embassy-net driver whose frames the apps' [`ServiceGate`] sees (see the module docs):
/// give it to `embassy_net::new` in place of the driver it wraps, and `Some(&GATE)` to the
/// apps.
pub struct GatedDriver<'g, D> {
    inner: D,
    gate: &'g ServiceGate,
    held: HeldFrame,
    /// The stack task's waker (cloned again only when the task changes).
    waker: Option<Waker>,
}

impl<'g, D: Driver> GatedDriver<'g, D> {
    /// `inner`, its frames shown to `gate`.
    pub const fn new(inner: D, gate: &'g ServiceGate) -> Self {
        GatedDriver {
            inner,
            gate,
            held: HeldFrame {
                bytes: [0; MAX_HELD_FRAME],
                len: 0,
            },
            waker: None,
        }
    }

    /// The wrapped driver.
    pub fn inner(&self) -> &D {
        &self.inner
    }
}

/// Keeps a clone of the task's waker (cloned again only when the task changes).
fn remember<'w>(slot: &'w mut Option<Waker>, waker: &Waker) -> &'w Waker {
    if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
        *slot = Some(waker.clone());
    }
    slot.get_or_insert_with(|| waker.clone())
}

/// A received frame for the stack: the wrapped driver's, shown to the gate as it is
/// consumed, or the one the gate held and now lets pass.
pub enum GatedRx<'a, R> {
    /// The wrapped driver's next frame.
    Inner {
        /// Its token.
        rx: R,
        /// The gate.
        gate: &'a ServiceGate,
        /// The stack's task, woken when the gate lets a held frame pass.
        waker: &'a Waker,
        /// Where a frame the gate holds is copied.
        held: &'a mut HeldFrame,
    },
    /// The frame the gate held, let pass.
    Held(&'a mut HeldFrame),
}

impl<R: RxToken> RxToken for GatedRx<'_, R> {
    fn consume<T, F>(self, f: F) -> T
    where
        F: FnOnce(&mut [u8]) -> T,
    {
        match self {
            GatedRx::Held(h) => {
                let len = core::mem::take(&mut h.len);
                f(&mut h.bytes[..len])
            }
            GatedRx::Inner {
                rx,
                gate,
                waker,
                held,
            } => rx.consume(|frame| match gate.admit(frame, waker) {
                Admit::Pass => f(frame),
                Admit::Hold if frame.len() <= MAX_HELD_FRAME => {
                    held.bytes[..frame.len()].copy_from_slice(frame);
                    held.len = frame.len();
                    f(&mut [])
                }
                Admit::Hold | Admit::Drop => f(&mut []),
            }),
        }
    }
}

/// A frame to send, shown to the gate once the stack built it.
pub struct GatedTx<'a, T> {
    tx: T,
    gate: &'a ServiceGate,
}

impl<T: TxToken> TxToken for GatedTx<'_, T> {
    fn consume<R, F>(self, len: usize, f: F) -> R
    where
        F: FnOnce(&mut [u8]) -> R,
    {
        let gate = self.gate;
        self.tx.consume(len, |frame| {
            let r = f(frame);
            gate.sent(frame);
            r
        })
    }
}

impl<D: Driver> Driver for GatedDriver<'_, D> {
    type RxToken<'a>
        = GatedRx<'a, D::RxToken<'a>>
    where
        Self: 'a;
    type TxToken<'a>
        = GatedTx<'a, D::TxToken<'a>>
    where
        Self: 'a;

    /// The held frame once the gate lets it pass (nothing while it holds it), else the
    /// wrapped driver's next frame.
    fn receive(&mut self, cx: &mut Context<'_>) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        let waker = remember(&mut self.waker, cx.waker());
        let gate = self.gate;
        if self.held.len > 0 {
            // The token to send with first: a frame the gate let pass must go now.
            let tx = self.inner.transmit(cx)?;
            return match gate.admit(&self.held.bytes[..self.held.len], waker) {
                Admit::Pass => Some((GatedRx::Held(&mut self.held), GatedTx { tx, gate })),
                Admit::Hold => None,
                Admit::Drop => {
                    self.held.len = 0;
                    cx.waker().wake_by_ref();
                    None
                }
            };
        }
        let (rx, tx) = self.inner.receive(cx)?;
        let held = &mut self.held;
        Some((
            GatedRx::Inner {
                rx,
                gate,
                waker,
                held,
            },
            GatedTx { tx, gate },
        ))
    }

    /// The wrapped driver's token, unless the gate holds the stack's sending back
    /// ([`ServiceGate::hold_tx`]).
    fn transmit(&mut self, cx: &mut Context<'_>) -> Option<Self::TxToken<'_>> {
        if self.gate.hold_tx(cx.waker()) {
            return None;
        }
        let gate = self.gate;
        self.inner.transmit(cx).map(|tx| GatedTx { tx, gate })
    }

    fn link_state(&mut self, cx: &mut Context<'_>) -> LinkState {
        self.inner.link_state(cx)
    }

    fn capabilities(&self) -> Capabilities {
        self.inner.capabilities()
    }

    fn hardware_address(&self) -> HardwareAddress {
        self.inner.hardware_address()
    }
}

#[cfg(test)]
mod tests;
