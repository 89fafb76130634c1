//! Room for a new client: which socket gives way when a SYN finds none listening (a spent
//! socket, an idle connection, a half-open one), and the idle test that gives way to a new
//! client ([`crate::evict`] decides; this applies its choice to the pool).

use super::{Handshake, PoolServer, PoolSockets, Slot, GRACE_US, SENDING_GRACE_US};
use crate::evict::{candidate, choose, Candidate, Choice, Kind};
#[cfg(doc)]
use crate::evict::{GRACE_MS, SENDING_GRACE_MS};
use crate::iperf::session::Phase;
use crate::pool_server::{Room, ServerPool, SynPool};
#[cfg(doc)]
use crate::rules::RST_GRACE_MS;
use crate::socket::{TcpOps, TcpState};
use crate::syns::SynCounts;
use crate::time::Micros;

impl<E: Copy + PartialEq, const N: usize, const S: usize> SynPool for PoolServer<'_, E, N, S> {
    fn syn_port(&self) -> u16 {
        self.port()
    }

    fn answered(&mut self, i: usize, now: Micros) {
        self.note_answered(i, now);
    }

    fn next_poll(&self) -> Option<Micros> {
        self.poll_at()
    }

    fn syns(&mut self) -> &mut SynCounts {
        &mut self.counters.syns
    }
}

impl<E: Copy + PartialEq, const N: usize, const S: usize, P: PoolSockets<Endpoint = E>>
    ServerPool<P> for PoolServer<'_, E, N, S>
{
    fn serve(&mut self, sockets: &mut P, now: Micros) {
        self.poll(sockets, now);
    }

    fn make_room(&mut self, port: u16, sockets: &mut P, now: Micros) -> Room {
        self.room_for(port, sockets, now)
    }
}

impl<'a, E: Copy + PartialEq, const N: usize, const S: usize> PoolServer<'a, E, N, S> {
    /// Our SYN-ACK to the peer of TCP socket `i`'s half-open connection left at `now`: its
    /// peer may believe it is connected (see [`crate::evict::Kind::Answered`]). The stack's
    /// adapter tells, as it sees SYN-ACKs leave.
    pub fn note_answered(&mut self, i: usize, now: Micros) {
        if let Some(h) = self.handshakes.get_mut(i) {
            h.answered.get_or_insert(now);
        }
    }

    /// Called before the stack sees a SYN for `port` (at `now`): when it is this server's
    /// port and no socket listens, frees one so the SYN finds a listener
    /// ([`crate::evict::choose`]): a spent socket (`reclaimed`), else what has been idle
    /// longest beyond [`GRACE_MS`] (`evicted`: its peer gets a RST) — a would-be stream that
    /// sent no cookie, a denied client that does not read its answer, the test of an idle
    /// client with all its sockets (never a running test) — else a half-open socket our
    /// SYN-ACK has not answered, else one answered longer than the grace ago (`reclaimed`,
    /// and `reclaimed_answered`). While a handshake we answered may complete and nothing
    /// else may go, while a would-be stream holds a data socket as a test's streams
    /// connect, or while nothing at all may go, the SYN is to be dropped ([`Room::Defer`],
    /// `listen_drops`): never refused, its client sends it again. [`PoolSockets::free`]
    /// makes the socket listen again. (A new client that finds a socket listening but the
    /// test held is handled once it connects: see [`poll`](Self::poll).) Every SYN for the
    /// port is counted by what became of it (`counters().syns`, [`crate::syns`]).
    pub fn room_for<P: PoolSockets>(&mut self, port: u16, sockets: &mut P, now: Micros) -> Room {
        if port != self.port {
            return Room::Ready;
        }
        let room = self.free_for_syn(sockets, now);
        match room {
            Room::Ready => self.counters.syns.pass(),
            Room::Freeing => self.counters.syns.hold(),
            Room::Defer => self.counters.syns.drop_unanswered(),
        }
        room
    }

