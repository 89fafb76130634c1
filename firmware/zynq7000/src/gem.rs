//! The GEM (Cadence Gigabit Ethernet MAC, GEM 0 at 0xE000_B000) through zynq7000-hal's
//! driver, unmodified: [`start`] brings it up (clocks, MDIO, the PHY, the descriptor rings
//! in the non-cacheable section, the buffers in cached DDR) and hands back the HAL's
//! embassy-net `Driver`; [`GemDevice`] is that driver as a smoltcp `Device` for the main
//! loop, with what the main loop needs besides ([`linklab_firmware::NetDevice`]).
//!
//! Why a wrapper: zynq7000-hal 0.2.0's own smoltcp `Device` (`eth::smoltcp::Driver`) has no
//! constructor outside the crate (a tuple struct around a crate-private type), so the
//! smoltcp path goes through the one driver that can be built, `eth::embassy_net::Driver`:
//! its `receive` and `transmit` (with a no-op waker) are the same `CommonSmoltcpDriver`
//! calls, and its tokens are the HAL's `SmoltcpRxToken`/`SmoltcpTxToken`, which implement
//! smoltcp's token traits; the capabilities are the ones the HAL's smoltcp `Device` declares.
//!
//! What the wrapper adds, read-only beside the HAL:
//! * **The SYN peek** ([`GemDevice::next_frame`]): the HAL has no way to look at a frame
//!   without receiving it (dropping its RX token unconsumed leaves the slot with software and
//!   moves the HAL's scan past it: that frame comes back out of order, after the ring wraps).
//!   The wrapper reads the RX ring the HAL owns: it tracks the slot the HAL scans from (the
//!   one after the frame last consumed, told by the buffer address the HAL lends) and finds
//!   the same frame the HAL's full-ring scan will return next.
//! * **Counters with a law** ([`GemDevice::counters`]): the GEM's own statistics registers
//!   (frames received and their errors, frames sent) against what the driver delivered to
//!   smoltcp, the frames still in the RX ring, and the TX descriptors still with the GEM.
//!   A frame the driver loses (a multi-slot frame or broken fragments, which it returns as
//!   "no frame" and leaves with software) breaks the RX law.
//! * **The RX restart QEMU needs** ([`note_interrupt`]): QEMU's GEM, once its cached copy of
//!   the next RX descriptor says software owns it (the ring was full), stops taking frames
//!   until the network control register is written. The HAL writes it only to start a
//!   transmission, so a device that only receives (UDP from iperf3) stalled after one full
//!   ring. After the driver drained the ring, the wrapper writes the register once (receive
//!   enable, unchanged).

use core::cell::Cell;
use core::sync::atomic::{AtomicBool, Ordering};
use core::task::{Context, Waker};

use arbitrary_int::u6;
use linklab_mac::Counters;
use zynq7000_hal::eth::embassy_net::Driver;
use zynq7000_hal::eth::ll::ClockDivisors;
use zynq7000_hal::eth::smoltcp::{DescriptorsAndBuffers, SmoltcpRxToken, SmoltcpTxToken};
use zynq7000_hal::eth::{
    rx_descr, tx_descr, AlignedBuffer, ClockConfig, Ethernet, EthernetConfig, EthernetId,
    EthernetLowLevel, InterruptResult, MdcClockDivisor, UninitBufferList, MTU,
};

use crate::phy::Phy;

/// RX descriptors (and 1536-byte buffers): as many frames as linklab-mac's RX queue holds on
/// the other boards (`linklab_firmware::memory::QUEUE_FRAMES`), so the TCP window derived
/// from it fits.
pub const RX_SLOTS: usize = linklab_firmware::memory::QUEUE_FRAMES;
/// TX descriptors and buffers.
pub const TX_SLOTS: usize = 4;
/// Bytes of a received frame the peek makes fresh (Ethernet, the longest IPv4 and TCP
/// headers, rounded to cache lines).
const PEEK_BYTES: usize = 160;
/// The largest frame the link carries, less its FCS: 1500 bytes of IP (smoltcp's MTU for an
/// Ethernet medium counts the Ethernet header).
const LINK_FRAME_LEN: usize = 1514;

