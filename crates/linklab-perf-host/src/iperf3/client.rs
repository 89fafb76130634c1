//! The host client: connect as iperf3 does (resolve, `-4`/`-6`, bind, socket options), run
//! one test against any iperf3 server, report everything iperf3 prints.

use std::io::{ErrorKind, Write};
use std::net::{IpAddr, SocketAddr, TcpStream, ToSocketAddrs, UdpSocket};
use std::os::fd::AsRawFd;
use std::time::{Duration, Instant};

use socket2::SockRef;

use super::control::Control;
use super::error::Error;
use super::measure::CpuMeter;
use super::observer::Observer;
use super::report::{ControlInfo, HostInterval, HostReport, ServerOutput, StreamInfo};
use super::sockets::{self, iperf_err, BufferSizes, Family, StreamOptions};
use super::streams::{DataSock, DataStreams};
use crate::clock::now_us;
use crate::sys;
use linklab_perf::iperf::errors::i_errno;
use linklab_perf::iperf::json::{ParamStrings, Params, Protocol};
use linklab_perf::iperf::report::{Interval, TestReport};
use linklab_perf::iperf::session::{ClientOptions, Failure, Phase, Session};
use linklab_perf::iperf::wire::{
    self, DEFAULT_PORT, DEFAULT_TCP_BLOCK_LEN, DEFAULT_UDP_BLOCK_LEN, MAX_JSON_LEN,
    MAX_UDP_BLOCK_LEN,
};
use linklab_perf::time::Micros;

/// Largest results document accepted when the server's output rides along
/// (`--get-server-output`); the buffer is only touched as far as the document goes.
const MAX_SERVER_OUTPUT: usize = 64 << 20;

/// What [`run_client`] needs: where the server is and what test to run.
#[derive(Clone, Debug)]
pub struct ClientConfig {
    /// Server host name or address.
    pub host: String,
    /// Server port (5201).
    pub port: u16,
    /// Test parameters. `len == 0` picks iperf3's default (128 KiB TCP; UDP: the control
    /// connection's MSS, 1460 if unknown); `rate_bps == 0` means unlimited.
    pub params: Params,
    /// `-T`, `--extra-data`, `-C`.
    pub title: Option<String>,
    /// `--extra-data`.
    pub extra_data: Option<String>,
    /// `-C`: TCP congestion control.
    pub congestion: Option<String>,
    /// Reporting interval (`-i`), zero for none.
    pub interval: Duration,
    /// Connect timeout for the control and data connections.
    pub connect_timeout: Duration,
    /// The test fails after this long without any activity.
    pub watchdog: Duration,
    /// `-4` / `-6`.
    pub family: Family,
    /// `-B`: local address.
    pub bind: Option<IpAddr>,
    /// `--bind-dev`.
    pub bind_dev: Option<String>,
    /// `--cport`: local port of the first data stream (the next ones count up).
    pub cport: Option<u16>,
    /// `-A n`: pin this process to CPU n.
    pub affinity: Option<usize>,
    /// `--rcv-timeout`: a receiving client gives up after this long without data.
    pub rcv_timeout: Option<Duration>,
    /// `--snd-timeout`: TCP_USER_TIMEOUT on the control and data connections.
    pub snd_timeout: Option<Duration>,
    /// `-F`: a sending stream sends this file's contents (the test ends at its end), a
    /// receiving one writes what arrives into it.
    pub file: Option<std::path::PathBuf>,
}

impl ClientConfig {
    /// A 10-second TCP test against `host`:5201.
    pub fn new(host: &str) -> Self {
        Self {
            host: host.into(),
            port: DEFAULT_PORT,
            params: Params {
                len: 0,
                ..Params::default()
            },
            title: None,
            extra_data: None,
            congestion: None,
            interval: Duration::ZERO,
            connect_timeout: Duration::from_secs(5),
            watchdog: Duration::from_secs(10),
            family: Family::Any,
            bind: None,
            bind_dev: None,
            cport: None,
            affinity: None,
            rcv_timeout: None,
            snd_timeout: None,
            file: None,
        }
    }

    /// The socket options of the data streams.
    fn stream_options(&self) -> StreamOptions {
        let p = &self.params;
        StreamOptions {
            window: p.window,
            mss: p.mss,
            nodelay: p.nodelay,
            tos: p.tos,
            flowlabel: p.flowlabel,
            fq_rate_bps: p.fq_rate_bps,
            congestion: self.congestion.clone(),
            snd_timeout: self.snd_timeout,
            dont_fragment: p.dont_fragment,
            bind_dev: self.bind_dev.clone(),
        }
    }
}

/// Runs one iperf3 test against the server in `cfg` and returns what it measured.
pub fn run_client(cfg: &ClientConfig) -> Result<TestReport, Error> {
    run_client_with(cfg, &mut |_| {})
}

