//! `GET /stats` on firmware: the MAC counters with the conservation law, the RX queue and TCP
//! window, the apps' counters, the CPU's busy time and instructions, the stack's peak, and the
//! connected TCP sockets, as compact JSON written into the buffer the HTTP server lends (no
//! heap). Keys match `linklab serve`'s `/stats` where the figure is the same.

use linklab_mac::Counters;
use linklab_perf::apps::AppCounter;
use linklab_perf::http::{RouteBody, Routes};
use linklab_perf::slice_writer::SliceWriter;
use linklab_perf::socket::TcpState;
use smoltcp::iface::SocketSet;
use smoltcp::socket::{tcp, Socket};

use crate::memory::{IPERF_TCP_TX, QUEUE_BYTES, QUEUE_FRAMES, TCP_WINDOW};

/// Work per layer since boot, in the unit of `Board::work_counter`, wrapping (`isr` at 32
/// bits). Only awake work: under QEMU's `-icount`, time asleep in WFI advances the clock
/// (and riscv's `minstret`, derived from it) without executing anything, so the firmware
/// measures each stretch between wake-up and sleep instead.
#[derive(Clone, Copy, Debug, Default)]
pub struct LayerWork {
    /// The NIC's interrupt handler: the driver moving frames into RX grants.
    pub isr: u64,
    /// `Interface::poll`: MAC dequeue and checks, smoltcp, and the driver's transmit.
    pub stack: u64,
    /// The apps' poll: iperf3, HTTP, echo (their socket reads and writes).
    pub apps: u64,
    /// The whole main loop while awake (including `stack` and `apps`, excluding `isr`).
    pub main: u64,
    /// Passes of the main loop (to tell a pass's fixed cost from the work per frame).
    pub loops: u64,
}

/// The packet blaster's counters for `/stats` (`crate::blast`).
#[derive(Clone, Copy, Debug, Default)]
pub struct BlastCounters {
    /// Requests obeyed.
    pub runs: u64,
    /// Requests refused (malformed, out of range, not IPv4, or during a blast).
    pub refused: u64,
}

/// What the CPU did since boot.
#[derive(Clone, Copy, Debug, Default)]
pub struct CpuFigures {
    /// Nanoseconds since boot.
    pub uptime_ns: u64,
    /// Nanoseconds spent asleep in WFI (the rest was work).
    pub idle_ns: u64,
    /// The unit of `work`: `instructions` (riscv `minstret`) or `ns awake` (a timer; under
    /// `-icount shift=0` one nanosecond is one instruction).
    pub work_unit: &'static str,
    /// Deepest stack use seen (bytes), from stack painting.
    pub stack_peak_bytes: usize,
    /// Bytes the stack may use.
    pub stack_size_bytes: usize,
    /// Work per layer.
    pub work: LayerWork,
}

/// A soft PHY's receive and transmit counters (linklab-phy10's `RxCounters` and its
/// sampler's), for `/stats` beside the MAC's.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PhyFigures {
    /// Captures the sampler delivered to the receive interrupt.
    pub captures: u64,
    /// Frames that ended cleanly, committed to the MAC.
    pub frames: u64,
    /// Frames cut short, committed (the MAC's FCS or length check counts them).
    pub truncated: u64,
    /// Preambles without a whole byte after the SFD, grant cancelled.
    pub empty: u64,
    /// Link test pulses, grant cancelled.
    pub link_pulses: u64,
    /// Captures that were neither frames nor pulses (decode failures), grant cancelled.
    pub noise: u64,
    /// Transmissions lost because the MAC had no grant (the queue was full).
    pub missed: u64,
    /// Buffers the sampler completed with a length the driver could not use.
    pub bad_captures: u64,
    /// Frames encoded and handed to the transmit DMA.
    pub tx_frames: u64,
    /// Frames not sent: no free transmit buffer.
    pub tx_dropped: u64,
}

/// Why the law across a soft PHY and the MAC does not hold: the first equation that fails.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PhyLawError {
    /// `captures != frames + truncated + empty + link_pulses + noise + missed`.
    Captures,
    /// The MAC's `rx_committed` is not the PHY's `frames + truncated`.
    Committed,
    /// The MAC's `rx_cancelled` is not the PHY's `empty + link_pulses + noise`.
    Cancelled,
    /// The MAC's `rx_missed_errors` is not the PHY's `missed`.
    Missed,
    /// The MAC's `tx_packets` is not the PHY's `tx_frames + tx_dropped`.
    Transmitted,
}