#[link_section = ".uncached"]
static RX_DESCRIPTORS: rx_descr::DescriptorList<RX_SLOTS> = rx_descr::DescriptorList::new();
#[link_section = ".uncached"]
static TX_DESCRIPTORS: tx_descr::DescriptorList<TX_SLOTS> = tx_descr::DescriptorList::new();
static RX_BUFFERS: UninitBufferList<RX_SLOTS> = UninitBufferList::new();
static TX_BUFFERS: UninitBufferList<TX_SLOTS> = UninitBufferList::new();

/// Where the rings and the RX buffers are, for reading beside the HAL.
#[derive(Clone, Copy)]
pub struct Rings {
    rx: *const rx_descr::Descriptor,
    rx_buffers: *const AlignedBuffer,
    tx: *const tx_descr::Descriptor,
}

impl Rings {
    fn rx_slot(&self, i: usize) -> (u32, u32) {
        // SAFETY: `i < RX_SLOTS`; the descriptor's words are volatile cells the HAL and the
        // GEM write; reading them is what the GEM does too.
        let d = unsafe { &*self.rx.add(i) };
        (d.word_0.get().raw_value(), d.status.get().raw_value())
    }

    /// Whole frames in the RX ring that the driver has not delivered yet.
    fn rx_pending(&self) -> u64 {
        (0..RX_SLOTS)
            .filter(|&i| {
                let (word0, status) = self.rx_slot(i);
                word0 & RX_OWNED_BY_SOFTWARE != 0 && status & RX_END != 0
            })
            .count() as u64
    }

    /// TX descriptors handed to the GEM and not sent yet.
    fn tx_with_gem(&self) -> u64 {
        (0..TX_SLOTS)
            .filter(|&i| {
                // SAFETY: as `rx_slot`, `i < TX_SLOTS`.
                let d = unsafe { &*self.tx.add(i) };
                d.read_word_1().raw_value() & TX_USED == 0
            })
            .count() as u64
    }
}

/// RX descriptor word 0, bit 0: the GEM wrote a frame; software owns the slot.
const RX_OWNED_BY_SOFTWARE: u32 = 1 << 0;
/// RX status: start and end of frame, and the length.
const RX_START: u32 = 1 << 14;
const RX_END: u32 = 1 << 15;
const RX_LEN: u32 = 0x1FFF;
/// TX descriptor word 1, bit 31: the GEM is done with (or was never given) the slot.
const TX_USED: u32 = 1 << 31;

/// Set when the GEM may have stopped on an RX descriptor software owned: it reported one
/// (the HAL's interrupt handler), or a frame was taken from the ring, which may have been
/// full (QEMU then stops without reporting: it only looks at its cached copy of the next
/// descriptor). Cleared when the receiver is restarted.
static RX_STALLED: AtomicBool = AtomicBool::new(false);

/// Takes note of what the HAL's interrupt handler found (`zynq7000_hal::eth::*::on_interrupt`).
pub fn note_interrupt(result: InterruptResult) {
    if result.rx_descr_read_when_used {
        RX_STALLED.store(true, Ordering::Relaxed);
    }
}

/// Once the ring is drained after frames were taken from it or the GEM reported a used
/// descriptor: writes the network control register (receive enable, as it is), which makes
/// QEMU's GEM read its next descriptor again and take the frames it held back; on silicon a
/// no-op. One register read and write per drained batch.
fn restart_rx_if_stalled(rings: &Rings) {
    if RX_STALLED.load(Ordering::Relaxed) && rings.rx_pending() == 0 {
        RX_STALLED.store(false, Ordering::Relaxed);
        // SAFETY: a read-modify-write of GEM 0's control register that keeps every bit.
        let mut regs = unsafe { EthernetId::Eth0.steal_regs() };
        regs.modify_net_ctrl(|mut v| {
            v.set_rx_enable(true);
            v
        });
    }
}

