//! When a connection last made progress, and which connection gives way when a new client
//! finds every socket of a service busy: the one idle longest, once it has made no progress
//! for a grace time. lwIP kills the oldest connection (`tcp_kill_prio`); the grace keeps a
//! connection that is moving — a request just sent, a download being acknowledged — from
//! being the one, however old it is.
//!
//! No stack here: [`Progress`] turns what a connection shows at each look ([`Look`]: its
//! state and the bytes queued each way, from any stack's socket through [`TcpOps`]) into the
//! instant it last made progress — what the idle timeout and the eviction both count from —
//! and [`idlest`] picks among plain [`Candidate`] facts. Both are generic over the time type
//! (smoltcp's or embassy's `Instant`, a `u64` of microseconds), so every home of the apps
//! shares one rule: the smoltcp adapters ([`crate::lifetime`], `crate::apps`), the iperf3
//! pool ([`crate::iperf::pool`]) and the embassy-net adapters (`crate::embassy`).

use core::ops::Add;

use crate::socket::{TcpOps, TcpState};

/// How long a connection must have made no progress before a new client may take its socket,
/// in milliseconds: 750.
///
/// Longer than any pause a live peer makes mid-exchange on a LAN: a request follows the
/// handshake within a round trip, an ACK follows data within a round trip plus the delayed-ACK
/// timer (40 ms on Linux, at most 500 ms by RFC 1122). Shorter than the 1 s after which a
/// client tries again — Linux's first SYN retransmission (RFC 6298's initial RTO), curl's
/// `--retry-delay 1` — so a client that found only fresh connections on its first try finds
/// an evictable one on its second, with a quarter second to spare for loop latency.
pub const GRACE_MS: u64 = 750;

/// What a busy socket's connection would lose if its socket were taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Kind {
    /// Nothing: closed, or closing with nothing of ours left unacknowledged. Taken first,
    /// at once.
    Spent,
    /// Its data: established, or closing while its last bytes are still unacknowledged.
    /// Taken once it made no progress for the grace, the one idle longest first.
    Connection,
    /// Its handshake: half-open (SYN received, SYN-ACK sent). Taken at once — a spoofed SYN's
    /// connection never completes, and would otherwise hold the socket until it times out
    /// (lwIP's rule) — but only when no idle connection can go instead: a real client
    /// completes its handshake within a round trip, and the client an eviction just reset
    /// reconnects that fast, so its SYN must not cut off the client that evicted it.
    HalfOpen,
}

/// What the choice knows of one busy socket of a service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate<T> {
    /// What its connection would lose.
    pub kind: Kind,
    /// When its connection last made progress (see [`Progress`]); None when unknown, taken
    /// as long ago.
    pub last_progress: Option<T>,
}

impl<T> Candidate<T> {
    /// Taking the socket resets a connection (the peer gets a RST and loses its data):
    /// counted as `evicted`. Otherwise (spent or half-open) counted as `reclaimed`.
    pub fn evicts(&self) -> bool {
        self.kind == Kind::Connection
    }
}

/// What the choice knows of `socket`, whose connection last made progress at `last_progress`:
/// None when it listens; otherwise that instant and what the connection would lose
/// ([`Kind`]) — nothing when closed or closing with nothing of ours left unacknowledged, its
/// handshake when half-open, its data otherwise (also when closing while the tail of a
/// download is still unacknowledged).
pub fn candidate<T>(socket: &impl TcpOps, last_progress: Option<T>) -> Option<Candidate<T>> {
    use TcpState::*;
    let kind = match socket.state() {
        Listen => return None,
        Closed | TimeWait => Kind::Spent,
        SynReceived | SynSent => Kind::HalfOpen,
        Established => Kind::Connection,
        FinWait1 | FinWait2 | Closing | LastAck | CloseWait if socket.queues().1 == 0 => {
            Kind::Spent
        }
        FinWait1 | FinWait2 | Closing | LastAck | CloseWait => Kind::Connection,
    };
    Some(Candidate {
        kind,
        last_progress,
    })
}

/// The socket to free for a new client, as its index in `candidates`' order and what the
/// choice knew of it: a spent one, else a connection that made no progress for `grace` at
/// `now`, else a half-open one — of a kind, the one idle longest. Entries are `None` for
/// sockets that may not be taken (listening, or protected, e.g. a running iperf3 test).
/// None when every connection made progress within the grace and nothing is spent or
/// half-open: the new client must wait.
pub fn idlest<T, D>(
    candidates: impl IntoIterator<Item = Option<Candidate<T>>>,
    now: T,
    grace: D,
) -> Option<(usize, Candidate<T>)>
where
    T: Copy + Ord + Add<D, Output = T>,
    D: Copy,
{
    candidates
        .into_iter()
        .enumerate()
        .filter_map(|(i, c)| Some((i, c?)))
        .filter(|(_, c)| !c.evicts() || c.last_progress.is_none_or(|t| t + grace <= now))
        .min_by_key(|(_, c)| (c.kind, c.last_progress.or(c.unseen_since(now))))
}

impl<T> Candidate<T> {
    /// When a candidate never seen making progress counts as having made it: a half-open
    /// one became half-open since the last look (a SYN of the frames being taken in), so it
    /// is the youngest, not the oldest — else a real client's fresh handshake would go first
    /// to the next spoofed SYN in the same batch. A connection, as long ago.
    fn unseen_since(&self, now: T) -> Option<T> {
        (self.kind == Kind::HalfOpen).then_some(now)
    }
}

