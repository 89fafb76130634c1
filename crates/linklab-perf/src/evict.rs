//! When a connection last made progress, and which connection gives way when a new client
//! finds every socket of a service busy: the one idle longest, once it has made no progress
//! for a grace time. lwIP kills the oldest connection (`tcp_kill_prio`); the grace keeps a
//! connection that is moving — a request just sent, a download being acknowledged — from
//! being the one, however old it is.
//!
//! No stack here: [`Progress`] turns what a connection shows at each look ([`Look`]: its
//! state and the bytes queued each way, from any stack's socket through [`TcpOps`]) into the
//! instant it last made progress — what the idle timeout and the eviction both count from —
//! and [`choose`] picks among plain [`Candidate`] facts.
//!
//! A half-open connection is free to take only until our SYN-ACK has left: from then on the
//! peer, if real, believes it is connected, and taking the socket would reset it. So every
//! home watches its SYN-ACKs leave ([`crate::rules::syn_ack`]) and marks the socket answered
//! ([`Progress::answered`]); an answered handshake is left to complete for the grace, and a
//! SYN that finds nothing else to take is dropped unanswered ([`Choice::Defer`]), so its
//! client waits for its own retransmission instead of another client being reset. Both are generic over the time type
//! (smoltcp's or embassy's `Instant`, a `u64` of microseconds), so every home of the apps
//! shares one rule: the smoltcp adapters ([`crate::lifetime`], `crate::apps`), the iperf3
//! pool ([`crate::iperf::pool`]) and the embassy-net adapters (`crate::embassy`).
//!
//! A SYN for which nothing may go ([`Choice::Busy`]) is dropped unanswered as well: a
//! device never resets a client it could serve a moment later ([`crate::syns`]).
//!
//! Feature `evict` (on by default): without it [`choose`] takes nothing, the smoltcp homes
//! skip their SYN rule and SYN-ACK watch, so a SYN that finds every socket busy gets
//! smoltcp's RST there (iperf3's spare control socket still answers ACCESS_DENIED), while
//! embassy-net's gate still holds a SYN for its service's turn and drops it when no socket
//! listens.

use core::ops::Add;

use crate::rules::Peer;
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

/// How long a connection with bytes of ours unacknowledged must have made no progress
/// before its socket may be taken, in milliseconds: 1500, twice [`GRACE_MS`].
///
/// Such a peer may be waiting for us, not we for it: a segment of ours lost on the way
/// (a full transmit ring, a wire's error) is sent again only when our retransmission timer
/// fires, and RFC 6298's minimum RTO, smoltcp's, is 1 s. Over the grace alone such a
/// connection looked idle from 750 ms to its retransmission at 1 s, and a new client's SYN
/// then reset it (the embassy image's residual, `docs/serve.md`). Twice the
/// grace outlasts the first retransmission and the peer's answer to it with half a second
/// to spare; a reader that stopped reading (a zero window) goes after it too.
pub const SENDING_GRACE_MS: u64 = 2 * GRACE_MS;

/// What a busy socket's connection would lose if its socket were taken.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Kind {
    /// Nothing: closed, or closing with nothing of ours left unacknowledged. Taken first,
    /// at once.
    Spent,
    /// Its data: established, with nothing of ours unacknowledged. Taken once it made no
    /// progress for the grace, the one idle longest first.
    Connection,
    /// Its data, with bytes of ours unacknowledged (established, or closing while its last
    /// bytes are): its peer may be waiting for our retransmission ([`SENDING_GRACE_MS`]).
    /// Taken once it made no progress for twice the grace; meanwhile, past the grace, a new
    /// SYN is dropped for its client to send again ([`Choice::Defer`]).
    Sending,
    /// Nothing yet: half-open, and our SYN-ACK has not left (its SYN came in this batch, or
    /// its source has no route or does not answer ARP, as a spoofed one does). No peer can
    /// believe it is connected; a real one sends its SYN again. Taken at once when no idle
    /// connection can go instead, the oldest first (lwIP's rule, so spoofed SYNs cannot lock
    /// real clients out).
    Unanswered,
    /// Its handshake: half-open, answered by our SYN-ACK — the peer, if real, completes
    /// its side on receipt and believes it is connected. Taken only once the grace passed
    /// with no answer (a live peer answers within a round trip), after any idle connection.
    Answered,
}