impl PhyLawError {
    /// The equation that failed, as text.
    pub fn as_str(self) -> &'static str {
        match self {
            PhyLawError::Captures => {
                "captures != frames + truncated + empty + link_pulses + noise + missed"
            }
            PhyLawError::Committed => "mac.rx_committed != phy.frames + phy.truncated",
            PhyLawError::Cancelled => "mac.rx_cancelled != phy.empty + phy.link_pulses + phy.noise",
            PhyLawError::Missed => "mac.rx_missed_errors != phy.missed",
            PhyLawError::Transmitted => "mac.tx_packets != phy.tx_frames + phy.tx_dropped",
        }
    }
}

impl PhyFigures {
    /// The law across the PHY and the MAC: every capture lands in one bucket, and the MAC
    /// saw exactly what the PHY committed, cancelled and missed, and sent exactly what the
    /// PHY encoded or dropped.
    pub fn check_with(&self, mac: &Counters) -> Result<(), PhyLawError> {
        let buckets =
            self.frames + self.truncated + self.empty + self.link_pulses + self.noise + self.missed;
        if self.captures != buckets {
            return Err(PhyLawError::Captures);
        }
        if mac.rx_committed != self.frames + self.truncated {
            return Err(PhyLawError::Committed);
        }
        if mac.rx_cancelled != self.empty + self.link_pulses + self.noise {
            return Err(PhyLawError::Cancelled);
        }
        if mac.rx_missed_errors != self.missed {
            return Err(PhyLawError::Missed);
        }
        if mac.tx_packets != self.tx_frames + self.tx_dropped {
            return Err(PhyLawError::Transmitted);
        }
        Ok(())
    }

    fn write_json(&self, mac: &Counters, w: &mut SliceWriter<'_>) -> core::fmt::Result {
        w.text(",\"phy\":{")?;
        members(
            w,
            &[
                ("captures", self.captures),
                ("frames", self.frames),
                ("truncated", self.truncated),
                ("empty", self.empty),
                ("link_pulses", self.link_pulses),
                ("noise", self.noise),
                ("missed", self.missed),
                ("bad_captures", self.bad_captures),
                ("tx_frames", self.tx_frames),
                ("tx_dropped", self.tx_dropped),
            ],
        )?;
        w.text("}")?;
        match self.check_with(mac) {
            Ok(()) => w.text(",\"phy_conservation\":{\"holds\":true}").map(drop),
            Err(e) => w
                .text(",\"phy_conservation\":{\"holds\":false,\"error\":\"")?
                .text(e.as_str())?
                .text("\"}")
                .map(drop),
        }
    }
}

/// One connected TCP socket in `/stats`'s list.
#[derive(Clone, Copy, Debug)]
pub struct TcpEntry {
    /// Local port.
    pub port: u16,
    /// RFC 793 state name, as smoltcp prints it (`ESTABLISHED`, `SYN-RECEIVED`, ...).
    pub state: &'static str,
    /// Bytes queued to receive, to send, and the receive capacity, where the stack tells.
    pub queues: Option<(usize, usize, usize)>,
}

/// The TCP sockets to list in `/stats` (listening and closed ones are left out).
pub trait TcpList {
    /// Calls `f` with each connected socket.
    fn each(&self, f: &mut dyn FnMut(TcpEntry));
}

impl TcpList for SocketSet<'_> {
    fn each(&self, f: &mut dyn FnMut(TcpEntry)) {
        for (_, socket) in self.iter() {
            // (Irrefutable in a build without UDP sockets.)
            #[allow(irrefutable_let_patterns)]
            let Socket::Tcp(s) = socket
            else {
                continue;
            };
            if matches!(s.state(), tcp::State::Listen | tcp::State::Closed) {
                continue;
            }
            f(TcpEntry {
                port: s.local_endpoint().map_or(0, |e| e.port),
                state: TcpState::from(s.state()).name(),
                queues: Some((s.recv_queue(), s.send_queue(), s.recv_capacity())),
            });
        }
    }
}

