//! `embassy::pump` between two shared links over in-memory byte pipes small enough to push
//! back, on the host's clock: frames sent through one end's embassy-net driver arrive whole and
//! in order at the other's, and a transport that ends stops the pump with `Closed`.
#![cfg(feature = "embassy")]

use std::cell::RefCell;
use std::collections::VecDeque;
use std::convert::Infallible;
use std::future::poll_fn;
use std::task::{Poll, Waker};

use embassy_futures::block_on;
use embassy_futures::select::{select, select3, Either};
use embassy_net_driver::{Driver, RxToken, TxToken};
use linklab_serial::embassy::{pump, PumpError, SharedLink};
use linklab_serial::{Config, Link};

/// One direction of a byte stream holding at most `cap` bytes.
struct Pipe {
    bytes: RefCell<VecDeque<u8>>,
    cap: usize,
    /// Set when the writer is gone: the reader then reads 0 bytes (end of stream).
    closed: RefCell<bool>,
    reader: RefCell<Option<Waker>>,
    writer: RefCell<Option<Waker>>,
}

impl Pipe {
    fn new(cap: usize) -> Pipe {
        Pipe {
            bytes: RefCell::new(VecDeque::new()),
            cap,
            closed: RefCell::new(false),
            reader: RefCell::new(None),
            writer: RefCell::new(None),
        }
    }
}

fn wake(slot: &RefCell<Option<Waker>>) {
    if let Some(w) = slot.borrow_mut().take() {
        w.wake();
    }
}

struct Reader<'a>(&'a Pipe);
struct Writer<'a>(&'a Pipe);

impl embedded_io_async::ErrorType for Reader<'_> {
    type Error = Infallible;
}
impl embedded_io_async::ErrorType for Writer<'_> {
    type Error = Infallible;
}

impl embedded_io_async::Read for Reader<'_> {
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, Infallible> {
        poll_fn(|cx| {
            let mut bytes = self.0.bytes.borrow_mut();
            if bytes.is_empty() {
                if *self.0.closed.borrow() {
                    return Poll::Ready(Ok(0));
                }
                *self.0.reader.borrow_mut() = Some(cx.waker().clone());
                return Poll::Pending;
            }
            let n = buf.len().min(bytes.len());
            for (b, x) in buf.iter_mut().zip(bytes.drain(..n)) {
                *b = x;
            }
            wake(&self.0.writer);
            Poll::Ready(Ok(n))
        })
        .await
    }
}

impl embedded_io_async::Write for Writer<'_> {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Infallible> {
        poll_fn(|cx| {
            let mut bytes = self.0.bytes.borrow_mut();
            let room = self.0.cap - bytes.len();
            if room == 0 {
                *self.0.writer.borrow_mut() = Some(cx.waker().clone());
                return Poll::Pending;
            }
            let n = buf.len().min(room);
            bytes.extend(&buf[..n]);
            wake(&self.0.reader);
            Poll::Ready(Ok(n))
        })
        .await
    }

    async fn flush(&mut self) -> Result<(), Infallible> {
        Ok(())
    }
}

fn payload(i: usize) -> Vec<u8> {
    let len = 60 + (i * 97) % 1400;
    (0..len)
        .map(|k| (k as u8).wrapping_mul(31) ^ i as u8)
        .collect()
}

#[test]
fn frames_cross_two_pumps_whole_and_in_order() {
    const FRAMES: usize = 60;
    let config = Config::for_line_rate(1_000_000);
    let a = Box::new(SharedLink::<8>::new(
        Link::new(config, 11),
        [2, 0, 0, 0, 0, 1],
    ));
    let b = Box::new(SharedLink::<8>::new(
        Link::new(config, 22),
        [2, 0, 0, 0, 0, 2],
    ));
    // 300 bytes each way: a frame never fits whole, so every write waits for the far reader.
    let (ab, ba) = (Pipe::new(300), Pipe::new(300));
    let app = async {
        let (mut da, mut db) = (a.driver(), b.driver());
        let (mut sent, mut got) = (0, 0);
        poll_fn(|cx| {
            while sent < FRAMES {
                let Some(tx) = da.transmit(cx) else { break };
                let p = payload(sent);
                tx.consume(p.len(), |buf| buf.copy_from_slice(&p));
                sent += 1;
            }
            while let Some((rx, _)) = db.receive(cx) {
                rx.consume(|buf| assert_eq!(buf, payload(got).as_slice(), "frame {got}"));
                got += 1;
            }
            if got == FRAMES {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await
    };
    let pumps = select(
        pump(&a, Reader(&ba), Writer(&ab)),
        pump(&b, Reader(&ab), Writer(&ba)),
    );
    let deadline = embassy_time::Timer::after_secs(20);
    match block_on(select3(app, pumps, deadline)) {
        embassy_futures::select::Either3::First(()) => {}
        embassy_futures::select::Either3::Second(_) => panic!("a pump stopped"),
        embassy_futures::select::Either3::Third(()) => panic!("not every frame crossed in 20 s"),
    }
    for (name, link) in [("a", &a), ("b", &b)] {
        let c = link.with_link(0, |l| l.counters());
        c.check_conservation()
            .unwrap_or_else(|e| panic!("{name}: {e:?}"));
    }
    assert_eq!(b.with_link(0, |l| l.counters().rx_delivered), FRAMES as u64);
}

#[test]
fn a_transport_that_ends_stops_the_pump_with_closed() {
    let a = SharedLink::<8>::new(Link::new(Config::for_line_rate(1_000_000), 1), [2; 6]);
    let (input, output) = (Pipe::new(64), Pipe::new(1 << 20));
    *input.closed.borrow_mut() = true;
    let stopped = block_on(select(
        pump(&a, Reader(&input), Writer(&output)),
        embassy_time::Timer::after_secs(5),
    ));
    assert!(matches!(stopped, Either::First(PumpError::Closed)));
}
