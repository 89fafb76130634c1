//! The iperf servers' one data memory: a region of bytes lent in slices to the sockets that
//! carry a test's data (a TCP stream's window and send buffer, a UDP socket's datagrams),
//! and taken back when those sockets are dropped. iperf3 (port 5201) and iperf 2 (5001) never
//! carry a test at the same time: the first to claim the memory for a test holds it until
//! its test ends ([`DataMemory::claim`]), and the other's client is told the server is busy.
//! Between tests iperf 2 keeps a listening TCP socket and a bound UDP socket over idle
//! slices (its clients' first segment or datagram needs somewhere to land); a claim by
//! iperf3 asks it to give them back first ([`DataMemory::must_yield`]).
//!
//! A stack's socket keeps the buffers it was made with for its whole life and gives no way to
//! take them back, so the slices are kept as offsets and lent again only after the socket
//! that had them was dropped (the caller's promise, [`DataMemory::give_back`]). Slices are
//! lent first fit, each a whole number of words (the region starts on one), so a receive
//! buffer lent here keeps the iperf servers' reads on a word.
//!
//! How a test's streams share the memory: [`stream_share`].

use core::marker::PhantomData;
use core::ptr::NonNull;

/// The TCP payload of a full-size Ethernet frame (1500 − 20 − 20).
pub const ETHERNET_MSS: usize = 1460;

/// The smallest receive buffer of an iperf socket: two segments. A peer's Linux sizes the
/// segments it sends (and reports as `TCP_MAXSEG`) by the largest window we offered: at
/// most half of it, the whole of it under 536 bytes (`tcp_bound_to_half_wnd`). A socket
/// that offers less than two segments makes the peer send short ones, and a stock iperf3
/// client, which sizes its UDP datagrams by its control connection's `TCP_MAXSEG`, then
/// sends 512-byte datagrams and warns that `-l 1000` "exceeds TCP MSS 512".
pub const MIN_RX: usize = 2 * ETHERNET_MSS;

/// Who a slice or a test belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Tenant {
    /// The iperf3 server.
    Iperf3,
    /// The iperf 2 server.
    Iperf2,
}

/// One slice lent.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Slice {
    start: usize,
    len: usize,
    tenant: Tenant,
    /// Lent to a socket that only waits for a client (given back when the other tenant
    /// claims the memory).
    idle: bool,
}

/// A region of bytes lent in slices, at most `K` at once (see the module docs).
pub struct DataMemory<'a, const K: usize = 8> {
    base: NonNull<u8>,
    len: usize,
    slices: [Option<Slice>; K],
    test: Option<Tenant>,
    _borrow: PhantomData<&'a mut [u8]>,
}

// SAFETY: the memory is an exclusive borrow of its region (`&'a mut [u8]` is Send), kept as
// a pointer only so that slices of it can be lent out again after being given back.
unsafe impl<const K: usize> Send for DataMemory<'_, K> {}

/// `n` rounded up to a whole number of words.
const fn words(n: usize) -> usize {
    n.saturating_add(3) & !3
}

impl<'a, const K: usize> DataMemory<'a, K> {
    /// Takes `region` to lend it out (its first bytes up to a word boundary, and its last
    /// ones past the last whole word, are left unused).
    pub fn new(region: &'a mut [u8]) -> Self {
        let skip = region.as_ptr().align_offset(4).min(region.len());
        let region = &mut region[skip..];
        let len = region.len() & !3;
        DataMemory {
            base: NonNull::from(region).cast::<u8>(),
            len,
            slices: [None; K],
            test: None,
            _borrow: PhantomData,
        }
    }

