//! iperf 2's TCP server on one socket (`iperf2::one_socket::OneSocketServer`, the compact
//! image's) on a smoltcp socket, against our sans-IO iperf 2 client (`TcpClientFlow`) on
//! another, both on one smoltcp interface over smoltcp's loopback device, in virtual time:
//! a test received, one sent back (`-R`), tests back to back on the one socket, a second
//! client refused while a stream runs, an iperf3 client refused, a silent client ended by
//! the watchdog; after each, the socket listens again and the counters add up.

use linklab_perf::iperf2::one_socket::OneSocketServer;
use linklab_perf::iperf2::{
    Amount, ClientEnd, Mode, Protocol, TcpClientConfig, TcpClientFlow, TcpFlow, TestRequest,
};
use linklab_perf::socket::TcpOps as _;
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet, SocketStorage};
use smoltcp::phy::{Loopback, Medium};
use smoltcp::socket::tcp;
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

const PORT: u16 = 5001;
const TICK_US: i64 = 100;

struct Net {
    iface: Interface,
    dev: Loopback,
    sockets: SocketSet<'static>,
    now: Instant,
    server: OneSocketServer,
    listener: SocketHandle,
}

fn tcp_socket(size: usize) -> tcp::Socket<'static> {
    tcp::Socket::new(
        tcp::SocketBuffer::new(vec![0; size]),
        tcp::SocketBuffer::new(vec![0; size]),
    )
}

fn net() -> Net {
    let mut dev = Loopback::new(Medium::Ethernet);
    let cfg = Config::new(EthernetAddress([2, 0, 0, 0, 0, 1]).into());
    let now = Instant::from_millis(1);
    let mut iface = Interface::new(cfg, &mut dev, now);
    iface.update_ip_addrs(|a| {
        a.push(IpCidr::new(IpAddress::v4(127, 0, 0, 1), 8)).unwrap();
    });
    let mut sockets = SocketSet::new(Vec::<SocketStorage>::new());
    let listener = sockets.add(tcp_socket(8 * 1460));
    let mut net = Net {
        iface,
        dev,
        sockets,
        now,
        server: OneSocketServer::new(PORT),
        listener,
    };
    net.serve();
    net
}

impl Net {
    fn micros(&self) -> u64 {
        self.now.total_micros() as u64
    }

    fn serve(&mut self) {
        let now = self.micros();
        let socket = self.sockets.get_mut::<tcp::Socket>(self.listener);
        self.server.serve(socket, now);
    }

    /// One step of virtual time: the interface, the server, the interface again.
    fn step(&mut self) {
        self.iface.poll(self.now, &mut self.dev, &mut self.sockets);
        self.serve();
        self.iface.poll(self.now, &mut self.dev, &mut self.sockets);
        self.now += smoltcp::time::Duration::from_micros(TICK_US as u64);
    }

    fn listening(&mut self) -> bool {
        self.sockets.get::<tcp::Socket>(self.listener).state() == tcp::State::Listen
    }

    /// A client socket connecting from `port`.
    fn connect(&mut self, port: u16) -> SocketHandle {
        let h = self.sockets.add(tcp_socket(16 * 1024));
        let cx = self.iface.context();
        self.sockets
            .get_mut::<tcp::Socket>(h)
            .connect(cx, (IpAddress::v4(127, 0, 0, 1), PORT), port)
            .unwrap();
        h
    }

    /// Steps until `done` or `limit` steps; true if done.
    fn until(&mut self, limit: usize, mut done: impl FnMut(&mut Net) -> bool) -> bool {
        for _ in 0..limit {
            if done(self) {
                return true;
            }
            self.step();
        }
        done(self)
    }
}

