//! linklab-firmware: the board-independent part of every linklab firmware image. A board
//! brings up its clocks, console, timer and NIC, starts the NIC's RX interrupt (which moves
//! each frame into a grant of [`RX_QUEUE`]), reads its
//! [`DeviceConfig`](linklab_perf::device_config::DeviceConfig) and calls [`run`]: smoltcp over
//! `linklab_mac::Mac` as its `Device`, running linklab-perf's [`DeviceApps`] (iperf3 5201,
//! HTTP 80 with the bench files and `/stats`, echo 7, ICMP) — the same apps `linklab serve`
//! runs on a TAP. A board whose driver is someone else's (a HAL's smoltcp `Device`) calls
//! [`run_device`] with it instead, through [`NetDevice`].
//!
//! `#![no_std]`, no heap: every buffer is a static ([`memory`]).
#![no_std]
#![deny(missing_docs)]

#[cfg(feature = "blast")]
pub mod blast;
mod board;
pub mod console;
#[cfg(feature = "embassy")]
pub mod embassy;
pub mod memory;
#[cfg(feature = "serial")]
pub mod serial;
pub mod stack;
pub mod stats;

pub use board::Board;
// The images' memcpy (linked in place of compiler_builtins').
use linklab_memcpy as _;
// The minimal images' 64-bit division and memset (linked in place of compiler_builtins').
#[cfg(feature = "minimal")]
use linklab_small_builtins as _;

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, AtomicU32, Ordering};

#[cfg(all(
    feature = "minimal",
    any(
        feature = "http",
        feature = "echo",
        feature = "blast",
        feature = "evict",
        feature = "iperf-udp",
        feature = "iperf-parallel",
        feature = "iperf-bidir",
        feature = "iperf-rate"
    )
))]
compile_error!("linklab-firmware: feature `minimal` is the iperf3 TCP server alone; build it with `--no-default-features` (no app features)");

use linklab_mac::{Inline, Mac, MacAddr, MacConfig, NoClock, PhyTx, RxFormat, RxQueue, TxFormat};
#[cfg(feature = "echo")]
use linklab_perf::apps::UdpBuffers;
use linklab_perf::apps::{AppBuffers, DeviceApps, TcpBuffers};
use linklab_perf::device_config::{ConfigError, DeviceConfig, CONFIG_LEN};
use linklab_perf::iperf::device::IperfBuffers;
use linklab_perf::lifetime::syn_port;
#[cfg(feature = "blast")]
use smoltcp::iface::SocketHandle;
use smoltcp::iface::{Config as IfaceConfig, Interface, SocketSet, SocketStorage};
#[cfg(feature = "blast")]
use smoltcp::socket::udp;
#[cfg(any(feature = "echo", feature = "iperf-udp", feature = "blast"))]
use smoltcp::socket::udp::PacketMetadata;
#[cfg(feature = "blast")]
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

#[cfg(feature = "blast")]
use blast::Blaster;
use console::Line;
use memory::*;
#[cfg(feature = "stats")]
use stats::{CpuFigures, Rendered, Snapshot};

/// The RX queue: the board's NIC interrupt owns its producer (`RX_QUEUE.producer()`),
/// [`run`] its consumer.
pub static RX_QUEUE: RxQueue<Inline<QUEUE_BYTES>> = RxQueue::new();

/// Work done in the NIC's interrupt handler, in the unit of [`Board::work_counter`]
/// (instructions where the CPU counts them, else nanoseconds awake), wrapping: the board's
/// handler adds what each run took, so `/stats` can say what the driver's RX costs.
pub static ISR_WORK: AtomicU32 = AtomicU32::new(0);

/// True when the NIC's interrupt has committed frames the main loop has not read yet. A
/// board's `sleep_until` checks it with interrupts masked, right before WFI: a frame committed
/// after the main loop's last poll must not wait for the next interrupt.
pub fn work_pending() -> bool {
    #[cfg(feature = "serial")]
    if !serial::SERIAL_RX.is_empty() {
        return true;
    }
    RX_QUEUE.occupancy() > 0
}

