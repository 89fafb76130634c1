//! embassy support (feature `embassy`): a [`Link`] shared between embassy-net and the task
//! that moves its bytes over a transport (USB-CDC, SPI, a UART).
//!
//! [`SharedLink`] holds the link. [`SharedLink::driver`] is its `embassy_net_driver::Driver`
//! (embassy-net-driver 0.2) for Ethernet frames, zero-copy as the smoltcp device is: a received
//! frame is lent in place in the receive store, a frame to send is built in place in a
//! transmit slot. The transport feeds it the line's bytes ([`SharedLink::handle_input`]) and
//! takes what it has for the line ([`SharedLink::poll_output`], when [`SharedLink::poll_at`]
//! says), or leaves both to [`pump`] when it is an `embedded_io_async` byte stream.
//!
//! Wakers are precise, because a stack's poll is the costly step on a small MCU: embassy-net's
//! task is woken only when a frame becomes ready for it, a transmit slot frees or the link goes
//! up or down — not for every chunk of bytes the transport brings.
//!
//! For the tasks of one executor: the link sits in a `RefCell`, so the driver and the transport
//! run in tasks of the same executor (thread mode), never in an interrupt handler.

use core::cell::{RefCell, RefMut};
use core::future::poll_fn;
use core::task::{Context, Poll, Waker};

use embassy_futures::select::{select, Either};
use embassy_net_driver::{Capabilities, HardwareAddress, LinkState};
use embassy_time::{Instant, Timer};
use embedded_io_async::{Read, Write};

use crate::link::{Link, State};
use crate::rx::RxStore;
use crate::stack::{build_frame, frame_for_stack};
use crate::tx::TxStore;

/// A waker kept until it is woken.
struct WakerSlot(RefCell<Option<Waker>>);

impl WakerSlot {
    const fn new() -> Self {
        WakerSlot(RefCell::new(None))
    }

    fn register(&self, waker: &Waker) {
        let mut slot = self.0.borrow_mut();
        if !slot.as_ref().is_some_and(|w| w.will_wake(waker)) {
            *slot = Some(waker.clone());
        }
    }

    fn wake(&self) {
        let waker = self.0.borrow_mut().take();
        if let Some(w) = waker {
            w.wake();
        }
    }
}

/// What embassy-net's task waits for, read before and after the link changed.
#[derive(Clone, Copy, PartialEq, Eq)]
struct StackView {
    received: bool,
    can_send: bool,
    up: bool,
}

impl StackView {
    fn of<const W: usize>(link: &Link<W>) -> StackView {
        StackView {
            received: link.has_received(),
            can_send: link.can_send(),
            up: link.state() == State::Established,
        }
    }

    /// True when `after` has something `self` had not: the stack's task should look again.
    fn news(self, after: StackView) -> bool {
        (after.received && !self.received)
            || (after.can_send && !self.can_send)
            || after.up != self.up
    }
}

/// A [`Link`] with a window of `W` frames, shared by embassy-net (through
/// [`SharedLink::driver`]) and the task that moves its bytes.
pub struct SharedLink<const W: usize = 8> {
    link: RefCell<Link<W>>,
    mac: [u8; 6],
    /// embassy-net's task.
    stack: WakerSlot,
    /// The transport's task.
    line: WakerSlot,
}

impl<const W: usize> SharedLink<W> {
    /// `link`, carrying Ethernet frames for a stack whose MAC address is `mac`.
    pub const fn new(link: Link<W>, mac: [u8; 6]) -> Self {
        SharedLink {
            link: RefCell::new(link),
            mac,
            stack: WakerSlot::new(),
            line: WakerSlot::new(),
        }
    }