/// Brings the GEM up with address `mac`: its clocks and MDIO, the PHY (QEMU's 88E1116R),
/// the speed and duplex it resolved, the rings, then TX and RX on. The HAL's embassy-net
/// driver, the ring locations, the PHY.
pub fn start(mac: [u8; 6]) -> Result<(Driver, Rings, Phy), &'static str> {
    // SAFETY: GEM 0's registers, handed to the HAL once here.
    let regs = unsafe { zynq7000::eth::Registers::new_mmio_fixed_0() };
    let ll = EthernetLowLevel::new(regs).ok_or("GEM 0 not found")?;
    // Divisors for the 125 MHz RGMII clock from the 1 GHz IO PLL (QEMU models no clock
    // tree past the SLCR's registers); the MDC within 2.5 MHz of a 111 MHz CPU_1x.
    let clocks = ClockConfig::new(ClockDivisors::new(u6::new(8), u6::new(1)));
    let mut eth = Ethernet::new(ll, EthernetConfig::new(clocks, MdcClockDivisor::Div48, mac));
    // SAFETY: the MDIO of the GEM brought up above, kept by the PHY for its link bit.
    let mut phy = Phy::new(unsafe { zynq7000_hal::eth::mdio::Mdio::steal(EthernetId::Eth0, true) });
    let (speed, duplex) = phy.bring_up().map_err(|e| e.as_str())?;
    eth.ll().set_speed_and_duplex(speed, duplex);

    // SAFETY: each list and buffer set taken once, here.
    let (rx_list, rx_bufs, tx_list, tx_bufs) = unsafe {
        (
            RX_DESCRIPTORS.take(),
            RX_BUFFERS.take(),
            TX_DESCRIPTORS.take(),
            TX_BUFFERS.take(),
        )
    };
    let mut rx = rx_descr::DescriptorListWrapper::new(rx_list);
    rx.init_with_aligned_bufs(rx_bufs);
    let mut tx = tx_descr::DescriptorListWrapper::new(tx_list);
    tx.init_or_reset();
    eth.set_rx_buf_descriptor_base_address(rx.base_addr());
    eth.set_tx_buf_descriptor_base_address(tx.base_addr());
    let rings = Rings {
        rx: rx.base_ptr(),
        rx_buffers: rx_bufs.as_ptr(),
        tx: tx.base_ptr(),
    };
    let bufs = DescriptorsAndBuffers::new(rx, rx_bufs, tx, tx_bufs).ok_or("ring sizes")?;
    let driver = Driver::new(&eth, mac, bufs);
    eth.start();
    Ok((driver, rings, phy))
}

/// What the wrapper counts of the traffic through the HAL's tokens.
pub struct Counts {
    rx_packets: Cell<u64>,
    rx_bytes: Cell<u64>,
    tx_requests: Cell<u64>,
    tx_bytes: Cell<u64>,
}

// SAFETY: the firmware runs on one core and takes no interrupt (lib.rs): the counts are
// only ever touched from its one thread of execution.
unsafe impl Sync for Counts {}

/// The counts, where `/stats` reads them from any task of the embassy image.
static COUNTS: Counts = Counts {
    rx_packets: Cell::new(0),
    rx_bytes: Cell::new(0),
    tx_requests: Cell::new(0),
    tx_bytes: Cell::new(0),
};

fn add(c: &Cell<u64>, n: u64) {
    c.set(c.get().wrapping_add(n));
}

/// zynq7000-hal's GEM driver as a smoltcp `Device` (see the module documentation), and as
/// an embassy-net `Driver` (feature `embassy`) with linklab-perf's service gate.
pub struct GemDevice {
    driver: Driver,
    rings: Rings,
    /// The RX slot the HAL's next scan starts from: the one after the frame last consumed.
    next_rx: Cell<usize>,
    counts: &'static Counts,
    /// The embassy image's gate: a frame it holds stays in the ring.
    #[cfg(feature = "embassy")]
    gate: Option<&'static linklab_perf::embassy::ServiceGate>,
}

impl GemDevice {
    /// The HAL's `driver` over `rings` (both from [`start`]).
    pub fn new(driver: Driver, rings: Rings) -> GemDevice {
        GemDevice {
            driver,
            rings,
            next_rx: Cell::new(0),
            counts: &COUNTS,
            #[cfg(feature = "embassy")]
            gate: None,
        }
    }

    /// The same, with linklab-perf's service gate asked before each frame goes to
    /// embassy-net (it holds a SYN or a UDP echo request until its app made room).
    #[cfg(feature = "embassy")]
    pub fn with_gate(mut self, gate: &'static linklab_perf::embassy::ServiceGate) -> GemDevice {
        self.gate = Some(gate);
        self
    }

    /// The next frame in the ring, without taking it, if the HAL's scan will return one: the
    /// embassy driver's gate looks with it (see [`GemDevice::frame_at`]).
    #[cfg(feature = "embassy")]
    fn peek(&self) -> Option<&[u8]> {
        match self.scan() {
            RxScan::Frame { slot, len } => Some(self.frame_at(slot, len)),
            RxScan::Empty | RxScan::NoFrame => None,
        }
    }

