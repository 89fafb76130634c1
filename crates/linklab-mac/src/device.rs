//! `smoltcp::phy::Device` for [`Mac`] (feature `smoltcp`).
//!
//! The RxToken holds the frame in place in the RX queue and lends it to smoltcp; the
//! TxToken builds the frame in place in the MAC's TX buffer. While a frame is deferred
//! (inter-packet gap or a received PAUSE), the device hands out no tokens: call
//! [`Mac::poll`] at [`Mac::poll_at_ns`] to let it go.

use smoltcp::phy::{Checksum, Device, DeviceCapabilities, Medium};
use smoltcp::time::Instant;

use crate::frame::MAX_FRAME_LEN;
use crate::mac::{Mac, PhyTx, RxFrame, TxSide};
use crate::queue::Storage;
use crate::timing::Clock;

/// A received frame lent to smoltcp (released when consumed or dropped).
pub struct MacRxToken<'q, S: Storage> {
    frame: RxFrame<'q, S>,
}

/// Permission to build one frame in place in the MAC's TX buffer.
pub struct MacTxToken<'a, T: PhyTx, C: Clock> {
    tx: &'a mut TxSide<T, C>,
}

impl<S: Storage> smoltcp::phy::RxToken for MacRxToken<'_, S> {
    fn consume<R, F>(self, f: F) -> R
    where
        F: FnOnce(&[u8]) -> R,
    {
        f(&self.frame)
    }
}

impl<T: PhyTx, C: Clock> smoltcp::phy::TxToken for MacTxToken<'_, T, C> {
    fn consume<R, F>(self, len: usize, f: F) -> R
    where
        F: FnOnce(&mut [u8]) -> R,
    {
        self.tx.count_request();
        self.tx.send(len, f)
    }
}

impl<'q, S: Storage, T: PhyTx, C: Clock> Mac<'q, S, T, C> {
    /// The device capabilities: Ethernet, MTU 1514, a burst size derived from the RX
    /// queue so that smoltcp's window cap (`max_burst_size × (1514 − 40)`) never exceeds
    /// [`crate::window::tcp_rx_window`] (none after [`Mac::set_burst_cap`]`(false)`), and
    /// with [`Mac::set_checksum_offload`] no IPv4/TCP/UDP checksums for the stack.
    pub fn capabilities(&self) -> DeviceCapabilities {
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = MAX_FRAME_LEN;
        caps.max_burst_size = self.max_burst_size();
        if self.checksum_offload() {
            // The MAC verifies and fills them (ICMP stays with the stack).
            caps.checksum.ipv4 = Checksum::None;
            caps.checksum.tcp = Checksum::None;
            caps.checksum.udp = Checksum::None;
        }
        caps
    }
}

impl<'q, S: Storage, T: PhyTx, C: Clock> Device for Mac<'q, S, T, C> {
    type RxToken<'a>
        = MacRxToken<'q, S>
    where
        Self: 'a;
    type TxToken<'a>
        = MacTxToken<'a, T, C>
    where
        Self: 'a;

    fn receive(&mut self, _timestamp: Instant) -> Option<(Self::RxToken<'_>, Self::TxToken<'_>)> {
        self.poll();
        // No token pair while a frame could not go (the reply it may carry would be lost).
        if self.tx_side().blocked() {
            return None;
        }
        let frame = Mac::receive(self)?;
        Some((MacRxToken { frame }, MacTxToken { tx: self.tx_side() }))
    }

    /// None while a frame is deferred, or while the PHY has no room for one: smoltcp then
    /// keeps what it would send and tries again on its next egress (a NIC whose transmit
    /// buffers are all in flight would otherwise drop the frame, and the TCP stream lose a
    /// segment to a retransmission timeout: three iperf3 streams sending at once did, on
    /// virtio-net's four buffers).
    fn transmit(&mut self, _timestamp: Instant) -> Option<Self::TxToken<'_>> {
        self.poll();
        if self.tx_side().blocked() {
            return None;
        }
        Some(MacTxToken { tx: self.tx_side() })
    }

    fn capabilities(&self) -> DeviceCapabilities {
        Mac::capabilities(self)
    }
}