    /// The `embassy_net_driver::Driver` to give `embassy_net::new`.
    pub fn driver(&self) -> LinkDriver<'_, W> {
        LinkDriver { shared: self }
    }

    /// Runs `f` on the link (its counters, its state, a self-test), then wakes whichever side
    /// has something new: the stack for a frame, a free slot or a change of state; the
    /// transport for bytes to send now.
    pub fn with_link<R>(&self, now_us: u64, f: impl FnOnce(&mut Link<W>) -> R) -> R {
        let mut link = self.link.borrow_mut();
        let before = StackView::of(&link);
        let r = f(&mut link);
        let after = StackView::of(&link);
        let due = link.poll_at(now_us).is_some_and(|t| t <= now_us);
        drop(link);
        if before.news(after) {
            self.stack.wake();
        }
        if due {
            self.line.wake();
        }
        r
    }

    /// Feeds bytes received from the line at `now_us` (µs of any monotonic clock).
    pub fn handle_input(&self, now_us: u64, bytes: &[u8]) {
        self.with_link(now_us, |link| link.handle_input(now_us, bytes));
    }

    /// Writes bytes for the line into `out` (as many as fit, possibly 0); returns how many.
    pub fn poll_output(&self, now_us: u64, out: &mut [u8]) -> usize {
        self.with_link(now_us, |link| link.poll_output(now_us, out))
    }

    /// When [`SharedLink::poll_output`] has something to send without new input, if ever
    /// (`Some(t <= now_us)`: now).
    pub fn poll_at(&self, now_us: u64) -> Option<u64> {
        self.link.borrow().poll_at(now_us)
    }

    /// Wakes `waker` the next time the stack gives the link a frame or frees a receive slot
    /// (the transport then has bytes to send).
    pub fn register_line(&self, waker: &Waker) {
        self.line.register(waker);
    }
}

/// The `embassy_net_driver::Driver` of a [`SharedLink`].
pub struct LinkDriver<'a, const W: usize> {
    shared: &'a SharedLink<W>,
}

/// A received frame lent to embassy-net in place (its slot and a credit are freed when it is
/// consumed).
pub struct RxToken<'a, const W: usize> {
    rx: RefMut<'a, RxStore<W>>,
    line: &'a WakerSlot,
}

/// Permission to build one frame in a transmit slot.
pub struct TxToken<'a, const W: usize> {
    tx: RefMut<'a, TxStore<W>>,
    line: &'a WakerSlot,
}

impl<const W: usize> embassy_net_driver::RxToken for RxToken<'_, W> {
    fn consume<R, F>(mut self, f: F) -> R
    where
        F: FnOnce(&mut [u8]) -> R,
    {
        let r = f(self.rx.head_payload_mut().unwrap_or(&mut []));
        self.rx.release_head();
        self.line.wake(); // a credit freed: the peer may be waiting for it
        r
    }
}

impl<const W: usize> embassy_net_driver::TxToken for TxToken<'_, W> {
    fn consume<R, F>(mut self, len: usize, f: F) -> R
    where
        F: FnOnce(&mut [u8]) -> R,
    {
        let r = build_frame(&mut self.tx, len, f);
        self.line.wake();
        r
    }
}

impl<const W: usize> embassy_net_driver::Driver for LinkDriver<'_, W> {
    type RxToken<'b>
        = RxToken<'b, W>
    where
        Self: 'b;
    type TxToken<'b>
        = TxToken<'b, W>
    where
        Self: 'b;

    fn receive(&mut self, cx: &mut Context) -> Option<(RxToken<'_, W>, TxToken<'_, W>)> {
        let s = self.shared;
        s.stack.register(cx.waker());
        let mut link = s.link.try_borrow_mut().ok()?;
        let (rx, tx, _) = link.stores();
        if !frame_for_stack(rx, tx) {
            return None;
        }
        let (rx, tx) = RefMut::map_split(link, |l| {
            let (rx, tx, _) = l.stores();
            (rx, tx)
        });
        Some((RxToken { rx, line: &s.line }, TxToken { tx, line: &s.line }))
    }

    fn transmit(&mut self, cx: &mut Context) -> Option<TxToken<'_, W>> {
        let s = self.shared;
        s.stack.register(cx.waker());
        let link = s.link.try_borrow_mut().ok()?;
        if !link.can_send() {
            return None;
        }
        let tx = RefMut::map(link, |l| l.stores().1);
        Some(TxToken { tx, line: &s.line })
    }

    fn link_state(&mut self, cx: &mut Context) -> LinkState {
        let s = self.shared;
        s.stack.register(cx.waker());
        match s.link.try_borrow().map(|l| l.state()) {
            Ok(State::Established) => LinkState::Up,
            _ => LinkState::Down,
        }
    }

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::default();
        caps.max_transmission_unit = self.shared.link.try_borrow().map_or(0, |l| l.mtu());
        caps.max_burst_size = Some(W);
        caps
    }

    fn hardware_address(&self) -> HardwareAddress {
        HardwareAddress::Ethernet(self.shared.mac)
    }
}

