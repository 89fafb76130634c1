//! The main loop: the apps polled between smoltcp's ingress and egress, the work of each
//! layer counted for `/stats` (or the console's work line), and sleep until the next
//! deadline or frame.

use core::sync::atomic::Ordering;

use smoltcp::iface::Interface;

use crate::apps::Apps;
#[cfg(feature = "blast")]
use crate::blast::Blaster;
#[cfg(not(feature = "stats"))]
use crate::console::ConsoleLine;
#[cfg(feature = "stats")]
use crate::stats::{CpuFigures, Rendered, Snapshot};
use crate::{stack, stats, Board, NetDevice, ISR_WORK};

/// The main loop. Its own function, never inlined: its frame (the apps' inlined work) and
/// the construction of the apps above (`build_apps`, the deepest frame at boot) then never
/// sit on the stack at the same time.
#[inline(never)]
pub(crate) fn serve<B: Board, D: NetDevice>(
    mut board: B,
    device: &mut D,
    iface: &mut Interface,
    state: &mut Apps,
    #[cfg(feature = "blast")] mut blaster: Option<&mut Blaster<'static>>,
    stack: stack::Stack,
) -> ! {
    let Apps {
        sockets,
        apps,
        #[cfg(feature = "stats")]
        body,
    } = state;
    #[cfg(feature = "stats")]
    let mut idle_ns = 0u64;
    let mut work = stats::LayerWork::default();
    #[cfg(not(feature = "stats"))]
    let mut tests_seen = u32::MAX;
    loop {
        let awake = Mark::now(&mut board);
        let t = now(&mut board);
        let m = Mark::now(&mut board);
        // Ingress, the apps, then egress: what leaves carries what the apps just did.
        apps.poll_ingress(iface, device, sockets, t, |d| d.next_frame());
        work.stack = work.stack.wrapping_add(m.net(&mut board));
        #[cfg(feature = "stats")]
        let len = if apps.http_request_pending(sockets) {
            let cpu = CpuFigures {
                uptime_ns: board.now_ns(),
                idle_ns,
                stack_peak_bytes: stack.peak(),
                stack_size_bytes: stack.size(),
                work: stats::LayerWork {
                    isr: u64::from(ISR_WORK.load(Ordering::Relaxed)),
                    ..work
                },
                work_unit: if board.instructions().is_some() {
                    "instructions"
                } else {
                    "ns awake"
                },
            };
            Snapshot {
                board: B::NAME,
                mac: device.counters(),
                apps: apps.counters(),
                cpu,
                link_up: board.link_up(),
                phy: board.phy(),
                sockets,
                #[cfg(feature = "blast")]
                blast: blaster.as_ref().map(|b| b.counters()),
                #[cfg(not(feature = "blast"))]
                blast: None,
            }
            .write_json(body)
        } else {
            None
        };
        let m = Mark::now(&mut board);
        #[cfg(feature = "stats")]
        apps.poll(sockets, &mut Rendered { body, len }, t);
        #[cfg(not(feature = "stats"))]
        apps.poll(sockets, &mut linklab_perf::http::NoRoutes, t);
        work.apps = work.apps.wrapping_add(m.net(&mut board));
        let m = Mark::now(&mut board);
        apps.poll_egress(iface, device, sockets, t);
        work.stack = work.stack.wrapping_add(m.net(&mut board));
        #[cfg(feature = "blast")]
        if let Some(b) = blaster.as_deref_mut() {
            device.blast(b, &mut board, iface, sockets, t);
        }
        let t = now(&mut board);
        let deadline = [iface.poll_at(t, sockets), apps.poll_at()]
            .into_iter()
            .flatten()
            .min();
        work.main = work.main.wrapping_add(awake.net(&mut board));
        work.loops = work.loops.wrapping_add(1);
        // Without /stats, the work so far goes to the console at boot and after each
        // iperf test (what `linklab emu cost` reads from the minimal and compact images).
        #[cfg(not(feature = "stats"))]
        {
            let (done, failed) = apps.iperf_tests_ended();
            let tests = done.wrapping_add(failed);
            if tests != tests_seen {
                tests_seen = tests;
                work_line(
                    &mut board,
                    &work,
                    device.counters(),
                    stack.peak(),
                    tests,
                    failed,
                );
            }
        }
        #[cfg(feature = "blast")]
        let busy = blaster.as_ref().is_some_and(|b| b.busy());
        #[cfg(not(feature = "blast"))]
        let busy = false;
        if busy || deadline.is_some_and(|d| d <= t) {
            continue;
        }
        #[cfg(feature = "stats")]
        let before = board.now_ns();
        board.sleep_until(deadline.map(|d| d.total_micros().max(0) as u64 * 1000));
        #[cfg(feature = "stats")]
        {
            idle_ns += board.now_ns().saturating_sub(before);
        }
    }
}