/// Where a panic happened, for a board's `#[panic_handler]` to print: `None` in the minimal
/// image. Printing the place keeps every panic site's file name and line in flash, and the
/// message machinery behind them: 5.3 KB of mps2-an385's minimal image (`llvm-size`, with and
/// without). The minimal image, sized for flash, says only that it panicked.
pub fn panic_location<'a>(
    info: &'a core::panic::PanicInfo<'_>,
) -> Option<&'a core::panic::Location<'a>> {
    if cfg!(feature = "minimal") {
        None
    } else {
        info.location()
    }
}

/// Adds one interrupt handler run's work to [`ISR_WORK`].
pub fn add_isr_work(work: u64) {
    ISR_WORK.fetch_add(work as u32, Ordering::Relaxed);
}

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
    pub(crate) iperf_rx: [IperfRx; IPERF_TCP_SOCKETS],
    pub(crate) iperf_tx: [[u8; IPERF_TCP_TX]; IPERF_TCP_SOCKETS],
    pub(crate) iperf_udp_rx: [u8; EMBASSY_IPERF_UDP_RX],
    pub(crate) iperf_udp_tx: [u8; EMBASSY_IPERF_UDP_TX],
    pub(crate) json_rx: [u8; IPERF_JSON],
    pub(crate) json_tx: [u8; IPERF_JSON],
}

/// Bytes behind one iperf3 TCP socket's receive buffer in the embassy image: the window and
/// room to start it [`IPERF_RX_SKEW`] bytes in.
#[cfg(feature = "embassy")]
const IPERF_RX_LEN: usize = TCP_WINDOW + 4;

/// Where in its [`IperfRx`] an embassy iperf3 socket's receive ring starts: 3 mod 4. Every
/// iperf3 data stream begins with the client's 37-byte cookie (`iperf::wire::COOKIE_SIZE`),
/// and smoltcp's receive ring never rewinds to its start, so every later segment lands 37
/// bytes further on than a whole number of segments: from a ring that starts on a word,
/// smoltcp copied each payload (word-aligned in the frame) with `memcpy`'s misaligned path,
/// 3.6 instructions per byte on the Cortex-M3 instead of ~1.2 (measured with `linklab emu
/// --cost`). Started at 3 mod 4, the ring puts byte 37 on a word; after an odd-sized
/// segment the server's read position, kept on a word (linklab-perf's
/// `TcpOps::may_leave_bytes`, with the driver's gate waking the server for each segment),
/// brings the stream back onto it.
#[cfg(feature = "embassy")]
pub(crate) const IPERF_RX_SKEW: usize = (4 - linklab_perf::iperf::wire::COOKIE_SIZE % 4) % 4;

/// One iperf3 TCP socket's receive bytes in the embassy image ([`IperfRx::ring`] is the
/// buffer to lend).
#[cfg(feature = "embassy")]
pub(crate) struct IperfRx([u8; IPERF_RX_LEN]);

#[cfg(feature = "embassy")]
impl IperfRx {
    /// The receive ring: [`TCP_WINDOW`] bytes from [`IPERF_RX_SKEW`] on.
    pub(crate) fn ring(&mut self) -> &mut [u8] {
        &mut self.0[IPERF_RX_SKEW..IPERF_RX_SKEW + TCP_WINDOW]
    }
}

