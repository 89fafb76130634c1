//! The static buffers every socket lends (all zero: `.bss`, no flash), word-aligned with
//! every buffer a whole number of words: the main loop's ([`LoopBytes`], [`Slots`]), the
//! packet blaster's and the embassy image's ([`Bytes`]).

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::AtomicBool;
#[cfg(feature = "embassy")]
use core::sync::atomic::Ordering;

use smoltcp::iface::SocketStorage;
#[cfg(any(
    feature = "echo",
    feature = "iperf-udp",
    feature = "iperf2",
    feature = "blast"
))]
use smoltcp::socket::udp::PacketMetadata;

#[cfg(feature = "blast")]
use crate::blast;
use crate::memory::*;

/// The embassy image's socket buffers (feature `embassy`: its apps take one buffer pair per
/// socket), in one static so the RAM figure of the image shows them all; all zero, so it
/// lives in `.bss` and costs no flash.
///
/// Word-aligned, and every buffer a whole number of words (checked below), so every buffer
/// starts on a word: smoltcp copies each TCP payload between a frame (whose payload the
/// drivers and the MAC keep word-aligned) and these rings, and `memcpy` between addresses
/// that differ mod 4 takes its shifting path (3.6 instructions per byte on the Cortex-M3
/// instead of ~1; the image's buffers had landed at an odd address).
#[cfg(feature = "embassy")]
#[repr(C, align(4))]
pub(crate) struct Bytes {
    pub(crate) echo_udp_rx: [u8; ECHO_UDP],
    pub(crate) echo_udp_tx: [u8; ECHO_UDP],
    pub(crate) echo_tcp_rx: [u8; ECHO_TCP],
    pub(crate) echo_tcp_tx: [u8; ECHO_TCP],
    pub(crate) http_rx: [[u8; HTTP_RX]; 2],
    pub(crate) http_tx: [[u8; HTTP_TX]; 2],
    /// The iperf3 control sockets' buffers: receive, send.
    pub(crate) iperf_control: [([u8; IPERF_CONTROL_RX], [u8; IPERF_CONTROL_TX]); 2],
    /// The iperf servers' data memory, and the 4 bytes a share takes beyond its buffers on
    /// embassy-net (its receive ring starts 3 mod 4: linklab-perf's `embassy` iperf3
    /// server) for each stream of the full chunks.
    pub(crate) iperf_data: [u8; EMBASSY_IPERF_DATA],
    pub(crate) iperf_udp_rx: [u8; EMBASSY_IPERF_UDP_RX],
    pub(crate) iperf_udp_tx: [u8; EMBASSY_IPERF_UDP_TX],
    pub(crate) json_rx: [u8; IPERF_JSON],
    pub(crate) json_tx: [u8; IPERF_JSON],
}

#[cfg(feature = "embassy")]
static mut BYTES: Bytes = Bytes {
    echo_udp_rx: [0; ECHO_UDP],
    echo_udp_tx: [0; ECHO_UDP],
    echo_tcp_rx: [0; ECHO_TCP],
    echo_tcp_tx: [0; ECHO_TCP],
    http_rx: [[0; HTTP_RX]; 2],
    http_tx: [[0; HTTP_TX]; 2],
    iperf_control: [([0; IPERF_CONTROL_RX], [0; IPERF_CONTROL_TX]); 2],
    iperf_data: [0; EMBASSY_IPERF_DATA],
    iperf_udp_rx: [0; EMBASSY_IPERF_UDP_RX],
    iperf_udp_tx: [0; EMBASSY_IPERF_UDP_TX],
    json_rx: [0; IPERF_JSON],
    json_tx: [0; IPERF_JSON],
};

/// Set once the embassy image's socket bytes have been handed out.
#[cfg(feature = "embassy")]
static TAKEN: AtomicBool = AtomicBool::new(false);

/// The embassy image's socket bytes, the first time only (None after).
#[cfg(feature = "embassy")]
pub(crate) fn take_bytes() -> Option<&'static mut Bytes> {
    if TAKEN.swap(true, Ordering::AcqRel) {
        return None;
    }
    // SAFETY: TAKEN guarantees this unique reference is created at most once.
    Some(unsafe { &mut *core::ptr::addr_of_mut!(BYTES) })
}

