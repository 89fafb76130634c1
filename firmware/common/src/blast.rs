//! The packet blaster (`linklab emu blast`): on a request from the host on UDP port
//! [`blast::PORT`] (linklab-perf's `blast` messages), sends UDP datagrams back to the
//! requester for a bounded time, either built here and handed straight to the NIC driver's
//! transmit path (no smoltcp: the ceiling of the wire) or through a smoltcp UDP socket (the
//! same datagrams through the stack), then reports how many it sent and what that cost in the
//! board's work counter. Requests that are not exactly valid, come from anything but IPv4, or
//! arrive during a blast are refused and counted, never obeyed.
//!
//! Both ways send only when the driver has room ([`PhyTx::ready`]), so what the host misses
//! is what the driver or the host dropped, not a ring the blaster overran on purpose.

use linklab_mac::{Mac, PhyTx, Storage};

use crate::Board;
use linklab_perf::blast::{self, Report, Request, Way, HEADERS_LEN};
use smoltcp::iface::{Interface, SocketHandle, SocketSet};
use smoltcp::socket::udp;
use smoltcp::time::Instant;
use smoltcp::wire::{IpAddress, IpEndpoint};

/// The longest frame the raw way builds (headers and the largest payload).
pub const FRAME_LEN: usize = HEADERS_LEN + blast::MAX_PAYLOAD as usize;

/// Frames sent per main-loop pass either way (then the loop runs the stack and the other
/// apps once, so a blast never starves them).
const BURST: u32 = 32;

pub use crate::stats::BlastCounters;

/// A blast under way.
struct Running {
    req: Request,
    peer: IpEndpoint,
    seq: u32,
    until_ns: u64,
    /// Set when the last datagram has been queued (stack way: waiting for the socket to
    /// drain).
    draining: bool,
    start_ns: u64,
    start_work: u64,
    send_work: u64,
    start_drops: u64,
}

/// The blaster: its UDP socket (requests in, reports and the stack way's datagrams out),
/// the frame it builds for the raw way, and its state.
pub struct Blaster<'f> {
    socket: SocketHandle,
    frame: &'f mut [u8; FRAME_LEN],
    ip: [u8; 4],
    mac: [u8; 6],
    running: Option<Running>,
    counters: BlastCounters,
}

impl<'f> Blaster<'f> {
    /// A blaster on `socket` (bound here to [`blast::PORT`]) for a device at `ip` / `mac`,
    /// building raw frames in `frame`.
    pub fn new(
        sockets: &mut SocketSet<'_>,
        socket: SocketHandle,
        frame: &'f mut [u8; FRAME_LEN],
        ip: [u8; 4],
        mac: [u8; 6],
    ) -> Self {
        let _ = sockets.get_mut::<udp::Socket>(socket).bind(blast::PORT);
        Blaster {
            socket,
            frame,
            ip,
            mac,
            running: None,
            counters: BlastCounters::default(),
        }
    }

    /// The counters.
    pub fn counters(&self) -> BlastCounters {
        self.counters
    }

    /// True while a blast runs: the main loop must not sleep.
    pub fn busy(&self) -> bool {
        self.running.is_some()
    }

