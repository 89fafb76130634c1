//! The serial flavour of the device (feature `serial`): no NIC — Ethernet frames travel over
//! linklab-serial's reliable link on one of the board's UARTs, and smoltcp runs over the
//! link as its `Device`, with the same apps as every other linklab device. The host end is
//! `linklab serial --tap` (or `linklab emu mps2-an385 --image serial`, which starts it).
//!
//! The board's UART receive interrupt pushes bytes into [`SERIAL_RX`]; the main loop feeds
//! them to the link, runs smoltcp and the apps, and writes the link's output to the UART
//! while it takes bytes.

use core::cell::UnsafeCell;
use core::mem::MaybeUninit;
use core::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};

use linklab_perf::device_config::DeviceConfig;
use linklab_perf::lifetime::NextFrame;
use linklab_perf::slice_writer::SliceWriter;
use linklab_serial::{Config, Link};
use smoltcp::iface::{Config as IfaceConfig, Interface};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

use crate::apps::{device_apps, take_buffers, Apps};
use crate::main_loop::now;
use crate::stats::Rendered;
use crate::Board;

/// The UART's line rate the link assumes (QEMU's UARTs move bytes as fast as the host side
/// takes them; 4 Mbaud is the highest standard rate, so `linklab serial --baud 4000000`).
pub const SERIAL_BAUD: u64 = 4_000_000;

/// Bytes the receive ring holds: more than the link's window of 8 full frames, so the main
/// loop may fall a window behind the interrupt without a byte lost.
const RING: usize = 16 * 1024;

/// A single-producer (the UART interrupt), single-consumer (the main loop) byte ring.
pub struct ByteRing {
    buf: UnsafeCell<[u8; RING]>,
    head: AtomicUsize,
    tail: AtomicUsize,
    /// Bytes dropped because the ring was full (the link recovers them by retransmission).
    pub overruns: AtomicU32,
}

// SAFETY: `push` is only called by the one producer, `pop_into` by the one consumer; each
// slot is written before `head` publishes it and read before `tail` releases it.
unsafe impl Sync for ByteRing {}

impl ByteRing {
    const fn new() -> ByteRing {
        ByteRing {
            buf: UnsafeCell::new([0; RING]),
            head: AtomicUsize::new(0),
            tail: AtomicUsize::new(0),
            overruns: AtomicU32::new(0),
        }
    }

    /// True when no byte waits.
    pub fn is_empty(&self) -> bool {
        self.head.load(Ordering::Acquire) == self.tail.load(Ordering::Acquire)
    }

    /// Adds a byte (the UART interrupt only); counts it lost when the ring is full.
    pub fn push(&self, byte: u8) {
        let head = self.head.load(Ordering::Relaxed);
        let next = (head + 1) % RING;
        if next == self.tail.load(Ordering::Acquire) {
            self.overruns.fetch_add(1, Ordering::Relaxed);
            return;
        }
        // SAFETY: only the producer writes slot `head`, which the consumer does not read
        // until `head` moves past it.
        unsafe { (*self.buf.get())[head] = byte };
        self.head.store(next, Ordering::Release);
    }

    /// Moves waiting bytes into `out` (the main loop only); returns how many.
    fn pop_into(&self, out: &mut [u8]) -> usize {
        let head = self.head.load(Ordering::Acquire);
        let mut tail = self.tail.load(Ordering::Relaxed);
        let mut n = 0;
        while tail != head && n < out.len() {
            // SAFETY: slots between tail and head were published by the producer.
            out[n] = unsafe { (*self.buf.get())[tail] };
            tail = (tail + 1) % RING;
            n += 1;
        }
        self.tail.store(tail, Ordering::Release);
        n
    }
}

/// Bytes received by the board's UART interrupt.
pub static SERIAL_RX: ByteRing = ByteRing::new();

/// The UART's transmit side.
pub trait SerialTx {
    /// Writes one byte if the transmitter takes it now.
    fn try_write(&mut self, byte: u8) -> bool;
}

struct LinkCell(UnsafeCell<MaybeUninit<Link>>);
// SAFETY: used by `run_serial` only, once (guarded by LINK_TAKEN).
unsafe impl Sync for LinkCell {}
static LINK: LinkCell = LinkCell(UnsafeCell::new(MaybeUninit::uninit()));
static LINK_TAKEN: AtomicBool = AtomicBool::new(false);