/// Why [`pump`] stopped.
#[derive(Debug, PartialEq, Eq)]
pub enum PumpError<R, T> {
    /// Reading from the transport failed.
    Read(R),
    /// The transport's read side ended (a read returned 0 bytes).
    Closed,
    /// Writing to the transport failed.
    Write(T),
}

/// Bytes read from the transport at a time.
const READ_CHUNK: usize = 256;
/// Bytes handed to the transport at a time: 8 full-speed USB packets.
const WRITE_CHUNK: usize = 512;

fn now_us() -> u64 {
    Instant::now().as_micros()
}

/// Moves the link's bytes over a byte stream until it fails: what `rx` reads goes to the link,
/// what the link has for the line goes to `tx` (flushed whenever the link has nothing more
/// to say), and the link's timers (retransmission, handshake) run on embassy-time. Run it
/// in its own task beside embassy-net's; start it again after a transport error (a USB host
/// that went away) — the link's epochs tell both ends whether the other restarted.
pub async fn pump<const W: usize, R: Read, T: Write>(
    link: &SharedLink<W>,
    mut rx: R,
    mut tx: T,
) -> PumpError<R::Error, T::Error> {
    let read = async {
        let mut buf = [0u8; READ_CHUNK];
        loop {
            match rx.read(&mut buf).await {
                Ok(0) => return PumpError::Closed,
                Ok(n) => link.handle_input(now_us(), &buf[..n]),
                Err(e) => return PumpError::Read(e),
            }
        }
    };
    let write = async {
        let mut buf = [0u8; WRITE_CHUNK];
        loop {
            let n = link.poll_output(now_us(), &mut buf);
            if n > 0 {
                if let Err(e) = tx.write_all(&buf[..n]).await {
                    return PumpError::Write(e);
                }
                continue;
            }
            if let Err(e) = tx.flush().await {
                return PumpError::Write(e);
            }
            idle(link).await;
        }
    };
    match select(read, write).await {
        Either::First(e) | Either::Second(e) => e,
    }
}