    /// [`room_for`](Self::room_for) for a SYN to the server's port, uncounted.
    fn free_for_syn<P: PoolSockets>(&mut self, sockets: &mut P, now: Micros) -> Room {
        let n = sockets.tcp_count().min(N);
        if (0..n).any(|i| sockets.tcp(i).state() == TcpState::Listen) {
            return Room::Ready;
        }
        if self.slots[..n]
            .iter()
            .any(|s| matches!(s, Slot::Evicted { .. }))
        {
            return Room::Freeing;
        }
        let test = self.test_candidate();
        let slots = self.slots;
        let handshakes = self.handshakes;
        // With roles, only the sockets whose role listens now may be freed for the SYN (or
        // the idle test itself): data sockets while a test's streams connect, control
        // sockets otherwise (`apply_roles`). A socket of the other role, freed, would be
        // parked again by the next poll — or take the SYN first. Two mixed-load soak
        // captures: on zynq7000-embassy a stream's SYN freed a control socket (half-open
        // from a spoofed SYN) while a spoofed SYN held the data socket, and got a RST once
        // the poll parked it; on mps2-an385 a new client's control SYN freed a data socket
        // and landed on it, a would-be stream that never sent a stream's cookie, evicted as
        // idle 0.8 s later ("Connection reset by peer").
        let roles = self.data_slots > 0;
        let streams = roles && self.streams_connecting();
        let data_slots = self.data_slots;
        let facts = (0..n).map(|i| {
            let socket = sockets.tcp(i);
            if roles && slots[i] != Slot::Control && (i < data_slots) != streams {
                return None;
            }
            match slots[i] {
                Slot::Listening => {
                    let h = handshakes[i];
                    candidate(&socket, h.seen, h.answered).filter(|c| !c.evicts())
                }
                // A would-be stream sends its cookie at once: pending since is idle since.
                Slot::Pending { since, .. } | Slot::Closing { since } => {
                    candidate(&socket, Some(since), None)
                }
                Slot::Denying => candidate(&socket, None, None),
                Slot::Control => test,
                Slot::Data(_) | Slot::Evicted { .. } | Slot::Parked => None,
            }
        });
        let (i, taken) = match choose(facts, now, GRACE_US) {
            Choice::Take(i, taken) => (i, taken),
            Choice::Defer => {
                linklab_fmt::debug!("iperf: SYN dropped, a handshake we answered may complete");
                return Room::Defer;
            }
            // Nothing may go (a running test, sockets making progress) — or, while streams
            // connect, a would-be stream holds a data socket, settled within a round trip
            // (its cookie is the test's, or it is denied and its socket listens again): the
            // SYN — perhaps the test's own stream — is dropped for its client to send again,
            // never refused (a mixed-load soak's stray connection took the one data socket
            // listening and the stream's SYN got a RST: "unable to connect stream:
            // Connection refused").
            Choice::Busy => {
                linklab_fmt::debug!("iperf: SYN dropped, every socket busy");
                return Room::Defer;
            }
        };
        self.handshakes[i] = Handshake::default();
        if self.slots[i] == Slot::Control {
            self.end_idle_test(sockets, Some(i), now);
        }
        sockets.tcp(i).abort();
        let evicted = taken.evicts();
        if evicted {
            linklab_fmt::debug!("iperf: idle connection evicted");
            self.counters.evicted += 1;
        } else {
            linklab_fmt::debug!("iperf: half-open or closing connection reclaimed");
            self.counters.reclaimed += 1;
            if taken.answered() {
                self.counters.reclaimed_answered += 1;
            }
        }
        if sockets.free(i, self.port, evicted) {
            self.slots[i] = Slot::Listening;
            Room::Ready
        } else {
            self.slots[i] = Slot::Evicted { since: now };
            Room::Freeing
        }
    }

    /// The current test as [`choose`] sees it, if it may be evicted: None without a test,
    /// for a test running (its own watchdog ends one whose client vanished) and for a
    /// finished one (it is closing). It last made progress at the session's last activity
    /// (bytes from the client on its control connection, bytes on its streams). While its
    /// streams connect it counts as [`Kind::Sending`] (twice the grace): the client's SYN
    /// for a stream, lost, comes again only after 1 s (its initial RTO), so the test waits
    /// for the client's retransmission as a sending connection waits for ours. Over the
    /// grace alone, a mixed-load soak evicted 4 of 48 130 real clients' tests 0.75 s after
    /// their stream's SYN went unanswered (`docs/serve.md`).
    fn test_candidate(&self) -> Option<Candidate<Micros>> {
        let phase = self.session.phase();
        if matches!(phase, Phase::Idle | Phase::Running) || self.session.is_finished() {
            return None;
        }
        let kind = if phase == Phase::CreateStreams {
            Kind::Sending
        } else {
            Kind::Connection
        };
        Some(Candidate {
            kind,
            last_progress: Some(self.session.last_activity()),
        })
    }

    /// True when the test holding the server may give way to a new client: not running, and
    /// no progress for [`GRACE_MS`] ([`SENDING_GRACE_MS`] while its streams connect, see
    /// [`test_candidate`](Self::test_candidate)). Never without feature `evict`.
    fn test_evictable(&self, now: Micros) -> bool {
        cfg!(feature = "evict")
            && self.test_candidate().is_some_and(|c| {
                let grace = if c.kind == Kind::Sending {
                    SENDING_GRACE_US
                } else {
                    GRACE_US
                };
                c.last_progress
                    .is_some_and(|t| t.saturating_add(grace) <= now)
            })
    }

    /// Ends the test of a client that went idle: resets its streams and would-be streams
    /// (and its control connection, unless `control` says the caller evicts that one
    /// itself), and forgets the test.
    fn end_idle_test<P: PoolSockets>(
        &mut self,
        sockets: &mut P,
        control: Option<usize>,
        now: Micros,
    ) {
        let n = sockets.tcp_count().min(N);
        for i in 0..n {
            let ours = matches!(
                self.slots[i],
                Slot::Control | Slot::Data(_) | Slot::Pending { .. }
            );
            if ours && Some(i) != control {
                sockets.tcp(i).abort();
                self.slots[i] = Slot::Closing { since: now };
            }
        }
        self.session.reset();
        self.done = false;
        self.end_udp(sockets);
        self.give_back_memory(sockets);
    }

    /// A connection established on listening socket `i` while a test holds the server: when
    /// that test's client went idle, the test gives way to it (evicted), as a SYN finding no
    /// socket would make it.
    pub(super) fn evict_idle_test_for<P: PoolSockets>(
        &mut self,
        sockets: &mut P,
        i: usize,
        now: Micros,
    ) {
        let established = !matches!(
            sockets.tcp(i).state(),
            TcpState::Closed | TcpState::Listen | TcpState::SynReceived | TcpState::TimeWait
        );
        if established && self.test_evictable(now) {
            self.end_idle_test(sockets, None, now);
            linklab_fmt::debug!("iperf: idle test evicted for a new client");
            self.counters.evicted += 1;
        }
    }
}
