//! `smoltcp::phy::Device` for [`Link`] (feature `smoltcp`): Ethernet frames over the link, so
//! TCP/IP runs over a UART.
//!
//! The receive token lends the frame in place in the receive store (its slot, and a credit,
//! are freed when smoltcp is done with it); the transmit token has smoltcp build the frame in
//! place in a transmit slot. Self-test echoes addressed to this end are skipped; self-test
//! requests are answered by the link before smoltcp sees anything behind them.

use smoltcp::phy::{Device, DeviceCapabilities, Medium};
use smoltcp::time::Instant;

use crate::link::Link;
use crate::rx::RxStore;
use crate::tx::TxStore;
use crate::wire::{FLAG_ECHO_REPLY, FLAG_ECHO_REQUEST, MAX_FRAME};

/// A received Ethernet frame lent to smoltcp.
pub struct SerialRxToken<'a, const W: usize> {
    rx: &'a mut RxStore<W>,
}

/// Permission to build one Ethernet frame in a transmit slot.
pub struct SerialTxToken<'a, const W: usize> {
    tx: &'a mut TxStore<W>,
}

impl<const W: usize> smoltcp::phy::RxToken for SerialRxToken<'_, W> {
    fn consume<R, F>(self, f: F) -> R
    where
        F: FnOnce(&[u8]) -> R,
    {
        let r = f(self.rx.head().map_or(&[], |(_, p)| p));
        self.rx.release_head();
        r
    }
}

impl<const W: usize> smoltcp::phy::TxToken for SerialTxToken<'_, W> {
    fn consume<R, F>(self, len: usize, f: F) -> R
    where
        F: FnOnce(&mut [u8]) -> R,
    {
        let mut f = Some(f);
        if let Some(r) = self.tx.push(0, len, |buf| (f.take().unwrap())(buf)) {
            return r;
        }
        // No slot (the token came with a received frame while the store was full) or longer
        // than a slot: built and dropped, counted.
        self.tx.dropped += 1;
        let mut scratch = [0u8; MAX_FRAME];
        let n = len.min(MAX_FRAME);
        (f.take().unwrap())(&mut scratch[..n])
    }
}

impl<const W: usize> Device for Link<W> {
    type RxToken<'a>
        = SerialRxToken<'a, W>
    where
        Self: 'a;
    type TxToken<'a>
        = SerialTxToken<'a, W>
    where
        Self: 'a;

    fn receive(&mut self, _timestamp: Instant) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        let (rx, tx, _) = self.stores();
        loop {
            let (flags, _) = rx.head()?;
            if flags & FLAG_ECHO_REQUEST != 0 {
                return None; // the link answers it once a transmit slot frees
            }
            if flags & FLAG_ECHO_REPLY == 0 {
                break;
            }
            rx.release_head(); // an echo for a self-test no one here runs
        }
        // Wait for a transmit slot for the reply, unless our receive store is full: then
        // both ends may be waiting for each other, and the frame must be taken now.
        if tx.is_full() && rx.credits() > 0 {
            return None;
        }
        Some((SerialRxToken { rx }, SerialTxToken { tx }))
    }

    fn transmit(&mut self, _timestamp: Instant) -> Option<Self::TxToken<'_>> {
        let (_, tx, _) = self.stores();
        if tx.is_full() {
            return None;
        }
        Some(SerialTxToken { tx })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = self.mtu();
        caps
    }
}
