//! Which connection gives way when a new client finds every socket of a service busy: the one
//! idle longest, once it has made no progress for a grace time. lwIP kills the oldest
//! connection (`tcp_kill_prio`); the grace keeps a connection that is moving — a request just
//! sent, a download being acknowledged — from being the one, however old it is.
//!
//! No sockets here, only plain facts: [`Progress`] turns what a connection shows at each look
//! (its state and the bytes queued each way) into the instant it last made progress, and
//! [`idlest`] picks among those instants. Both are generic over the time type (smoltcp's or
//! embassy's `Instant`, a `u64` of microseconds), so every home of the apps — the smoltcp
//! adapters ([`crate::lifetime`]) and any other stack — shares one rule.

use core::ops::Add;

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

/// What the choice knows of one busy socket of a service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate<T> {
    /// When its connection last made progress (see [`Progress`]).
    pub last_progress: T,
    /// Nobody loses anything if it goes: half-open, or closing with nothing of ours left
    /// unacknowledged. Such a socket may be taken without the grace (lwIP's rule against
    /// spoofed SYNs, whose half-open connections would otherwise hold the sockets until they
    /// time out).
    pub free: bool,
}

/// The index (in `candidates`' order) of the socket to free for a new client: among the
/// [`free`](Candidate::free) ones and the others idle for at least `grace` at `now`, the one
/// whose last progress is oldest. Entries are `None` for sockets that may not be taken
/// (listening, or protected, e.g. a running iperf3 test). None when every connection made
/// progress within the grace and none is free: the new client must wait.
pub fn idlest<T, D>(
    candidates: impl IntoIterator<Item = Option<Candidate<T>>>,
    now: T,
    grace: D,
) -> Option<usize>
where
    T: Copy + Ord + Add<D, Output = T>,
    D: Copy,
{
    candidates
        .into_iter()
        .enumerate()
        .filter_map(|(i, c)| Some((i, c?)))
        .filter(|(_, c)| c.free || c.last_progress + grace <= now)
        .min_by_key(|(_, c)| c.last_progress)
        .map(|(i, _)| i)
}

/// What one look at a connection shows: its state (any comparable token, e.g. smoltcp's
/// `tcp::State`) and the bytes queued each way.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Look<S> {
    /// The connection's state.
    pub state: S,
    /// Bytes received and not yet read by the app.
    pub rx_queued: usize,
    /// Bytes written by the app and not yet acknowledged by the peer.
    pub tx_queued: usize,
}

/// When one connection last made progress: it opened or changed state, the peer sent bytes
/// (more queued to read than the app left), or the peer acknowledged bytes (fewer queued to
/// send than the app left). Keep-alive answers and zero-window probes move neither queue, so
/// a silent client and a reader that stopped reading both go idle, while a download being
/// acknowledged never does, even when the app refills its send buffer to the brim each time.
///
/// Look at the connection ([`observe`](Self::observe)) right after the stack ran and again
/// right after the app read and wrote: the first look sees what the peer did, the second
/// records what the app left, so the app's own reads and writes never count.
#[derive(Clone, Copy, Debug)]
pub struct Progress<T, S> {
    last: Option<T>,
    seen: Option<Look<S>>,
}

impl<T, S> Default for Progress<T, S> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T, S> Progress<T, S> {
    /// A watch that has seen no connection yet.
    pub const fn new() -> Self {
        Progress {
            last: None,
            seen: None,
        }
    }

    /// When the watched connection last made progress (None: no connection watched).
    pub fn last(&self) -> Option<T>
    where
        T: Copy,
    {
        self.last
    }

    /// Forgets the connection (it ended, or its socket was taken for a new one).
    pub fn forget(&mut self) {
        self.last = None;
        self.seen = None;
    }

    /// One look at the connection at `now`: `None` when the socket holds none (listening or
    /// closed), which forgets it.
    pub fn observe(&mut self, look: Option<Look<S>>, now: T)
    where
        S: Copy + PartialEq,
    {
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
}

#[cfg(test)]
mod tests {
    use super::*;

    const GRACE: u64 = 750;

    fn established(t: u64) -> Option<Candidate<u64>> {
        Some(Candidate {
            last_progress: t,
            free: false,
        })
    }

    fn half_open(t: u64) -> Option<Candidate<u64>> {
        Some(Candidate {
            last_progress: t,
            free: true,
        })
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
        assert_eq!(idlest(facts, now, GRACE), Some(1));
        // Exactly the grace is enough; a moment less is not.
        assert_eq!(idlest([established(now - GRACE)], now, GRACE), Some(0));
        assert_eq!(idlest([established(now - GRACE + 1)], now, GRACE), None);
        // Nobody idle long enough, or nobody at all: the new client waits.
        assert_eq!(idlest([established(9_500), None], now, GRACE), None);
        assert_eq!(idlest(core::iter::empty(), now, GRACE), None);
    }

    #[test]
    fn half_open_sockets_go_without_the_grace_but_after_older_idlers() {
        let now = 10_000u64;
        // A spoofed half-open connection goes at once, if nothing older may go.
        assert_eq!(
            idlest([established(9_900), half_open(9_990)], now, GRACE),
            Some(1)
        );
        // A client in the middle of its handshake is not taken while an idle holder is.
        assert_eq!(
            idlest([established(8_000), half_open(9_990)], now, GRACE),
            Some(0)
        );
        // Of two half-open ones, the older.
        assert_eq!(
            idlest([half_open(9_995), half_open(9_990)], now, GRACE),
            Some(1)
        );
    }

    fn look(rx: usize, tx: usize) -> Option<Look<u8>> {
        Some(Look {
            state: 1,
            rx_queued: rx,
            tx_queued: tx,
        })
    }

    #[test]
    fn bytes_in_and_acknowledgements_are_progress_the_apps_own_moves_are_not() {
        let mut p = Progress::<u64, u8>::new();
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
        // A state change (the peer's FIN) is progress too.
        p.observe(
            Some(Look {
                state: 2,
                rx_queued: 0,
                tx_queued: 2048,
            }),
            600,
        );
        assert_eq!(p.last(), Some(600));
        p.observe(None, 700);
        assert_eq!(p.last(), None);
    }
}
