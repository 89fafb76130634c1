//! iperf 2's TCP server on one socket (`iperf2::one_socket::OneSocketServer`, the compact
//! image's) against our sans-IO iperf 2 client (`TcpClientFlow`), on two smoltcp hosts joined
//! by a wire, in virtual time. The device runs as a firmware's main loop does: its socket has
//! the apps' lifetime rules (`lifetime::tcp_socket`), and it wakes only for a frame or a
//! deadline (the interface's, the server's `poll_at`). A test received, one sent back (`-R`),
//! back to back on the one socket; a second client refused while a stream runs; after an
//! iperf3 client, a silent one, a `-r` test and a spoofed SYN, the next client is served.

use std::cell::RefCell;
use std::collections::VecDeque;
use std::rc::Rc;

use linklab_perf::apps::TcpBuffers;
use linklab_perf::iperf2::one_socket::OneSocketServer;
use linklab_perf::iperf2::{
    Amount, ClientEnd, Mode, Protocol, TcpClientConfig, TcpClientFlow, TcpFlow, TestRequest,
};
use linklab_perf::lifetime::tcp_socket;
use smoltcp::iface::{Config, Interface, PollIngressSingleResult, SocketHandle, SocketSet};
use smoltcp::phy::{Device, DeviceCapabilities, Medium, RxToken, TxToken};
use smoltcp::socket::tcp;
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr, Ipv4Address};

const PORT: u16 = 5001;
const DEVICE: Ipv4Address = Ipv4Address::new(198, 18, 0, 2);
const CLIENT: Ipv4Address = Ipv4Address::new(198, 18, 0, 1);

/// Frames one way.
type Queue = Rc<RefCell<VecDeque<Vec<u8>>>>;

/// One end of the wire.
struct Port {
    rx: Queue,
    tx: Queue,
}

struct Rx(Vec<u8>);
struct Tx(Queue);

impl RxToken for Rx {
    fn consume<R, F: FnOnce(&[u8]) -> R>(self, f: F) -> R {
        f(&self.0)
    }
}

impl TxToken for Tx {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = vec![0; len];
        let r = f(&mut frame);
        self.0.borrow_mut().push_back(frame);
        r
    }
}

impl Device for Port {
    type RxToken<'a> = Rx;
    type TxToken<'a> = Tx;
    fn receive(&mut self, _: Instant) -> Option<(Rx, Tx)> {
        let frame = self.rx.borrow_mut().pop_front()?;
        Some((Rx(frame), Tx(self.tx.clone())))
    }
    fn transmit(&mut self, _: Instant) -> Option<Tx> {
        Some(Tx(self.tx.clone()))
    }
    fn capabilities(&self) -> DeviceCapabilities {
        let mut c = DeviceCapabilities::default();
        c.medium = Medium::Ethernet;
        c.max_transmission_unit = 1514;
        c
    }
}

/// A smoltcp host on the wire.
struct Host {
    iface: Interface,
    port: Port,
    sockets: SocketSet<'static>,
}

fn host(mac: u8, ip: Ipv4Address, port: Port, now: Instant) -> Host {
    let mut port = port;
    let cfg = Config::new(EthernetAddress([2, 0, 0, 0, 0, mac]).into());
    let mut iface = Interface::new(cfg, &mut port, now);
    iface.update_ip_addrs(|a| a.push(IpCidr::new(ip.into(), 24)).unwrap());
    Host {
        iface,
        port,
        sockets: SocketSet::new(vec![]),
    }
}

fn leaked(len: usize) -> &'static mut [u8] {
    Box::leak(vec![0; len].into_boxed_slice())
}

/// The device (the server on its one socket) and a client host, in virtual time.
struct Lab {
    now: Instant,
    device: Host,
    listener: SocketHandle,
    server: OneSocketServer,
    client: Host,
    /// Frames to the device, for a test to add its own (a spoofed SYN).
    to_device: Queue,
}

