//! The driver's task: waits for INTn, a frame to send or the link poll, then services the
//! chip (rx.rs: every buffered frame into the MAC's queue; send.rs: every queued frame out).

use embassy_futures::select::select3;
use embedded_hal::digital::{InputPin, OutputPin};
use embedded_hal::spi::SpiBus;
use embedded_hal_async::delay::DelayNs;
use embedded_hal_async::digital::Wait;
use embedded_hal_async::spi::SpiBus as AsyncSpiBus;
use linklab_mac::timing::Clock;
use linklab_mac::{RxProducer, Storage};

use crate::counters::{Counter, SharedCounters};
use crate::regs::{common, socket, Block};
use crate::{Bus, BusError, Config, Initialised, TxQueue};

/// How often the link (PHYCFGR.LNK) is read: every 500 ms, as embassy-net-wiznet does.
pub const LINK_POLL_NS: u64 = 500_000_000;
/// How long a SEND may take before it is issued again: 2 ms, over the 1.23 ms a full frame
/// takes at 10 Mbit/s (123 µs at 100).
pub const SEND_TIMEOUT_NS: u64 = 2_000_000;
/// How soon the runner looks again when it had to stop with work left (the MAC's queue
/// full, a frame still arriving, the chip's TX buffer full): 20 µs, a twentieth of a
/// full-size frame's SPI time at 31.25 MHz.
pub const RETRY_NS: u32 = 20_000;

/// What a service of the chip leaves to do ([`Runner::service`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Next {
    /// Nothing: wait for INTn, a frame to send or the link poll.
    Idle,
    /// Work that needs time first: look again after [`RETRY_NS`].
    Retry,
    /// Work left now (the other direction waited): look again at once.
    Again,
}

/// The driver's task: the bus, INTn, a delay and a clock, the MAC's RX queue (its producer:
/// frames go in as they are read) and the TX slots (frames come out), and what it counts.
///
/// `link` is told the link state when it changes (e.g. `|up| LINK.set(up)` with
/// linklab-mac's `LinkSignal`, which wakes embassy-net).
pub struct Runner<'a, S, CS, INT, D, C, P: Storage, L, const N: usize> {
    pub(crate) bus: Bus<S, CS>,
    int: INT,
    pub(crate) delay: D,
    pub(crate) clock: C,
    pub(crate) producer: RxProducer<'a, P>,
    pub(crate) tx: &'a TxQueue<N>,
    pub(crate) counters: &'a SharedCounters,
    link: L,
    pub(crate) config: Config,
    /// Sn_RX_RD as the driver has read up to (the chip takes it at RECV).
    pub(crate) rx_rd: u16,
    /// Frames are still in the chip that the last service could not take.
    pub(crate) rx_pending: bool,
    /// Sn_TX_WR as the driver has written up to.
    pub(crate) tx_wr: u16,
    /// Sn_TX_RD as last read.
    pub(crate) tx_rd: u16,
    /// Where the last SEND ends, while it is not known to have completed.
    pub(crate) send_end: Option<u16>,
    /// When the last SEND was issued (clock ns).
    pub(crate) send_at_ns: u64,
    /// Whether the last SEND was issued again already.
    pub(crate) send_retried: bool,
    link_up: Option<bool>,
    next_link_ns: u64,
}