/// Like [`run_client`], calling `on_interval` for each `-i` interval.
pub fn run_client_with(
    cfg: &ClientConfig,
    on_interval: &mut dyn FnMut(&Interval),
) -> Result<TestReport, Error> {
    struct Intervals<'f>(&'f mut dyn FnMut(&Interval));
    impl Observer for Intervals<'_> {
        fn interval(&mut self, iv: &HostInterval) {
            (self.0)(&iv.interval)
        }
    }
    run_client_observed(cfg, &mut Intervals(on_interval)).map(|r| r.report)
}

/// Runs one test, telling `obs` about each step; returns everything iperf3 prints.
pub fn run_client_observed(
    cfg: &ClientConfig,
    obs: &mut dyn Observer,
) -> Result<HostReport, Error> {
    let mut params = cfg.params;
    if params.duration_s == 0 && params.bytes == 0 && params.blocks == 0 {
        return Err(Error::Config(
            "a test needs a duration, a byte count or a block count".into(),
        ));
    }
    if let Some(cpu) = cfg.affinity {
        sys::set_cpu_affinity(cpu).map_err(|e| iperf_err(i_errno::AFFINITY, &e))?;
    }
    let opts = cfg.stream_options();
    let (ctrl, target) = connect_control(cfg)?;
    let mss = settle_block_len(&mut params, &ctrl, obs);
    linklab_perf::iperf::session::validate_params(&params).map_err(|e| Error::Config(e.into()))?;
    ctrl.set_nonblocking(true)?;
    let session_opts = session_options(cfg, params, &ctrl);
    let rx_len = if params.get_server_output {
        MAX_SERVER_OUTPUT
    } else {
        MAX_JSON_LEN
    };
    let (mut rx, mut tx) = (vec![0u8; rx_len], vec![0u8; MAX_JSON_LEN]);
    let mut session = Session::client(&session_opts, &mut rx, &mut tx, now_us());
    session.set_watchdog(cfg.watchdog.as_micros().max(1) as Micros);
    session.set_max_json(rx_len);
    let control = ControlInfo {
        local: ctrl.local_addr()?,
        peer: ctrl.peer_addr()?,
        mss,
        cookie: String::from_utf8_lossy(&session.cookie()[..wire::COOKIE_SIZE - 1]).into_owned(),
    };
    obs.connected(&control);
    let cpu = CpuMeter::start();
    let mut data = DataStreams::with_file(params.len as usize, cfg.file.clone());
    data.set_payload(params.len as usize, params.repeating_payload);
    if params.zerocopy {
        data.enable_zerocopy()?;
    }
    let mut buffers = BufferSizes::default();
    let mut congestion_used = None;
    let mut started = false;
    let mut ctrl = Control::new(ctrl);
    let receiving = params.reverse || params.bidirectional;
    loop {
        ctrl.flush(&mut session)?;
        if session.is_finished() {
            break;
        }
        if session.phase() == Phase::CreateStreams && data.streams.len() < session.streams_wanted()
        {
            let opened = open_client_streams(cfg, &opts, &mut session, &mut data, target, obs)?;
            buffers = opened.0;
            congestion_used = opened.1.or(congestion_used);
            continue;
        }
        if !started && session.phase() == Phase::Running {
            started = true;
            data.last_rx = Instant::now();
            obs.started(session.params(), &buffers);
        }
        let ready = data.step(&mut session, &ctrl, None)?;
        if ready.ctrl {
            if matches!(session.phase(), Phase::Running | Phase::Ending) {
                session.set_cpu_util(cpu.percent());
            }
            ctrl.read(&mut session);
        }
        session.poll(now_us());
        while let Some(iv) = session.take_interval() {
            obs.interval(&data.sample(iv));
        }
        if let (true, Some(limit)) = (receiving, cfg.rcv_timeout) {
            if session.phase() == Phase::Running && data.last_rx.elapsed() > limit {
                return Err(Error::Iperf {
                    code: 144,
                    errno: 0,
                });
            }
        }
    }
    ctrl.flush(&mut session)?;
    while let Some(iv) = session.take_interval() {
        obs.interval(&data.sample(iv));
    }
    if let Phase::Failed(f) = session.phase() {
        return Err(Error::Test(f));
    }
    // The last document received is the server's results.
    let server_output = if params.get_server_output {
        server_output_of(session.last_json())
    } else {
        None
    };
    let sender_has_retransmits = session.our_results().sender_has_retransmits == 1;
    Ok(HostReport {
        report: session.report(),
        control,
        streams: data.infos(),
        tcp: data.tcp.clone(),
        cpu: session.cpu_util(),
        peer: session.peer_summary().cloned(),
        congestion_used,
        sender_has_retransmits,
        buffers,
        server_output,
    })
}