#[cfg(feature = "embassy")]
static mut BYTES: Bytes = Bytes {
    echo_udp_rx: [0; ECHO_UDP],
    echo_udp_tx: [0; ECHO_UDP],
    echo_tcp_rx: [0; ECHO_TCP],
    echo_tcp_tx: [0; ECHO_TCP],
    http_rx: [[0; HTTP_RX]; 2],
    http_tx: [[0; HTTP_TX]; 2],
    iperf_rx: [const { IperfRx([0; IPERF_RX_LEN]) }; IPERF_TCP_SOCKETS],
    iperf_tx: [[0; IPERF_TCP_TX]; IPERF_TCP_SOCKETS],
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
/// has, and the iperf3 server's two control sockets and its data memory (one chunk per
/// stream, each a window and a send buffer, lent to a data socket or the UDP socket only
/// while it carries a test: linklab-perf's `iperf::device::IperfBuffers`).
#[repr(C, align(4))]
pub(crate) struct LoopBytes {
    #[cfg(feature = "echo")]
    echo_udp: [[u8; ECHO_UDP]; 2],
    #[cfg(feature = "echo")]
    echo_tcp: [[u8; ECHO_TCP]; 2],
    #[cfg(feature = "http")]
    http_rx: [[u8; HTTP_RX]; HTTP_SOCKETS],
    #[cfg(feature = "http")]
    http_tx: [[u8; HTTP_TX]; HTTP_SOCKETS],
    /// Per control socket: receive, send.
    iperf_control: [[[u8; IPERF_CONTROL]; 2]; 2],
    iperf_data: [[u8; IPERF_CHUNK]; IPERF_STREAMS],
    json_rx: [u8; IPERF_JSON],
    json_tx: [u8; IPERF_JSON],
}

/// The packet blaster's bytes (main-loop images only; all zero: `.bss`), word-aligned as
/// [`LoopBytes`].
#[cfg(feature = "blast")]
#[repr(C, align(4))]
struct BlastBytes {
    rx: [u8; BLAST_RX],
    tx: [u8; BLAST_TX],
    frame: [u8; blast::FRAME_LEN],
}

/// The socket set's slots and the UDP sockets' packet records, written at boot.
struct Slots {
    sockets: [SocketStorage<'static>; SOCKETS],
    #[cfg(feature = "echo")]
    echo_udp_meta: [[PacketMetadata; ECHO_UDP_PACKETS]; 2],
    #[cfg(feature = "iperf-udp")]
    iperf_udp_rx_meta: [PacketMetadata; IPERF_UDP_RX_PACKETS],
    #[cfg(feature = "iperf-udp")]
    iperf_udp_tx_meta: [PacketMetadata; IPERF_UDP_TX_PACKETS],
    #[cfg(feature = "blast")]
    blast_rx_meta: [PacketMetadata; BLAST_RX_PACKETS],
    #[cfg(feature = "blast")]
    blast_tx_meta: [PacketMetadata; BLAST_TX_PACKETS],
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
        IPERF_CONTROL,
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

static mut LOOP_BYTES: LoopBytes = LoopBytes {
    #[cfg(feature = "echo")]
    echo_udp: [[0; ECHO_UDP]; 2],
    #[cfg(feature = "echo")]
    echo_tcp: [[0; ECHO_TCP]; 2],
    #[cfg(feature = "http")]
    http_rx: [[0; HTTP_RX]; HTTP_SOCKETS],
    #[cfg(feature = "http")]
    http_tx: [[0; HTTP_TX]; HTTP_SOCKETS],
    iperf_control: [[[0; IPERF_CONTROL]; 2]; 2],
    iperf_data: [[0; IPERF_CHUNK]; IPERF_STREAMS],
    json_rx: [0; IPERF_JSON],
    json_tx: [0; IPERF_JSON],
};

#[cfg(feature = "blast")]
static mut BLAST_BYTES: BlastBytes = BlastBytes {
    rx: [0; BLAST_RX],
    tx: [0; BLAST_TX],
    frame: [0; blast::FRAME_LEN],
};

/// Where [`Slots`] is written at boot (`.bss`: no flash for its initial values).
struct SlotsCell(UnsafeCell<MaybeUninit<Slots>>);

// SAFETY: handed out once (SLOTS_TAKEN), to the one main loop.
unsafe impl Sync for SlotsCell {}

static SLOTS: SlotsCell = SlotsCell(UnsafeCell::new(MaybeUninit::uninit()));

/// Set once the main loop's buffers have been handed out.
static SLOTS_TAKEN: AtomicBool = AtomicBool::new(false);

/// The apps of this build over smoltcp: iperf3 with its sockets and streams, and the HTTP
/// sockets.
pub(crate) type LoopApps = DeviceApps<'static, IPERF_TCP_SOCKETS, IPERF_STREAMS, HTTP_SOCKETS>;

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
            slots: (*SLOTS.0.get()).write(Slots {
                sockets: [SocketStorage::EMPTY; SOCKETS],
                #[cfg(feature = "echo")]
                echo_udp_meta: [[PacketMetadata::EMPTY; ECHO_UDP_PACKETS]; 2],
                #[cfg(feature = "iperf-udp")]
                iperf_udp_rx_meta: [PacketMetadata::EMPTY; IPERF_UDP_RX_PACKETS],
                #[cfg(feature = "iperf-udp")]
                iperf_udp_tx_meta: [PacketMetadata::EMPTY; IPERF_UDP_TX_PACKETS],
                #[cfg(feature = "blast")]
                blast_rx_meta: [PacketMetadata::EMPTY; BLAST_RX_PACKETS],
                #[cfg(feature = "blast")]
                blast_tx_meta: [PacketMetadata::EMPTY; BLAST_TX_PACKETS],
            }),
            #[cfg(feature = "blast")]
            blast: &mut *core::ptr::addr_of_mut!(BLAST_BYTES),
            place: &mut *APPS.0.get(),
        }
    })
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
    let [c0, c1] = &mut buf.iperf_control;
    let [c0_rx, c0_tx] = c0;
    let [c1_rx, c1_tx] = c1;
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
        data: buf.iperf_data.iter_mut().map(|c| &mut c[..]),
        window: TCP_WINDOW,
        #[cfg(feature = "iperf-udp")]
        udp_rx: TCP_WINDOW,
        #[cfg(feature = "iperf-udp")]
        udp_meta: [&mut slots.iperf_udp_rx_meta, &mut slots.iperf_udp_tx_meta],
        json_rx: &mut buf.json_rx,
        json_tx: &mut buf.json_tx,
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
        iperf,
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
fn build_apps<I: IntoIterator<Item = &'static mut [u8]>>(
    at: &mut MaybeUninit<LoopApps>,
    sockets: &mut SocketSet<'static>,
    buffers: AppBuffers<'static, I, HTTP_SOCKETS>,
) {
    at.write(DeviceApps::new(sockets, buffers));
}

