//! Every mode against the device server, a second client denied, back-to-back tests, and the
//! server's size.

use super::*;

#[test]
fn device_server_runs_every_mode_and_denies_a_second_client() {
    let mut r = rig(10);
    let (rx, tx) = (vec![0u8; 8192].leak(), vec![0u8; 8192].leak());
    let mut server: SmoltcpIperfServer = SmoltcpIperfServer::new(&r.tcp, r.udp, PORT, rx, tx);
    let mut port = 40000;
    let modes: Vec<Params> = vec![
        base(Protocol::Tcp),
        Params {
            reverse: true,
            ..base(Protocol::Tcp)
        },
        Params {
            bidirectional: true,
            ..base(Protocol::Tcp)
        },
        Params {
            parallel: 4,
            ..base(Protocol::Tcp)
        },
        Params {
            duration_s: 0,
            bytes: 1 << 20,
            ..base(Protocol::Tcp)
        },
        base(Protocol::Udp),
        Params {
            reverse: true,
            ..base(Protocol::Udp)
        },
        Params {
            bidirectional: true,
            udp_counters_64bit: true,
            ..base(Protocol::Udp)
        },
    ];
    for p in modes {
        let rep = run_test(&mut r.net, &mut server, p, port);
        port += 20;
        check(&rep, &mut server);
        if p.protocol == Protocol::Udp {
            for d in [rep.forward, rep.reverse].into_iter().flatten() {
                assert!(d.packets > 1000 && d.lost == 0, "{d:?}");
            }
        }
        if p.bytes != 0 {
            assert_eq!(rep.forward.unwrap().bytes_sent, 1 << 20);
        }
    }
    assert_eq!(server.counters().tests_done, 8);
    assert_eq!(server.counters().tests_failed, 0);
}

#[test]
fn device_server_back_to_back_and_busy() {
    let mut r = rig(4);
    let (rx, tx) = (vec![0u8; 8192].leak(), vec![0u8; 8192].leak());
    let mut server: SmoltcpIperfServer = SmoltcpIperfServer::new(&r.tcp, r.udp, PORT, rx, tx);
    // A second client connecting while a test runs gets ACCESS_DENIED.
    let p = Params {
        duration_s: 1,
        len: 8192,
        ..Params::default()
    };
    let (mut rx1, mut tx1) = (vec![0u8; 8192], vec![0u8; 8192]);
    let opts = ClientOptions {
        strings: Default::default(),
        params: p,
        interval_us: 0,
        cookie_seed: 1,
    };
    let mut first = Session::client(&opts, &mut rx1, &mut tx1, 0);
    let ctrl = r.net.sockets.add(tcp_socket(8192));
    r.net
        .sockets
        .get_mut::<tcp::Socket>(ctrl)
        .connect(r.net.iface.context(), server_addr(), 30000)
        .unwrap();
    let mut c = Client {
        ctrl,
        tcp: vec![],
        udp: vec![],
        opening: None,
        next_port: 30001,
        announced: false,
    };
    let mut buf = vec![0u8; 65536];
    let intruder = r.net.sockets.add(tcp_socket(1024));
    let mut denied = false;
    for tick in 0..40_000 {
        r.net
            .iface
            .poll(r.net.now, &mut r.net.dev, &mut r.net.sockets);
        server.poll(&mut r.net.sockets, r.net.now);
        client_step(&mut r.net, &mut c, &mut first, &mut buf);
        if tick == 2000 {
            assert_eq!(first.phase(), Phase::Running);
            r.net
                .sockets
                .get_mut::<tcp::Socket>(intruder)
                .connect(r.net.iface.context(), server_addr(), 30100)
                .unwrap();
        }
        let s = r.net.sockets.get_mut::<tcp::Socket>(intruder);
        if let Ok(b) = s.recv(|b| (b.len(), b.first().copied())) {
            if b == Some(wire::state::ACCESS_DENIED as u8) {
                denied = true;
            }
        }
        r.net.now += smoltcp::time::Duration::from_micros(TICK_US as u64);
        if first.is_finished() && tick > 3000 {
            break;
        }
    }
    assert!(denied, "second client was not denied");
    assert_eq!(first.phase(), Phase::Done);
    for _ in 0..2000 {
        client_flush(&mut r.net, &c, &mut first);
        r.net
            .iface
            .poll(r.net.now, &mut r.net.dev, &mut r.net.sockets);
        server.poll(&mut r.net.sockets, r.net.now);
        r.net.now += smoltcp::time::Duration::from_micros(TICK_US as u64);
    }
    for h in c.tcp.iter().chain([&c.ctrl, &intruder]) {
        r.net.sockets.remove(*h);
    }
    for _ in 0..2000 {
        r.net
            .iface
            .poll(r.net.now, &mut r.net.dev, &mut r.net.sockets);
        server.poll(&mut r.net.sockets, r.net.now);
        r.net.now += smoltcp::time::Duration::from_micros(TICK_US as u64);
    }
    let _ = server.take_outcome();
    // Back-to-back short tests on only 4 sockets: every socket must come back.
    let mut port = 41000;
    for _ in 0..20 {
        let rep = run_test(
            &mut r.net,
            &mut server,
            Params {
                duration_s: 0,
                bytes: 64 * 1024,
                len: 8192,
                ..Params::default()
            },
            port,
        );
        port += 3;
        check(&rep, &mut server);
    }
    assert_eq!(server.counters().denied, 1);
    assert_eq!(server.counters().tests_done, 21);
}

#[test]
fn state_fits_a_microcontroller() {
    // The state machine and the device server live in static memory on a device; keep
    // them small (the JSON buffers and socket buffers are the caller's, counted apart).
    let session = std::mem::size_of::<Session>();
    let server = std::mem::size_of::<SmoltcpIperfServer>();
    println!("Session {session} B, SmoltcpIperfServer {server} B");
    assert!(session <= 8 * 1024, "Session is {session} bytes");
    assert!(server <= 10 * 1024, "SmoltcpIperfServer is {server} bytes");
}