impl Lab {
    fn new() -> Lab {
        let now = Instant::from_millis(1);
        let (to_device, to_client): (Queue, Queue) = Default::default();
        let mut device = host(
            2,
            DEVICE,
            Port {
                rx: to_device.clone(),
                tx: to_client.clone(),
            },
            now,
        );
        let client = host(
            1,
            CLIENT,
            Port {
                rx: to_client,
                tx: to_device.clone(),
            },
            now,
        );
        let listener = device.sockets.add(tcp_socket(TcpBuffers {
            rx: leaked(6 * 1460),
            tx: leaked(6 * 1460),
        }));
        let mut lab = Lab {
            now,
            device,
            listener,
            server: OneSocketServer::new(PORT),
            client,
            to_device,
        };
        lab.wake_device();
        assert!(lab.listening());
        lab
    }

    fn micros(&self) -> u64 {
        self.now.total_micros() as u64
    }

    /// One pass of the device's main loop, as `DeviceApps` runs it: the socket listens if
    /// it may, ingress, the server, egress.
    fn wake_device(&mut self) {
        let d = &mut self.device;
        let now = self.now.total_micros() as u64;
        let socket = d.sockets.get_mut::<tcp::Socket>(self.listener);
        self.server.listen_if_closed(socket, now);
        while d
            .iface
            .poll_ingress_single(self.now, &mut d.port, &mut d.sockets)
            != PollIngressSingleResult::None
        {}
        let socket = d.sockets.get_mut::<tcp::Socket>(self.listener);
        self.server.serve(socket, now);
        d.iface.poll_egress(self.now, &mut d.port, &mut d.sockets);
    }

    /// 100 µs: the client host runs; the device only for a frame or a deadline.
    fn tick(&mut self) {
        let c = &mut self.client;
        c.iface.poll(self.now, &mut c.port, &mut c.sockets);
        let frame = !self.device.port.rx.borrow().is_empty();
        let t = self.micros();
        let d = &mut self.device;
        let due = self.server.poll_at().is_some_and(|at| at <= t)
            || d.iface
                .poll_at(self.now, &d.sockets)
                .is_some_and(|at| at <= self.now);
        if frame || due {
            self.wake_device();
        }
        self.now += Duration::from_micros(100);
    }

    /// Ticks until `done` or `limit` ticks; true if done.
    fn until(&mut self, limit: usize, mut done: impl FnMut(&mut Lab) -> bool) -> bool {
        for _ in 0..limit {
            if done(self) {
                return true;
            }
            self.tick();
        }
        done(self)
    }

    fn listening(&mut self) -> bool {
        self.device
            .sockets
            .get::<tcp::Socket>(self.listener)
            .state()
            == tcp::State::Listen
    }

    fn client_socket(&mut self, h: SocketHandle) -> &mut tcp::Socket<'static> {
        self.client.sockets.get_mut::<tcp::Socket>(h)
    }

    /// A client socket connecting from `port`, and whether it got through (else: refused).
    fn connect(&mut self, port: u16) -> (SocketHandle, bool) {
        let mut s = tcp::Socket::new(
            tcp::SocketBuffer::new(vec![0; 16 * 1024]),
            tcp::SocketBuffer::new(vec![0; 16 * 1024]),
        );
        s.set_nagle_enabled(false);
        let h = self.client.sockets.add(s);
        let c = &mut self.client;
        c.sockets
            .get_mut::<tcp::Socket>(h)
            .connect(c.iface.context(), (IpAddress::from(DEVICE), PORT), port)
            .unwrap();
        let ended = self.until(20_000, |l| {
            !matches!(l.client_socket(h).state(), tcp::State::SynSent)
        });
        assert!(ended, "the SYN is answered");
        let up = self.client_socket(h).state() == tcp::State::Established;
        // The device takes the stream on its next pass.
        if up {
            assert!(self.until(1_000, |l| l.server.open_streams() == 1));
        }
        (h, up)
    }

    /// Closes and drops the client socket `h` (its FIN, if not out yet; not a reset).
    fn close(&mut self, h: SocketHandle) {
        self.client_socket(h).close();
        let closed = self.until(100_000, |l| !l.client_socket(h).is_open());
        assert!(closed, "the client's socket closes");
        self.client.sockets.remove(h);
    }
}