    /// The bytes it lends out, lent or not.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when it has nothing to lend.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where free runs start: the region's start and each lent slice's end.
    fn run_starts(&self) -> impl Iterator<Item = usize> + '_ {
        core::iter::once(0).chain(self.slices.iter().flatten().map(|s| s.start + s.len))
    }

    /// The free bytes from `at` on, up to the next lent slice or the region's end (0 when a
    /// slice covers `at`).
    fn free_from(&self, at: usize) -> usize {
        let mut end = self.len;
        for s in self.slices.iter().flatten() {
            if s.start <= at && at < s.start + s.len {
                return 0;
            }
            if s.start >= at {
                end = end.min(s.start);
            }
        }
        end.saturating_sub(at)
    }

    /// The start of the first free run of `len` bytes, if any (lowest address first).
    fn first_fit(&self, len: usize) -> Option<usize> {
        self.run_starts()
            .filter(|&at| self.free_from(at) >= len)
            .min()
    }

    /// The longest run of free bytes.
    pub fn largest_free(&self) -> usize {
        self.run_starts()
            .map(|at| self.free_from(at))
            .max()
            .unwrap_or(0)
    }

    /// Lends `len` bytes (rounded up to a word; at least one word) to `tenant`: the slice's
    /// number (for [`give_back`](Self::give_back)) and the slice. `idle` marks a slice for a
    /// socket that only waits for a client. None when no free run is that long, every slice
    /// record is in use, or the other tenant holds the memory for a test.
    pub fn lend(
        &mut self,
        tenant: Tenant,
        len: usize,
        idle: bool,
    ) -> Option<(usize, &'a mut [u8])> {
        if self.test.is_some_and(|t| t != tenant) {
            return None;
        }
        let len = words(len.max(1));
        let id = self.slices.iter().position(Option::is_none)?;
        let start = self.first_fit(len)?;
        self.slices[id] = Some(Slice {
            start,
            len,
            tenant,
            idle,
        });
        // SAFETY: `start + len <= self.len`, within the region `new` took as `&'a mut [u8]`
        // (whose borrow this memory holds for 'a); no other slice lent overlaps it (first
        // fit among those lent), and a slice given back is no longer used (its contract), so
        // this is the only reference to these bytes.
        let slice = unsafe { core::slice::from_raw_parts_mut(self.base.as_ptr().add(start), len) };
        Some((id, slice))
    }

    /// Lends slice `id` (still lent) again, whole: its bytes for a socket made anew over them
    /// (a fresh slot in the stack's socket set, which keeps per-slot state apart from the
    /// socket's). None when `id` is not lent.
    ///
    /// # Safety
    /// As [`give_back`](Self::give_back): the socket slice `id` was given to has been dropped
    /// and nothing else uses its bytes.
    pub unsafe fn lend_again(&mut self, id: usize) -> Option<&'a mut [u8]> {
        let s = (*self.slices.get(id)?)?;
        // SAFETY: as in `lend`: the slice lies within the region and overlaps no other lent
        // one; the caller's promise makes this the only reference to it.
        Some(unsafe { core::slice::from_raw_parts_mut(self.base.as_ptr().add(s.start), s.len) })
    }

    /// Slice `id` now carries a test (its socket got a client): no longer idle.
    pub fn set_busy(&mut self, id: usize) {
        if let Some(Some(s)) = self.slices.get_mut(id) {
            s.idle = false;
        }
    }

    /// Slice `id`'s socket only waits again (its test is over): idle, given back when the
    /// other tenant claims the memory.
    pub fn set_idle(&mut self, id: usize) {
        if let Some(Some(s)) = self.slices.get_mut(id) {
            s.idle = true;
        }
    }

    /// Takes slice `id` back; its bytes may be lent again.
    ///
    /// # Safety
    /// Nothing may use the slice lent as `id` any more: the socket it was given to has been
    /// dropped (removed from its socket set and not kept), and no other reference to it
    /// remains.
    pub unsafe fn give_back(&mut self, id: usize) {
        if let Some(s) = self.slices.get_mut(id) {
            *s = None;
        }
    }

    /// A test of `tenant` starts: true when the memory is now (or was already) held for it;
    /// false when the other tenant holds it for a test of its own (its client is told the
    /// server is busy). The other tenant's idle slices are then to be given back
    /// ([`must_yield`](Self::must_yield)).
    pub fn claim(&mut self, tenant: Tenant) -> bool {
        match self.test {
            Some(t) => t == tenant,
            None => {
                self.test = Some(tenant);
                true
            }
        }
    }

    /// `tenant`'s test is over: the memory is free for the next claim (slices still lent stay
    /// lent until given back).
    pub fn unclaim(&mut self, tenant: Tenant) {
        if self.test == Some(tenant) {
            self.test = None;
        }
    }

    /// Who holds the memory for a test, if anyone.
    pub fn holder(&self) -> Option<Tenant> {
        self.test
    }

    /// True when `tenant` holds idle slices while the other holds the memory for a test:
    /// its waiting sockets are to be dropped and their slices given back.
    pub fn must_yield(&self, tenant: Tenant) -> bool {
        self.test.is_some_and(|t| t != tenant)
            && self
                .slices
                .iter()
                .flatten()
                .any(|s| s.tenant == tenant && s.idle)
    }

    /// Bytes lent to `tenant` now.
    pub fn lent_to(&self, tenant: Tenant) -> usize {
        self.slices
            .iter()
            .flatten()
            .filter(|s| s.tenant == tenant)
            .map(|s| s.len)
            .sum()
    }
}