/// Reads the configuration blob at `addr` (placed there by `linklab emu` through QEMU's
/// loader) with volatile reads, so the compiler cannot assume the RAM is still zero.
///
/// # Safety
/// `addr..addr + CONFIG_LEN` must be readable memory.
pub unsafe fn read_config(addr: usize) -> Result<DeviceConfig, ConfigError> {
    let mut blob = [0u8; CONFIG_LEN];
    for (i, b) in blob.iter_mut().enumerate() {
        // SAFETY: the caller guarantees the range is readable.
        *b = unsafe { core::ptr::read_volatile((addr + i) as *const u8) };
    }
    DeviceConfig::parse(&blob)
}

/// What is wrong with the configuration blob, for the console.
pub(crate) fn config_problem(e: ConfigError) -> &'static str {
    match e {
        ConfigError::NoBlob => "no config blob",
        ConfigError::Version(_) => "config blob of an unknown version",
        ConfigError::Crc => "config blob with a bad CRC",
        ConfigError::Invalid => "config blob with an invalid prefix or MAC",
    }
}

/// The configuration at `addr`, or the default with a console line saying why.
///
/// # Safety
/// As [`read_config`].
pub unsafe fn config_or_default<B: Board>(board: &mut B, addr: usize) -> DeviceConfig {
    // SAFETY: forwarded from the caller.
    match unsafe { read_config(addr) } {
        Ok(c) => c,
        Err(e) => {
            board.console("linklab firmware: ");
            board.console(config_problem(e));
            board.console(", using 198.18.0.2/24\n");
            DeviceConfig::DEFAULT
        }
    }
}

/// Runs the device forever over [`RX_QUEUE`] (filled by the board's NIC interrupt with
/// aligned frames in `rx_format`: without FCS from the LAN9118 in QEMU, tagged with what
/// the device knows of their checksums from virtio-net) and the NIC's transmit side `phy`,
/// which takes plain frames (the controller adds preamble and FCS).
pub fn run<B: Board, T: PhyTx>(board: B, phy: T, rx_format: RxFormat, config: DeviceConfig) -> ! {
    run_mac(
        board,
        phy,
        |address| MacConfig {
            rx_format,
            tx_format: TxFormat::Plain,
            ..MacConfig::aligned_fcs(address)
        },
        config,
    )
}

/// [`run`] for a board whose PHY is software (linklab-phy10; feature `soft-phy`): its receive
/// interrupt decodes line samples straight into [`RX_QUEUE`]'s grants (bytes after the SFD,
/// FCS included, checked by the MAC), and `phy` gets wire-format frames (preamble, SFD,
/// frame, FCS) to encode. The MAC keeps no line timing of its own (rate 0): the sampler's DMA sets the
/// pace on the line.
#[cfg(feature = "soft-phy")]
pub fn run_soft_phy<B: Board, T: PhyTx>(board: B, phy: T, config: DeviceConfig) -> ! {
    run_mac(
        board,
        phy,
        |address| MacConfig::decoding_phy(address, 0),
        config,
    )
}

