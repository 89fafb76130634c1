//! The receive path: each transmission the [`Framer`] cuts out of the sample stream is
//! decoded by linklab-phy10's [`RxInterrupt`] straight into a grant of linklab-mac's RX queue
//! (the bytes after the SFD, FCS included; the MAC checks the FCS on the consumer side), and
//! the [`LinkMonitor`] notes the time of every frame or link pulse for the link state
//! embassy-net's driver reads.
//!
//! On the RP2040/RP2350 this runs on core 1 (the PHY's core), the MAC's consumer on core 0:
//! the queue's producer and consumer are made for that (lock-free, or a critical section on
//! the Cortex-M0+, which embassy-rp makes a multicore spinlock).

use core::sync::atomic::{AtomicU32, Ordering};

use linklab_mac::{LinkStatus, RxProducer, Storage};
use linklab_phy10::{Oversample, RxCounters, RxInterrupt, RxOutcome};

use crate::counters::PhyCounters;
use crate::framer::{Framer, FramerCounters};

/// A link partner silent this long is gone, ms (802.3: 50 to 150 ms without a link pulse).
pub const LINK_LOSS_MS: u32 = 150;

/// When the receiver last saw the partner (a frame or a link pulse), written by the PHY's
/// core and read by the stack's.
pub struct LinkMonitor {
    /// ms of the last sign of the partner, plus one (0: never).
    last_seen_ms: AtomicU32,
}

impl Default for LinkMonitor {
    fn default() -> Self {
        Self::new()
    }
}

impl LinkMonitor {
    /// Nothing seen yet.
    pub const fn new() -> Self {
        LinkMonitor {
            last_seen_ms: AtomicU32::new(0),
        }
    }

    /// The partner was seen at `now_ms`.
    pub fn seen(&self, now_ms: u32) {
        self.last_seen_ms
            .store(now_ms.wrapping_add(1).max(1), Ordering::Release);
    }

    /// True if the partner was seen within [`LINK_LOSS_MS`] of `now_ms`.
    pub fn is_up(&self, now_ms: u32) -> bool {
        match self.last_seen_ms.load(Ordering::Acquire) {
            0 => false,
            seen => now_ms.wrapping_sub(seen.wrapping_sub(1)) < LINK_LOSS_MS,
        }
    }
}

/// The monitor as embassy-net's link source (read on the MAC's clock, in ns).
#[derive(Clone, Copy)]
pub struct MonitoredLink(pub &'static LinkMonitor);

impl LinkStatus for MonitoredLink {
    fn is_up(&mut self, now_ns: u64) -> bool {
        self.0.is_up((now_ns / 1_000_000) as u32)
    }
}

/// The PHY's receive side over a framer of `N` words.
pub struct Receiver<'q, S: Storage, const N: usize> {
    framer: Framer<N>,
    rx: RxInterrupt,
    producer: RxProducer<'q, S>,
    /// Times the samples got ahead of this side by more than its ring ([`Receiver::overrun`]).
    overruns: u32,
    /// Captures and overruns when the counters were last published.
    published: (u32, u32),
}

impl<'q, S: Storage, const N: usize> Receiver<'q, S, N> {
    /// The receive side for samples at `os` into `producer`'s queue.
    pub fn new(producer: RxProducer<'q, S>, os: Oversample) -> Self {
        Receiver {
            framer: Framer::new(),
            rx: RxInterrupt::new(os),
            producer,
            overruns: 0,
            published: (u32::MAX, 0),
        }
    }

    /// The receive side for a resynchronising sampler's symbols (linklab-phy10's `symbols`)
    /// into `producer`'s queue.
    pub fn for_symbols(producer: RxProducer<'q, S>) -> Self {
        Receiver {
            framer: Framer::for_symbols(),
            rx: RxInterrupt::for_symbols(),
            producer,
            overruns: 0,
            published: (u32::MAX, 0),
        }
    }

    /// Feeds the next samples: every transmission they complete is decoded into the queue,
    /// and a frame or link pulse tells `link` the partner is there at `now_ms()` (read only
    /// then: the clock's millisecond is a 64-bit division on a Cortex-M0+).
    pub fn push(&mut self, words: &[u32], now_ms: impl Fn() -> u32, link: &LinkMonitor) {
        let (rx, producer) = (&mut self.rx, &self.producer);
        self.framer.push(words, |capture| {
            match producer.grant() {
                Ok(mut grant) => {
                    let n = rx.receive(&capture, grant.buf());
                    grant.commit(n);
                }
                Err(_) => {
                    if rx.receive_without_grant(&capture) {
                        producer.record_missed();
                    }
                }
            }
            if matches!(
                rx.last_outcome(),
                RxOutcome::Frame { .. } | RxOutcome::LinkPulse
            ) {
                link.seen(now_ms());
            }
        });
    }

    /// Samples the ring lost because this side fell behind (an overrun): the transmission
    /// under way is cut, and the loss counted as a missed frame.
    pub fn overrun(&mut self) {
        self.framer.reset();
        self.producer.record_missed();
        self.overruns = self.overruns.wrapping_add(1);
    }

    /// The decoder's and the framer's counters.
    pub fn counters(&self) -> (RxCounters, FramerCounters) {
        (self.rx.counters(), self.framer.counters())
    }

    /// The overruns so far.
    pub fn overruns(&self) -> u32 {
        self.overruns
    }

    /// Publishes the counters into `to` if a capture or an overrun came since the last time
    /// (a few stores, for the stack's core to read).
    pub fn publish(&mut self, to: &PhyCounters) {
        let framer = self.framer.counters();
        let now = (framer.captures, self.overruns);
        if now != self.published {
            self.published = now;
            to.publish(self.rx.counters(), framer, self.overruns);
        }
    }
}