/// One turn of the client flow over its socket (as a host drives any `TcpFlow`).
fn drive(flow: &mut TcpClientFlow, sock: &mut tcp::Socket<'_>, now: u64) {
    while sock.can_recv() {
        let n = sock
            .recv(|b| {
                flow.on_received(b, now);
                (b.len(), b.len())
            })
            .unwrap_or(0);
        if n == 0 {
            break;
        }
    }
    match sock.state() {
        tcp::State::CloseWait
        | tcp::State::LastAck
        | tcp::State::Closing
        | tcp::State::TimeWait
        | tcp::State::Closed => flow.on_peer_closed(now),
        _ => {}
    }
    while !flow.control_output().is_empty() && sock.can_send() {
        let n = sock.send_slice(flow.control_output()).unwrap_or(0);
        if n == 0 {
            break;
        }
        flow.control_sent(n, now);
    }
    while sock.can_send() {
        let allowed = flow.send_allowance(now);
        if allowed == 0 {
            break;
        }
        let n = sock
            .send(|buf| {
                let n = buf.len().min(allowed);
                flow.fill(&mut buf[..n]);
                (n, n)
            })
            .unwrap_or(0);
        if n == 0 {
            break;
        }
        flow.on_sent(n, now);
    }
    if flow.wants_close_write() {
        sock.close();
        flow.write_closed(now);
    }
    flow.poll(now);
}

fn request(mode: Mode, bytes: u64) -> TestRequest {
    TestRequest {
        mode,
        amount: Amount::Bytes(bytes),
        ..TestRequest::plain(Protocol::Tcp)
    }
}

/// Runs the client test `request` on the connected socket `h` to its end; the client flow.
fn run_test(lab: &mut Lab, h: SocketHandle, request: TestRequest) -> TcpClientFlow {
    let mut flow = TcpClientFlow::new(TcpClientConfig::new(request), lab.micros());
    let finished = lab.until(400_000, |l| {
        let now = l.micros();
        drive(&mut flow, l.client_socket(h), now);
        flow.is_finished()
    });
    assert!(finished, "the client's test did not end: {:?}", flow.end());
    lab.close(h);
    flow
}

/// Connects from `port` and runs `request`; the client flow.
fn run_client(lab: &mut Lab, request: TestRequest, port: u16) -> TcpClientFlow {
    let (h, up) = lab.connect(port);
    assert!(up, "client from {port} refused");
    run_test(lab, h, request)
}

/// A client right after: connected and served (a short test), the socket listening after.
fn next_client_is_served(lab: &mut Lab, port: u16) {
    let flow = run_client(lab, request(Mode::Normal, 20_000), port);
    assert_eq!(flow.end(), Some(ClientEnd::Completed));
    assert!(lab.until(20_000, Lab::listening));
}

#[test]
fn serves_tests_both_ways_back_to_back_on_one_socket() {
    let mut lab = Lab::new();
    for i in 0..3u16 {
        let flow = run_client(&mut lab, request(Mode::Normal, 200_000), 40_000 + 2 * i);
        assert_eq!(flow.end(), Some(ClientEnd::Completed));
        let flow = run_client(&mut lab, request(Mode::Reverse, 150_000), 40_001 + 2 * i);
        assert_eq!(flow.end(), Some(ClientEnd::Completed));
        assert_eq!(flow.received(), 150_000, "-R bytes");
    }
    assert!(lab.until(20_000, Lab::listening));
    let c = lab.server.counters();
    assert_eq!((c.tests, c.tests_done, c.tests_failed), (6, 6, 0), "{c:?}");
    assert_eq!(c.streams, 6);
    // iperf 2 counts the header's bytes: a -R client sends its 60.
    assert_eq!(c.bytes_received, 3 * 200_000 + 3 * 60, "{c:?}");
    assert_eq!(c.bytes_sent, 3 * 150_000);
    assert_eq!(lab.server.open_streams(), 0);
    assert_eq!(lab.server.poll_at(), None, "listening: nothing to wait for");
}

