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
use crate::stack::{build_frame, frame_for_stack};
use crate::tx::TxStore;

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
        build_frame(self.tx, len, f)
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
        if !frame_for_stack(rx, tx) {
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