    /// The frame of `len` bytes in RX slot `slot`, its first [`PEEK_BYTES`] (every header
    /// the SYN rule and the gate read) fresh from DDR; its readers look at nothing past them.
    fn frame_at(&self, slot: usize, len: usize) -> &[u8] {
        // SAFETY: `slot < RX_SLOTS`; the GEM wrote this buffer and software owns it until the
        // HAL's token releases it, so nothing writes it while it is read here.
        let buf = unsafe { &*self.rings.rx_buffers.add(slot) };
        // The GEM wrote DDR behind the caches: drop stale lines first, as the HAL's token
        // does before it lends the frame (the buffer starts on a line; PEEK_BYTES is lines).
        let _ = zynq7000_hal::cache::invalidate_data_cache_range(buf.0.as_ptr() as u32, PEEK_BYTES);
        &buf.0[..len.min(MTU)]
    }

    /// What the HAL's next receive will find: its whole-ring scan from `next_rx`
    /// (`scan_and_handle_next_received_frame(true)`) step for step, read-only: a lone start
    /// is passed over; a second start or an end after it is no frame for the stack.
    fn scan(&self) -> RxScan {
        let mut i = self.next_rx.get();
        let mut start_found = false;
        for _ in 0..RX_SLOTS {
            let (word0, status) = self.rings.rx_slot(i);
            if word0 & RX_OWNED_BY_SOFTWARE != 0 {
                match (status & RX_START != 0, status & RX_END != 0) {
                    (true, true) => {
                        let len = (status & RX_LEN) as usize;
                        return RxScan::Frame { slot: i, len };
                    }
                    (true, false) if start_found => return RxScan::NoFrame,
                    (true, false) => start_found = true,
                    (false, true) if start_found => return RxScan::NoFrame,
                    _ => {}
                }
            }
            i = (i + 1) % RX_SLOTS;
        }
        RxScan::Empty
    }
}

/// What the HAL's next receive will find in the RX ring ([`GemDevice::scan`]).
enum RxScan {
    /// A whole frame in one slot: the one the receive returns.
    Frame { slot: usize, len: usize },
    /// Slots the receive moves past with no frame for the stack (a frame over several
    /// slots, broken fragments): it must still run.
    NoFrame,
    /// Nothing for the receive to find.
    Empty,
}

/// The HAL's RX token, counted, and telling the wrapper which slot it was.
pub struct GemRx<'a> {
    token: SmoltcpRxToken<'a>,
    rings: Rings,
    next_rx: &'a Cell<usize>,
    counts: &'a Counts,
}

impl smoltcp::phy::RxToken for GemRx<'_> {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        let GemRx {
            token,
            rings,
            next_rx,
            counts,
        } = self;
        smoltcp::phy::RxToken::consume(token, |frame: &[u8]| {
            let slot = (frame.as_ptr() as usize - rings.rx_buffers as usize)
                / core::mem::size_of::<AlignedBuffer>();
            next_rx.set((slot + 1) % RX_SLOTS);
            RX_STALLED.store(true, Ordering::Relaxed);
            add(&counts.rx_packets, 1);
            add(&counts.rx_bytes, frame.len() as u64);
            f(frame)
        })
    }
}

/// The HAL's TX token, counted.
pub struct GemTx<'a> {
    token: SmoltcpTxToken<'a>,
    counts: &'a Counts,
}

impl smoltcp::phy::TxToken for GemTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        add(&self.counts.tx_requests, 1);
        add(&self.counts.tx_bytes, len as u64);
        smoltcp::phy::TxToken::consume(self.token, len, f)
    }
}

impl smoltcp::phy::Device for GemDevice {
    type RxToken<'a> = GemRx<'a>;
    type TxToken<'a> = GemTx<'a>;

    fn receive(&mut self, _timestamp: smoltcp::time::Instant) -> Option<(GemRx<'_>, GemTx<'_>)> {
        let GemDevice {
            driver,
            rings,
            next_rx,
            counts,
            ..
        } = self;
        let mut cx = Context::from_waker(Waker::noop());
        let Some((rx, tx)) = embassy_net_driver::Driver::receive(driver, &mut cx) else {
            restart_rx_if_stalled(rings);
            return None;
        };
        Some((
            GemRx {
                token: rx,
                rings: *rings,
                next_rx,
                counts,
            },
            GemTx { token: tx, counts },
        ))
    }

