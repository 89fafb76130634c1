//! The buffers a caller lends a smoltcp socket (feature `smoltcp`): no heap, so every app
//! takes its sockets' memory from its caller (statics on an MCU, leaked vectors on a host).
//! Below the apps that use them ([`crate::apps`], [`crate::lifetime`],
//! [`crate::iperf::device`]); `crate::apps` re-exports them.

#[cfg(feature = "udp")]
use smoltcp::socket::udp;

/// A TCP socket's two buffers.
pub struct TcpBuffers<'a> {
    /// Receive buffer: its free space is the window smoltcp advertises.
    pub rx: &'a mut [u8],
    /// Send buffer: what may be in flight, unacknowledged.
    pub tx: &'a mut [u8],
}

/// A UDP socket's buffers: packet metadata slots and payload bytes, each way.
#[cfg(feature = "udp")]
pub struct UdpBuffers<'a> {
    /// Datagrams the receive side can hold.
    pub rx_meta: &'a mut [udp::PacketMetadata],
    /// Payload bytes the receive side can hold.
    pub rx: &'a mut [u8],
    /// Datagrams the send side can hold.
    pub tx_meta: &'a mut [udp::PacketMetadata],
    /// Payload bytes the send side can hold.
    pub tx: &'a mut [u8],
}