/// What the choice knows of one busy socket of a service.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candidate<T> {
    /// What its connection would lose.
    pub kind: Kind,
    /// When its connection last made progress (see [`Progress`]); for an [`Kind::Answered`]
    /// one, when our SYN-ACK left. None when unknown: taken as long ago, but for an
    /// unanswered half-open one (see [`choose`]).
    pub last_progress: Option<T>,
}

impl<T> Candidate<T> {
    /// Taking the socket resets a connection (the peer gets a RST and loses its data):
    /// counted as `evicted`. Otherwise (spent or half-open) counted as `reclaimed`.
    pub fn evicts(&self) -> bool {
        matches!(self.kind, Kind::Connection | Kind::Sending)
    }

    /// Taking the socket may reset a peer that believes it is connected: an idle
    /// connection, or a half-open one our SYN-ACK answered (counted as `reclaimed_answered`
    /// when reclaimed).
    pub fn answered(&self) -> bool {
        matches!(self.kind, Kind::Connection | Kind::Sending | Kind::Answered)
    }
}

/// What the choice knows of `socket`, whose connection last made progress at
/// `last_progress` and whose SYN-ACK left at `answered` (if it did): None when it listens;
/// otherwise what the connection would lose ([`Kind`]) — nothing when closed or closing with
/// nothing of ours left unacknowledged, its handshake when half-open (answered or not), its
/// data otherwise: [`Kind::Sending`] while bytes of ours are unacknowledged (also when
/// closing while the tail of a download is), else [`Kind::Connection`].
pub fn candidate<T: Copy>(
    socket: &impl TcpOps,
    last_progress: Option<T>,
    answered: Option<T>,
) -> Option<Candidate<T>> {
    use TcpState::*;
    let (kind, last_progress) = match socket.state() {
        Listen => return None,
        Closed | TimeWait => (Kind::Spent, last_progress),
        // Over IPv6 no SYN-ACK is watched (`crate::rules::syn_ack` reads IPv4): taken as
        // answered when first seen, so such a client is never reset by mistake.
        SynReceived | SynSent => {
            match answered.or(last_progress.filter(|_| socket.remote_is_ipv6())) {
                Some(t) => (Kind::Answered, Some(t)),
                None => (Kind::Unanswered, last_progress),
            }
        }
        Established if socket.queues().1 == 0 => (Kind::Connection, last_progress),
        Established => (Kind::Sending, last_progress),
        FinWait1 | FinWait2 | Closing | LastAck | CloseWait if socket.queues().1 == 0 => {
            (Kind::Spent, last_progress)
        }
        FinWait1 | FinWait2 | Closing | LastAck | CloseWait => (Kind::Sending, last_progress),
    };
    Some(Candidate {
        kind,
        last_progress,
    })
}

/// True when `socket` is half-open (SYN received) with `peer`: the connection a SYN-ACK to
/// `peer` answered.
pub fn half_open_to(socket: &impl TcpOps, peer: Peer) -> bool {
    socket.state() == TcpState::SynReceived && socket.peer() == Some(peer)
}

/// What to do with a SYN that found every socket of its service busy ([`choose`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Choice<T> {
    /// Free this socket for it (its index in the candidates' order, and what was known of
    /// it).
    Take(usize, Candidate<T>),
    /// Drop the SYN unanswered: a handshake our SYN-ACK answered within the grace may be
    /// completing, and taking its socket would reset a client that believes it is
    /// connected; or a connection quiet for the grace may be waiting for our retransmission
    /// ([`Kind::Sending`]). The new client sends its SYN again (Linux after 1 s, RFC 6298's
    /// initial RTO) and finds room then, when the handshake completed or went stale, or the
    /// connection moved again or stayed quiet for twice the grace.
    Defer,
    /// Nothing may go: every connection made progress within the grace (or the build has
    /// no eviction). The SYN is dropped unanswered too, never answered with a RST: its client
    /// waits — lwIP drops a SYN it has no PCB for (`tcp_listen_input`), Linux queues it in
    /// the listen backlog — sends it again (1, 3, 7 … s after the first) and is served when
    /// a connection ends.
    Busy,
}