    /// Reads requests, sends what the running blast has to send, and reports a finished one.
    /// The stack way sends each datagram with one `iface.poll` (`now` is smoltcp's time);
    /// the board's clock times the blast and its work counter measures it.
    pub fn poll<B: Board, S: Storage, T: PhyTx, C: linklab_mac::Clock>(
        &mut self,
        board: &mut B,
        iface: &mut Interface,
        sockets: &mut SocketSet<'_>,
        mac: &mut Mac<'_, S, T, C>,
        now: Instant,
    ) {
        let now_ns = board.now_ns();
        let sock = sockets.get_mut::<udp::Socket>(self.socket);
        while let Ok((data, meta)) = sock.recv() {
            let req = Request::parse(data);
            let idle = self.running.is_none();
            match (req, meta.endpoint.addr) {
                (Ok(req), IpAddress::Ipv4(peer_ip)) if idle => {
                    self.counters.runs += 1;
                    self.build_frame(&req, peer_ip.octets(), meta.endpoint.port);
                    self.running = Some(Running {
                        req,
                        peer: meta.endpoint,
                        seq: 0,
                        until_ns: now_ns + u64::from(req.duration_ms) * 1_000_000,
                        draining: false,
                        start_ns: now_ns,
                        start_work: board.work_counter(),
                        send_work: 0,
                        start_drops: mac.phy_mut().dropped(),
                    });
                }
                _ => self.counters.refused += 1,
            }
        }
        let Some(run) = self.running.as_mut() else {
            return;
        };
        let len = usize::from(run.req.payload_len);
        if !run.draining {
            let before = board.work_counter();
            match run.req.way {
                Way::Raw => {
                    let frame = &mut self.frame[..HEADERS_LEN + len];
                    let phy = mac.phy_mut();
                    for _ in 0..BURST {
                        if !phy.ready() {
                            break;
                        }
                        blast::set_seq(run.seq, &mut frame[HEADERS_LEN..]);
                        phy.transmit(frame);
                        run.seq = run.seq.wrapping_add(1);
                    }
                }
                Way::Stack => {
                    let payload = &mut self.frame[HEADERS_LEN..HEADERS_LEN + len];
                    for _ in 0..BURST {
                        let sock = sockets.get_mut::<udp::Socket>(self.socket);
                        if !sock.can_send() || !mac.phy_mut().ready() {
                            break;
                        }
                        blast::set_seq(run.seq, payload);
                        if sock.send_slice(payload, run.peer).is_err() {
                            break;
                        }
                        run.seq = run.seq.wrapping_add(1);
                        iface.poll(now, mac, sockets);
                    }
                }
            }
            run.send_work += board.work_counter().wrapping_sub(before);
            run.draining = now_ns >= run.until_ns;
        }
        let sock = sockets.get_mut::<udp::Socket>(self.socket);
        // The report waits for the driver to have room: the raw way leaves its ring full.
        if run.draining && sock.send_queue() == 0 && mac.phy_mut().ready() {
            let report = Report {
                stack: run.req.way == Way::Stack,
                payload_len: run.req.payload_len,
                frames: run.seq,
                driver_drops: mac.phy_mut().dropped().wrapping_sub(run.start_drops) as u32,
                work: board.work_counter().wrapping_sub(run.start_work),
                send_work: run.send_work,
                duration_ns: now_ns.saturating_sub(run.start_ns),
            };
            if sock.send_slice(&report.to_bytes(), run.peer).is_ok() {
                self.running = None;
            }
        }
    }

    /// Writes the Ethernet, IPv4 and UDP headers and the payload pattern of `req`'s frames
    /// to `peer_ip:peer_port` (IPv4 identification 0 with DF set, so the header and its
    /// checksum are the same for every frame; UDP checksum 0, which IPv4 allows).
    fn build_frame(&mut self, req: &Request, peer_ip: [u8; 4], peer_port: u16) {
        let len = usize::from(req.payload_len);
        let f = &mut self.frame[..HEADERS_LEN + len];
        f[0..6].copy_from_slice(&req.mac);
        f[6..12].copy_from_slice(&self.mac);
        f[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
        let ip = &mut f[14..34];
        ip[0] = 0x45;
        ip[1] = 0;
        ip[2..4].copy_from_slice(&((20 + 8 + len) as u16).to_be_bytes());
        ip[4..6].copy_from_slice(&[0, 0]);
        ip[6..8].copy_from_slice(&0x4000u16.to_be_bytes());
        ip[8] = 64;
        ip[9] = 17;
        ip[10..12].copy_from_slice(&[0, 0]);
        ip[12..16].copy_from_slice(&self.ip);
        ip[16..20].copy_from_slice(&peer_ip);
        let sum = !internet_sum(ip);
        ip[10..12].copy_from_slice(&sum.to_be_bytes());
        let udp = &mut f[34..42];
        udp[0..2].copy_from_slice(&blast::PORT.to_be_bytes());
        udp[2..4].copy_from_slice(&peer_port.to_be_bytes());
        udp[4..6].copy_from_slice(&((8 + len) as u16).to_be_bytes());
        udp[6..8].copy_from_slice(&[0, 0]);
        blast::fill_payload(0, &mut f[HEADERS_LEN..]);
    }
}

/// The folded one's complement sum of `data` (even length).
fn internet_sum(data: &[u8]) -> u16 {
    let mut sum = 0u32;
    for w in data.chunks_exact(2) {
        sum += u32::from(u16::from_be_bytes([w[0], w[1]]));
    }
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_checksum_verifies() {
        // RFC 1071's example header folds to 0xffff once its checksum is in place.
        let mut h = [
            0x45, 0, 0, 0x73, 0, 0, 0x40, 0, 0x40, 0x11, 0, 0, 0xc0, 0xa8, 0, 1, 0xc0, 0xa8, 0,
            0xc7,
        ];
        let c = !internet_sum(&h);
        h[10..12].copy_from_slice(&c.to_be_bytes());
        assert_eq!(c, 0xb861);
        assert_eq!(internet_sum(&h), 0xffff);
    }
}