impl<'a, S, CS, INT, D, C, P, L, const N: usize> Runner<'a, S, CS, INT, D, C, P, L, N>
where
    S: SpiBus<u8> + AsyncSpiBus<u8>,
    CS: OutputPin,
    INT: InputPin + Wait,
    D: DelayNs,
    C: Clock,
    P: Storage,
    L: FnMut(bool),
{
    /// The runner of the chip `chip` (from [`crate::W5500::init`]), INTn on `int`.
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        chip: Initialised<S, CS>,
        int: INT,
        delay: D,
        clock: C,
        producer: RxProducer<'a, P>,
        tx: &'a TxQueue<N>,
        counters: &'a SharedCounters,
        link: L,
    ) -> Self {
        Runner {
            bus: chip.bus,
            int,
            delay,
            clock,
            producer,
            tx,
            counters,
            link,
            config: chip.config,
            rx_rd: chip.rx_rd,
            rx_pending: false,
            tx_wr: chip.tx_wr,
            tx_rd: chip.tx_wr,
            send_end: None,
            send_at_ns: 0,
            send_retried: false,
            link_up: None,
            next_link_ns: 0,
        }
    }

    /// Runs the driver: forever services the chip when INTn is low, a frame waits to be
    /// sent, a SEND is due to have completed, or the link is due a look.
    pub async fn run(mut self) -> ! {
        loop {
            let next = self.service().await;
            let now = self.clock.now_ns();
            if now >= self.next_link_ns {
                self.poll_link();
                self.next_link_ns = now.saturating_add(LINK_POLL_NS);
            }
            match next {
                Next::Again => continue,
                Next::Retry => {
                    self.delay.delay_ns(RETRY_NS).await;
                    continue;
                }
                Next::Idle => {}
            }
            let mut until = self.next_link_ns;
            if self.send_end.is_some() {
                until = until.min(self.send_at_ns.saturating_add(SEND_TIMEOUT_NS));
            }
            let wait_ns = until.saturating_sub(now).min(u32::MAX as u64) as u32;
            let Runner { int, delay, tx, .. } = &mut self;
            select3(int.wait_for_low(), tx.wait(), delay.delay_ns(wait_ns)).await;
        }
    }

    /// One service of the chip: what INTn says was received, then what waits to be sent
    /// ([`Runner::run`] calls it; a test or a polled main loop may call it itself).
    pub async fn service(&mut self) -> Next {
        let int_low = self.int.is_low().unwrap_or(true);
        let mut next = Next::Idle;
        if int_low || self.rx_pending {
            next = next.max(self.receive(int_low).await);
        }
        next.max(self.send_queued().await)
    }

    /// INTn.
    pub(crate) fn int_pin(&mut self) -> &mut INT {
        &mut self.int
    }

    /// Counts a failed transfer.
    pub(crate) fn bus_failed(&self, e: BusError) {
        debug!("w5500: bus error {:?}", e);
        self.counters.bump(Counter::spi_errors);
    }

    /// Reads PHYCFGR's link bit and tells `link` when it changed.
    fn poll_link(&mut self) {
        let mut cfg = [0];
        if let Err(e) = self.bus.read(Block::Common, common::PHYCFGR, &mut cfg) {
            self.bus_failed(e);
            return;
        }
        let up = cfg[0] & 1 == 1;
        if self.link_up != Some(up) {
            info!("w5500: link {}", if up { "up" } else { "down" });
            self.link_up = Some(up);
            (self.link)(up);
        }
    }

    /// Sn_TX_RD, Sn_TX_WR and Sn_RX_RSR in one read (offsets 0x22..0x28): Sn_TX_RD is
    /// kept, Sn_RX_RSR returned. A 16-bit register read while the chip changes it is read
    /// high byte first, and the chip only ever adds to Sn_RX_RSR and moves Sn_TX_RD on
    /// between two of the driver's commands, so a torn read is never more than the true
    /// value: at worst the driver takes fewer bytes now and the rest next time (which the
    /// datasheet's "read until two reads agree" costs a second transaction to avoid).
    pub(crate) fn read_pointers(&mut self) -> Result<usize, BusError> {
        let mut regs = [0; 6];
        self.bus.read(Block::Socket0, socket::TX_RD, &mut regs)?;
        self.tx_rd = u16::from_be_bytes([regs[0], regs[1]]);
        Ok(u16::from_be_bytes([regs[4], regs[5]]) as usize)
    }

    /// The counts, as now.
    pub fn counters(&self) -> crate::Counters {
        self.counters.snapshot()
    }
}
