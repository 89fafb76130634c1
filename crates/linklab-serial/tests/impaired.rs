//! The link over a simulated serial line in virtual time (tests/common): impaired, stalled,
//! restarted. Every test checks what the application sees (each frame once, in order, intact)
//! and that both ends' counters conserve.

mod common;

use common::{test_frame, Sim};
use linklab_serial::impair::Impairment;
use linklab_serial::selftest::{Event, PhaseKind, Plan, Tester};
use linklab_serial::{Config, Counters, Link, State};

/// A 3 Mbaud UART (8N1): 300 000 bytes/s.
const MBAUD3: u64 = 300_000;
/// A 115 200 baud UART (8N1).
const BAUD115200: u64 = 11_520;

/// One direction's application traffic: frames numbered 0.. with contents derived from the
/// number, checked on arrival.
struct Stream {
    total: u32,
    max_len: usize,
    sent: u32,
    expected: u32,
    buf: Vec<u8>,
}

impl Stream {
    fn new(total: u32, max_len: usize) -> Stream {
        Stream {
            total,
            max_len,
            sent: 0,
            expected: 0,
            buf: Vec::new(),
        }
    }

    /// Queues what the sender takes, then checks everything the receiver delivers.
    fn pump(&mut self, sender: &mut Link, receiver: &mut Link) {
        while self.sent < self.total && sender.can_send() {
            test_frame(self.sent, self.max_len, &mut self.buf);
            let buf = &self.buf;
            sender
                .send(buf.len(), |dst| dst.copy_from_slice(buf))
                .unwrap();
            self.sent += 1;
        }
        while let Some(frame) = receiver.receive() {
            test_frame(self.expected, self.max_len, &mut self.buf);
            let got = frame.payload();
            let index = u32::from_le_bytes(got[..4].try_into().unwrap());
            assert_eq!(
                index, self.expected,
                "frame {index} delivered when {} was due (lost, duplicated or reordered)",
                self.expected
            );
            assert_eq!(got, &self.buf[..], "frame {index} altered");
            self.expected += 1;
        }
    }

    fn done(&self) -> bool {
        self.expected == self.total
    }
}

fn conserve(name: &str, c: &Counters) {
    if let Err(e) = c.check_conservation() {
        panic!("{name}: {e}\n{c:#?}");
    }
}

#[test]
fn ten_thousand_frames_each_way_under_1e_4_ber_and_1_percent_dropped_bytes() {
    let impairment = Impairment {
        bit_error_rate: 1e-4,
        drop_rate: 0.01,
        ..Default::default()
    };
    let mut sim = Sim::new(MBAUD3, impairment, 42);
    // Up to 160-byte payloads: at 1 % dropped bytes a frame of n bytes survives with
    // probability ~0.99^n, so a 1500-byte frame would practically never get through whole.
    let (mut ab, mut ba) = (Stream::new(10_000, 160), Stream::new(10_000, 160));
    let mut steps = 0u64;
    while !(ab.done() && ba.done()) {
        ab.pump(&mut sim.a, &mut sim.b);
        ba.pump(&mut sim.b, &mut sim.a);
        sim.advance(200, 100_000);
        steps += 1;
        assert!(
            steps < 2_000_000,
            "no progress: {} / {}",
            ab.expected,
            ba.expected
        );
    }
    // Let the last ACKs through so both transmit stores drain.
    for _ in 0..2_000 {
        sim.advance(200, 100_000);
    }
    let (a, b) = (sim.a.counters(), sim.b.counters());
    conserve("A", &a);
    conserve("B", &b);
    for (name, c, peer) in [("A", &a, &b), ("B", &b, &a)] {
        assert_eq!(c.tx_requests, 10_000, "{name}");
        assert_eq!(c.tx_acked, 10_000, "{name}");
        assert_eq!(c.tx_pending + c.tx_aborted, 0, "{name}");
        // Each frame accepted exactly once by the peer, and delivered.
        assert_eq!(peer.rx_data, 10_000, "{name}'s peer");
        assert_eq!(peer.rx_delivered, 10_000, "{name}'s peer");
        // The impairments really happened and were repaired.
        assert!(c.tx_retransmissions > 1_000, "{name}: {c:#?}");
        assert!(
            peer.rx_crc_errors + peer.rx_frame_errors > 1_000,
            "{name}'s peer: {peer:#?}"
        );
        assert!(peer.rx_duplicates > 0, "{name}'s peer");
        assert_eq!(c.resets, 0, "{name}");
    }
    assert!(sim.ab.impairer.flipped_bits > 100 && sim.ab.impairer.dropped_bytes > 10_000);
}