/// The receive and send buffers of one data socket, lent together as one slice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct Share {
    /// Receive buffer: the window.
    pub rx: usize,
    /// Send buffer: what a sending stream keeps in flight.
    pub tx: usize,
}

impl Share {
    /// The slice's length.
    pub fn len(&self) -> usize {
        self.rx + self.tx
    }

    /// True for an empty share.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// How a data memory is shared by a server's streams: its bytes and what one stream gets
/// when the memory allows (a TCP window and send buffer: one "chunk"); a UDP socket gets a
/// chunk too, its first `udp_rx` bytes for the datagrams it receives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub struct DataPlan {
    /// The memory's bytes.
    pub bytes: usize,
    /// A receiving stream's window (whole segments).
    pub window: usize,
    /// A sending stream's send buffer.
    pub tx: usize,
    /// The UDP socket's receive bytes.
    pub udp_rx: usize,
    /// Bytes each stream's slice takes beyond its share (the embassy adapter starts a
    /// receive ring 3 bytes in: 4).
    pub per_stream: usize,
}

impl DataPlan {
    /// The share of each of `streams` TCP streams ([`stream_share`] of the memory less what
    /// each slice takes beyond its share).
    pub fn stream_share(&self, streams: usize, receives: bool, sends: bool) -> Option<Share> {
        let bytes = self.bytes.saturating_sub(self.per_stream * streams.max(1));
        stream_share(bytes, streams, receives, sends, self.window, self.tx)
    }

    /// The UDP socket's share: `udp_rx` bytes received and a send buffer (within the
    /// memory).
    pub fn udp_share(&self) -> Share {
        let rx = self.udp_rx.min(self.bytes);
        Share {
            rx,
            tx: self.tx.min(self.bytes - rx),
        }
    }
}