/// The main loop over a MAC configured by `mac_config` (given the device's address).
fn run_mac<B: Board, T: PhyTx>(
    mut board: B,
    phy: T,
    mac_config: impl FnOnce(MacAddr) -> MacConfig,
    config: DeviceConfig,
) -> ! {
    let stack = stack::paint(board.stack_limit(), board.stack_top());
    let Some(taken) = take_buffers() else {
        board.console("linklab firmware: run() called twice\n");
        loop {
            board.sleep_until(None);
        }
    };
    let mut mac = Mac::new(
        RX_QUEUE.consumer(),
        phy,
        NoClock,
        mac_config(MacAddr(config.mac)),
    );
    // IPv4/TCP/UDP checksums in the MAC, word-wise, instead of smoltcp's 16-bit loops
    // (bad ones are dropped and counted in /stats mac.rx_checksum_errors).
    mac.set_checksum_offload(true);
    let mut iface = interface(&mut board, &mut mac, &config);
    #[cfg(feature = "blast")]
    {
        let (state, (blast_socket, blast_frame)) = device_apps(taken);
        let mut blaster = Blaster::new(
            &mut state.sockets,
            blast_socket,
            blast_frame,
            config.ip,
            config.mac,
        );
        boot_line(&mut board, &config);
        serve(
            board,
            &mut mac,
            &mut iface,
            state,
            Some(&mut blaster),
            stack,
        )
    }
    #[cfg(not(feature = "blast"))]
    {
        let (state, ()) = device_apps(taken);
        boot_line(&mut board, &config);
        serve(board, &mut mac, &mut iface, state, stack)
    }
}

/// Runs the device forever over `device`, any smoltcp `Device` that can show the apps its
/// next frame and `/stats` its counters ([`NetDevice`]), e.g. a HAL's driver: the same apps
/// and `/stats` as [`run`], without the packet blaster (its raw way hands frames to
/// linklab-mac's `PhyTx`; its UDP port stays closed).
pub fn run_device<B: Board, D: NetDevice>(mut board: B, mut device: D, config: DeviceConfig) -> ! {
    let stack = stack::paint(board.stack_limit(), board.stack_top());
    let Some(taken) = take_buffers() else {
        board.console("linklab firmware: run() called twice\n");
        loop {
            board.sleep_until(None);
        }
    };
    let mut iface = interface(&mut board, &mut device, &config);
    let (state, _) = device_apps(taken);
    boot_line(&mut board, &config);
    serve(
        board,
        &mut device,
        &mut iface,
        state,
        #[cfg(feature = "blast")]
        None,
        stack,
    )
}

/// smoltcp's interface over `device` at the configured address.
fn interface<B: Board, D: smoltcp::phy::Device>(
    board: &mut B,
    device: &mut D,
    config: &DeviceConfig,
) -> Interface {
    let mut iface_config = IfaceConfig::new(EthernetAddress(config.mac).into());
    let m = config.mac;
    iface_config.random_seed =
        board.now_ns() ^ u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0]);
    let mut iface = Interface::new(iface_config, device, now(board));
    let [a, b, c, d] = config.ip;
    iface.update_ip_addrs(|addrs| {
        let _ = addrs.push(IpCidr::new(IpAddress::v4(a, b, c, d), config.prefix));
    });
    iface
}

/// Every console line of the firmware: one size, so an image links one copy of the line
/// code (two sizes linked two: 244 B of the minimal image).
type ConsoleLine = Line<256>;

/// The console's boot line (`linklab emu` waits for it): the board, the address, the queue
/// and window, and the image's flavour (`minimal` for the iperf3 server alone).
fn boot_line<B: Board>(board: &mut B, config: &DeviceConfig) {
    let [a, b, c, d] = config.ip;
    let mut line = ConsoleLine::new();
    line.text("linklab firmware: ")
        .text(B::NAME)
        .text(" up, ")
        .num(a.into())
        .text(".")
        .num(b.into())
        .text(".")
        .num(c.into())
        .text(".")
        .num(d.into())
        .text("/")
        .num(config.prefix.into())
        .text(", ")
        .num(QUEUE_FRAMES as u64)
        .text(" frame RX queue, tcp window ")
        .num(TCP_WINDOW as u64);
    if cfg!(feature = "minimal") {
        line.text(", minimal");
    }
    line.text("\n");
    board.console(line.as_str());
}