/// Waits until the link has bytes for the line: its timer, or the stack's frame or freed slot.
async fn idle<const W: usize>(link: &SharedLink<W>) {
    let woken = poll_fn(|cx| {
        link.register_line(cx.waker());
        let now = now_us();
        match link.poll_at(now) {
            Some(t) if t <= now => Poll::Ready(()),
            _ => Poll::Pending,
        }
    });
    match link.poll_at(now_us()) {
        Some(at) => {
            select(woken, Timer::at(Instant::from_micros(at))).await;
        }
        None => woken.await,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::link::Config;
    use core::task::{RawWaker, RawWakerVTable};
    use embassy_net_driver::{Driver, RxToken as _, TxToken as _};
    use std::boxed::Box;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    /// A waker that counts its wakes.
    fn counting_waker(count: &Arc<AtomicUsize>) -> Waker {
        fn clone(p: *const ()) -> RawWaker {
            // SAFETY: `p` came from `Arc::into_raw` below; the clone takes one more count.
            unsafe { Arc::increment_strong_count(p as *const AtomicUsize) };
            RawWaker::new(p, &VTABLE)
        }
        fn wake(p: *const ()) {
            wake_by_ref(p);
            drop_waker(p);
        }
        fn wake_by_ref(p: *const ()) {
            // SAFETY: `p` is a live `Arc<AtomicUsize>` (see `clone`).
            unsafe { &*(p as *const AtomicUsize) }.fetch_add(1, Ordering::Relaxed);
        }
        fn drop_waker(p: *const ()) {
            // SAFETY: releases the count `clone` (or `counting_waker`) took.
            unsafe { Arc::decrement_strong_count(p as *const AtomicUsize) };
        }
        static VTABLE: RawWakerVTable = RawWakerVTable::new(clone, wake, wake_by_ref, drop_waker);
        let p = Arc::into_raw(count.clone()) as *const ();
        // SAFETY: the vtable keeps the Arc's count balanced.
        unsafe { Waker::from_raw(RawWaker::new(p, &VTABLE)) }
    }

    /// Moves bytes both ways between two shared links until neither has anything to say.
    fn exchange(a: &SharedLink, b: &SharedLink, now: u64) {
        let mut buf = [0u8; 4096];
        for _ in 0..8 {
            let n = a.poll_output(now, &mut buf);
            b.handle_input(now, &buf[..n]);
            let m = b.poll_output(now, &mut buf);
            a.handle_input(now, &buf[..m]);
            if n == 0 && m == 0 {
                return;
            }
        }
    }

    fn pair() -> (Box<SharedLink>, Box<SharedLink>) {
        let config = Config::for_line_rate(1_000_000);
        let a = Box::new(SharedLink::new(Link::new(config, 1), [2, 0, 0, 0, 0, 1]));
        let b = Box::new(SharedLink::new(Link::new(config, 2), [2, 0, 0, 0, 0, 2]));
        (a, b)
    }

    #[test]
    fn frames_cross_through_the_driver_and_the_stack_is_woken_once_per_frame() {
        let (a, b) = pair();
        let wakes = Arc::new(AtomicUsize::new(0));
        let waker = counting_waker(&wakes);
        let mut cx = Context::from_waker(&waker);
        let (mut da, mut db) = (a.driver(), b.driver());
        assert!(db.link_state(&mut cx) == LinkState::Down);
        exchange(&a, &b, 0);
        assert!(db.link_state(&mut cx) == LinkState::Up);
        assert_eq!(
            da.hardware_address(),
            HardwareAddress::Ethernet([2, 0, 0, 0, 0, 1])
        );
        assert_eq!(db.capabilities().max_transmission_unit, crate::MAX_PAYLOAD);

        for i in 0..3u8 {
            let tx = da.transmit(&mut cx).expect("a free slot");
            tx.consume(60, |buf| buf.fill(i));
        }
        assert!(db.receive(&mut cx).is_none(), "nothing has crossed yet");
        let before = wakes.load(Ordering::Relaxed);
        exchange(&a, &b, 10);
        assert!(
            wakes.load(Ordering::Relaxed) > before,
            "the stack was woken for the frames"
        );
        for i in 0..3u8 {
            let (rx, _tx) = db.receive(&mut cx).expect("a frame");
            rx.consume(|buf| assert_eq!(buf, [i; 60].as_slice()));
        }
        assert!(db.receive(&mut cx).is_none());
        exchange(&a, &b, 20);
        a.with_link(30, |l| l.counters().check_conservation())
            .unwrap();
        b.with_link(30, |l| l.counters().check_conservation())
            .unwrap();
        assert_eq!(b.with_link(30, |l| l.counters().rx_delivered), 3);
    }

    #[test]
    fn input_that_brings_nothing_for_the_stack_does_not_wake_it() {
        let (a, b) = pair();
        exchange(&a, &b, 0);
        let wakes = Arc::new(AtomicUsize::new(0));
        let waker = counting_waker(&wakes);
        let mut cx = Context::from_waker(&waker);
        let mut db = b.driver();
        assert!(db.receive(&mut cx).is_none());
        // Half of a frame: no frame is ready yet.
        let mut da = a.driver();
        da.transmit(&mut cx)
            .unwrap()
            .consume(200, |buf| buf.fill(7));
        let mut wire = [0u8; 4096];
        let n = a.poll_output(1, &mut wire);
        let before = wakes.load(Ordering::Relaxed);
        b.handle_input(1, &wire[..n / 2]);
        assert_eq!(
            wakes.load(Ordering::Relaxed),
            before,
            "woken for half a frame"
        );
        b.handle_input(1, &wire[n / 2..n]);
        assert_eq!(
            wakes.load(Ordering::Relaxed),
            before + 1,
            "woken once for the frame"
        );
    }

    #[test]
    fn transmit_gives_no_token_once_the_window_is_full() {
        let (a, b) = pair();
        exchange(&a, &b, 0);
        let waker = counting_waker(&Arc::new(AtomicUsize::new(0)));
        let mut cx = Context::from_waker(&waker);
        let mut da = a.driver();
        let mut sent = 0;
        while let Some(tx) = da.transmit(&mut cx) {
            tx.consume(100, |buf| buf.fill(1));
            sent += 1;
        }
        assert_eq!(sent, 8, "the window's slots");
        let c = a.with_link(0, |l| l.counters());
        assert_eq!((c.tx_requests, c.tx_dropped), (8, 0));
        c.check_conservation().unwrap();
    }
}