/// One turn of the client flow over its socket (as a host drives any `TcpFlow`).
fn drive(flow: &mut TcpClientFlow, sock: &mut tcp::Socket<'_>, now: u64) {
    while sock.can_recv() {
        let n = linklab_perf::socket::TcpOps::recv(sock, |b| {
            flow.on_received(b, now);
            b.len()
        });
        if n == 0 {
            break;
        }
    }
    match tcp::Socket::state(sock) {
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
        let n = linklab_perf::socket::TcpOps::send(sock, |buf| {
            let n = buf.len().min(allowed);
            flow.fill(&mut buf[..n]);
            n
        });
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

/// Runs one client test of `request` from `port` to its end; the client flow.
fn run_client(net: &mut Net, request: TestRequest, port: u16) -> TcpClientFlow {
    let h = net.connect(port);
    assert!(
        net.until(20_000, |n| n.sockets.get::<tcp::Socket>(h).state()
            == tcp::State::Established),
        "connect"
    );
    let mut flow = TcpClientFlow::new(TcpClientConfig::new(request), net.micros());
    let finished = net.until(400_000, |n| {
        let now = n.micros();
        drive(&mut flow, n.sockets.get_mut::<tcp::Socket>(h), now);
        flow.is_finished()
    });
    assert!(finished, "the client's test did not end: {:?}", flow.end());
    // Closed as a client's socket closes (its FIN, if not out yet), not reset.
    net.sockets.get_mut::<tcp::Socket>(h).close();
    assert!(
        net.until(20_000, |n| !n.sockets.get::<tcp::Socket>(h).is_open()),
        "the client's socket closes"
    );
    net.sockets.remove(h);
    flow
}

#[test]
fn serves_tests_both_ways_back_to_back_on_one_socket() {
    let mut net = net();
    assert!(net.listening());
    for i in 0..3u16 {
        let flow = run_client(&mut net, request(Mode::Normal, 200_000), 40_000 + 2 * i);
        assert_eq!(flow.end(), Some(ClientEnd::Completed));
        assert!(
            net.until(20_000, Net::listening),
            "listens again after test {i}"
        );
        let flow = run_client(&mut net, request(Mode::Reverse, 150_000), 40_001 + 2 * i);
        assert_eq!(flow.end(), Some(ClientEnd::Completed));
        assert_eq!(flow.received(), 150_000, "-R bytes");
        assert!(
            net.until(20_000, Net::listening),
            "listens again after -R {i}"
        );
    }
    let c = net.server.counters();
    assert_eq!((c.tests, c.tests_done, c.tests_failed), (6, 6, 0), "{c:?}");
    assert_eq!(c.streams, 6);
    assert_eq!(c.bytes_received, 3 * 200_000 + 3 * 60, "{c:?}");
    assert_eq!(c.bytes_sent, 3 * 150_000);
    assert_eq!(net.server.open_streams(), 0);
    assert_eq!(net.server.poll_at(), None);
}

#[test]
fn a_second_client_is_refused_while_a_stream_runs() {
    let mut net = net();
    let first = net.connect(41_000);
    assert!(
        net.until(20_000, |n| n.sockets.get::<tcp::Socket>(first).state()
            == tcp::State::Established
            && n.server.open_streams() == 1)
    );
    let second = net.connect(41_001);
    assert!(
        net.until(20_000, |n| n.sockets.get::<tcp::Socket>(second).state()
            == tcp::State::Closed),
        "the second client's SYN finds nothing listening: a RST"
    );
    // The first test still runs to its end on its connection.
    let mut flow = TcpClientFlow::new(
        TcpClientConfig::new(request(Mode::Normal, 50_000)),
        net.micros(),
    );
    assert!(net.until(400_000, |n| {
        let now = n.micros();
        drive(&mut flow, n.sockets.get_mut::<tcp::Socket>(first), now);
        flow.is_finished()
    }));
    assert_eq!(flow.end(), Some(ClientEnd::Completed));
    assert!(net.until(20_000, Net::listening));
    let c = net.server.counters();
    assert_eq!((c.tests, c.tests_done, c.tests_failed), (1, 1, 0), "{c:?}");
}

#[test]
fn an_iperf3_client_and_a_silent_one_end_failed_and_the_socket_listens_again() {
    let mut net = net();
    // iperf3's first bytes: its 37-byte cookie.
    let h = net.connect(42_000);
    assert!(
        net.until(20_000, |n| n.sockets.get::<tcp::Socket>(h).state()
            == tcp::State::Established)
    );
    let cookie = [b'a'; 36];
    let s = net.sockets.get_mut::<tcp::Socket>(h);
    s.send_slice(&cookie).unwrap();
    s.send_slice(&[0]).unwrap();
    assert!(
        net.until(20_000, |n| !n.sockets.get::<tcp::Socket>(h).is_open()),
        "refused: reset"
    );
    net.sockets.remove(h);
    assert!(net.until(20_000, Net::listening));
    // A client that connects and sends nothing: the 10 s watchdog.
    let h = net.connect(42_001);
    assert!(
        net.until(20_000, |n| n.sockets.get::<tcp::Socket>(h).state()
            == tcp::State::Established
            && n.server.open_streams() == 1)
    );
    let deadline = net.server.poll_at().expect("the watchdog's time");
    assert!(deadline > net.micros() + 9_000_000, "{deadline}");
    assert!(
        net.until(120_000, |n| !n.sockets.get::<tcp::Socket>(h).is_open()),
        "ended by the watchdog"
    );
    assert!(net.until(20_000, Net::listening));
    let c = net.server.counters();
    assert_eq!((c.tests, c.tests_done, c.tests_failed), (2, 0, 2), "{c:?}");
    assert_eq!(net.server.open_streams(), 0);
}