/// `/stats` of the serial flavour: the link's counters and laws, and the apps'.
fn write_stats(
    out: &mut [u8],
    board: &str,
    link: &Link,
    apps: &[(&str, &str, u64)],
) -> Option<usize> {
    use core::fmt::Write;
    let mut w = SliceWriter::new(out);
    let c = link.counters();
    write!(
        w,
        "{{\"board\":\"{board}\",\"device\":\"serial\",\"link\":{{"
    )
    .ok()?;
    for (i, (k, v)) in c.fields().iter().enumerate() {
        write!(w, "{}\"{k}\":{v}", if i > 0 { "," } else { "" }).ok()?;
    }
    let law = if c.check_conservation().is_ok() {
        "ok"
    } else {
        "broken"
    };
    write!(
        w,
        "}},\"conservation\":\"{law}\",\"rx_ring_overruns\":{},\"apps\":{{",
        SERIAL_RX.overruns.load(Ordering::Relaxed)
    )
    .ok()?;
    for (i, (app, name, v)) in apps.iter().enumerate() {
        write!(w, "{}\"{app}.{name}\":{v}", if i > 0 { "," } else { "" }).ok()?;
    }
    write!(w, "}}}}").ok()?;
    Some(w.len())
}

/// Runs the device forever over the link on the board's UART: bytes arrive in
/// [`SERIAL_RX`], leave through `tx`.
pub fn run_serial<B: Board, T: SerialTx>(mut board: B, mut tx: T, config: DeviceConfig) -> ! {
    let taken = take_buffers();
    let (Some(taken), false) = (taken, LINK_TAKEN.swap(true, Ordering::AcqRel)) else {
        board.console("linklab firmware: run_serial() called twice\n");
        loop {
            board.sleep_until(None);
        }
    };
    let seed = board.now_ns() as u32
        ^ u32::from_le_bytes([config.mac[2], config.mac[3], config.mac[4], config.mac[5]]);
    // SAFETY: LINK_TAKEN makes this the only reference, created once.
    let link: &'static mut Link =
        unsafe { (*LINK.0.get()).write(Link::new(Config::for_line_rate(SERIAL_BAUD / 10), seed)) };
    let mut iface_config = IfaceConfig::new(EthernetAddress(config.mac).into());
    iface_config.random_seed = board.now_ns() ^ u64::from(seed);
    let mut iface = Interface::new(iface_config, link, now(&mut board));
    let [a, b, c, d] = config.ip;
    iface.update_ip_addrs(|addrs| {
        let _ = addrs.push(IpCidr::new(IpAddress::v4(a, b, c, d), config.prefix));
    });
    // No packet blaster over the serial link: its socket stays unbound.
    let (state, _) = device_apps(taken);
    let Apps {
        sockets,
        apps,
        body,
    } = state;

    let mut line = [0u8; 96];
    let mut w = SliceWriter::new(&mut line);
    let _ = core::fmt::Write::write_fmt(
        &mut w,
        format_args!(
            "linklab firmware: {} up, {a}.{b}.{c}.{d}/{}, serial link on the UART at {} baud\n",
            B::NAME,
            config.prefix,
            SERIAL_BAUD
        ),
    );
    let n = w.len();
    board.console(core::str::from_utf8(&line[..n]).unwrap_or("linklab firmware: up\n"));

    let mut out = [0u8; 256];
    let (mut out_len, mut out_pos) = (0usize, 0usize);
    let mut chunk = [0u8; 256];
    let mut stack_ran = false;
    loop {
        let us = board.now_ns() / 1000;
        loop {
            let n = SERIAL_RX.pop_into(&mut chunk);
            if n == 0 {
                break;
            }
            link.handle_input(us, &chunk[..n]);
        }
        let t = now(&mut board);
        // The stack runs when a frame arrived or one of its timers is due, not for every
        // byte the UART delivers.
        let stack_due = [iface.poll_at(t, sockets), apps.poll_at()]
            .into_iter()
            .flatten()
            .any(|d| d <= t);
        if link.has_received() || stack_due || !stack_ran {
            apps.poll_interface(&mut iface, link, sockets, t, |_| NextFrame::Other);
            let len = if apps.http_request_pending(sockets) {
                write_stats(body, B::NAME, link, &apps.counters())
            } else {
                None
            };
            apps.poll(sockets, &mut Rendered { body, len }, t);
            apps.poll_interface(&mut iface, link, sockets, t, |_| NextFrame::Other);
            stack_ran = true;
        }

        // Hand the link's bytes to the UART while it takes them.
        let us = board.now_ns() / 1000;
        let mut blocked = false;
        loop {
            while out_pos < out_len && tx.try_write(out[out_pos]) {
                out_pos += 1;
            }
            if out_pos < out_len {
                blocked = true;
                break;
            }
            out_len = link.poll_output(us, &mut out);
            out_pos = 0;
            if out_len == 0 {
                break;
            }
        }

        let t = now(&mut board);
        let link_at = link.poll_at(us).map(|at| Instant::from_micros(at as i64));
        let retry = blocked.then(|| t + smoltcp::time::Duration::from_micros(100));
        let deadline = [iface.poll_at(t, sockets), apps.poll_at(), link_at, retry]
            .into_iter()
            .flatten()
            .min();
        if deadline.is_some_and(|d| d <= t) || !SERIAL_RX.is_empty() {
            continue;
        }
        board.sleep_until(deadline.map(|d| d.total_micros().max(0) as u64 * 1000));
    }
}