/// The console line of an image without `/stats` (`linklab emu`'s `emu cost` reads it): the
/// work per layer since boot (as `/stats` `cpu.work`, the interrupt's at 32 bits), the
/// frames, the stack's peak and the iperf tests ended (`tests`), of them `failed`. Written
/// after the work it reports was counted; writing it is counted in the next line's.
#[cfg(not(feature = "stats"))]
fn work_line<B: Board>(
    board: &mut B,
    work: &stats::LayerWork,
    mac: linklab_mac::Counters,
    stack_peak: usize,
    tests: u32,
    failed: u32,
) {
    let mut line = ConsoleLine::new();
    line.text("linklab work: isr=")
        .num(ISR_WORK.load(Ordering::Relaxed).into())
        .text(" stack=")
        .num(work.stack)
        .text(" apps=")
        .num(work.apps)
        .text(" main=")
        .num(work.main)
        .text(" loops=")
        .num(work.loops)
        .text(" rx_packets=")
        .num(mac.rx_packets)
        .text(" tx_packets=")
        .num(mac.tx_packets)
        .text(" rx_missed=")
        .num(mac.rx_missed_errors)
        .text(" stack_peak=")
        .num(stack_peak as u64)
        .text(" tests=")
        .num(tests.into())
        .text(" failed=")
        .num(failed.into())
        .text(" unit=")
        .text(if board.instructions().is_some() {
            "instructions"
        } else {
            "ns-awake"
        })
        .text("\n");
    board.console(line.as_str());
}

/// A point in the CPU's work, to measure what a stretch of the main loop cost without the
/// interrupt handler runs that fell into it (those are counted in [`ISR_WORK`]).
struct Mark {
    work: u64,
    isr: u32,
}

impl Mark {
    fn now<B: Board>(board: &mut B) -> Mark {
        Mark {
            isr: ISR_WORK.load(Ordering::Relaxed),
            work: board.work_counter(),
        }
    }

    /// Work since the mark, less the interrupt handler's.
    fn net<B: Board>(&self, board: &mut B) -> u64 {
        let all = board.work_counter().wrapping_sub(self.work);
        let isr = ISR_WORK.load(Ordering::Relaxed).wrapping_sub(self.isr);
        all.saturating_sub(u64::from(isr))
    }
}

/// The board's time as smoltcp's.
pub(crate) fn now<B: Board>(board: &mut B) -> smoltcp::time::Instant {
    smoltcp::time::Instant::from_micros(micros(board.now_ns()) as i64)
}

/// `ns / 1000` in 32-bit divisions by a constant (a multiply each), a 16-bit digit at a
/// time below the top word: the library's 64-bit division took ~100 instructions on the
/// Cortex-M3, and the main loop reads the time twice a pass.
fn micros(ns: u64) -> u64 {
    const D: u32 = 1000;
    let (high, low) = ((ns >> 32) as u32, ns as u32);
    // Each remainder is below 1000, so the next dividend fits in 32 bits, and so does
    // each quotient digit in 16.
    let (q1, r1) = (high / D, high % D);
    let mid = (r1 << 16) | (low >> 16);
    let (q2, r2) = (mid / D, mid % D);
    let q3 = ((r2 << 16) | (low & 0xffff)) / D;
    (u64::from(q1) << 32) + (u64::from(q2) << 16) + u64::from(q3)
}

#[cfg(test)]
mod tests {
    use super::micros;

    #[test]
    fn micros_is_the_division() {
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        for ns in [
            0,
            999,
            1000,
            1001,
            u64::from(u32::MAX),
            1 << 32,
            u64::MAX - 1,
            u64::MAX,
        ] {
            assert_eq!(micros(ns), ns / 1000, "{ns}");
        }
        for _ in 0..100_000 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            assert_eq!(micros(x), x / 1000, "{x}");
            assert_eq!(micros(x >> 20), (x >> 20) / 1000);
        }
    }
}