/// The block length iperf3 picks when none is given (TCP's default; UDP's, the control
/// connection's MSS), with its warning when a UDP block exceeds the MSS; returns the MSS (0:
/// unknown).
fn settle_block_len(params: &mut Params, ctrl: &TcpStream, obs: &mut dyn Observer) -> u32 {
    let mss = SockRef::from(ctrl)
        .mss()
        .ok()
        .filter(|m| *m > 0 && *m as usize <= MAX_UDP_BLOCK_LEN)
        .unwrap_or(0);
    if params.len == 0 {
        params.len = match params.protocol {
            Protocol::Tcp => DEFAULT_TCP_BLOCK_LEN as u32,
            Protocol::Udp if mss > 0 => mss,
            Protocol::Udp => DEFAULT_UDP_BLOCK_LEN as u32,
        };
    }
    if params.protocol == Protocol::Udp && mss > 0 && params.len > mss {
        obs.warning(&format!(
            "UDP block size {} exceeds TCP MSS {mss}, may result in fragmentation / drops",
            params.len
        ));
    }
    mss
}

/// The session's options: the parameters, the strings they carry, the interval, a cookie
/// seeded from the time, the process and the control connection.
fn session_options<'c>(
    cfg: &'c ClientConfig,
    params: Params,
    ctrl: &TcpStream,
) -> ClientOptions<'c> {
    let strings = ParamStrings {
        title: cfg.title.as_deref(),
        extra_data: cfg.extra_data.as_deref(),
        congestion: cfg.congestion.as_deref(),
    };
    ClientOptions {
        params,
        strings,
        interval_us: cfg.interval.as_micros() as Micros,
        cookie_seed: probe_seed(now_us() ^ (u64::from(std::process::id()) << 32) ^ seed_from(ctrl)),
    }
}

/// The server output a results document carries (`server_output_json` or `_text`).
fn server_output_of(json: &[u8]) -> Option<ServerOutput> {
    let mut v: serde_json::Value = serde_json::from_slice(json).ok()?;
    if let Some(j) = v.get_mut("server_output_json").map(serde_json::Value::take) {
        return Some(ServerOutput::Json(j));
    }
    v.get("server_output_text")
        .and_then(|t| t.as_str())
        .map(|t| ServerOutput::Text(t.to_string()))
}

fn seed_from(s: &TcpStream) -> u64 {
    s.local_addr()
        .map(|a| u64::from(a.port()) << 16)
        .unwrap_or(0)
}

/// The server's addresses that `-4`/`-6`/`-B` allow, in resolver order.
fn resolve(cfg: &ClientConfig) -> Result<Vec<SocketAddr>, Error> {
    let family = match cfg.bind {
        Some(IpAddr::V4(_)) => Family::V4,
        Some(IpAddr::V6(_)) => Family::V6,
        None => cfg.family,
    };
    let all: Vec<SocketAddr> = (cfg.host.as_str(), cfg.port)
        .to_socket_addrs()
        .map_err(|e| Error::Config(format!("unable to connect to server: {e}")))?
        .collect();
    let allowed: Vec<SocketAddr> = all.into_iter().filter(|a| family.allows(a)).collect();
    if allowed.is_empty() {
        let which = match family {
            Family::V4 => "IPv4 ",
            Family::V6 => "IPv6 ",
            Family::Any => "",
        };
        return Err(Error::Config(format!(
            "unable to connect to server: host {:?} has no {which}address",
            cfg.host
        )));
    }
    Ok(allowed)
}

/// Connects the control connection to the first address that answers (iperf3's
/// `netdial`); it carries TCP_NODELAY and `--snd-timeout`.
fn connect_control(cfg: &ClientConfig) -> Result<(TcpStream, SocketAddr), Error> {
    let ctrl_opts = StreamOptions {
        snd_timeout: cfg.snd_timeout,
        bind_dev: cfg.bind_dev.clone(),
        ..StreamOptions::default()
    };
    let mut last = None;
    for target in resolve(cfg)? {
        match sockets::connect_tcp(
            target,
            cfg.bind,
            0,
            &ctrl_opts,
            Some(cfg.connect_timeout),
            &mut |_| {},
        ) {
            Ok(c) => {
                c.stream.set_nodelay(true)?;
                return Ok((c.stream, target));
            }
            Err(e) => last = Some(e),
        }
    }
    Err(last.unwrap_or(Error::Iperf {
        code: 103,
        errno: 0,
    }))
}