    fn transmit(&mut self, _timestamp: smoltcp::time::Instant) -> Option<GemTx<'_>> {
        let mut cx = Context::from_waker(Waker::noop());
        let token = embassy_net_driver::Driver::transmit(&mut self.driver, &mut cx)?;
        Some(GemTx {
            token,
            counts: self.counts,
        })
    }

    /// What the HAL's own smoltcp `Device` declares — Ethernet, bursts of the TX ring's
    /// length, IPv4/TCP/UDP checksums left to the GEM both ways — but the link's MTU: a
    /// 1514-byte frame (1500 bytes of IP). The HAL's 1536 is its buffers' size, and smoltcp
    /// took it for the link's: every SYN-ACK offered an MSS of 1482, more than a 1500-byte
    /// LAN carries (stock iperf3's `-P 3` test caught it).
    fn capabilities(&self) -> smoltcp::phy::DeviceCapabilities {
        use smoltcp::phy::{Checksum, DeviceCapabilities, Medium};
        let mut caps = DeviceCapabilities::default();
        caps.medium = Medium::Ethernet;
        caps.max_transmission_unit = LINK_FRAME_LEN;
        caps.max_burst_size = Some(TX_SLOTS);
        caps.checksum.ipv4 = Checksum::None;
        caps.checksum.udp = Checksum::None;
        caps.checksum.tcp = Checksum::None;
        caps
    }
}

impl linklab_firmware::NetDevice for GemDevice {
    fn next_frame(&mut self) -> linklab_perf::lifetime::NextFrame {
        use linklab_perf::lifetime::NextFrame;
        match self.scan() {
            RxScan::Frame { slot, len } => NextFrame::of(self.frame_at(slot, len)),
            // The receive moves past these slots (with no frame for the stack), so it runs.
            RxScan::NoFrame => NextFrame::Other,
            // No receive runs now: its restart is done here.
            RxScan::Empty => {
                restart_rx_if_stalled(&self.rings);
                NextFrame::Empty
            }
        }
    }

    fn counters(&self) -> Counters {
        counters(&self.rings)
    }
}

/// The counters of `/stats` (see the module documentation) for the GEM with `rings`.
pub fn counters(rings: &Rings) -> Counters {
    // SAFETY: GEM 0's statistics registers, read only.
    let mut regs = unsafe { EthernetId::Eth0.steal_regs() };
    let stats = regs.statistics();
    // The GEM counts a frame before it writes it to the ring: read its count around the
    // look at the ring until no frame came in between.
    let (received, pending) = loop {
        let before = stats.read_rx_count();
        let pending = rings.rx_pending();
        if stats.read_rx_count() == before {
            break (u64::from(before), pending);
        }
    };
    let r = |v: u32| u64::from(v);
    let crc = r(stats.read_rx_frame_check_sequence_errors());
    let short = r(stats.read_rx_undersize());
    let long = r(stats.read_rx_oversize()) + r(stats.read_rx_jabber());
    let frame = r(stats.read_rx_alignment_errors())
        + r(stats.read_rx_symbol_errors())
        + r(stats.read_rx_length_field_errors());
    let checksum = r(stats.read_rx_ip_header_checksum_errors())
        + r(stats.read_rx_tcp_checksum_errors())
        + r(stats.read_rx_udp_checksum_errors());
    let missed = r(stats.read_rx_resource_errors()) + r(stats.read_rx_overrun_errors());
    let committed = received + crc + short + long + frame + checksum;
    let in_flight = rings.tx_with_gem();
    Counters {
        rx_transmissions: committed + missed,
        rx_committed: committed,
        rx_dequeued: committed.saturating_sub(pending),
        rx_packets: COUNTS.rx_packets.get(),
        rx_bytes: COUNTS.rx_bytes.get(),
        rx_crc_errors: crc,
        rx_short_length_errors: short,
        rx_long_length_errors: long,
        rx_frame_errors: frame,
        rx_checksum_errors: checksum,
        rx_missed_errors: missed,
        tx_requests: COUNTS.tx_requests.get(),
        tx_packets: r(stats.read_tx_count()),
        tx_bytes: COUNTS.tx_bytes.get(),
        tx_dropped: r(stats.read_tx_underruns())
            + r(stats.read_excessive_collisions())
            + r(stats.read_late_collisions()),
        tx_deferred: in_flight,
        ..Counters::default()
    }
}