/// The main loop's socket buffers, in one static (all zero: `.bss`), word-aligned with every
/// buffer a whole number of words (checked below), as the embassy image's: the apps a build
/// has, the iperf3 server's two control sockets, and the iperf servers' data memory (its
/// shares lent to a data socket or a UDP socket only while it carries a test, or iperf 2's
/// while it waits for one: linklab-perf's `data_memory`).
#[repr(C, align(4))]
pub(crate) struct LoopBytes {
    #[cfg(feature = "echo")]
    pub(crate) echo_udp: [[u8; ECHO_UDP]; 2],
    #[cfg(feature = "echo")]
    pub(crate) echo_tcp: [[u8; ECHO_TCP]; 2],
    #[cfg(feature = "http")]
    pub(crate) http_rx: [[u8; HTTP_RX]; HTTP_SOCKETS],
    #[cfg(feature = "http")]
    pub(crate) http_tx: [[u8; HTTP_TX]; HTTP_SOCKETS],
    /// Per iperf3 control socket: receive, send.
    #[cfg(feature = "iperf3")]
    pub(crate) iperf_control: [([u8; IPERF_CONTROL_RX], [u8; IPERF_CONTROL_TX]); 2],
    /// The iperf servers' data memory.
    pub(crate) iperf_data: [u8; IPERF_DATA],
    #[cfg(feature = "iperf3")]
    pub(crate) json_rx: [u8; IPERF_JSON],
    #[cfg(feature = "iperf3")]
    pub(crate) json_tx: [u8; IPERF_JSON],
}

/// The packet blaster's bytes (main-loop images only; all zero: `.bss`), word-aligned as
/// [`LoopBytes`].
#[cfg(feature = "blast")]
#[repr(C, align(4))]
pub(crate) struct BlastBytes {
    pub(crate) rx: [u8; BLAST_RX],
    pub(crate) tx: [u8; BLAST_TX],
    pub(crate) frame: [u8; blast::FRAME_LEN],
}

/// The socket set's slots and the UDP sockets' packet records, written at boot.
pub(crate) struct Slots {
    pub(crate) sockets: [SocketStorage<'static>; SOCKETS],
    #[cfg(feature = "echo")]
    pub(crate) echo_udp_meta: [[PacketMetadata; ECHO_UDP_PACKETS]; 2],
    /// The iperf servers' UDP records (lent with a share of the data memory).
    #[cfg(any(feature = "iperf-udp", feature = "iperf2"))]
    pub(crate) iperf_udp_rx_meta: [PacketMetadata; IPERF_UDP_RX_PACKETS],
    #[cfg(any(feature = "iperf-udp", feature = "iperf2"))]
    pub(crate) iperf_udp_tx_meta: [PacketMetadata; IPERF_UDP_TX_PACKETS],
    #[cfg(feature = "blast")]
    pub(crate) blast_rx_meta: [PacketMetadata; BLAST_RX_PACKETS],
    #[cfg(feature = "blast")]
    pub(crate) blast_tx_meta: [PacketMetadata; BLAST_TX_PACKETS],
}

// Every buffer a whole number of words, so each starts on one.
const _: () = {
    let sizes = [
        ECHO_UDP,
        ECHO_TCP,
        HTTP_RX,
        HTTP_TX,
        TCP_WINDOW,
        IPERF_CHUNK,
        IPERF_TCP_TX,
        IPERF_CONTROL_RX,
        IPERF_CONTROL_TX,
        EMBASSY_IPERF_UDP_RX,
        EMBASSY_IPERF_UDP_TX,
        IPERF_JSON,
        BLAST_RX,
        BLAST_TX,
    ];
    let mut i = 0;
    while i < sizes.len() {
        assert!(
            sizes[i].is_multiple_of(4),
            "socket buffers must be whole words"
        );
        i += 1;
    }
};

pub(crate) static mut LOOP_BYTES: LoopBytes = LoopBytes {
    #[cfg(feature = "echo")]
    echo_udp: [[0; ECHO_UDP]; 2],
    #[cfg(feature = "echo")]
    echo_tcp: [[0; ECHO_TCP]; 2],
    #[cfg(feature = "http")]
    http_rx: [[0; HTTP_RX]; HTTP_SOCKETS],
    #[cfg(feature = "http")]
    http_tx: [[0; HTTP_TX]; HTTP_SOCKETS],
    #[cfg(feature = "iperf3")]
    iperf_control: [([0; IPERF_CONTROL_RX], [0; IPERF_CONTROL_TX]); 2],
    iperf_data: [0; IPERF_DATA],
    #[cfg(feature = "iperf3")]
    json_rx: [0; IPERF_JSON],
    #[cfg(feature = "iperf3")]
    json_tx: [0; IPERF_JSON],
};

#[cfg(feature = "blast")]
pub(crate) static mut BLAST_BYTES: BlastBytes = BlastBytes {
    rx: [0; BLAST_RX],
    tx: [0; BLAST_TX],
    frame: [0; blast::FRAME_LEN],
};

/// Where [`Slots`] is written at boot (`.bss`: no flash for its initial values).
pub(crate) struct SlotsCell(pub(crate) UnsafeCell<MaybeUninit<Slots>>);

// SAFETY: handed out once (SLOTS_TAKEN), to the one main loop.
unsafe impl Sync for SlotsCell {}

pub(crate) static SLOTS: SlotsCell = SlotsCell(UnsafeCell::new(MaybeUninit::uninit()));

/// Set once the main loop's buffers have been handed out.
pub(crate) static SLOTS_TAKEN: AtomicBool = AtomicBool::new(false);