/// What a test's data sockets get of `memory` bytes when it carries `streams` TCP streams
/// (the directions they carry: data `receives` from the client, `sends` to it; both for
/// `--bidir`, where a socket's direction is known only once its stream connects, and half
/// the streams receive).
///
/// `window` is what the device's receive path holds (the RX queue's window): the streams
/// that receive at once share it, whole segments each and never under [`MIN_RX`], so their
/// windows together do not overrun the queue — three streams with a window each once
/// overran mps2-an385's queue and its NIC's FIFO, and a stream whose first segments were
/// dropped waited out its retransmission timer. (Past `window / MIN_RX` receiving streams
/// the floor wins: each keeps [`MIN_RX`].) A sending stream gets `tx` to send. Each stream
/// gets that where the memory allows, else an equal part of the memory, shared between
/// window and send buffer in the proportion the directions need. None when the memory
/// cannot give each stream [`MIN_RX`] and, for a sending stream, a segment to send.
pub fn stream_share(
    memory: usize,
    streams: usize,
    receives: bool,
    sends: bool,
    window: usize,
    tx: usize,
) -> Option<Share> {
    let budget = (memory / streams.max(1)) & !3;
    let want = Share {
        rx: if receives {
            receive_window(window, receiving_streams(streams, sends))
        } else {
            MIN_RX
        },
        tx: if sends { tx } else { 0 },
    };
    if want.len() <= budget {
        return Some(want);
    }
    let least = MIN_RX + if sends { ETHERNET_MSS } else { 0 };
    if budget < least {
        return None;
    }
    // A window of whole segments in the proportion wanted, at least MIN_RX, leaving a
    // sending stream at least a segment.
    let rx = (budget as u64 * want.rx as u64 / want.len() as u64) as usize;
    let rx = (rx / ETHERNET_MSS * ETHERNET_MSS).clamp(MIN_RX, budget - least + MIN_RX);
    let tx = if sends { budget - rx } else { 0 };
    Some(Share { rx, tx })
}

/// How many of a test's `streams` receive at once: all of them, or half (rounded up) of a
/// test whose streams also send (`--bidir`: each direction has its own streams).
fn receiving_streams(streams: usize, sends: bool) -> usize {
    if sends {
        streams.div_ceil(2).max(1)
    } else {
        streams.max(1)
    }
}

/// One receiving stream's window when `receivers` streams share the receive path's
/// `window`: whole segments, at least [`MIN_RX`].
fn receive_window(window: usize, receivers: usize) -> usize {
    (window / receivers / ETHERNET_MSS * ETHERNET_MSS).max(MIN_RX)
}