/// Opens the data streams the session wants, in its order (iperf3's
/// `iperf_create_streams`): TCP connects and sends the cookie, UDP trades the hello.
/// Returns the buffer sizes and the congestion control in use.
fn open_client_streams(
    cfg: &ClientConfig,
    opts: &StreamOptions,
    session: &mut Session,
    data: &mut DataStreams,
    target: SocketAddr,
    obs: &mut dyn Observer,
) -> Result<(BufferSizes, Option<String>), Error> {
    let cookie = *session.cookie();
    let mut buffers = BufferSizes::default();
    let mut congestion = None;
    let mut warn = |m: &str| obs.warning(m);
    let mut opened = Vec::new();
    while data.streams.len() + opened.len() < session.streams_wanted() {
        let idx = data.streams.len() + opened.len();
        let port = cfg.cport.map_or(0, |p| p.saturating_add(idx as u16));
        let udp = session.params().protocol == Protocol::Udp;
        let sock = if udp {
            let (s, b) = sockets::connect_udp(
                target,
                cfg.bind,
                port,
                opts,
                session.params().len as usize,
                &mut warn,
            )?;
            buffers = b;
            udp_hello(&s, cfg.connect_timeout)?;
            DataSock::Udp(s, None)
        } else {
            let c = sockets::connect_tcp(
                target,
                cfg.bind,
                port,
                opts,
                Some(cfg.connect_timeout),
                &mut warn,
            )?;
            buffers = c.buffers;
            let mut s = c.stream;
            s.write_all(&cookie).map_err(|e| iperf_err(105, &e))?;
            congestion = Some(sockets::client_congestion(&s, opts.congestion.as_deref())?);
            DataSock::Tcp(s)
        };
        let (fd, local, peer) = match &sock {
            DataSock::Tcp(t) => (t.as_raw_fd(), t.local_addr()?, t.peer_addr()?),
            DataSock::Udp(u, _) => (u.as_raw_fd(), u.local_addr()?, u.peer_addr()?),
        };
        let r = match &sock {
            DataSock::Tcp(t) => SockRef::from(t),
            DataSock::Udp(u, _) => SockRef::from(u),
        };
        sockets::init_stream(&r, opts, peer.is_ipv6(), udp)?;
        match &sock {
            DataSock::Tcp(t) => t.set_nonblocking(true)?,
            DataSock::Udp(u, _) => u.set_nonblocking(true)?,
        }
        opened.push((sock, fd, local, peer));
    }
    for (sock, fd, local, peer) in opened {
        let Some(idx) = session.client_stream_opened(now_us()) else {
            // The session no longer wants streams: it has failed, say why.
            return Err(Error::Test(match session.phase() {
                Phase::Failed(f) => f,
                _ => Failure::StreamFailed,
            }));
        };
        let Some(st) = session.streams().get(idx).copied() else {
            return Err(Error::Test(Failure::StreamFailed));
        };
        let info = StreamInfo {
            id: st.id,
            socket: fd,
            sender: st.sender,
            local,
            peer,
        };
        let tcp_sender = st.sender && matches!(sock, DataSock::Tcp(_));
        data.add(idx, sock, info, tcp_sender)?;
        obs.stream(&info);
    }
    Ok((buffers, congestion))
}

/// Sends the UDP stream hello until the server answers (iperf3 3.12's `iperf_udp_connect`;
/// a lost datagram is sent again every 500 ms until `timeout`).
fn udp_hello(s: &UdpSocket, timeout: Duration) -> Result<(), Error> {
    s.set_read_timeout(Some(Duration::from_millis(500)))?;
    let mut buf = [0u8; 64];
    for _ in 0..(timeout.as_millis() / 500).max(1) {
        s.send(&wire::udp_hello()).map_err(|e| iperf_err(205, &e))?;
        match s.recv(&mut buf) {
            Ok(n) if wire::is_udp_hello_reply(&buf[..n]) => return Ok(()),
            Ok(_) => {}
            Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
            Err(e) => return Err(iperf_err(206, &e)),
        }
    }
    Err(Error::Iperf {
        code: 206,
        errno: libc::ETIMEDOUT,
    })
}

/// The first seed from `seed` on whose cookie an iperf 2.1 server reads a short test header
/// and answers with its version reply at once (see `iperf2::detect`): pointed at an iperf 2
/// server, the client then fails within a round trip naming iperf 2, instead of after the
/// server's 4 s header timeout with a bare `UnexpectedState(0)`. About 70 tries on
/// average (60 seeds of 4000 qualify); the cookie keeps 32 random characters of its 36.
fn probe_seed(seed: u64) -> u64 {
    (0..100_000u64)
        .map(|k| seed.wrapping_add(k))
        .find(|s| {
            linklab_perf::iperf2::detect::elicits_iperf2_reply(
                &linklab_perf::iperf::wire::make_cookie(*s),
            )
        })
        .unwrap_or(seed)
}