/// The socket to free for a new client (see [`Choice`]): a spent one, else a connection
/// that made no progress for `grace` at `now` (twice `grace` with bytes of ours
/// unacknowledged, [`Kind::Sending`]), else an unanswered half-open one, else an
/// answered half-open one whose SYN-ACK left `grace` ago with no answer — of a kind, the one
/// idle longest (an unanswered half-open one never looked at yet, whose SYN came in this
/// batch, as the youngest, so a real client's fresh SYN does not go to the next spoofed one
/// of the same batch). Entries are `None` for sockets that may not be taken (listening, or
/// protected, e.g. a running iperf3 test). When nothing may be taken: [`Choice::Defer`] if a
/// handshake answered within the grace may be completing or a sending connection quiet for
/// the grace may be waiting for our retransmission, else [`Choice::Busy`]. Always
/// [`Choice::Busy`] in a build without feature `evict`, which then links none of this.
pub fn choose<T, D>(
    candidates: impl IntoIterator<Item = Option<Candidate<T>>>,
    now: T,
    grace: D,
) -> Choice<T>
where
    T: Copy + Ord + Add<D, Output = T>,
    D: Copy,
{
    if !cfg!(feature = "evict") {
        return Choice::Busy;
    }
    let mut may_resume = false;
    let mut best: Option<(usize, Candidate<T>)> = None;
    for (i, c) in candidates.into_iter().enumerate() {
        let Some(c) = c else { continue };
        // Progress within the grace, and within twice the grace.
        let fresh = c.last_progress.is_some_and(|t| now < t + grace);
        let recent = c.last_progress.is_some_and(|t| now < t + grace + grace);
        let waits = match c.kind {
            Kind::Spent | Kind::Unanswered => false,
            Kind::Connection | Kind::Answered => fresh,
            Kind::Sending => recent,
        };
        if waits {
            may_resume |= c.kind == Kind::Answered || (c.kind == Kind::Sending && !fresh);
            continue;
        }
        // Of a kind, the one idle longest; an unanswered one never looked at yet loses a tie.
        let key = |c: &Candidate<T>| {
            let unseen = c.unseen_since(now);
            (
                c.kind,
                c.last_progress.or(unseen),
                unseen.is_some() && c.last_progress.is_none(),
            )
        };
        if best.as_ref().is_none_or(|(_, b)| key(&c) < key(b)) {
            best = Some((i, c));
        }
    }
    match best {
        Some((i, c)) => Choice::Take(i, c),
        None if may_resume => Choice::Defer,
        None => Choice::Busy,
    }
}

impl<T> Candidate<T> {
    /// When a candidate never seen making progress counts as having made it: an unanswered
    /// half-open one became half-open since the last look (a SYN of the frames being taken
    /// in), so it is the youngest, not the oldest. A connection, as long ago.
    fn unseen_since(&self, now: T) -> Option<T> {
        (self.kind == Kind::Unanswered).then_some(now)
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
    answered: Option<T>,
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
            answered: None,
        }
    }

    /// When the watched connection last made progress (None: no connection watched).
    pub fn last(&self) -> Option<T> {
        self.last
    }

    /// When our SYN-ACK to the watched connection's peer first left (None: not yet, or no
    /// connection watched); see [`candidate`].
    pub fn answered(&self) -> Option<T> {
        self.answered
    }

    /// Our SYN-ACK to the watched connection's peer left at `now` (only the first counts).
    pub fn note_answered(&mut self, now: T) {
        self.answered.get_or_insert(now);
    }

    /// What the choice knows of `socket`, the watched one ([`candidate`] with what this
    /// watch saw).
    pub fn candidate(&self, socket: &impl TcpOps) -> Option<Candidate<T>> {
        candidate(socket, self.last, self.answered)
    }

    /// Forgets the connection (it ended, or its socket was taken for a new one).
    pub fn forget(&mut self) {
        self.last = None;
        self.seen = None;
        self.answered = None;
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

    /// A look right before a choice ([`choose`]): progress that came in since the last
    /// [`observe`](Self::observe) counts, but a half-open connection this watch has not
    /// seen yet stays unseen, so it counts as the youngest (its SYN came in the batch being
    /// taken in, after every one seen before, even within the same instant).
    pub fn refresh(&mut self, look: Option<Look>, now: T) {
        let new_handshake = self.seen.is_none()
            && look.is_some_and(|l| matches!(l.state, TcpState::SynReceived | TcpState::SynSent));
        if !new_handshake {
            self.observe(look, now);
        }
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
mod tests;
