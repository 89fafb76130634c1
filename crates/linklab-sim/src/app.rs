//! The device's application, as Niccle's MAC write-up ran it: 10 pings (`smoltcp_ping`),
//! then a number of HTTP GETs of each bench file (`smoltcp_http_get`), one connection per
//! GET. Or, to model the other direction (`--device-sends`), the device sends each file's
//! bytes to the host's TCP sink instead, from a send buffer the size of linklab's firmware's
//! (as it serves curl and iperf3 `-R`).

mod upload;

use linklab_perf::http::{expected_crc32, smoltcp_fetch, Client, HTTP_PORT};
use linklab_perf::payload::BenchFile;
use smoltcp::iface::{Interface, SocketHandle, SocketSet};
use smoltcp::phy::ChecksumCapabilities;
use smoltcp::socket::{icmp, tcp};
use smoltcp::wire::{Icmpv4Packet, Icmpv4Repr, IpAddress, Ipv4Address};

/// ICMP echo payload bytes (seed: "40 bytes from 169.254.172.115").
pub const PING_DATA_LEN: usize = 40;
/// Time between pings (smoltcp's ping example default) and the reply timeout.
pub const PING_INTERVAL_NS: u64 = 1_000_000_000;
const PING_IDENT: u16 = 0x22b;
/// First local TCP port; each GET uses the next one.
const FIRST_LOCAL_PORT: u16 = 49_152;
/// The device's default send buffer with `--device-sends`: two full segments, as linklab's
/// NIC images give their iperf3 sockets (`IPERF_TCP_TX`; a counted profile says what its
/// image has for each app: three segments for HTTP, four for the soft-PHY image's iperf3).
pub const DEVICE_SEND_BUFFER: usize = 2 * 1460;

/// One ping's outcome.
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct PingResult {
    /// Sequence number.
    pub seq: u16,
    /// Round-trip time in ms, `None` if no reply came within the interval.
    pub rtt_ms: Option<f64>,
}

/// One download's outcome.
#[derive(Clone, Debug, PartialEq, serde::Serialize)]
pub struct DownloadResult {
    /// URL path.
    pub path: String,
    /// Response bytes received, head + body (the write-up's "Received N bytes").
    pub bytes: u64,
    /// Body bytes.
    pub body_bytes: u64,
    /// From `connect` to the last body byte, in seconds of virtual time.
    pub seconds: f64,
    /// `bytes / seconds` (the write-up's kB/sec × 1000).
    pub bytes_per_s: f64,
    /// CRC32 of the body.
    pub crc32: u32,
    /// CRC32 of the file as served (computed from the payload generator).
    pub expected_crc32: u32,
    /// HTTP status (0 if the download failed before a status line).
    pub status: u16,
    /// Why the download failed, if it did.
    pub error: Option<String>,
}

/// Something the application finished, for the simulator to record.
#[derive(Clone, Debug, PartialEq)]
pub enum AppEvent {
    /// A ping finished.
    Ping(PingResult),
    /// A download finished.
    Download(DownloadResult),
    /// All downloads of one file are done.
    FileDone(BenchFile),
    /// Everything is done.
    Finished,
}

enum Phase {
    Ping {
        seq: u16,
        sent_at: Option<u64>,
        next_at: u64,
    },
    Get {
        file: usize,
        rep: u32,
        current: Option<Box<Transfer>>,
    },
    Put {
        file: usize,
        rep: u32,
        current: Option<upload::Upload>,
    },
    Done,
}

struct Transfer {
    handle: SocketHandle,
    client: Client,
    started_ns: u64,
}

/// The application state machine.
pub struct App {
    host_ip: Ipv4Address,
    pings: u16,
    files: Vec<BenchFile>,
    gets: u32,
    window: usize,
    icmp: SocketHandle,
    phase: Phase,
    next_port: u16,
    closing: Vec<SocketHandle>,
    device_sends: bool,
    /// The send buffer of each `--device-sends` transfer's socket (bytes).
    send_buffer: usize,
    /// Virtual time of the last step that made progress (for the watchdog).
    pub last_progress_ns: u64,
}

