use super::*;

const GRACE: u64 = 750;

fn candidate(kind: Kind, t: u64) -> Option<Candidate<u64>> {
    Some(Candidate {
        kind,
        last_progress: Some(t),
    })
}

fn established(t: u64) -> Option<Candidate<u64>> {
    candidate(Kind::Connection, t)
}

fn index<T>(choice: Choice<T>) -> Option<usize> {
    match choice {
        Choice::Take(i, _) => Some(i),
        _ => None,
    }
}

#[test]
fn the_idlest_beyond_the_grace_is_chosen() {
    let now = 10_000u64;
    // Index 1 is idle longest; index 3 may not be taken however old.
    let facts = [
        established(9_000),
        established(8_000),
        established(9_900),
        None,
    ];
    assert_eq!(index(choose(facts, now, GRACE)), Some(1));
    // Exactly the grace is enough; a moment less is not.
    assert_eq!(
        index(choose([established(now - GRACE)], now, GRACE)),
        Some(0)
    );
    assert_eq!(
        choose([established(now - GRACE + 1)], now, GRACE),
        Choice::Busy
    );
    // Nobody idle long enough, or nobody at all: the new client is refused.
    assert_eq!(choose([established(9_500), None], now, GRACE), Choice::Busy);
    assert_eq!(choose(core::iter::empty(), now, GRACE), Choice::Busy);
    // Progress never seen counts as long ago.
    let unknown = Some(Candidate {
        kind: Kind::Connection,
        last_progress: None,
    });
    assert_eq!(
        index(choose([established(1), unknown], now, GRACE)),
        Some(1)
    );
}

#[test]
fn who_loses_least_goes_first() {
    let now = 10_000u64;
    let unanswered = |t| candidate(Kind::Unanswered, t);
    let spent = |t| candidate(Kind::Spent, t);
    // Spent before an idle connection before a half-open one, however old.
    let facts = [unanswered(1_000), established(2_000), spent(9_990)];
    let Choice::Take(i, c) = choose(facts, now, GRACE) else {
        panic!()
    };
    assert_eq!((i, c.evicts(), c.answered()), (2, false, false));
    let Choice::Take(i, c) = choose([unanswered(1_000), established(2_000)], now, GRACE) else {
        panic!()
    };
    assert_eq!((i, c.evicts(), c.answered()), (1, true, true));
    // A spoofed SYN's socket goes at once when no idle connection can.
    assert_eq!(
        index(choose([established(9_900), unanswered(9_990)], now, GRACE)),
        Some(1)
    );
    // An unanswered one not looked at yet (its SYN came in this batch) is the youngest.
    let unseen = Candidate {
        kind: Kind::Unanswered,
        last_progress: None,
    };
    assert_eq!(
        index(choose([Some(unseen), unanswered(9_000)], now, GRACE)),
        Some(1)
    );
    // Of two unanswered ones, the older.
    assert_eq!(
        index(choose([unanswered(9_995), unanswered(9_990)], now, GRACE)),
        Some(1)
    );
}

#[test]
fn an_answered_handshake_is_left_to_complete_for_the_grace() {
    let now = 10_000u64;
    let answered = |t| candidate(Kind::Answered, t);
    let unanswered = |t| candidate(Kind::Unanswered, t);
    // Answered just now (its peer may be sending the last ACK): the new SYN waits.
    assert_eq!(choose([answered(9_999)], now, GRACE), Choice::Defer);
    assert_eq!(
        choose([answered(9_999), established(9_999)], now, GRACE),
        Choice::Defer
    );
    // An unanswered one goes instead, however young; so does an idle connection.
    assert_eq!(
        index(choose([answered(9_000), unanswered(9_999)], now, GRACE)),
        Some(1)
    );
    assert_eq!(
        index(choose([answered(9_999), established(1_000)], now, GRACE)),
        Some(1)
    );
    // No answer for the grace: stale, taken last of all, and counted as answered.
    let Choice::Take(i, c) = choose([answered(now - GRACE)], now, GRACE) else {
        panic!()
    };
    assert_eq!((i, c.evicts(), c.answered()), (0, false, true));
    assert_eq!(
        index(choose([answered(1_000), established(8_000)], now, GRACE)),
        Some(1)
    );
}

