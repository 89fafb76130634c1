//! The smoltcp device server (`iperf::device::SmoltcpIperfServer`) against our sans-IO client,
//! both on one smoltcp interface over smoltcp's loopback device, in virtual time: TCP,
//! reverse, bidir, -P 4, -n, UDP; then a second client is denied and 20 back-to-back tests
//! leave no stream sockets behind.

use linklab_perf::data_memory::{DataMemory, DataPlan, SmoltcpDataMemory, Tenant};
use linklab_perf::iperf::device::SmoltcpIperfServer;
use linklab_perf::iperf::wire;
use linklab_perf::iperf::{ClientOptions, Failure, Params, Phase, Protocol, Session, TestReport};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet, SocketStorage};
use smoltcp::phy::{Loopback, Medium};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr, IpEndpoint};

mod lent_memory;
mod modes;
mod next_client;

const PORT: u16 = 5201;
const TICK_US: i64 = 50;

struct Net {
    iface: Interface,
    dev: Loopback,
    sockets: SocketSet<'static>,
    now: Instant,
}

fn tcp_socket(size: usize) -> tcp::Socket<'static> {
    tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; size]),
        tcp::SocketBuffer::new(vec![0; size]),
    )
}

fn udp_socket() -> udp::Socket<'static> {
    let rx = udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 256], vec![0; 256 * 1500]);
    let tx = udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; 256], vec![0; 256 * 1500]);
    udp::Socket::new(rx, tx)
}

fn net() -> Net {
    let mut dev = Loopback::new(Medium::Ethernet);
    let cfg = Config::new(EthernetAddress([2, 0, 0, 0, 0, 1]).into());
    let now = Instant::from_millis(1);
    let mut iface = Interface::new(cfg, &mut dev, now);
    iface.update_ip_addrs(|a| {
        a.push(IpCidr::new(IpAddress::v4(127, 0, 0, 1), 8)).unwrap();
    });
    let sockets = SocketSet::new(Vec::<SocketStorage>::new());
    Net {
        iface,
        dev,
        sockets,
        now,
    }
}

/// Our client session driving smoltcp sockets (the host-side role, in-process).
struct Client {
    ctrl: SocketHandle,
    tcp: Vec<SocketHandle>,
    udp: Vec<SocketHandle>,
    opening: Option<SocketHandle>,
    next_port: u16,
    /// CREATE_STREAMS came.
    announced: bool,
}

fn server_addr() -> IpEndpoint {
    IpEndpoint::new(IpAddress::v4(127, 0, 0, 1), PORT)
}

/// Runs one test; returns the client's report (or failure) and the server's outcome.
fn run_test(
    net: &mut Net,
    server: &mut SmoltcpIperfServer<'static>,
    params: Params,
    port_base: u16,
) -> TestReport {
    run_test_over(net, server, None, params, port_base)
}

/// [`run_test`] with the server's data sockets made over shares of `memory` when given
/// (`poll_lent`, as `DeviceApps` polls it).
fn run_test_over(
    net: &mut Net,
    server: &mut SmoltcpIperfServer<'static>,
    mut memory: Option<&mut SmoltcpDataMemory<'static>>,
    params: Params,
    port_base: u16,
) -> TestReport {
    let poll = |net: &mut Net, server: &mut SmoltcpIperfServer<'static>| match memory {
        Some(ref mut m) => server.poll_lent(&mut net.sockets, m, net.now),
        None => server.poll(&mut net.sockets, net.now),
    };
    run_test_polled(net, server, poll, params, port_base)
}

