//! The apps over the static buffers: linklab-perf's [`DeviceApps`] and their socket set,
//! built in place once at boot ([`take_buffers`], [`device_apps`]).

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::Ordering;

#[cfg(feature = "echo")]
use linklab_perf::apps::UdpBuffers;
use linklab_perf::apps::{AppBuffers, DataBuffers, DeviceApps, TcpBuffers};
use linklab_perf::data_memory::DataPlan;
#[cfg(feature = "iperf3")]
use linklab_perf::iperf::device::IperfBuffers;
#[cfg(feature = "blast")]
use smoltcp::iface::SocketHandle;
use smoltcp::iface::{SocketSet, SocketStorage};
#[cfg(feature = "blast")]
use smoltcp::socket::udp;
#[cfg(any(
    feature = "echo",
    feature = "iperf-udp",
    feature = "iperf2",
    feature = "blast"
))]
use smoltcp::socket::udp::PacketMetadata;

#[cfg(feature = "blast")]
use crate::blast;
#[cfg(feature = "blast")]
use crate::buffers::{BlastBytes, BLAST_BYTES};
use crate::buffers::{LoopBytes, Slots, LOOP_BYTES, SLOTS, SLOTS_TAKEN};
use crate::memory::*;

/// The apps of this build over smoltcp: iperf3 with its sockets and streams, the HTTP
/// sockets, iperf 2's sockets.
pub(crate) type LoopApps =
    DeviceApps<'static, IPERF_TCP_SOCKETS, IPERF_DATA_SOCKETS, HTTP_SOCKETS, IPERF2_TCP_SOCKETS>;

/// The apps, their socket set and the `/stats` body: the main loop's largest state (the
/// iperf3 session, the HTTP servers' request heads), built in place in [`APPS`] rather
/// than by value in a local of the main loop, which held it, and the temporaries of
/// building it, on the stack for the firmware's whole life (~40 KB of `run`'s frame).
pub(crate) struct Apps {
    /// The socket set over [`Slots`].
    pub(crate) sockets: SocketSet<'static>,
    /// The apps, over the sockets' buffers in [`LoopBytes`].
    pub(crate) apps: LoopApps,
    /// The rendered `/stats` body (only written when a request may ask for it).
    #[cfg(feature = "stats")]
    pub(crate) body: [u8; linklab_perf::http::MAX_HEAD],
}

/// Where [`Apps`] is built (`.bss`: uninitialised until then).
struct AppsCell(UnsafeCell<MaybeUninit<Apps>>);

// SAFETY: handed out once (SLOTS_TAKEN), to the one main loop.
unsafe impl Sync for AppsCell {}

static APPS: AppsCell = AppsCell(UnsafeCell::new(MaybeUninit::uninit()));

/// The main loop's buffers and the place to build [`Apps`] in, the first time only (None
/// after).
pub(crate) struct Taken {
    bytes: &'static mut LoopBytes,
    slots: &'static mut Slots,
    #[cfg(feature = "blast")]
    blast: &'static mut BlastBytes,
    place: &'static mut MaybeUninit<Apps>,
}

/// The main loop's buffers, the first time only (None after).
pub(crate) fn take_buffers() -> Option<Taken> {
    if SLOTS_TAKEN.swap(true, Ordering::AcqRel) {
        return None;
    }
    // SAFETY: SLOTS_TAKEN guarantees these unique references are created at most once.
    Some(unsafe {
        Taken {
            bytes: &mut *core::ptr::addr_of_mut!(LOOP_BYTES),
            slots: slots_in_place(&mut *SLOTS.0.get()),
            #[cfg(feature = "blast")]
            blast: &mut *core::ptr::addr_of_mut!(BLAST_BYTES),
            place: &mut *APPS.0.get(),
        }
    })
}

/// Writes the empty [`Slots`] where they live, an element at a time: built by value, they
/// were a temporary of the main loop's outermost frame, which lives as long as the firmware
/// (5.6 KB of stack with the full image's sixteen sockets).
fn slots_in_place(place: &mut MaybeUninit<Slots>) -> &mut Slots {
    let p = place.as_mut_ptr();
    // SAFETY: every field of `*p` is written once through a raw pointer (the socket
    // storages one element at a time), without reading, before it is assumed initialised.
    unsafe {
        let sockets = core::ptr::addr_of_mut!((*p).sockets).cast::<SocketStorage<'static>>();
        for i in 0..SOCKETS {
            // `default()`, not the `EMPTY` const: the const is a 336-byte image in flash
            // copied in; `default()` stores the one tag that says empty.
            sockets.add(i).write(SocketStorage::default());
        }
        #[cfg(feature = "echo")]
        core::ptr::addr_of_mut!((*p).echo_udp_meta)
            .write([[PacketMetadata::EMPTY; ECHO_UDP_PACKETS]; 2]);
        #[cfg(any(feature = "iperf-udp", feature = "iperf2"))]
        {
            core::ptr::addr_of_mut!((*p).iperf_udp_rx_meta)
                .write([PacketMetadata::EMPTY; IPERF_UDP_RX_PACKETS]);
            core::ptr::addr_of_mut!((*p).iperf_udp_tx_meta)
                .write([PacketMetadata::EMPTY; IPERF_UDP_TX_PACKETS]);
        }
        #[cfg(feature = "blast")]
        {
            core::ptr::addr_of_mut!((*p).blast_rx_meta)
                .write([PacketMetadata::EMPTY; BLAST_RX_PACKETS]);
            core::ptr::addr_of_mut!((*p).blast_tx_meta)
                .write([PacketMetadata::EMPTY; BLAST_TX_PACKETS]);
        }
        place.assume_init_mut()
    }
}

