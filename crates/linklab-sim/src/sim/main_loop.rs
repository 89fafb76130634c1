//! The device's main loop: smoltcp, the MAC and the application, run as preemptible work on
//! the CPU between interrupts. One iteration per received transmission (or due timer), each
//! costing the profile's fixed + per-byte time; its effects (the stack reading the frame,
//! the apps' writes) happen when the iteration completes. With a counted profile an
//! iteration takes in every committed frame, and those committed while it is still taking
//! frames in (its fixed work comes after), as the firmware's ingress loops until the queue
//! is empty. The frames its egress makes then
//! leave one by one, each once the CPU has paid its transmit cost, as the firmware copies a
//! frame to the NIC and starts it before it builds the next.

use super::events::{Ev, Node};
use super::{instant, Sim};
use crate::app::AppEvent;
use crate::cost::PhyKind;
use crate::counts::LoopShape;
use crate::sim::report::FileStats;

/// What a stretch of the main loop's work does when it completes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Pass {
    /// A pass of the loop (or an executor's runner): ingress, the apps, egress.
    Loop,
    /// An executor's pass that runs the apps' tasks only (after a runner pass that moved
    /// frames).
    App,
    /// The transmit work of the next frame egress made: the frame leaves when it is paid.
    Tx,
}

/// The main loop's state on the CPU.
#[derive(Clone, Copy, Debug)]
pub(super) enum MainState {
    Idle,
    /// Running or preempted: `remaining` ns left, running since `resumed_at` if Some.
    Working {
        gen: u64,
        remaining: u64,
        resumed_at: Option<u64>,
        /// Committed frames this iteration ingests (0: a timer poll).
        rx: usize,
        pass: Pass,
        /// The work after its ingress (ns): the pass's own fixed work, its apps and egress.
        /// While more than this is left the pass is still taking frames in, and a frame
        /// committed then is taken in by it too, as the firmware's ingress loops until the
        /// queue is empty ([`Sim::join_pass`]).
        tail: u64,
    },
}