/// What one look at a connection shows: its state and the bytes queued each way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Look {
    /// The connection's state.
    pub state: TcpState,
    /// Bytes received and not yet read by the app.
    pub rx_queued: usize,
    /// Bytes written by the app and not yet acknowledged by the peer.
    pub tx_queued: usize,
}

impl Look {
    /// A look at `socket`; None when it holds no connection (listening or closed).
    pub fn of(socket: &impl TcpOps) -> Option<Look> {
        let state = socket.state();
        if matches!(state, TcpState::Listen | TcpState::Closed) {
            return None;
        }
        let (rx_queued, tx_queued) = socket.queues();
        Some(Look {
            state,
            rx_queued,
            tx_queued,
        })
    }
}

/// When one connection last made progress: it opened or changed state, the peer sent bytes
/// (more queued to read than the app left), or the peer acknowledged bytes (fewer queued to
/// send than the app left). Keep-alive answers and zero-window probes move neither queue, so
/// a silent client and a reader that stopped reading both go idle, while a download being
/// acknowledged never does, even when the app refills its send buffer to the brim each time.
///
/// Look at the connection ([`observe`](Self::observe)) right after the stack ran and again
/// right after the app read and wrote: the first look sees what the peer did, the second
/// records what the app left, so the app's own reads and writes never count. The idle
/// timeout ([`expired`](Self::expired)) and the eviction ([`candidate`]) count from it.
#[derive(Clone, Copy, Debug)]
pub struct Progress<T> {
    last: Option<T>,
    seen: Option<Look>,
}

impl<T: Copy> Default for Progress<T> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy> Progress<T> {
    /// A watch that has seen no connection yet.
    pub const fn new() -> Self {
        Progress {
            last: None,
            seen: None,
        }
    }

    /// When the watched connection last made progress (None: no connection watched).
    pub fn last(&self) -> Option<T> {
        self.last
    }

    /// Forgets the connection (it ended, or its socket was taken for a new one).
    pub fn forget(&mut self) {
        self.last = None;
        self.seen = None;
    }

    /// One look at the connection at `now` (see [`Look::of`]): `None` when the socket holds
    /// none (listening or closed), which forgets it.
    pub fn observe(&mut self, look: Option<Look>, now: T) {
        let Some(look) = look else {
            self.forget();
            return;
        };
        let progressed = match self.seen {
            None => true,
            Some(seen) => {
                seen.state != look.state
                    || look.rx_queued > seen.rx_queued
                    || look.tx_queued < seen.tx_queued
            }
        };
        if progressed {
            self.last = Some(now);
        }
        self.seen = Some(look);
    }

    /// When the watched connection will have made no progress for `timeout` (None when no
    /// connection is watched).
    pub fn deadline<D>(&self, timeout: D) -> Option<T>
    where
        T: Add<D, Output = T>,
    {
        self.last.map(|t| t + timeout)
    }

    /// True when the watched connection made no progress for `timeout` at `now` (the caller
    /// then resets it). Never without a connection.
    pub fn expired<D>(&self, now: T, timeout: D) -> bool
    where
        T: Add<D, Output = T> + PartialOrd,
    {
        self.deadline(timeout).is_some_and(|d| now >= d)
    }
}

#[cfg(test)]
mod tests {
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

    fn index<T>(choice: Option<(usize, Candidate<T>)>) -> Option<usize> {
        choice.map(|(i, _)| i)
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
        assert_eq!(index(idlest(facts, now, GRACE)), Some(1));
        // Exactly the grace is enough; a moment less is not.
        assert_eq!(
            index(idlest([established(now - GRACE)], now, GRACE)),
            Some(0)
        );
        assert_eq!(
            index(idlest([established(now - GRACE + 1)], now, GRACE)),
            None
        );
        // Nobody idle long enough, or nobody at all: the new client waits.
        assert_eq!(index(idlest([established(9_500), None], now, GRACE)), None);
        assert_eq!(index(idlest(core::iter::empty(), now, GRACE)), None);
        // Progress never seen counts as long ago.
        let unknown = Some(Candidate {
            kind: Kind::Connection,
            last_progress: None,
        });
        assert_eq!(
            index(idlest([established(1), unknown], now, GRACE)),
            Some(1)
        );
    }

    #[test]
    fn who_loses_least_goes_first() {
        let now = 10_000u64;
        let half_open = |t| candidate(Kind::HalfOpen, t);
        let spent = |t| candidate(Kind::Spent, t);
        // Spent before an idle connection before a half-open one, however old.
        let facts = [half_open(1_000), established(2_000), spent(9_990)];
        let (i, c) = idlest(facts, now, GRACE).unwrap();
        assert_eq!((i, c.evicts()), (2, false));
        let (i, c) = idlest([half_open(1_000), established(2_000)], now, GRACE).unwrap();
        assert_eq!((i, c.evicts()), (1, true));
        // A spoofed SYN's socket goes at once when no idle connection can.
        assert_eq!(
            index(idlest([established(9_900), half_open(9_990)], now, GRACE)),
            Some(1)
        );
        // A half-open one not looked at yet (its SYN came in this batch) is the youngest.
        let unseen = Candidate {
            kind: Kind::HalfOpen,
            last_progress: None,
        };
        assert_eq!(
            index(idlest([Some(unseen), half_open(9_000)], now, GRACE)),
            Some(1)
        );
        // Of two half-open ones, the older.
        assert_eq!(
            index(idlest([half_open(9_995), half_open(9_990)], now, GRACE)),
            Some(1)
        );
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
}