/// The packet blaster's socket (added to `sockets`) and its frame buffer.
#[cfg(feature = "blast")]
pub(crate) type BlastParts = (SocketHandle, &'static mut [u8; blast::FRAME_LEN]);
/// No packet blaster in this build.
#[cfg(not(feature = "blast"))]
pub(crate) type BlastParts = ();

/// The socket set and the apps over the static buffers, built in place (every main-loop
/// flavour uses it), and what is left for the packet blaster: its socket and frame buffer.
pub(crate) fn device_apps(t: Taken) -> (&'static mut Apps, BlastParts) {
    let Taken {
        bytes: buf,
        slots,
        #[cfg(feature = "blast")]
        blast,
        place,
    } = t;
    let at = place.as_mut_ptr();
    // SAFETY: `at` points to the (uninitialised) `Apps`; each field is written once, through
    // a raw pointer and without reading it, before the whole is assumed initialised below.
    // Field by field, so that the large ones are built where they live, not on the stack.
    let sockets = unsafe {
        let sockets = core::ptr::addr_of_mut!((*at).sockets);
        sockets.write(SocketSet::new(&mut slots.sockets[..]));
        &mut *sockets
    };
    #[cfg(feature = "blast")]
    let blast_parts = (
        sockets.add(udp::Socket::new(
            udp::PacketBuffer::new(&mut slots.blast_rx_meta[..], &mut blast.rx[..]),
            udp::PacketBuffer::new(&mut slots.blast_tx_meta[..], &mut blast.tx[..]),
        )),
        &mut blast.frame,
    );
    #[cfg(not(feature = "blast"))]
    let blast_parts = ();
    #[cfg(feature = "iperf3")]
    let [(c0_rx, c0_tx), (c1_rx, c1_tx)] = &mut buf.iperf_control;
    #[cfg(feature = "iperf3")]
    let iperf = IperfBuffers {
        control: [
            TcpBuffers {
                rx: c0_rx,
                tx: c0_tx,
            },
            TcpBuffers {
                rx: c1_rx,
                tx: c1_tx,
            },
        ],
        json_rx: &mut buf.json_rx,
        json_tx: &mut buf.json_tx,
    };
    let data = DataBuffers {
        bytes: &mut buf.iperf_data,
        plan: DataPlan {
            bytes: IPERF_DATA,
            window: TCP_WINDOW,
            tx: IPERF_TCP_TX,
            udp_rx: TCP_WINDOW,
            per_stream: 0,
        },
        #[cfg(any(feature = "iperf-udp", feature = "iperf2"))]
        udp_meta: [
            &mut slots.iperf_udp_rx_meta[..],
            &mut slots.iperf_udp_tx_meta[..],
        ],
        // linklab-perf's UDP sockets (echo's) without an iperf UDP test: no records to lend.
        #[cfg(all(feature = "echo", not(any(feature = "iperf-udp", feature = "iperf2"))))]
        udp_meta: [&mut [], &mut []],
    };
    #[cfg(feature = "echo")]
    let (echo_udp, echo_tcp) = {
        let [urx, utx] = &mut buf.echo_udp;
        let [mrx, mtx] = &mut slots.echo_udp_meta;
        let [trx, ttx] = &mut buf.echo_tcp;
        (
            UdpBuffers {
                rx_meta: mrx,
                rx: urx,
                tx_meta: mtx,
                tx: utx,
            },
            TcpBuffers { rx: trx, tx: ttx },
        )
    };
    #[cfg(feature = "http")]
    let http = {
        let mut tx = buf.http_tx.iter_mut();
        buf.http_rx.each_mut().map(|rx| TcpBuffers {
            rx: &mut rx[..],
            tx: tx.next().map_or(&mut [][..], |t| &mut t[..]),
        })
    };
    let buffers = AppBuffers {
        #[cfg(feature = "echo")]
        echo_udp,
        #[cfg(feature = "echo")]
        echo_tcp,
        #[cfg(feature = "http")]
        http,
        #[cfg(feature = "iperf3")]
        iperf,
        data,
    };
    // SAFETY: as above; `sockets` is the field written first, `body` is zeroed in place.
    let apps = unsafe {
        build_apps(
            &mut *core::ptr::addr_of_mut!((*at).apps).cast(),
            sockets,
            buffers,
        );
        #[cfg(feature = "stats")]
        core::ptr::addr_of_mut!((*at).body)
            .cast::<u8>()
            .write_bytes(0, linklab_perf::http::MAX_HEAD);
        place.assume_init_mut()
    };
    (apps, blast_parts)
}

/// Builds the apps at `at`. Not inlined into the main loop, whose frame would otherwise
/// keep the construction's temporaries for the firmware's life; linklab-perf marks the
/// constructors of the apps' large parts `#[inline(always)]`, so that they are built in
/// this frame once rather than each in its own frame and copied up (the apps were built
/// and copied four levels deep: a 41 KB stack peak at boot on the Cortex-M3, now 16 KB).
#[inline(never)]
fn build_apps(
    at: &mut MaybeUninit<LoopApps>,
    sockets: &mut SocketSet<'static>,
    buffers: AppBuffers<'static, HTTP_SOCKETS>,
) {
    DeviceApps::init(at, sockets, buffers);
}
