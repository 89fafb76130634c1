//! The SYN rule on iperf 2's port: a SYN that finds nothing listening gets a listener if the
//! server may take a stream now, else the socket a spent, half-open or idle peer holds (the
//! rule of [`crate::evict`], with the test as the unit, as iperf3's pool has it).

use super::{Handshake, Iperf2Pool, Iperf2Sockets, Role};
use crate::evict::{candidate, choose, Candidate, Choice, Kind, GRACE_MS};
pub use crate::pool_server::Room;
use crate::pool_server::{ServerPool, SynPool};
use crate::socket::{TcpOps, TcpState};
use crate::syns::SynCounts;
use crate::time::Micros;

/// [`GRACE_MS`] in microseconds.
const GRACE_US: Micros = GRACE_MS * 1000;

impl<E: Copy + Eq, const M: usize> SynPool for Iperf2Pool<E, M> {
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
        &mut self.syns
    }
}

impl<E: Copy + Eq, const M: usize, P: Iperf2Sockets<Endpoint = E>> ServerPool<P>
    for Iperf2Pool<E, M>
{
    fn serve(&mut self, sockets: &mut P, now: Micros) {
        self.poll(sockets, now);
    }

    fn make_room(&mut self, port: u16, sockets: &mut P, now: Micros) -> Room {
        self.room_for(port, sockets, now)
    }
}

impl<E: Copy + Eq, const M: usize> Iperf2Pool<E, M> {
    /// Called before the stack sees a SYN for `port` (at `now`): when it is this server's
    /// port and nothing listens, listens now if the server may take a stream (a new test, or
    /// the running test's next one), else frees what [`crate::evict::choose`] picks: a spent
    /// socket, the test of a client idle beyond the grace (all its sockets reset:
    /// `evicted`), a half-open socket (`reclaimed`). A SYN that finds the server busy is
    /// dropped unanswered (`listen_drops`), never refused: iperf 2 has no busy message, and
    /// its client, sending the SYN again, is served once the test ends. Every SYN for the
    /// port is counted by what became of it (`counters().syns`, [`crate::syns`]).
    pub fn room_for<P: Iperf2Sockets<Endpoint = E>>(
        &mut self,
        port: u16,
        s: &mut P,
        now: Micros,
    ) -> Room {
        if port != self.port {
            return Room::Ready;
        }
        let room = self.free_for_syn(s, now);
        match room {
            Room::Ready => self.syns.pass(),
            Room::Freeing => self.syns.hold(),
            Room::Defer => self.syns.drop_unanswered(),
        }
        room
    }

    /// [`room_for`](Self::room_for) for a SYN to the server's port, uncounted.
    fn free_for_syn<P: Iperf2Sockets<Endpoint = E>>(&mut self, s: &mut P, now: Micros) -> Room {
        self.now = now;
        let n = s.tcp_count().min(M);
        if self.listens(s, n) {
            return Room::Ready;
        }
        self.arm(s, n);
        if self.listens(s, n) {
            return Room::Ready;
        }
        let test = self.test.map(|t| Candidate {
            kind: Kind::Connection,
            last_progress: Some(t.last_progress),
        });
        let roles = self.roles;
        let facts = (0..n).map(|i| {
            let sock = s.tcp(i);
            match roles[i] {
                Role::Listening(h) => candidate(&sock, h.seen, h.answered).filter(|c| !c.evicts()),
                Role::Closing { since } => candidate(&sock, Some(since), None),
                Role::Stream(_) | Role::Back(_) => test,
                Role::Parked => None,
            }
        });
        let (i, taken) = match choose(facts, now, GRACE_US) {
            Choice::Take(i, taken) => (i, taken),
            Choice::Defer | Choice::Busy => return Room::Defer,
        };
        match roles[i] {
            Role::Listening(_) => {
                // A half-open handshake: the socket listens again at once, same slice.
                self.counters.reclaimed += 1;
                if taken.answered() {
                    self.counters.reclaimed_answered += 1;
                }
                s.relisten(i, self.port);
                self.roles[i] = Role::Listening(Handshake::default());
                return Room::Ready;
            }
            Role::Closing { .. } => {
                self.counters.reclaimed += 1;
                s.tcp(i).abort();
            }
            _ => {
                self.evict_test(s, now);
                s.unclaim();
            }
        }
        // The sockets reset release their slices once their RSTs left: at once where the
        // adapter can send them now.
        if s.flush() {
            for j in 0..n {
                self.service_tcp(s, j, now);
            }
            self.end_test(s, n);
            self.arm(s, n);
            if self.listens(s, n) {
                return Room::Ready;
            }
        }
        Room::Freeing
    }

    /// True when one of the first `n` sockets listens.
    fn listens<P: Iperf2Sockets<Endpoint = E>>(&self, s: &mut P, n: usize) -> bool {
        (0..n).any(|i| {
            matches!(self.roles[i], Role::Listening(_)) && s.tcp(i).state() == TcpState::Listen
        })
    }
}