impl App {
    /// An app that pings `host_ip` `pings` times, then GETs each of `files` `gets` times
    /// with a TCP receive buffer (= window) of `window` bytes (or, with `device_sends`,
    /// sends each file to the host's sink `gets` times from a `send_buffer`-byte buffer).
    #[allow(clippy::too_many_arguments)]
    pub fn new(
        sockets: &mut SocketSet<'static>,
        host_ip: Ipv4Address,
        pings: u16,
        files: Vec<BenchFile>,
        gets: u32,
        window: usize,
        device_sends: bool,
        send_buffer: usize,
    ) -> App {
        let rx = icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 4], vec![0; 512]);
        let tx = icmp::PacketBuffer::new(vec![icmp::PacketMetadata::EMPTY; 4], vec![0; 512]);
        let mut socket = icmp::Socket::new(rx, tx);
        let _ = socket.bind(icmp::Endpoint::Ident(PING_IDENT));
        let icmp = sockets.add(socket);
        let phase = if pings > 0 {
            Phase::Ping {
                seq: 0,
                sent_at: None,
                next_at: 0,
            }
        } else {
            transfers(device_sends)
        };
        App {
            host_ip,
            pings,
            files,
            gets,
            window,
            icmp,
            phase,
            next_port: FIRST_LOCAL_PORT,
            closing: Vec::new(),
            device_sends,
            send_buffer,
            last_progress_ns: 0,
        }
    }

    /// Where the application is, for the watchdog's report.
    pub fn describe(&self, sockets: &SocketSet<'static>) -> String {
        match &self.phase {
            Phase::Ping { seq, .. } => format!("ping icmp_seq={seq}"),
            Phase::Get { file, rep, current } => {
                let path = self.files.get(*file).map(|f| f.path).unwrap_or("?");
                match current {
                    Some(t) => {
                        let s = sockets.get::<tcp::Socket>(t.handle);
                        format!(
                            "GET {path} #{} (tcp state {}, {} bytes received)",
                            rep + 1,
                            s.state(),
                            t.client.total_bytes()
                        )
                    }
                    None => format!("GET {path} #{} (not started)", rep + 1),
                }
            }
            Phase::Put { file, rep, current } => {
                let path = self.files.get(*file).map(|f| f.path).unwrap_or("?");
                match current {
                    Some(u) => {
                        let s = sockets.get::<tcp::Socket>(u.handle);
                        format!(
                            "sending {path} #{} (tcp state {}, {} bytes sent)",
                            rep + 1,
                            s.state(),
                            u.sent
                        )
                    }
                    None => format!("sending {path} #{} (not started)", rep + 1),
                }
            }
            Phase::Done => "done".to_string(),
        }
    }

    /// The next time the app wants to run without any packet arriving (ns).
    pub fn next_timer_ns(&self) -> Option<u64> {
        match &self.phase {
            Phase::Ping {
                sent_at: None,
                next_at,
                ..
            } => Some(*next_at),
            Phase::Ping {
                sent_at: Some(t), ..
            } => Some(t + PING_INTERVAL_NS),
            Phase::Get { current: None, .. } | Phase::Put { current: None, .. } => Some(0),
            _ => None,
        }
    }

    /// True when everything is done.
    pub fn finished(&self) -> bool {
        matches!(self.phase, Phase::Done)
    }

    /// Runs the application at `now_ns`; returns what finished.
    pub fn step(
        &mut self,
        now_ns: u64,
        iface: &mut Interface,
        sockets: &mut SocketSet<'static>,
    ) -> Vec<AppEvent> {
        let mut events = Vec::new();
        self.closing.retain(|&h| {
            let s = sockets.get::<tcp::Socket>(h);
            let gone = matches!(s.state(), tcp::State::Closed | tcp::State::TimeWait);
            if gone {
                sockets.remove(h);
            }
            !gone
        });
        loop {
            let before = events.len();
            let moved = match &mut self.phase {
                Phase::Ping { .. } => self.step_ping(now_ns, sockets, &mut events),
                Phase::Get { .. } => self.step_get(now_ns, iface, sockets, &mut events),
                Phase::Put { .. } => self.step_put(now_ns, iface, sockets, &mut events),
                Phase::Done => false,
            };
            if events.len() != before || moved {
                self.last_progress_ns = now_ns;
            }
            if !moved {
                break;
            }
        }
        events
    }

    /// Returns true if the phase changed (step again).
    fn step_ping(
        &mut self,
        now: u64,
        sockets: &mut SocketSet<'static>,
        events: &mut Vec<AppEvent>,
    ) -> bool {
        let Phase::Ping {
            seq,
            sent_at,
            next_at,
        } = &mut self.phase
        else {
            return false;
        };
        let socket = sockets.get_mut::<icmp::Socket>(self.icmp);
        // Replies.
        while let Ok((payload, _from)) = socket.recv() {
            let Ok(packet) = Icmpv4Packet::new_checked(payload) else {
                continue;
            };
            let Ok(repr) = Icmpv4Repr::parse(&packet, &ChecksumCapabilities::default()) else {
                continue;
            };
            if let Icmpv4Repr::EchoReply {
                ident: PING_IDENT,
                seq_no,
                ..
            } = repr
            {
                if let (Some(t), true) = (*sent_at, seq_no == *seq) {
                    let rtt_ms = (now - t) as f64 / 1e6;
                    events.push(AppEvent::Ping(PingResult {
                        seq: seq_no,
                        rtt_ms: Some(rtt_ms),
                    }));
                    *sent_at = None;
                    *next_at = t + PING_INTERVAL_NS;
                    *seq += 1;
                }
            }
        }
        // Timeout.
        if let Some(t) = *sent_at {
            if now >= t + PING_INTERVAL_NS {
                events.push(AppEvent::Ping(PingResult {
                    seq: *seq,
                    rtt_ms: None,
                }));
                *sent_at = None;
                *next_at = now;
                *seq += 1;
            }
        }
        if *seq >= self.pings {
            self.phase = transfers(self.device_sends);
            return true;
        }
        if sent_at.is_none() && now >= *next_at && socket.can_send() {
            let data = [0xA5u8; PING_DATA_LEN];
            let repr = Icmpv4Repr::EchoRequest {
                ident: PING_IDENT,
                seq_no: *seq,
                data: &data,
            };
            if let Ok(buf) = socket.send(repr.buffer_len(), IpAddress::Ipv4(self.host_ip)) {
                let mut packet = Icmpv4Packet::new_unchecked(buf);
                repr.emit(&mut packet, &ChecksumCapabilities::default());
                *sent_at = Some(now);
            }
        }
        false
    }

    /// Returns true if the phase changed (step again).
    fn step_get(
        &mut self,
        now: u64,
        iface: &mut Interface,
        sockets: &mut SocketSet<'static>,
        events: &mut Vec<AppEvent>,
    ) -> bool {
        let Phase::Get { file, rep, current } = &mut self.phase else {
            return false;
        };
        let bench = match next_file(&self.files, self.gets, file, rep, events) {
            NextFile::Transfer(b) => b,
            NextFile::Stepped => return true,
            NextFile::AllDone => {
                self.phase = Phase::Done;
                return true;
            }
        };
        let transfer = match current {
            Some(t) => t,
            None => {
                let mut socket = device_socket(self.window, 1024);
                let port = take_port(&mut self.next_port);
                let remote = (IpAddress::Ipv4(self.host_ip), HTTP_PORT);
                if let Err(e) = socket.connect(iface.context(), remote, port) {
                    events.push(AppEvent::Download(failed(
                        bench,
                        now,
                        now,
                        format!("connect: {e}"),
                    )));
                    *rep += 1;
                    return true;
                }
                let handle = sockets.add(socket);
                let client = match Client::new("198.18.0.1", bench.path) {
                    Ok(c) => c,
                    Err(e) => {
                        events.push(AppEvent::Download(failed(bench, now, now, e.to_string())));
                        *rep += 1;
                        return true;
                    }
                };
                current.insert(Box::new(Transfer {
                    handle,
                    client,
                    started_ns: now,
                }))
            }
        };
        let socket = sockets.get_mut::<tcp::Socket>(transfer.handle);
        let received_before = transfer.client.total_bytes();
        let fetched = smoltcp_fetch(socket, &mut transfer.client);
        if transfer.client.total_bytes() != received_before {
            self.last_progress_ns = now;
        }
        let outcome = match fetched {
            Ok(None) if !socket.is_open() => {
                Err("connection closed before the response".to_string())
            }
            Ok(None) => return false,
            Ok(Some(d)) => Ok(d),
            Err(e) => Err(e.to_string()),
        };
        socket.close();
        let seconds = (now - transfer.started_ns) as f64 / 1e9;
        let result = match outcome {
            Ok(d) => DownloadResult {
                path: bench.path.to_string(),
                bytes: d.total_bytes,
                body_bytes: d.body_bytes,
                seconds,
                bytes_per_s: if seconds > 0.0 {
                    d.total_bytes as f64 / seconds
                } else {
                    0.0
                },
                crc32: d.crc32,
                expected_crc32: expected_crc32(bench),
                status: d.status,
                error: None,
            },
            Err(e) => {
                let mut r = failed(bench, transfer.started_ns, now, e);
                r.bytes = transfer.client.total_bytes();
                r
            }
        };
        self.closing.push(transfer.handle);
        events.push(AppEvent::Download(result));
        *current = None;
        *rep += 1;
        true
    }
}