/// What the main loop needs of a network device besides smoltcp's `Device`: a look at the
/// next received frame for the apps' SYN rule, its counters for `/stats`, and (linklab-mac's
/// MAC only) the packet blaster's raw way.
pub trait NetDevice: smoltcp::phy::Device {
    /// The destination port of the next received frame if it opens a TCP connection
    /// ([`syn_port`]), looked at without receiving it; None when there is no frame or the
    /// device cannot show it (then a SYN to a service whose sockets are all busy gets
    /// smoltcp's RST instead of a socket freed for it).
    fn next_syn_port(&self) -> Option<u16>;

    /// The counters `/stats` shows, with their conservation law
    /// ([`linklab_mac::Counters::check_conservation`]).
    fn counters(&self) -> linklab_mac::Counters;

    /// Runs the packet blaster ([`Blaster::poll`]) where the device has its raw way; does
    /// nothing by default.
    #[cfg(feature = "blast")]
    fn blast<B: Board>(
        &mut self,
        _blaster: &mut Blaster<'static>,
        _board: &mut B,
        _iface: &mut Interface,
        _sockets: &mut SocketSet<'static>,
        _now: Instant,
    ) {
    }
}

impl<T: PhyTx> NetDevice for Mac<'static, Inline<QUEUE_BYTES>, T, NoClock> {
    fn next_syn_port(&self) -> Option<u16> {
        self.peek(syn_port).flatten()
    }

    fn counters(&self) -> linklab_mac::Counters {
        Mac::counters(self)
    }

    #[cfg(feature = "blast")]
    fn blast<B: Board>(
        &mut self,
        blaster: &mut Blaster<'static>,
        board: &mut B,
        iface: &mut Interface,
        sockets: &mut SocketSet<'static>,
        now: Instant,
    ) {
        blaster.poll(board, iface, sockets, self, now);
    }
}

/// The main loop. Its own function, never inlined: its frame (the apps' inlined work) and
/// the construction of the apps above (`build_apps`, the deepest frame at boot) then never
/// sit on the stack at the same time.
#[inline(never)]
fn serve<B: Board, D: NetDevice>(
    mut board: B,
    device: &mut D,
    iface: &mut Interface,
    state: &mut Apps,
    #[cfg(feature = "blast")] mut blaster: Option<&mut Blaster<'static>>,
    stack: stack::Stack,
) -> ! {
    let Apps {
        sockets,
        apps,
        #[cfg(feature = "stats")]
        body,
    } = state;
    #[cfg(feature = "stats")]
    let mut idle_ns = 0u64;
    let mut work = stats::LayerWork::default();
    #[cfg(not(feature = "stats"))]
    let mut tests_seen = u32::MAX;
    loop {
        let awake = Mark::now(&mut board);
        let t = now(&mut board);
        let m = Mark::now(&mut board);
        // Ingress, the apps, then egress: what leaves carries what the apps just did.
        apps.poll_ingress(iface, device, sockets, t, |d| d.next_syn_port());
        work.stack = work.stack.wrapping_add(m.net(&mut board));
        #[cfg(feature = "stats")]
        let len = if apps.http_request_pending(sockets) {
            let cpu = CpuFigures {
                uptime_ns: board.now_ns(),
                idle_ns,
                stack_peak_bytes: stack.peak(),
                stack_size_bytes: stack.size(),
                work: stats::LayerWork {
                    isr: u64::from(ISR_WORK.load(Ordering::Relaxed)),
                    ..work
                },
                work_unit: if board.instructions().is_some() {
                    "instructions"
                } else {
                    "ns awake"
                },
            };
            Snapshot {
                board: B::NAME,
                mac: device.counters(),
                apps: apps.counters(),
                cpu,
                link_up: board.link_up(),
                phy: board.phy(),
                sockets,
                #[cfg(feature = "blast")]
                blast: blaster.as_ref().map(|b| b.counters()),
                #[cfg(not(feature = "blast"))]
                blast: None,
            }
            .write_json(body)
        } else {
            None
        };
        let m = Mark::now(&mut board);
        #[cfg(feature = "stats")]
        apps.poll(sockets, &mut Rendered { body, len }, t);
        #[cfg(not(feature = "stats"))]
        apps.poll(sockets, &mut linklab_perf::http::NoRoutes, t);
        work.apps = work.apps.wrapping_add(m.net(&mut board));
        let m = Mark::now(&mut board);
        apps.poll_egress(iface, device, sockets, t);
        work.stack = work.stack.wrapping_add(m.net(&mut board));
        #[cfg(feature = "blast")]
        if let Some(b) = blaster.as_deref_mut() {
            device.blast(b, &mut board, iface, sockets, t);
        }
        let t = now(&mut board);
        let deadline = [iface.poll_at(t, sockets), apps.poll_at()]
            .into_iter()
            .flatten()
            .min();
        work.main = work.main.wrapping_add(awake.net(&mut board));
        work.loops = work.loops.wrapping_add(1);
        // Without /stats, the work so far goes to the console at boot and after each
        // iperf3 test (what `linklab emu --cost` reads from a minimal image).
        #[cfg(not(feature = "stats"))]
        {
            let c = apps.iperf().counters();
            let tests = c.tests_done.wrapping_add(c.tests_failed);
            if tests != tests_seen {
                tests_seen = tests;
                work_line(&mut board, &work, device.counters(), stack.peak(), tests);
            }
        }
        #[cfg(feature = "blast")]
        let busy = blaster.as_ref().is_some_and(|b| b.busy());
        #[cfg(not(feature = "blast"))]
        let busy = false;
        if busy || deadline.is_some_and(|d| d <= t) {
            continue;
        }
        #[cfg(feature = "stats")]
        let before = board.now_ns();
        board.sleep_until(deadline.map(|d| d.total_micros().max(0) as u64 * 1000));
        #[cfg(feature = "stats")]
        {
            idle_ns += board.now_ns().saturating_sub(before);
        }
    }
}