/// [`run_test`] with the server polled by `poll` (e.g. beside another tenant of its data
/// memory, as `DeviceApps` polls it beside the iperf 2 server).
fn run_test_polled(
    net: &mut Net,
    server: &mut SmoltcpIperfServer<'static>,
    poll: impl FnMut(&mut Net, &mut SmoltcpIperfServer<'static>),
    params: Params,
    port_base: u16,
) -> TestReport {
    let run = drive(net, server, poll, params, port_base);
    assert_eq!(
        run.client,
        Phase::Done,
        "client failed; params {params:?}; server {:?}",
        server.session().phase()
    );
    run.report
}

/// How a test driven by [`drive`] ended for the client.
struct Run {
    /// The client's last phase.
    client: Phase,
    /// The client's report.
    report: TestReport,
    /// The server announced the streams (the client read CREATE_STREAMS).
    announced: bool,
}

/// Runs one test as [`run_test_polled`] and tells how it ended, however it did.
fn drive(
    net: &mut Net,
    server: &mut SmoltcpIperfServer<'static>,
    mut poll: impl FnMut(&mut Net, &mut SmoltcpIperfServer<'static>),
    params: Params,
    port_base: u16,
) -> Run {
    let (mut rx, mut tx) = (vec![0u8; 8192], vec![0u8; 8192]);
    let opts = ClientOptions {
        strings: Default::default(),
        params,
        interval_us: 0,
        cookie_seed: u64::from(port_base),
    };
    let mut session = Session::client(&opts, &mut rx, &mut tx, net.now.total_micros() as u64);
    // A stock client has no watchdog: it waits for the server's (10 s) to end a test.
    session.set_watchdog(20_000_000);
    let ctrl = net.sockets.add(tcp_socket(8192));
    net.sockets
        .get_mut::<tcp::Socket>(ctrl)
        .connect(net.iface.context(), server_addr(), port_base)
        .unwrap();
    let mut c = Client {
        ctrl,
        tcp: vec![],
        udp: vec![],
        opening: None,
        next_port: port_base + 1,
        announced: false,
    };
    let mut buf = vec![0u8; 65536];
    let deadline = net.now + smoltcp::time::Duration::from_secs(30);
    while !session.is_finished() {
        assert!(
            net.now < deadline,
            "test did not finish; client phase {:?}",
            session.phase()
        );
        net.iface.poll(net.now, &mut net.dev, &mut net.sockets);
        poll(net, server);
        client_step(net, &mut c, &mut session, &mut buf);
        net.now += smoltcp::time::Duration::from_micros(TICK_US as u64);
    }
    // Let the server see IPERF_DONE and close.
    for _ in 0..2000 {
        client_flush(net, &c, &mut session);
        net.iface.poll(net.now, &mut net.dev, &mut net.sockets);
        poll(net, server);
        net.now += smoltcp::time::Duration::from_micros(TICK_US as u64);
    }
    for h in c
        .tcp
        .iter()
        .chain(c.udp.iter())
        .chain([&c.ctrl])
        .chain(&c.opening)
    {
        net.sockets.remove(*h);
    }
    Run {
        client: session.phase(),
        report: session.report(),
        announced: c.announced,
    }
}

fn client_flush(net: &mut Net, c: &Client, session: &mut Session) {
    let s = net.sockets.get_mut::<tcp::Socket>(c.ctrl);
    while !session.control_output().is_empty() && s.can_send() {
        let n = s.send_slice(session.control_output()).unwrap();
        session.control_sent(n);
    }
}

fn client_step(net: &mut Net, c: &mut Client, session: &mut Session, buf: &mut [u8]) {
    let now = net.now.total_micros() as u64;
    client_flush(net, c, session);
    {
        let s = net.sockets.get_mut::<tcp::Socket>(c.ctrl);
        while s.can_recv() {
            let n = s.recv(|b| {
                let n = session.control_input(b, now);
                (n, n)
            });
            if !matches!(n, Ok(k) if k > 0) {
                break;
            }
        }
        c.announced |= session.phase() == Phase::CreateStreams;
        // The server closed its control connection (as a stock client reads its end).
        if !s.may_recv() && s.state() != tcp::State::SynSent && !session.is_finished() {
            session.control_closed(now);
        }
    }
    if session.phase() == Phase::CreateStreams && session.streams().len() < session.streams_wanted()
    {
        match (session.params().protocol, c.opening) {
            (Protocol::Tcp, None) => {
                let h = net.sockets.add(tcp_socket(65536));
                net.sockets
                    .get_mut::<tcp::Socket>(h)
                    .connect(net.iface.context(), server_addr(), c.next_port)
                    .unwrap();
                c.next_port += 1;
                c.opening = Some(h);
            }
            (Protocol::Tcp, Some(h)) => {
                let s = net.sockets.get_mut::<tcp::Socket>(h);
                if s.may_send() {
                    assert_eq!(s.send_slice(session.cookie()).unwrap(), wire::COOKIE_SIZE);
                    c.tcp.push(h);
                    c.opening = None;
                    session.client_stream_opened(now).unwrap();
                }
            }
            (Protocol::Udp, None) => {
                let h = net.sockets.add(udp_socket());
                let s = net.sockets.get_mut::<udp::Socket>(h);
                s.bind(c.next_port).unwrap();
                c.next_port += 1;
                s.send_slice(&wire::udp_hello(), server_addr()).unwrap();
                c.opening = Some(h);
            }
            (Protocol::Udp, Some(h)) => {
                let s = net.sockets.get_mut::<udp::Socket>(h);
                if let Ok((d, _)) = s.recv() {
                    assert!(wire::is_udp_hello_reply(d));
                    c.udp.push(h);
                    c.opening = None;
                    session.client_stream_opened(now).unwrap();
                }
            }
        }
    }
    let reading = session.should_read();
    for (idx, h) in c.tcp.clone().into_iter().enumerate() {
        let s = net.sockets.get_mut::<tcp::Socket>(h);
        if reading {
            while let Ok(n) = s.recv(|b| (b.len(), b.len())) {
                if n == 0 {
                    break;
                }
                session.on_tcp_received(idx, n, now);
            }
        }
        while s.can_send() {
            let budget = session.tcp_send_budget(idx, now);
            if budget == 0 {
                break;
            }
            let n = s.send_slice(&buf[..budget.min(buf.len())]).unwrap();
            if n == 0 {
                break;
            }
            session.on_tcp_sent(idx, n, now);
        }
    }
    for (idx, h) in c.udp.clone().into_iter().enumerate() {
        let s = net.sockets.get_mut::<udp::Socket>(h);
        // Like iperf3, leave datagrams queued until the test runs.
        if reading {
            while let Ok((d, _)) = s.recv() {
                session.on_udp_received(idx, d, now);
            }
        }
        while let Some(len) = session.udp_next(idx, now, buf) {
            if s.send_slice(&buf[..len], server_addr()).is_err() {
                break;
            }
            session.on_udp_sent(idx, len, now);
        }
    }
    session.poll(now);
}

struct Rig {
    net: Net,
    tcp: Vec<SocketHandle>,
    udp: SocketHandle,
}

fn rig(n_tcp: usize) -> Rig {
    let mut net = net();
    let tcp: Vec<SocketHandle> = (0..n_tcp)
        .map(|_| net.sockets.add(tcp_socket(65536)))
        .collect();
    let udp = net.sockets.add(udp_socket());
    Rig { net, tcp, udp }
}

fn base(protocol: Protocol) -> Params {
    Params {
        protocol,
        duration_s: 1,
        len: if protocol == Protocol::Udp {
            1400
        } else {
            16384
        },
        rate_bps: if protocol == Protocol::Udp {
            20_000_000
        } else {
            0
        },
        ..Params::default()
    }
}

fn check(rep: &TestReport, server: &mut SmoltcpIperfServer<'static>) {
    let outcome = server
        .take_outcome()
        .expect("server finished a test")
        .expect("server test ok");
    for (ours, theirs) in [
        (rep.forward, outcome.forward),
        (rep.reverse, outcome.reverse),
    ] {
        assert_eq!(ours.is_some(), theirs.is_some());
        if let (Some(a), Some(b)) = (ours, theirs) {
            assert!(a.bytes_received > 0, "{a:?}");
            assert_eq!(a.bytes_sent, b.bytes_sent);
            assert_eq!(a.bytes_received, b.bytes_received);
            assert!(a.bytes_received <= a.bytes_sent);
            assert_eq!(a.lost, b.lost);
        }
    }
    assert_eq!(server.open_streams(), 0);
}