#[cfg(feature = "embassy")]
impl embassy_net_driver::RxToken for GemRx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, f: F) -> R {
        let GemRx {
            token,
            rings,
            next_rx,
            counts,
        } = self;
        embassy_net_driver::RxToken::consume(token, |frame: &mut [u8]| {
            let slot = (frame.as_ptr() as usize - rings.rx_buffers as usize)
                / core::mem::size_of::<AlignedBuffer>();
            next_rx.set((slot + 1) % RX_SLOTS);
            RX_STALLED.store(true, Ordering::Relaxed);
            add(&counts.rx_packets, 1);
            add(&counts.rx_bytes, frame.len() as u64);
            f(frame)
        })
    }
}

/// A TX token of the embassy image: the frame, once built, is shown to the gate (which
/// notes the SYN-ACKs that leave).
#[cfg(feature = "embassy")]
pub struct GatedTx<'a> {
    tx: GemTx<'a>,
    gate: Option<&'static linklab_perf::embassy::ServiceGate>,
}

#[cfg(feature = "embassy")]
impl embassy_net_driver::TxToken for GatedTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let GatedTx { tx, gate } = self;
        add(&tx.counts.tx_requests, 1);
        add(&tx.counts.tx_bytes, len as u64);
        embassy_net_driver::TxToken::consume(tx.token, len, |frame: &mut [u8]| {
            let r = f(frame);
            if let Some(g) = gate {
                g.sent(frame);
            }
            r
        })
    }
}

/// The HAL's embassy-net driver, its tokens counted, with the gate before each frame and
/// QEMU's RX restart (module documentation); its link state and capabilities as the HAL
/// declares them but the link's MTU (as the smoltcp `Device`'s: the HAL's 1536 made every
/// SYN-ACK of the embassy image offer an MSS of 1482, seen in a mixed-load soak capture).
#[cfg(feature = "embassy")]
impl embassy_net_driver::Driver for GemDevice {
    type RxToken<'a> = GemRx<'a>;
    type TxToken<'a> = GatedTx<'a>;

    fn receive(&mut self, cx: &mut Context<'_>) -> Option<(GemRx<'_>, GatedTx<'_>)> {
        use linklab_perf::embassy::Admit;
        if let Some(gate) = self.gate {
            while let Some(frame) = self.peek() {
                match gate.admit(frame, cx.waker()) {
                    Admit::Pass => break,
                    Admit::Hold => return None,
                    // A SYN its service deferred: taken from the ring unread.
                    Admit::Drop => {
                        let (token, _) = embassy_net_driver::Driver::receive(&mut self.driver, cx)?;
                        let rx = GemRx {
                            token,
                            rings: self.rings,
                            next_rx: &self.next_rx,
                            counts: self.counts,
                        };
                        embassy_net_driver::RxToken::consume(rx, |_: &mut [u8]| ());
                    }
                }
            }
        }
        let gate = self.gate;
        let GemDevice {
            driver,
            rings,
            next_rx,
            counts,
            ..
        } = self;
        let Some((rx, tx)) = embassy_net_driver::Driver::receive(driver, cx) else {
            restart_rx_if_stalled(rings);
            return None;
        };
        Some((
            GemRx {
                token: rx,
                rings: *rings,
                next_rx,
                counts,
            },
            GatedTx {
                tx: GemTx { token: tx, counts },
                gate,
            },
        ))
    }

    fn transmit(&mut self, cx: &mut Context<'_>) -> Option<GatedTx<'_>> {
        // The gate holds the stack's sending until the app it woke for a segment ran.
        if self.gate.is_some_and(|g| g.hold_tx(cx.waker())) {
            return None;
        }
        let token = embassy_net_driver::Driver::transmit(&mut self.driver, cx)?;
        Some(GatedTx {
            tx: GemTx {
                token,
                counts: self.counts,
            },
            gate: self.gate,
        })
    }

    fn link_state(&mut self, cx: &mut Context<'_>) -> embassy_net_driver::LinkState {
        embassy_net_driver::Driver::link_state(&mut self.driver, cx)
    }

    fn capabilities(&self) -> embassy_net_driver::Capabilities {
        let mut caps = embassy_net_driver::Driver::capabilities(&self.driver);
        caps.max_transmission_unit = LINK_FRAME_LEN;
        caps
    }

    fn hardware_address(&self) -> embassy_net_driver::HardwareAddress {
        embassy_net_driver::Driver::hardware_address(&self.driver)
    }
}