/// Everything `/stats` shows, gathered just before the HTTP sockets are polled.
pub struct Snapshot<'a> {
    /// The board's name.
    pub board: &'static str,
    /// MAC counters.
    pub mac: Counters,
    /// The apps' counters.
    pub apps: [AppCounter; linklab_perf::apps::APP_COUNTERS],
    /// CPU and memory figures.
    pub cpu: CpuFigures,
    /// The controller's link bit.
    pub link_up: bool,
    /// A soft PHY's counters (None for a controller NIC).
    pub phy: Option<PhyFigures>,
    /// The sockets, for the per-connection list.
    pub sockets: &'a dyn TcpList,
    /// The packet blaster's counters (None in an image without the blaster).
    pub blast: Option<BlastCounters>,
}

/// The `/stats` route answering with a body rendered beforehand (the apps poll the socket
/// set mutably, so the socket list is rendered just before they do); 404 when none was.
pub struct Rendered<'b> {
    /// The rendered JSON.
    pub body: &'b [u8],
    /// Its length, or None when nothing was rendered.
    pub len: Option<usize>,
}

impl Routes for Rendered<'_> {
    fn get(&mut self, path: &str, out: &mut [u8]) -> Option<RouteBody> {
        if path != "/stats" {
            return None;
        }
        let body = self.body.get(..self.len?)?;
        out.get_mut(..body.len())?.copy_from_slice(body);
        Some(RouteBody {
            len: body.len(),
            content_type: "application/json",
        })
    }
}

impl Snapshot<'_> {
    /// Writes the JSON into `out`; the TCP list is cut (and the cut counted in
    /// `tcp_omitted`) rather than the JSON. None if even the fixed part does not fit.
    pub fn write_json(&self, out: &mut [u8]) -> Option<usize> {
        let mut w = SliceWriter::new(out);
        self.write_fixed(&mut w).ok()?;
        // Keep room for the longest tail: `],"tcp_omitted":N}`.
        const TAIL: usize = 40;
        w.text(",\"tcp\":[").ok()?;
        let mut written = 0usize;
        let mut omitted = 0usize;
        self.sockets.each(&mut |e| {
            let mark = w.len();
            let mut r = (|| {
                w.text(if written > 0 { "," } else { "" })?
                    .text("{\"port\":")?
                    .num(e.port.into())?
                    .text(",\"state\":\"")?
                    .text(e.state)?
                    .text("\"")
                    .map(drop)
            })();
            if let Some((rx, tx, cap)) = e.queues {
                r = r.and_then(|()| {
                    members(
                        w.text(",")?,
                        &[
                            ("rx_queue", rx as u64),
                            ("tx_queue", tx as u64),
                            ("rx_capacity", cap as u64),
                        ],
                    )
                });
            }
            r = r.and_then(|()| w.text("}").map(drop));
            if r.is_err() || w.remaining() < TAIL {
                w.truncate(mark);
                omitted += 1;
            } else {
                written += 1;
            }
        });
        w.text("]").ok()?;
        if omitted > 0 {
            w.text(",\"tcp_omitted\":").ok()?.num(omitted as u64).ok()?;
        }
        w.text("}").ok()?;
        Some(w.len())
    }

    fn write_fixed(&self, w: &mut SliceWriter<'_>) -> core::fmt::Result {
        let uptime_ds = self.cpu.uptime_ns / 100_000_000;
        w.text("{\"board\":\"")?
            .text(self.board)?
            .text("\",\"uptime_s\":")?
            .num(uptime_ds / 10)?
            .text(".")?
            .num(uptime_ds % 10)?
            .text(",\"link_up\":")?
            .text(if self.link_up { "true" } else { "false" })?
            .text(",\"mac\":{")?;
        members(w, &self.mac.fields())?;
        match self.mac.check_conservation() {
            Ok(()) => {
                w.text("},\"conservation\":{\"holds\":true}")?;
            }
            Err(e) => {
                w.text("},\"conservation\":{\"holds\":false,\"error\":\"")?;
                conservation_error(w, e)?;
                w.text("\"}")?;
            }
        }
        if let Some(phy) = &self.phy {
            phy.write_json(&self.mac, w)?;
        }
        w.text(",\"rx_queue\":{\"frames\":")?
            .num(QUEUE_FRAMES as u64)?
            .text(",\"bytes\":")?
            .num(QUEUE_BYTES as u64)?
            .text("},\"tcp_window\":{\"bytes\":")?
            .num(TCP_WINDOW as u64)?
            .text(",\"auto\":true},\"iperf_send_buffer\":{\"bytes\":")?
            .num(IPERF_TCP_TX as u64)?
            .text("}")?;
        let c = &self.cpu;
        w.text(",\"cpu\":{")?;
        members(
            w,
            &[
                ("uptime_ns", c.uptime_ns),
                ("idle_ns", c.idle_ns),
                ("busy_ns", c.uptime_ns.saturating_sub(c.idle_ns)),
            ],
        )?;
        w.text(",\"work_unit\":\"")?
            .text(c.work_unit)?
            .text("\",\"work\":{")?;
        members(
            w,
            &[
                ("isr", c.work.isr),
                ("stack", c.work.stack),
                ("apps", c.work.apps),
                ("main", c.work.main),
                ("loops", c.work.loops),
                // Bytes the images' memcpy copied off their word (its slower path): with the
                // work above, what a transfer's misaligned copies cost (linklab emu
                // parts).
                (
                    "misaligned_copy_bytes",
                    u64::from(linklab_memcpy::misaligned_bytes()),
                ),
            ],
        )?;
        w.text("}},\"memory\":{")?;
        members(
            w,
            &[
                ("stack_peak_bytes", c.stack_peak_bytes as u64),
                ("stack_size_bytes", c.stack_size_bytes as u64),
            ],
        )?;
        w.text("}")?;
        if let Some(blast) = &self.blast {
            w.text(",\"blast\":{")?;
            members(w, &[("runs", blast.runs), ("refused", blast.refused)])?;
            w.text("}")?;
        }
        let mut app = "";
        for (name, counter, value) in self.apps {
            if name != app {
                w.text(if app.is_empty() { "" } else { "}" })?
                    .text(",\"")?
                    .text(name)?
                    .text("\":{")?;
                app = name;
            } else {
                w.text(",")?;
            }
            members(w, &[(counter, value)])?;
        }
        if !app.is_empty() {
            w.text("}")?;
        }
        Ok(())
    }
}