/// What to do next in a phase of transfers.
enum NextFile {
    /// Transfer this file (again).
    Transfer(BenchFile),
    /// A file's transfers are all done (reported): step again.
    Stepped,
    /// Every file is done (reported).
    AllDone,
}

/// The next file of `files` to transfer, `gets` times each; reports a file's or the whole
/// phase's end in `events`.
fn next_file(
    files: &[BenchFile],
    gets: u32,
    file: &mut usize,
    rep: &mut u32,
    events: &mut Vec<AppEvent>,
) -> NextFile {
    let Some(&bench) = files.get(*file) else {
        events.push(AppEvent::Finished);
        return NextFile::AllDone;
    };
    if *rep >= gets {
        events.push(AppEvent::FileDone(bench));
        *file += 1;
        *rep = 0;
        return NextFile::Stepped;
    }
    NextFile::Transfer(bench)
}

/// A TCP socket of the device with `rx` and `tx` bytes of buffer, as linklab's firmware has
/// them: no congestion window. The firmware builds smoltcp without its reno and cubic
/// features; this crate turns cubic on for the host, which in smoltcp makes it every new
/// socket's default, so the device's sockets turn it off.
fn device_socket(rx: usize, tx: usize) -> tcp::Socket<'static> {
    let rx = tcp::SocketBuffer::new(vec![0; rx]);
    let tx = tcp::SocketBuffer::new(vec![0; tx]);
    let mut socket = tcp::Socket::new(rx, tx);
    socket.set_congestion_control(tcp::CongestionControl::None);
    socket
}

/// The next local TCP port (wrapping to the first ephemeral one).
fn take_port(next: &mut u16) -> u16 {
    let port = *next;
    *next = if port == u16::MAX {
        FIRST_LOCAL_PORT
    } else {
        port + 1
    };
    port
}

/// The phase after the pings.
fn transfers(device_sends: bool) -> Phase {
    if device_sends {
        Phase::Put {
            file: 0,
            rep: 0,
            current: None,
        }
    } else {
        Phase::Get {
            file: 0,
            rep: 0,
            current: None,
        }
    }
}

fn failed(bench: BenchFile, start: u64, now: u64, error: String) -> DownloadResult {
    DownloadResult {
        path: bench.path.to_string(),
        bytes: 0,
        body_bytes: 0,
        seconds: (now - start) as f64 / 1e9,
        bytes_per_s: 0.0,
        crc32: 0,
        expected_crc32: expected_crc32(bench),
        status: 0,
        error: Some(error),
    }
}