impl Sim<'_> {
    fn set_dev_wake(&mut self, at: u64) {
        if self.dev_wake_at.is_some_and(|w| w <= at && w >= self.now) {
            return;
        }
        self.dev_wake_at = Some(at);
        self.schedule(at, Ev::DevWake);
    }

    /// Moves the wire images the MAC produced to the device's transmit queue; true if there
    /// were any.
    fn take_mac_tx(&mut self) -> bool {
        let out = &mut self.tx_queue[Node::Device.idx()];
        let before = out.len();
        out.extend(self.mac.phy_mut().0.drain(..));
        let cost = self.cfg.cost;
        self.tx_debt_ns += out
            .iter()
            .skip(before)
            .map(|w| cost.tx_ns(w.len()))
            .sum::<u64>();
        out.len() > before
    }

    /// Moves the frames egress made to the ones waiting for their transmit cost.
    fn take_egress(&mut self) {
        self.tx_unpaid.extend(self.mac.phy_mut().0.drain(..));
    }

    /// Hands the first frame waiting for its transmit cost, now paid, to the PHY.
    fn release_paid(&mut self) {
        if let Some(w) = self.tx_unpaid.pop_front() {
            self.tx_queue[Node::Device.idx()].push_back(w);
            self.request_attempt(Node::Device, self.now);
        }
    }

    /// The MAC may hold a frame back for the inter-packet gap: let it go when due (part of
    /// the transmit call, no main-loop iteration), or wake up then.
    pub(super) fn service_mac(&mut self) {
        match self.mac.poll_at_ns() {
            Some(at) if at <= self.now => {
                self.mac.poll();
                if self.take_mac_tx() {
                    self.request_attempt(Node::Device, self.now);
                }
            }
            Some(at) => self.set_dev_wake(at),
            None => {}
        }
    }

    /// The earliest time the device's stack, MAC or app wants to run.
    fn device_timer(&mut self) -> Option<u64> {
        let stack = self
            .iface
            .poll_at(instant(self.now), &self.sockets)
            .map(|i| i.total_micros().max(0) as u64 * 1000);
        [stack, self.mac.poll_at_ns(), self.app.next_timer_ns()]
            .into_iter()
            .flatten()
            .min()
    }

    /// Starts a main-loop iteration if the CPU is free and there is work: a committed
    /// transmission, or a due timer.
    pub(super) fn kick_main(&mut self) {
        if !matches!(self.main, MainState::Idle) || self.isr_active {
            return;
        }
        let cost = self.cfg.cost;
        let dev = Node::Device.idx();
        // Frames egress made go first, each after its transmit cost (a profile without one
        // hands them all to the PHY at once).
        while let Some(ns) = self.tx_unpaid.front().map(|w| cost.tx_ns(w.len())) {
            if ns > 0 {
                self.start_pass(ns, 0, Pass::Tx);
                return;
            }
            self.release_paid();
        }
        if std::mem::take(&mut self.app_pass_due) {
            self.start_pass(cost.main_fixed_ns, 0, Pass::App);
            return;
        }
        if cost.phy == PhyKind::BitBanged
            && (self.transmitting[dev] || !self.tx_queue[dev].is_empty())
        {
            return; // Blocked in the transmit call.
        }
        if let Some(at) = self.mac.poll_at_ns().filter(|&at| at > self.now) {
            // The MAC holds a frame back for the gap and hands smoltcp no tokens until then.
            self.set_dev_wake(at);
            return;
        }
        let (rx, work) = match self.committed.front() {
            // One pass ingests every committed frame (the firmware's loop) or one frame
            // per pass (the Niccle fit): the pass's fixed cost once, each frame's on top.
            Some(_) if cost.rx_batch => {
                let each: u64 = self.committed.iter().map(|&l| cost.main_ns(l)).sum();
                let n = self.committed.len();
                (n, each - (n as u64 - 1) * cost.main_fixed_ns)
            }
            Some(&len) => (1, cost.main_ns(len)),
            None => {
                let due = self.device_timer();
                match due {
                    Some(t) if t.max(self.no_poll_before) <= self.now => (0, cost.main_ns(0)),
                    Some(t) => {
                        self.set_dev_wake(t.max(self.no_poll_before));
                        return;
                    }
                    None => return,
                }
            }
        };
        self.start_pass(work, rx, Pass::Loop);
    }

    /// Puts `work` ns of `pass` (and the transmit cost owed) on the CPU.
    fn start_pass(&mut self, work: u64, rx: usize, pass: Pass) {
        let cost = work + std::mem::take(&mut self.tx_debt_ns);
        self.busy_ns += cost;
        self.passes += u64::from(pass != Pass::Tx);
        self.main_gen += 1;
        let gen = self.main_gen;
        // Only a pass of the loop (or the runner) takes frames in, and only where a pass
        // takes in every committed frame (not the Niccle fit's one per pass).
        let ingests = pass == Pass::Loop && self.cfg.cost.rx_batch;
        self.main = MainState::Working {
            gen,
            remaining: cost,
            resumed_at: Some(self.now),
            rx,
            pass,
            tail: if ingests {
                self.cfg.cost.main_fixed_ns
            } else {
                cost
            },
        };
        self.schedule(self.now + cost, Ev::MainDone(gen));
    }

    /// A frame of `len` bytes was committed while the main loop was preempted: a pass still
    /// taking frames in takes it in too, its per-frame work added; else it waits for the
    /// next pass.
    pub(super) fn join_pass(&mut self, len: usize) {
        let MainState::Working {
            remaining,
            rx,
            tail,
            resumed_at: None,
            ..
        } = &mut self.main
        else {
            return;
        };
        if *remaining <= *tail {
            return;
        }
        let cost = self.cfg.cost;
        let work = cost.main_ns(len) - cost.main_fixed_ns;
        *remaining += work;
        *rx += 1;
        self.busy_ns += work;
    }

    /// A main-loop iteration completes: smoltcp ingress of one frame (if it was started for
    /// one), the application and smoltcp egress, whose frames then leave as they are paid.
    pub(super) fn main_done(&mut self, gen: u64) {
        let MainState::Working {
            gen: g,
            resumed_at: Some(_),
            rx,
            pass,
            ..
        } = self.main
        else {
            return;
        };
        if g != gen {
            return;
        }
        self.main = MainState::Idle;
        let now = instant(self.now);
        if pass == Pass::Tx {
            self.release_paid();
            self.kick_main();
            return;
        }
        if pass == Pass::App {
            // An executor's pass of the apps' tasks: what they queue leaves in the runner's
            // next pass (their writes wake it: the stack's `poll_at` is then due at once).
            let events = self.app.step(self.now, &mut self.iface, &mut self.sockets);
            for e in events {
                self.record(e);
            }
            self.kick_main();
            return;
        }
        for _ in 0..rx {
            self.iface
                .poll_ingress_single(now, &mut self.mac, &mut self.sockets);
        }
        if rx > 0 {
            let dequeued = self.mac.counters().rx_dequeued;
            for _ in self.dequeued_seen..dequeued {
                self.committed.pop_front();
            }
            self.dequeued_seen = dequeued;
        }
        // linklab's main loop: ingress, the apps, egress (what the apps queued leaves now).
        // An embassy executor: the runner's pass (ingress and egress); when it took frames in
        // (data to read, an ACK that made room), the apps' tasks it woke run in a pass of
        // their own (above); a timer wakes them in the runner's pass.
        let executor = self.cfg.cost.shape == LoopShape::Executor;
        if executor {
            self.egress(now);
            self.take_egress();
            if rx > 0 {
                // After the runner has sent what it made.
                self.app_pass_due = true;
                self.kick_main();
                return;
            }
        }
        let events = self.app.step(self.now, &mut self.iface, &mut self.sockets);
        if !executor {
            self.egress(now);
        }
        let sent = !self.mac.phy_mut().0.is_empty();
        self.take_egress();
        if rx == 0 && !sent && events.is_empty() {
            // A timer poll that did nothing: do not spin at the same instant.
            self.no_poll_before = self.now + 1_000;
        }
        for e in events {
            self.record(e);
        }
        self.kick_main();
    }

    /// smoltcp's egress until it has nothing more to send, as linklab's firmware loops it
    /// (one call sends at most one segment per socket).
    fn egress(&mut self, now: smoltcp::time::Instant) {
        while self
            .iface
            .poll_egress(now, &mut self.mac, &mut self.sockets)
            != smoltcp::iface::PollResult::None
        {}
    }

    fn record(&mut self, e: AppEvent) {
        match e {
            AppEvent::Ping(p) => self.pings.push(p),
            AppEvent::Download(mut d) => {
                if self.cfg.device_sends && d.error.is_none() {
                    // What the host's sink read, not what the device meant to send.
                    match self.host.take_sink_result() {
                        Some(r) => {
                            d.crc32 = r.crc32;
                            d.bytes = r.bytes;
                            d.body_bytes = r.bytes;
                        }
                        None => d.error = Some("the host's sink saw no complete transfer".into()),
                    }
                }
                self.downloads.push(d)
            }
            AppEvent::FileDone(f) => {
                let mac = self.mac.counters();
                self.file_stats.push(FileStats {
                    path: f.path.to_string(),
                    phy: self.phy,
                    mac,
                });
            }
            AppEvent::Finished => {}
        }
    }
}