/// Writes `"key":value` members, comma-separated.
fn members(w: &mut SliceWriter<'_>, kv: &[(&str, u64)]) -> core::fmt::Result {
    for (i, (k, v)) in kv.iter().enumerate() {
        w.text(if i > 0 { ",\"" } else { "\"" })?
            .text(k)?
            .text("\":")?
            .num(*v)?;
    }
    Ok(())
}

/// The MAC's broken law in words (as its `Display` says it, without `core::fmt`).
fn conservation_error(
    w: &mut SliceWriter<'_>,
    e: linklab_mac::ConservationError,
) -> core::fmt::Result {
    use linklab_mac::ConservationError as E;
    let (a, x, b, y) = match e {
        E::RxPendingNegative {
            committed,
            dequeued,
        } => ("dequeued ", dequeued, " > committed ", committed),
        E::Rx {
            transmissions,
            accounted,
        } => (
            "rx transmissions ",
            transmissions,
            " != accounted ",
            accounted,
        ),
        E::Tx {
            requests,
            accounted,
        } => ("tx requests ", requests, " != accounted ", accounted),
    };
    w.text(a)?.num(x)?.text(b)?.num(y).map(drop)
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use smoltcp::iface::SocketStorage;
    use std::vec;

    fn render(out_len: usize, sockets: &SocketSet<'_>) -> Option<serde_json::Value> {
        let mac = Counters {
            rx_transmissions: 10,
            rx_committed: 10,
            rx_dequeued: 10,
            rx_packets: 10,
            ..Counters::default()
        };
        let s = Snapshot {
            board: "test-board",
            mac,
            apps: [("echo", "udp_rx_datagrams", 3); linklab_perf::apps::APP_COUNTERS],
            cpu: CpuFigures {
                uptime_ns: 12_345_000_000,
                idle_ns: 2_000_000_000,
                work_unit: "ns awake",
                stack_peak_bytes: 4096,
                stack_size_bytes: 65536,
                work: LayerWork {
                    isr: 1,
                    stack: 2,
                    apps: 3,
                    main: 6,
                    loops: 4,
                },
            },
            link_up: true,
            phy: None,
            sockets,
            blast: Some(BlastCounters {
                runs: 2,
                refused: 5,
            }),
        };
        let mut out = vec![0u8; out_len];
        let n = s.write_json(&mut out)?;
        Some(serde_json::from_slice(&out[..n]).expect("valid JSON"))
    }

    #[test]
    fn json_has_the_figures_and_the_law() {
        let mut storage: [SocketStorage<'_>; 1] = Default::default();
        let sockets = SocketSet::new(&mut storage[..]);
        let v = render(2048, &sockets).unwrap();
        assert_eq!(v["board"], "test-board");
        assert_eq!(v["uptime_s"], 12.3);
        assert_eq!(v["mac"]["rx_packets"], 10);
        assert_eq!(v["conservation"]["holds"], true);
        assert_eq!(v["cpu"]["busy_ns"], 10_345_000_000u64);
        assert_eq!(v["cpu"]["work_unit"], "ns awake");
        assert_eq!(v["cpu"]["work"]["apps"], 3);
        assert_eq!(v["cpu"]["work"]["loops"], 4);
        assert!(v["cpu"]["work"]["misaligned_copy_bytes"].is_u64());
        assert_eq!(v["memory"]["stack_peak_bytes"], 4096);
        assert_eq!(v["echo"]["udp_rx_datagrams"], 3);
        assert_eq!(
            (v["blast"]["runs"].as_u64(), v["blast"]["refused"].as_u64()),
            (Some(2), Some(5))
        );
        assert_eq!(v["tcp"].as_array().unwrap().len(), 0);
    }

    #[test]
    fn the_law_across_phy_and_mac_names_the_equation_that_fails() {
        let phy = PhyFigures {
            captures: 10,
            frames: 6,
            truncated: 1,
            empty: 0,
            link_pulses: 2,
            noise: 1,
            missed: 0,
            bad_captures: 0,
            tx_frames: 5,
            tx_dropped: 0,
        };
        let mac = Counters {
            rx_transmissions: 7,
            rx_committed: 7,
            rx_dequeued: 7,
            rx_cancelled: 3,
            rx_packets: 6,
            rx_crc_errors: 1,
            tx_requests: 5,
            tx_packets: 5,
            ..Counters::default()
        };
        assert_eq!(phy.check_with(&mac), Ok(()));
        let lost = PhyFigures {
            captures: 11,
            ..phy
        };
        assert_eq!(lost.check_with(&mac), Err(PhyLawError::Captures));
        let more = Counters {
            rx_committed: 8,
            ..mac
        };
        assert_eq!(phy.check_with(&more), Err(PhyLawError::Committed));
        let cancelled = Counters {
            rx_cancelled: 2,
            ..mac
        };
        assert_eq!(phy.check_with(&cancelled), Err(PhyLawError::Cancelled));
        let missed = Counters {
            rx_missed_errors: 1,
            ..mac
        };
        assert_eq!(phy.check_with(&missed), Err(PhyLawError::Missed));
        let sent = Counters {
            tx_packets: 4,
            ..mac
        };
        assert_eq!(phy.check_with(&sent), Err(PhyLawError::Transmitted));

        // In /stats, beside the MAC's counters, within the buffer the HTTP server lends.
        let mut storage: [SocketStorage<'_>; 1] = Default::default();
        let sockets = SocketSet::new(&mut storage[..]);
        let s = Snapshot {
            board: "test-board",
            mac,
            apps: [("echo", "udp_rx_datagrams", 3); linklab_perf::apps::APP_COUNTERS],
            cpu: CpuFigures::default(),
            link_up: true,
            phy: Some(phy),
            sockets: &sockets,
            blast: None,
        };
        let mut out = vec![0u8; linklab_perf::http::MAX_HEAD];
        let n = s.write_json(&mut out).expect("fits");
        let v: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
        assert_eq!(v["phy"]["link_pulses"], 2);
        assert_eq!(v["phy_conservation"]["holds"], true);
    }

    #[test]
    fn a_buffer_too_small_gives_nothing_not_cut_json() {
        let mut storage: [SocketStorage<'_>; 1] = Default::default();
        let sockets = SocketSet::new(&mut storage[..]);
        for len in [0, 10, 200, 600] {
            assert!(render(len, &sockets).is_none(), "{len}");
        }
    }
}