#[test]
fn a_second_client_is_refused_while_a_stream_runs() {
    let mut lab = Lab::new();
    let (first, up) = lab.connect(41_000);
    assert!(up);
    let (second, up) = lab.connect(41_001);
    assert!(
        !up,
        "the second client's SYN finds nothing listening: a RST"
    );
    lab.client.sockets.remove(second);
    // The first test runs to its end on its connection.
    let flow = run_test(&mut lab, first, request(Mode::Normal, 50_000));
    assert_eq!(flow.end(), Some(ClientEnd::Completed));
    next_client_is_served(&mut lab, 41_002);
    let c = lab.server.counters();
    assert_eq!((c.tests, c.tests_done, c.tests_failed), (2, 2, 0), "{c:?}");
}

#[test]
fn after_an_iperf3_client_the_next_client_is_served_at_once() {
    let mut lab = Lab::new();
    let (h, up) = lab.connect(42_000);
    assert!(up);
    // iperf3's first bytes: its cookie, 36 characters of its alphabet and a NUL.
    lab.client_socket(h).send_slice(&[b'a'; 36]).unwrap();
    lab.client_socket(h).send_slice(&[0]).unwrap();
    let reset = lab.until(20_000, |l| !l.client_socket(h).is_open());
    assert!(reset, "refused: reset");
    lab.client.sockets.remove(h);
    // At once: the device listens on the pass after the one that sent the RST, with no
    // frame to wake it.
    let start = lab.now;
    assert!(
        lab.until(100, Lab::listening),
        "listening again within 10 ms"
    );
    assert!(lab.now - start <= Duration::from_millis(10));
    next_client_is_served(&mut lab, 42_001);
    let c = lab.server.counters();
    assert_eq!((c.tests, c.tests_done, c.tests_failed), (2, 1, 1), "{c:?}");
}

/// A busy host: the next client's SYN is already waiting when the device runs its pass after
/// the one that sent the RST.
#[test]
fn a_syn_waiting_before_the_pass_after_a_reset_finds_the_socket_listening() {
    let mut lab = Lab::new();
    let (h, up) = lab.connect(46_000);
    assert!(up);
    lab.client_socket(h).send_slice(&[b'a'; 36]).unwrap();
    lab.client_socket(h).send_slice(&[0]).unwrap();
    // The client's cookie goes; the device takes it in, resets the stream, sends the RST.
    let c = &mut lab.client;
    c.iface.poll(lab.now, &mut c.port, &mut c.sockets);
    lab.wake_device();
    assert!(!lab.listening(), "closed, its RST just sent");
    // The client takes the RST in and connects again before the device's next pass.
    lab.now += Duration::from_micros(100);
    let c = &mut lab.client;
    c.iface.poll(lab.now, &mut c.port, &mut c.sockets);
    assert!(!lab.client_socket(h).is_open(), "reset");
    lab.client.sockets.remove(h);
    let next = lab.client.sockets.add(tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; 4096]),
        tcp::SocketBuffer::new(vec![0; 4096]),
    ));
    let c = &mut lab.client;
    c.sockets
        .get_mut::<tcp::Socket>(next)
        .connect(c.iface.context(), (IpAddress::from(DEVICE), PORT), 46_001)
        .unwrap();
    c.iface.poll(lab.now, &mut c.port, &mut c.sockets);
    assert!(!lab.device.port.rx.borrow().is_empty(), "the SYN waits");
    lab.wake_device();
    assert!(lab.until(1_000, |l| !matches!(
        l.client_socket(next).state(),
        tcp::State::SynSent
    )));
    assert_eq!(lab.client_socket(next).state(), tcp::State::Established);
}

