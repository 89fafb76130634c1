//! The next client connects before the last test's IPERF_DONE reached the server (a slow or
//! lossy link; a stock client exits once it has sent it): it waits and runs, never denied.

use super::*;

/// Polls the stack and the server for `ticks` ticks.
fn settle(r: &mut Rig, server: &mut SmoltcpIperfServer<'static>, ticks: usize) {
    for _ in 0..ticks {
        r.net
            .iface
            .poll(r.net.now, &mut r.net.dev, &mut r.net.sockets);
        server.poll(&mut r.net.sockets, r.net.now);
        r.net.now += smoltcp::time::Duration::from_micros(TICK_US as u64);
    }
}

/// One tick: the stack, the server and one client's step.
fn tick(
    r: &mut Rig,
    server: &mut SmoltcpIperfServer<'static>,
    c: &mut Client,
    session: &mut Session,
    buf: &mut [u8],
) {
    r.net
        .iface
        .poll(r.net.now, &mut r.net.dev, &mut r.net.sockets);
    server.poll(&mut r.net.sockets, r.net.now);
    client_step(&mut r.net, c, session, buf);
    r.net.now += smoltcp::time::Duration::from_micros(TICK_US as u64);
}

/// A client session and its control socket, connecting from `port`.
fn client(r: &mut Rig, port: u16) -> Client {
    let ctrl = r.net.sockets.add(tcp_socket(8192));
    r.net
        .sockets
        .get_mut::<tcp::Socket>(ctrl)
        .connect(r.net.iface.context(), server_addr(), port)
        .unwrap();
    Client {
        ctrl,
        tcp: vec![],
        udp: vec![],
        opening: None,
        next_port: port + 1,
        announced: false,
    }
}

fn options(seed: u64) -> ClientOptions<'static> {
    ClientOptions {
        strings: Default::default(),
        params: Params {
            duration_s: 0,
            bytes: 64 * 1024,
            len: 8192,
            ..Params::default()
        },
        interval_us: 0,
        cookie_seed: seed,
    }
}

#[test]
fn a_client_connecting_before_the_last_tests_iperf_done_waits_and_runs() {
    let mut r = rig(4);
    let (rx, tx) = (vec![0u8; 8192].leak(), vec![0u8; 8192].leak());
    let mut server: SmoltcpIperfServer = SmoltcpIperfServer::new(&r.tcp, r.udp, PORT, rx, tx);
    let mut buf = vec![0u8; 65536];
    // The first test runs to its end; its IPERF_DONE stays unsent (the client's session has
    // it queued, not yet on its socket).
    let (opts1, opts2) = (options(1), options(2));
    let (mut rx1, mut tx1) = (vec![0u8; 8192], vec![0u8; 8192]);
    let mut first = Session::client(&opts1, &mut rx1, &mut tx1, 0);
    let mut c1 = client(&mut r, 30000);
    for _ in 0..40_000 {
        if first.is_finished() {
            break;
        }
        tick(&mut r, &mut server, &mut c1, &mut first, &mut buf);
    }
    assert_eq!(first.phase(), Phase::Done);
    assert!(
        !first.control_output().is_empty(),
        "IPERF_DONE is held back"
    );
    // The next client connects and sends its cookie while the server waits for IPERF_DONE.
    let (mut rx2, mut tx2) = (vec![0u8; 8192], vec![0u8; 8192]);
    let mut second = Session::client(&opts2, &mut rx2, &mut tx2, r.net.now.total_micros() as u64);
    second.set_watchdog(20_000_000);
    let mut c2 = client(&mut r, 31000);
    for _ in 0..200 {
        tick(&mut r, &mut server, &mut c2, &mut second, &mut buf);
    }
    assert_eq!(server.counters().denied, 0, "the next client was denied");
    // IPERF_DONE arrives; the next client's test runs.
    client_flush(&mut r.net, &c1, &mut first);
    for _ in 0..40_000 {
        if second.is_finished() {
            break;
        }
        tick(&mut r, &mut server, &mut c2, &mut second, &mut buf);
    }
    assert_eq!(second.phase(), Phase::Done, "the next client's test failed");
    assert_eq!(second.report().forward.unwrap().bytes_sent, 64 * 1024);
    client_flush(&mut r.net, &c2, &mut second);
    settle(&mut r, &mut server, 2000);
    assert_eq!(server.counters().denied, 0);
    assert_eq!(server.counters().tests_done, 2);
}