#[test]
fn clean_link_carries_1500_byte_frames_at_over_95_percent_of_the_byte_rate() {
    let mut sim = Sim::new(BAUD115200, Impairment::default(), 1);
    let mut ab = Stream::new(200, 1500);
    let mut payload = 0u64;
    // All frames 1500 bytes: override the varying lengths.
    let mut sent = 0u32;
    let mut delivered = 0u32;
    while delivered < 200 {
        while sent < 200 && sim.a.can_send() {
            let i = sent;
            sim.a
                .send(1500, |b| {
                    b.fill(i as u8);
                    b[..4].copy_from_slice(&i.to_le_bytes())
                })
                .unwrap();
            sent += 1;
        }
        while let Some(f) = sim.b.receive() {
            assert_eq!(f.payload()[..4], delivered.to_le_bytes());
            payload += f.payload().len() as u64;
            delivered += 1;
        }
        sim.advance(1000, 100_000);
    }
    let _ = &mut ab;
    let (a, b) = (sim.a.counters(), sim.b.counters());
    conserve("A", &a);
    conserve("B", &b);
    // Deterministic: delivered payload bytes over every byte A put on the line (handshake,
    // delimiters, COBS, header, CRC included).
    let efficiency = payload as f64 / a.tx_bytes as f64;
    assert!(efficiency >= 0.95, "efficiency {efficiency:.4}: {a:#?}");
    assert_eq!(
        a.tx_retransmissions, 0,
        "a clean line needs no retransmission"
    );
    // And in time: the line ran at its rate (payload rate over elapsed virtual time).
    let goodput = payload as f64 / (sim.now as f64 / 1e6);
    assert!(
        goodput >= 0.95 * BAUD115200 as f64,
        "goodput {goodput:.0} B/s"
    );
}

#[test]
fn a_stalled_reader_stops_the_sender_on_credits_drops_nothing_and_it_resumes() {
    let mut sim = Sim::new(MBAUD3, Impairment::default(), 3);
    let mut ab = Stream::new(100, 300);
    // B's application reads nothing for 5 s of virtual time.
    for _ in 0..5_000 {
        while ab.sent < ab.total && sim.a.can_send() {
            test_frame(ab.sent, ab.max_len, &mut ab.buf);
            let buf = &ab.buf;
            sim.a.send(buf.len(), |d| d.copy_from_slice(buf)).unwrap();
            ab.sent += 1;
        }
        sim.advance(1000, 1000);
    }
    let (a, b) = (sim.a.counters(), sim.b.counters());
    // B holds a full window, A holds a full store and stopped: 8 frames delivered into B's
    // slots, 8 more waiting at A, nothing refused or lost.
    assert_eq!(b.rx_held, 8, "{b:#?}");
    assert_eq!(a.tx_pending, 8, "{a:#?}");
    assert!(!sim.a.can_send());
    assert_eq!(b.rx_window_errors, 0);
    assert_eq!(a.tx_aborted, 0);
    // Stopped, not hammering: only zero-window probes (backed off) went out, no data
    // retransmission storm.
    assert_eq!(a.tx_packets, 8, "{a:#?}");
    assert!(a.tx_window_probes >= 1 && a.tx_window_probes < 50, "{a:#?}");
    conserve("A", &a);
    conserve("B", &b);
    // The reader wakes up: everything arrives, in order.
    let mut steps = 0;
    while !ab.done() {
        ab.pump(&mut sim.a, &mut sim.b);
        sim.advance(1000, 10_000);
        steps += 1;
        assert!(steps < 100_000, "did not resume: {}", ab.expected);
    }
    conserve("A", &sim.a.counters());
    conserve("B", &sim.b.counters());
}