#[test]
fn a_silent_client_is_ended_by_the_watchdog_and_the_next_is_served() {
    let mut lab = Lab::new();
    let (h, up) = lab.connect(43_000);
    assert!(up);
    let deadline = lab.server.poll_at().expect("the watchdog's time");
    assert!(deadline > lab.micros() + 9_000_000, "{deadline}");
    let reset = lab.until(120_000, |l| !l.client_socket(h).is_open());
    assert!(reset, "ended by the watchdog (a RST)");
    lab.client.sockets.remove(h);
    assert!(
        lab.until(100, Lab::listening),
        "listening again within 10 ms"
    );
    next_client_is_served(&mut lab, 43_001);
    let c = lab.server.counters();
    assert_eq!((c.tests, c.tests_done, c.tests_failed), (2, 1, 1), "{c:?}");
    assert_eq!(lab.server.open_streams(), 0);
}

/// `-r` asks for a connect-back this server does not make: the client's forward half runs,
/// and the test counts as failed (the client reports the connect-back missing).
#[test]
fn a_tradeoff_test_runs_its_first_half_and_counts_failed() {
    let mut lab = Lab::new();
    let mut r = request(Mode::Tradeoff, 100_000);
    r.port = 5001;
    let flow = run_client(&mut lab, r, 44_000);
    assert_eq!(flow.end(), Some(ClientEnd::Completed));
    assert!(lab.until(20_000, Lab::listening));
    let c = lab.server.counters();
    assert_eq!((c.tests, c.tests_done, c.tests_failed), (1, 0, 1), "{c:?}");
    assert_eq!(c.bytes_received, 100_000);
    assert_eq!(c.connect_backs, 0);
}

/// A SYN from an address nobody answers ARP for: the stack gives the handshake up after its
/// timeout, and its RST never leaves; the socket listens again after the grace.
#[test]
fn a_spoofed_syn_does_not_keep_the_port_closed() {
    use smoltcp::phy::ChecksumCapabilities;
    use smoltcp::wire::{
        EthernetFrame, EthernetProtocol, IpProtocol, Ipv4Packet, Ipv4Repr, TcpControl, TcpPacket,
        TcpRepr, TcpSeqNumber,
    };
    let mut lab = Lab::new();
    let spoofed = Ipv4Address::new(198, 18, 0, 99);
    let syn = TcpRepr {
        src_port: 1234,
        dst_port: PORT,
        control: TcpControl::Syn,
        seq_number: TcpSeqNumber(1000),
        ack_number: None,
        window_len: 8192,
        window_scale: None,
        max_seg_size: Some(1460),
        sack_permitted: false,
        sack_ranges: [None, None, None],
        timestamp: None,
        payload: &[],
    };
    let ip = Ipv4Repr {
        src_addr: spoofed,
        dst_addr: DEVICE,
        next_header: IpProtocol::Tcp,
        payload_len: syn.header_len(),
        hop_limit: 64,
    };
    let mut frame = vec![0u8; 14 + ip.buffer_len() + syn.header_len()];
    let mut eth = EthernetFrame::new_unchecked(&mut frame[..]);
    eth.set_dst_addr(EthernetAddress([2, 0, 0, 0, 0, 2]));
    eth.set_src_addr(EthernetAddress([2, 0, 0, 0, 0, 0x99]));
    eth.set_ethertype(EthernetProtocol::Ipv4);
    let caps = ChecksumCapabilities::default();
    ip.emit(&mut Ipv4Packet::new_unchecked(&mut frame[14..]), &caps);
    syn.emit(
        &mut TcpPacket::new_unchecked(&mut frame[34..]),
        &spoofed.into(),
        &DEVICE.into(),
        &caps,
    );
    lab.to_device.borrow_mut().push_back(frame);
    assert!(
        lab.until(100, |l| !l.listening()),
        "the SYN took the socket"
    );
    // The stack's timeout (10 s) and the grace (0.5 s), and some.
    let back = lab.until(150_000, Lab::listening);
    assert!(back, "listening again after the handshake was given up");
    assert!(lab.micros() < 13_000_000, "at {} µs", lab.micros());
    next_client_is_served(&mut lab, 45_000);
    let c = lab.server.counters();
    assert_eq!((c.tests, c.tests_done, c.tests_failed), (1, 1, 0), "{c:?}");
}