/// The data memory as the smoltcp adapters lend it (feature `smoltcp`): the bytes, and the
/// UDP socket's datagram records (received, sent), lent with a slice to whichever server's
/// UDP socket carries a test or waits for one.
#[cfg(feature = "smoltcp")]
pub struct SmoltcpDataMemory<'a> {
    /// The bytes.
    pub bytes: DataMemory<'a>,
    /// The UDP records: two arrays, received and sent.
    #[cfg(feature = "udp")]
    pub udp_meta: crate::lend::Lender<'a, smoltcp::socket::udp::PacketMetadata, 2>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[repr(align(4))]
    struct Region([u8; 64]);

    #[test]
    fn slices_are_lent_first_fit_on_words_and_never_overlap() {
        let mut r = Region([0; 64]);
        let mut m: DataMemory<'_, 4> = DataMemory::new(&mut r.0);
        assert_eq!(m.len(), 64);
        let (a, sa) = m.lend(Tenant::Iperf3, 10, false).unwrap();
        assert_eq!(sa.len(), 12);
        let pa = sa.as_ptr() as usize;
        let (b, sb) = m.lend(Tenant::Iperf3, 20, false).unwrap();
        assert_eq!(sb.as_ptr() as usize, pa + 12);
        assert_eq!(m.largest_free(), 32);
        assert!(m.lend(Tenant::Iperf3, 33, false).is_none());
        // SAFETY: `sa` is not used after this.
        unsafe { m.give_back(a) };
        assert_eq!(m.largest_free(), 32);
        // The gap at the start fits 12 bytes again; a longer slice goes after `b`.
        let (_, s) = m.lend(Tenant::Iperf3, 16, false).unwrap();
        assert_eq!(s.as_ptr() as usize, pa + 32);
        let (_, s) = m.lend(Tenant::Iperf3, 12, false).unwrap();
        assert_eq!(s.as_ptr() as usize, pa);
        // SAFETY: `sb` is not used after this.
        unsafe { m.give_back(b) };
        assert_eq!(m.largest_free(), 20);
    }

    #[test]
    fn a_slice_lent_again_is_the_same_bytes_and_only_while_lent() {
        let mut r = Region([0; 64]);
        let mut m: DataMemory<'_, 4> = DataMemory::new(&mut r.0);
        let (a, sa) = m.lend(Tenant::Iperf3, 10, false).unwrap();
        sa[0] = 7;
        let (pa, la) = (sa.as_ptr() as usize, sa.len());
        // SAFETY: `sa` is not used after this.
        let again = unsafe { m.lend_again(a) }.unwrap();
        assert_eq!(
            (again.as_ptr() as usize, again.len(), again[0]),
            (pa, la, 7)
        );
        // Still lent: first fit goes past it.
        let (_, sb) = m.lend(Tenant::Iperf3, 4, false).unwrap();
        assert_eq!(sb.as_ptr() as usize, pa + 12);
        // SAFETY: `again` is not used after this.
        unsafe { m.give_back(a) };
        // SAFETY: nothing is lent as `a`.
        assert!(unsafe { m.lend_again(a) }.is_none());
        // SAFETY: no slice has this number.
        assert!(unsafe { m.lend_again(9) }.is_none());
    }

    #[test]
    fn a_slice_record_per_slice() {
        let mut r = Region([0; 64]);
        let mut m: DataMemory<'_, 2> = DataMemory::new(&mut r.0);
        assert!(m.lend(Tenant::Iperf2, 4, true).is_some());
        assert!(m.lend(Tenant::Iperf2, 4, true).is_some());
        assert!(m.lend(Tenant::Iperf2, 4, true).is_none());
    }

    #[test]
    fn an_unaligned_region_starts_on_a_word() {
        let mut r = Region([0; 64]);
        let mut m: DataMemory<'_, 2> = DataMemory::new(&mut r.0[1..63]);
        assert_eq!(m.len(), 56);
        let (_, s) = m.lend(Tenant::Iperf3, 4, false).unwrap();
        assert_eq!(s.as_ptr() as usize % 4, 0);
    }

    #[test]
    fn one_test_at_a_time_and_idle_slices_yield() {
        let mut r = Region([0; 64]);
        let mut m: DataMemory<'_, 4> = DataMemory::new(&mut r.0);
        let (listener, _) = m.lend(Tenant::Iperf2, 16, true).unwrap();
        assert!(!m.must_yield(Tenant::Iperf2));
        assert!(m.claim(Tenant::Iperf3));
        assert!(m.must_yield(Tenant::Iperf2));
        assert!(!m.claim(Tenant::Iperf2));
        assert!(m.lend(Tenant::Iperf2, 4, true).is_none());
        // SAFETY: the slice is not used after this.
        unsafe { m.give_back(listener) };
        assert!(!m.must_yield(Tenant::Iperf2));
        assert!(m.lend(Tenant::Iperf3, 64, false).is_some());
        m.unclaim(Tenant::Iperf2);
        assert_eq!(m.holder(), Some(Tenant::Iperf3));
        m.unclaim(Tenant::Iperf3);
        assert_eq!(m.holder(), None);
        // A listener that got its client holds the memory for its test.
        let mut r = Region([0; 64]);
        let mut m: DataMemory<'_, 4> = DataMemory::new(&mut r.0);
        let (l, _) = m.lend(Tenant::Iperf2, 16, true).unwrap();
        m.set_busy(l);
        assert!(m.claim(Tenant::Iperf2));
        assert!(!m.claim(Tenant::Iperf3));
        assert_eq!(m.lent_to(Tenant::Iperf2), 16);
    }

    /// The full images' data memory: two streams of a 6-segment window and 2 segments to
    /// send (23 360 bytes).
    const FULL: usize = 2 * (6 * ETHERNET_MSS + 2 * ETHERNET_MSS);
    const W: usize = 6 * ETHERNET_MSS;
    const T: usize = 2 * ETHERNET_MSS;

    #[test]
    fn one_stream_each_way_gets_what_the_image_was_sized_for() {
        let s = stream_share(FULL, 1, true, false, W, T).unwrap();
        assert_eq!(s, Share { rx: W, tx: 0 });
        let s = stream_share(FULL, 1, false, true, W, T).unwrap();
        assert_eq!(s, Share { rx: MIN_RX, tx: T });
        // --bidir: two sockets, one receiving: the whole window and the send buffer.
        let s = stream_share(FULL, 2, true, true, W, T).unwrap();
        assert_eq!(s, Share { rx: W, tx: T });
    }

    /// The regression of a fresh clone's check: stock iperf3 `-P 3` to mps2-an385's image
    /// got three windows of five segments (15 segments in flight into a queue whose window
    /// is six), and a stream whose first segments were dropped sent nothing for its 1 s.
    #[test]
    fn streams_that_receive_at_once_share_the_receive_paths_window() {
        // -P 2 and -P 3: three and two segments each, six in all.
        let s = stream_share(FULL, 2, true, false, W, T).unwrap();
        assert_eq!(s.rx, 3 * ETHERNET_MSS);
        let s = stream_share(FULL, 3, true, false, W, T).unwrap();
        assert_eq!(
            s,
            Share {
                rx: 2 * ETHERNET_MSS,
                tx: 0
            }
        );
        // -P 3 -R: nothing received but the ACKs; each stream sends from its buffer.
        let s = stream_share(FULL, 3, false, true, W, T).unwrap();
        assert_eq!(s, Share { rx: MIN_RX, tx: T });
        // -P 2 --bidir: four sockets of 5 840, two of them receiving: the window's half
        // each where the memory allows, and a segment or more to send.
        let s = stream_share(FULL, 4, true, true, W, T).unwrap();
        assert_eq!(
            s,
            Share {
                rx: 2 * ETHERNET_MSS,
                tx: 2 * ETHERNET_MSS
            }
        );
        // Every count of receiving streams up to W / MIN_RX stays within the window; past
        // it, each keeps MIN_RX.
        for streams in 1..=8_usize {
            for (rx, tx, receivers) in [(true, false, streams), (true, true, streams.div_ceil(2))] {
                // (Past the memory's streams: more_streams_share_the_memory.)
                let Some(s) = stream_share(FULL, streams, rx, tx, W, T) else {
                    assert!(tx && streams > 4, "{streams} {rx} {tx}");
                    continue;
                };
                if receivers <= W / MIN_RX {
                    assert!(s.rx * receivers <= W, "{streams} {rx} {tx}: {s:?}");
                } else {
                    assert_eq!(s.rx, MIN_RX, "{streams} {rx} {tx}: {s:?}");
                }
            }
        }
    }

    #[test]
    fn more_streams_share_the_memory() {
        // Down to MIN_RX (and a segment to send) per stream, then no more.
        for streams in 1..=16 {
            for (rx, tx) in [(true, false), (false, true), (true, true)] {
                match stream_share(FULL, streams, rx, tx, W, T) {
                    Some(s) => {
                        assert!(
                            s.rx >= MIN_RX && s.rx % ETHERNET_MSS == 0,
                            "{streams} {s:?}"
                        );
                        assert!(s.len() * streams <= FULL, "{streams} {s:?}");
                        assert!(!tx || s.tx >= ETHERNET_MSS, "{streams} {s:?}");
                    }
                    None => assert!(FULL / streams < MIN_RX + if tx { ETHERNET_MSS } else { 0 }),
                }
            }
        }
        assert!(stream_share(FULL, 8, true, false, W, T).is_some());
        assert!(stream_share(FULL, 9, true, false, W, T).is_none());
    }
}