#[test]
fn garbage_bursts_cost_frames_but_the_link_resynchronises() {
    let impairment = Impairment {
        garbage_every: 3_000,
        garbage_len: 300,
        ..Default::default()
    };
    let mut sim = Sim::new(MBAUD3, impairment, 9);
    let mut ab = Stream::new(1_000, 1_400);
    let mut ba = Stream::new(1_000, 100);
    let mut steps = 0;
    while !(ab.done() && ba.done()) {
        ab.pump(&mut sim.a, &mut sim.b);
        ba.pump(&mut sim.b, &mut sim.a);
        sim.advance(200, 100_000);
        steps += 1;
        assert!(
            steps < 1_000_000,
            "stuck at {} / {}",
            ab.expected,
            ba.expected
        );
    }
    let b = sim.b.counters();
    assert!(
        b.rx_crc_errors + b.rx_frame_errors + b.rx_length_errors > 50,
        "{b:#?}"
    );
    conserve("A", &sim.a.counters());
    conserve("B", &b);
}

#[test]
fn a_restarted_peer_is_detected_the_old_session_discarded_and_a_new_one_runs() {
    let mut sim = Sim::new(MBAUD3, Impairment::default(), 5);
    let mut ab = Stream::new(50, 500);
    for _ in 0..200 {
        ab.pump(&mut sim.a, &mut sim.b);
        sim.advance(1000, 10_000);
    }
    assert!(ab.done());
    // A queues more, then B restarts (power cycle) while they are on the way.
    for i in 0..8u32 {
        sim.a.send(100, |b| b.fill(i as u8)).unwrap();
    }
    sim.step(300); // some bytes leave
    *sim.b = Link::new(Config::for_line_rate(MBAUD3), 0xFEED);
    let mut ab = Stream::new(100, 500);
    let mut steps = 0;
    while !ab.done() {
        ab.pump(&mut sim.a, &mut sim.b);
        sim.advance(1000, 10_000);
        steps += 1;
        assert!(steps < 100_000, "no new session: {:?}", sim.a.counters());
    }
    let a = sim.a.counters();
    assert_eq!(a.resets, 1, "{a:#?}");
    assert!(a.tx_aborted > 0 && a.tx_aborted <= 8, "{a:#?}");
    assert_eq!(sim.a.state(), State::Established);
    assert_eq!(sim.b.state(), State::Established);
    conserve("A", &a);
    conserve("B", &sim.b.counters());
}

#[test]
fn self_test_from_either_end_gets_every_echo_back_intact() {
    let impairment = Impairment {
        bit_error_rate: 1e-5,
        ..Default::default()
    };
    let mut sim = Sim::new(BAUD115200, impairment, 11);
    let sizes = [16, 64, 256, 1024, 1514];
    for tester_is_a in [true, false] {
        let mut tester = Tester::new(
            Plan {
                sizes: &sizes,
                rtt_frames: 5,
                stream_frames: 20,
            },
            if tester_is_a { 0xA } else { 0xB },
        );
        let mut phases = Vec::new();
        let mut samples = 0;
        let mut steps = 0;
        while !tester.is_done() {
            let link = if tester_is_a { &mut sim.a } else { &mut sim.b };
            tester.poll(link, sim.now, |e| match e {
                Event::Reply(_) => samples += 1,
                Event::PhaseDone(p) => phases.push(p),
            });
            sim.advance(1000, 100_000);
            steps += 1;
            assert!(steps < 1_000_000, "self-test stuck");
        }
        assert_eq!(phases.len(), 2 * sizes.len());
        assert_eq!(samples, sizes.len() * 25);
        for p in &phases {
            assert_eq!((p.received, p.corrupt), (p.sent, 0), "{p:?}");
            if p.kind == PhaseKind::Stream && p.size == 1514 {
                // The echo fills both directions; 20 frames include the pipeline's start,
                // and at this BER one 1514-byte frame in nine is hit and sent again.
                let eff = p.goodput_bytes_per_s() / BAUD115200 as f64;
                assert!(eff > 0.5 && eff <= 1.0, "{eff} {p:?}");
            }
        }
    }
    let (a, b) = (sim.a.counters(), sim.b.counters());
    assert!(a.rx_echoed > 0 && b.rx_echoed > 0);
    conserve("A", &a);
    conserve("B", &b);
}
