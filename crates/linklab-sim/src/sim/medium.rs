//! The wire between the nodes: who may transmit when (one medium in half duplex, one per
//! direction in full duplex; free one inter-packet gap after the last transmission, ideal
//! carrier sense, no collisions), propagation, the impairments, link pulses, and the host's
//! side (its NIC receives, its stack answers).

use linklab_mac::RxFormat;
use linklab_phy10::RxOutcome;

use super::events::{Ev, Node};
use super::{instant, Sim};
use crate::cost::PhyKind;
use crate::wire::{Duplex, Impaired, NLP_PERIOD_NS};

impl Sim<'_> {
    fn medium_index(&self, n: Node) -> usize {
        match self.cfg.link.duplex {
            Duplex::Half => 0,
            Duplex::Full => n.idx(),
        }
    }

    /// Schedules a transmit attempt for `n` at `at` unless an earlier one is pending.
    pub(super) fn request_attempt(&mut self, n: Node, at: u64) {
        let i = n.idx();
        if self.attempt_at[i].is_some_and(|a| a <= at) {
            return;
        }
        self.attempt_at[i] = Some(at);
        self.schedule(at, Ev::TxAttempt(n));
    }

    /// A scheduled attempt: transmit if it is still the pending one.
    pub(super) fn tx_attempt(&mut self, n: Node) {
        if self.attempt_at[n.idx()] == Some(self.now) {
            self.attempt_at[n.idx()] = None;
            self.try_transmit(n);
        }
    }

    /// Starts `n`'s next transmission if the medium (and a bit-banging CPU) is free, else
    /// tries again when it will be.
    fn try_transmit(&mut self, n: Node) {
        let i = n.idx();
        if self.transmitting[i] || self.tx_queue[i].is_empty() {
            return;
        }
        let mut ready = self.medium_free[self.medium_index(n)];
        if n == Node::Device && self.cfg.cost.phy == PhyKind::BitBanged {
            // The CPU drives the line: wait for any interrupt to finish.
            ready = ready.max(self.cpu_busy_until);
            if self.isr_active {
                ready = ready.max(self.now + 1);
            }
        }
        if ready > self.now {
            self.request_attempt(n, ready);
            return;
        }
        let Some(wire) = self.tx_queue[i].pop_front() else {
            return;
        };
        let start = self.now;
        let end = start + self.cfg.link.rate.bytes_ns(wire.len());
        let m = self.medium_index(n);
        self.medium_free[m] = end + self.cfg.link.ipg_ns();
        self.transmitting[i] = true;
        if n == Node::Device && self.cfg.cost.phy == PhyKind::BitBanged {
            self.cpu_busy_until = self.cpu_busy_until.max(end);
        }
        if n == Node::Device {
            self.phy.tx_packets += 1;
        }
        if let Some(p) = self.pcap.as_mut() {
            p.record(
                start,
                wire.get(linklab_mac::frame::PREAMBLE_SFD_LEN..)
                    .unwrap_or(&[]),
            );
        }
        let mut delivered = wire;
        let counters = match n {
            Node::Host => &mut self.to_device,
            Node::Device => &mut self.to_host,
        };
        let arrival = start + self.cfg.link.propagation_ns;
        if self
            .cfg
            .impairments
            .apply(&mut delivered, &mut self.rng, counters)
            == Impaired::Delivered
        {
            match n {
                Node::Host => self.schedule(arrival, Ev::DevRxStart { wire: delivered }),
                Node::Device => {
                    let end_at = arrival + self.cfg.link.rate.bytes_ns(delivered.len());
                    self.schedule(end_at, Ev::HostRx { wire: delivered });
                }
            }
        }
        self.schedule(end, Ev::TxEnd(n));
    }

    /// `n`'s transmission left the wire at the sender.
    pub(super) fn tx_end(&mut self, n: Node) {
        let i = n.idx();
        self.transmitting[i] = false;
        self.last_tx_end[i] = self.now;
        if n == Node::Device {
            self.service_mac();
        }
        if !self.tx_queue[i].is_empty() {
            self.request_attempt(n, self.now);
        } else if n == Node::Device {
            self.kick_main();
        }
    }

    /// Link pulse check: an idle transmitter sends a normal link pulse every 16 ms.
    pub(super) fn nlp(&mut self, n: Node) {
        let i = n.idx();
        let idle_since = self.last_tx_end[i];
        let busy = self.transmitting[i] || !self.tx_queue[i].is_empty();
        if !busy && self.now >= idle_since + NLP_PERIOD_NS {
            match n {
                Node::Device => self.phy.tx_ltps += 1,
                Node::Host => self.device_ltp(),
            }
            self.last_tx_end[i] = self.now;
        }
        let next = self.last_tx_end[i].max(self.now) + NLP_PERIOD_NS;
        let next = if next <= self.now {
            self.now + NLP_PERIOD_NS
        } else {
            next
        };
        self.schedule(next, Ev::Nlp(n));
    }

    /// The last bit of a device transmission reaches the host's NIC: on the byte wire it
    /// deframes the wire image; on the sample-level wire its PHY decodes the line first
    /// (nothing reaches the NIC if it finds no frame).
    pub(super) fn host_rx(&mut self, wire: Vec<u8>) {
        match self.samples.as_mut() {
            None => self.host.receive(&wire, RxFormat::Raw),
            Some(line) => {
                let capture = line.wire.capture(&wire, 0, &mut self.rng);
                let len = match line.host.decode(&capture, &mut line.host_buf) {
                    RxOutcome::Frame { len } => len,
                    RxOutcome::Truncated { len } => {
                        self.phy.tx_sample_truncated += 1;
                        len
                    }
                    RxOutcome::LinkPulse | RxOutcome::Noise => {
                        self.phy.tx_sample_errors += 1;
                        return;
                    }
                };
                let frame = line.host_buf.get(..len).unwrap_or(&[]);
                self.host.receive(frame, RxFormat::Aligned { fcs: true });
            }
        }
        self.host_poll();
    }

    /// Runs the host's stack and servers, queues what they send, and wakes the host again
    /// when its timers are due.
    pub(super) fn host_poll(&mut self) {
        let now = instant(self.now);
        self.host.poll(now);
        let h = Node::Host.idx();
        let before = self.tx_queue[h].len();
        self.host.take_tx(&mut self.tx_queue[h]);
        if self.tx_queue[h].len() > before {
            self.request_attempt(Node::Host, self.now);
        }
        if let Some(at) = self.host.poll_at(now) {
            let at_ns = (at.total_micros().max(0) as u64 * 1000).max(self.now + 1_000);
            if self.host_wake_at.is_none_or(|w| w > at_ns || w < self.now) {
                self.host_wake_at = Some(at_ns);
                self.schedule(at_ns, Ev::HostWake);
            }
        }
    }
}
