//! What a stack's adapter lends the pool: its sockets, one poll at a time, and the buffers it
//! may give and take back as sockets change roles.

use crate::socket::TcpOps;
#[cfg(feature = "iperf-udp")]
use crate::socket::UdpOps;

/// The sockets of a server's pool, as a stack's adapter lends them for one poll.
pub trait PoolSockets {
    /// The stack's UDP remote endpoint.
    type Endpoint: Copy + PartialEq;
    /// One TCP socket of the pool.
    type Tcp<'s>: TcpOps
    where
        Self: 's;
    /// The UDP socket.
    #[cfg(feature = "iperf-udp")]
    type Udp<'s>: UdpOps<Endpoint = Self::Endpoint>
    where
        Self: 's;
    /// How many TCP sockets (2..=`N` of the server; extra ones are left alone).
    fn tcp_count(&self) -> usize;
    /// TCP socket `i` (< `tcp_count`).
    fn tcp(&mut self, i: usize) -> Self::Tcp<'_>;
    /// The UDP socket.
    #[cfg(feature = "iperf-udp")]
    fn udp(&mut self) -> Self::Udp<'_>;
    /// Data socket `i` is about to listen for a stream: give it its buffers if it has none
    /// (see [`super::PoolServer::set_data_slots`]); false if there are none to give now (it is
    /// asked again on the next poll). By default sockets keep their buffers.
    fn prepare(&mut self, _i: usize) -> bool {
        true
    }
    /// Data socket `i` is closed and parked until the next test's streams: its buffers may
    /// go back to the adapter.
    fn release(&mut self, _i: usize) {}
    /// A UDP test is starting: give the UDP socket its buffers if it has none; false if
    /// there are none to give now.
    #[cfg(feature = "iperf-udp")]
    fn prepare_udp(&mut self) -> bool {
        true
    }
    /// The UDP test is over: the UDP socket's buffers may go back to the adapter.
    #[cfg(feature = "iperf-udp")]
    fn release_udp(&mut self) {}
    /// Makes TCP socket `i`, whose connection the pool just reset for a new client, listen
    /// on `port` again: at once for a half-open or spent connection; for an `evicted` one
    /// (a live peer) after its RST has left. True when it listens now; false when the pool
    /// is to make it listen once the RST left (see [`Room::Freeing`](super::Room::Freeing)).
    fn free(&mut self, i: usize, port: u16, evicted: bool) -> bool;
}