/// The console line of an image without `/stats` (`linklab emu`'s `--cost` reads it): the
/// work per layer since boot (as `/stats` `cpu.work`, the interrupt's at 32 bits), the
/// frames, the stack's peak and the iperf3 tests finished. Written after the work it
/// reports was counted; writing it is counted in the next line's.
#[cfg(not(feature = "stats"))]
fn work_line<B: Board>(
    board: &mut B,
    work: &stats::LayerWork,
    mac: linklab_mac::Counters,
    stack_peak: usize,
    tests: u32,
) {
    let mut line = ConsoleLine::new();
    line.text("linklab work: isr=")
        .num(ISR_WORK.load(Ordering::Relaxed).into())
        .text(" stack=")
        .num(work.stack)
        .text(" apps=")
        .num(work.apps)
        .text(" main=")
        .num(work.main)
        .text(" loops=")
        .num(work.loops)
        .text(" rx_packets=")
        .num(mac.rx_packets)
        .text(" tx_packets=")
        .num(mac.tx_packets)
        .text(" rx_missed=")
        .num(mac.rx_missed_errors)
        .text(" stack_peak=")
        .num(stack_peak as u64)
        .text(" tests=")
        .num(tests.into())
        .text(" unit=")
        .text(if board.instructions().is_some() {
            "instructions"
        } else {
            "ns-awake"
        })
        .text("\n");
    board.console(line.as_str());
}

/// A point in the CPU's work, to measure what a stretch of the main loop cost without the
/// interrupt handler runs that fell into it (those are counted in [`ISR_WORK`]).
struct Mark {
    work: u64,
    isr: u32,
}

impl Mark {
    fn now<B: Board>(board: &mut B) -> Mark {
        Mark {
            isr: ISR_WORK.load(Ordering::Relaxed),
            work: board.work_counter(),
        }
    }

    /// Work since the mark, less the interrupt handler's.
    fn net<B: Board>(&self, board: &mut B) -> u64 {
        let all = board.work_counter().wrapping_sub(self.work);
        let isr = ISR_WORK.load(Ordering::Relaxed).wrapping_sub(self.isr);
        all.saturating_sub(u64::from(isr))
    }
}

/// The board's time as smoltcp's.
fn now<B: Board>(board: &mut B) -> smoltcp::time::Instant {
    smoltcp::time::Instant::from_micros((board.now_ns() / 1000) as i64)
}