#[test]
fn a_connection_with_our_bytes_in_flight_outlasts_our_retransmission() {
    // The embassy image's residual: a download whose segment was lost waits for our
    // retransmission (RFC 6298's minimum RTO, 1 s), its client sending only duplicate
    // ACKs (no progress); a new SYN at 750 ms took it and reset the client.
    let now = 10_000u64;
    let sending = |t| candidate(Kind::Sending, t);
    assert_eq!(SENDING_GRACE_MS, 2 * GRACE);
    // Moving within the grace: a busy server's RST, as for any connection.
    assert_eq!(choose([sending(now - 10)], now, GRACE), Choice::Busy);
    // Quiet past the grace, not yet twice: the SYN is dropped, its client sends it again.
    assert_eq!(choose([sending(now - GRACE)], now, GRACE), Choice::Defer);
    assert_eq!(
        choose([sending(now - 2 * GRACE + 1)], now, GRACE),
        Choice::Defer
    );
    // Quiet for twice the grace: evicted (its peer gets a RST), counted as evicted.
    let Choice::Take(i, c) = choose([sending(now - 2 * GRACE)], now, GRACE) else {
        panic!()
    };
    assert_eq!((i, c.evicts(), c.answered()), (0, true, true));
    // An idle connection with nothing of ours in flight goes first, however young; so
    // does a half-open socket nobody answered.
    assert_eq!(
        index(choose([sending(1_000), established(9_000)], now, GRACE)),
        Some(1)
    );
    assert_eq!(
        index(choose(
            [sending(now - GRACE), candidate(Kind::Unanswered, 9_999)],
            now,
            GRACE
        )),
        Some(1)
    );
}

#[test]
fn bytes_of_ours_unacknowledged_make_a_connection_sending() {
    struct Queued(TcpState, usize);
    impl TcpOps for Queued {
        fn state(&self) -> TcpState {
            self.0
        }
        fn can_recv(&self) -> bool {
            false
        }
        fn may_recv(&self) -> bool {
            false
        }
        fn can_send(&self) -> bool {
            false
        }
        fn may_send(&self) -> bool {
            false
        }
        fn queues(&self) -> (usize, usize) {
            (0, self.1)
        }
        fn send_room(&self) -> usize {
            0
        }
        fn recv(&mut self, _f: impl FnOnce(&[u8]) -> usize) -> usize {
            0
        }
        fn send(&mut self, _f: impl FnOnce(&mut [u8]) -> usize) -> usize {
            0
        }
        fn listen(&mut self, _port: u16) -> bool {
            false
        }
        fn close(&mut self) {}
        fn abort(&mut self) {}
        fn rst_pending(&self) -> bool {
            false
        }
        fn remote_is_ipv6(&self) -> bool {
            false
        }
        fn peer(&self) -> Option<Peer> {
            None
        }
        fn congestion_control(&self) -> &'static str {
            "none"
        }
    }
    let kind = |state, tx| super::candidate(&Queued(state, tx), Some(1u64), None).map(|c| c.kind);
    assert_eq!(kind(TcpState::Established, 0), Some(Kind::Connection));
    assert_eq!(kind(TcpState::Established, 1), Some(Kind::Sending));
    assert_eq!(kind(TcpState::CloseWait, 0), Some(Kind::Spent));
    assert_eq!(kind(TcpState::FinWait1, 1460), Some(Kind::Sending));
}

#[test]
fn a_half_open_socket_is_answered_once_our_syn_ack_left() {
    let half_open = crate::socket::InState(TcpState::SynReceived);
    let mut w = Progress::<u64>::new();
    w.observe(Look::of(&half_open), 100);
    assert_eq!(
        w.candidate(&half_open),
        Some(Candidate {
            kind: Kind::Unanswered,
            last_progress: Some(100)
        })
    );
    w.note_answered(120);
    w.note_answered(1_200); // a retransmitted SYN-ACK changes nothing
    assert_eq!(
        w.candidate(&half_open),
        Some(Candidate {
            kind: Kind::Answered,
            last_progress: Some(120)
        })
    );
    w.forget();
    assert_eq!(w.answered(), None);
}

fn look(rx: usize, tx: usize) -> Option<Look> {
    Some(Look {
        state: TcpState::Established,
        rx_queued: rx,
        tx_queued: tx,
    })
}

#[test]
fn bytes_in_and_acknowledgements_are_progress_the_apps_own_moves_are_not() {
    let mut p = Progress::<u64>::new();
    assert_eq!(p.last(), None);
    p.observe(look(0, 0), 100); // opened
    assert_eq!(p.last(), Some(100));
    p.observe(look(20, 0), 200); // the peer sent a request
    p.observe(look(0, 2048), 201); // the app read it and filled its send buffer
    assert_eq!(p.last(), Some(200));
    p.observe(look(0, 1000), 300); // acknowledged
    p.observe(look(0, 2048), 301); // refilled to the brim
    assert_eq!(p.last(), Some(300));
    // A zero-window reader: nothing acknowledged, nothing sent, look after look.
    for t in 400..500 {
        p.observe(look(0, 2048), t);
    }
    assert_eq!(p.last(), Some(300));
    assert_eq!(p.deadline(1000), Some(1300));
    assert!(!p.expired(1299, 1000));
    assert!(p.expired(1300, 1000));
    // A state change (the peer's FIN) is progress too.
    p.observe(
        Some(Look {
            state: TcpState::CloseWait,
            rx_queued: 0,
            tx_queued: 2048,
        }),
        600,
    );
    assert_eq!(p.last(), Some(600));
    // Listening or closed: no connection, nothing expires.
    p.observe(None, 700);
    assert_eq!(p.last(), None);
    assert_eq!(p.deadline(1000), None);
    assert!(!p.expired(1_000_000, 1000));
}
