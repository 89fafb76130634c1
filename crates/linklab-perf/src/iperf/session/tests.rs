//! Sessions back to back, refusals, late polls, the end of time and the watchdog.

extern crate std;

use super::*;
use crate::iperf::wire::state;
use crate::iperf::Protocol;

/// Feeds `bytes` fully into `s`.
fn feed(s: &mut Session, bytes: &[u8], now: Micros) {
    let mut rest = bytes;
    while !rest.is_empty() {
        let n = s.control_input(rest, now);
        assert!(n > 0, "stalled in {:?}", s.phase());
        rest = &rest[n..];
    }
}

fn take(s: &mut Session) -> std::vec::Vec<u8> {
    let v = s.control_output().to_vec();
    s.control_sent(v.len());
    v
}

/// A client and a server session wired back to back: TCP, -P 2, reverse, -n.
#[test]
fn client_and_server_sessions_talk() {
    let (mut a, mut b, mut c, mut d) = ([0u8; 8192], [0u8; 8192], [0u8; 8192], [0u8; 8192]);
    let params = Params {
        parallel: 2,
        reverse: true,
        duration_s: 0,
        bytes: 100_000,
        len: 1000,
        ..Params::default()
    };
    let opts = ClientOptions {
        strings: Default::default(),
        params,
        interval_us: 0,
        cookie_seed: 5,
    };
    let mut cl = Session::client(&opts, &mut a, &mut b, 0);
    let mut sv = Session::server(&mut c, &mut d);
    sv.accept_control(0);
    let mut now = 0;
    for _ in 0..20 {
        let out = take(&mut cl);
        feed(&mut sv, &out, now);
        let out = take(&mut sv);
        feed(&mut cl, &out, now);
        if cl.phase() == Phase::CreateStreams {
            while cl.streams().len() < cl.streams_wanted() {
                cl.client_stream_opened(now).unwrap();
                let cookie = *cl.cookie();
                sv.accept_tcp_stream(&cookie, now).unwrap();
            }
        }
        if sv.phase() == Phase::Running && cl.phase() == Phase::Running {
            // The server sends; the client counts.
            for i in 0..2 {
                while let n @ 1.. = sv.tcp_send_budget(i, now) {
                    sv.on_tcp_sent(i, n, now);
                    cl.on_tcp_received(i, n, now);
                }
            }
            now += 1000;
            cl.poll(now);
            sv.poll(now);
        }
        if cl.phase() == Phase::Done {
            break;
        }
    }
    assert_eq!(cl.phase(), Phase::Done);
    let out = take(&mut cl);
    assert_eq!(out, [state::IPERF_DONE as u8]);
    feed(&mut sv, &out, now);
    assert_eq!(sv.phase(), Phase::Done);
    let (rc, rs) = (cl.report(), sv.report());
    let (dc, ds) = (rc.reverse.unwrap(), rs.reverse.unwrap());
    assert_eq!(dc.bytes_sent, 100_000);
    assert_eq!(
        (dc.bytes_sent, dc.bytes_received),
        (ds.bytes_sent, ds.bytes_received)
    );
    assert_eq!(
        sv.streams()
            .iter()
            .map(|s| s.id)
            .collect::<std::vec::Vec<_>>(),
        [1, 3]
    );
    assert!(rc.forward.is_none() && rs.forward.is_none());
}

#[test]
fn server_refuses_what_it_cannot_do() {
    let (mut c, mut d) = ([0u8; 8192], [0u8; 8192]);
    let mut sv = Session::server(&mut c, &mut d);
    sv.accept_control(0);
    feed(&mut sv, &wire::make_cookie(1), 0);
    assert_eq!(take(&mut sv), [state::PARAM_EXCHANGE as u8]);
    let json = br#"{"udp":true,"time":1,"parallel":1,"len":8}"#;
    let mut msg = (json.len() as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(json);
    feed(&mut sv, &msg, 0);
    let out = take(&mut sv);
    assert_eq!(out[0], state::SERVER_ERROR as u8);
    assert_eq!(out.len(), 9);
    assert!(matches!(sv.phase(), Phase::Failed(Failure::BadParams(_))));
    // A finished session ignores further input.
    assert_eq!(sv.control_input(&[1, 2, 3], 0), 0);
    sv.reset();
    assert_eq!(sv.phase(), Phase::Idle);
}

/// A client receiving with `-R` and `-i 10 ms`, running since `start`.
fn running_receiver(
    rx: &'static mut [u8],
    tx: &'static mut [u8],
    start: Micros,
) -> Session<'static> {
    let opts = ClientOptions {
        strings: Default::default(),
        params: Params {
            reverse: true,
            omit_s: 1,
            ..Params::default()
        },
        interval_us: 10_000,
        cookie_seed: 3,
    };
    let mut cl = Session::client(&opts, rx, tx, start);
    feed(
        &mut cl,
        &[state::PARAM_EXCHANGE as u8, state::CREATE_STREAMS as u8],
        start,
    );
    cl.client_stream_opened(start).unwrap();
    feed(
        &mut cl,
        &[state::TEST_START as u8, state::TEST_RUNNING as u8],
        start,
    );
    assert_eq!(cl.phase(), Phase::Running);
    cl
}

#[test]
fn a_late_poll_keeps_the_interval_that_holds_the_data() {
    let mut cl = running_receiver(std::vec![0; 8192].leak(), std::vec![0; 8192].leak(), 0);
    // End the omitted period on time, then receive, then poll 100 intervals late.
    cl.poll(1_000_000);
    while cl.take_interval().is_some() {}
    cl.on_tcp_received(0, 5000, 1_005_000);
    cl.poll(1_000_000 + 100 * 10_000 + 5_000);
    let mut bytes = 0;
    let mut taken = 0;
    while let Some(iv) = cl.take_interval() {
        bytes += iv.streams.iter().map(|s| s.bytes).sum::<u64>();
        taken += 1;
    }
    assert_eq!(
        bytes, 5000,
        "the received bytes must be in a reported interval"
    );
    assert!(taken <= 2);
}

#[test]
fn clock_values_near_the_end_of_time_do_not_overflow() {
    let start = u64::MAX - 1_000;
    let mut cl = running_receiver(std::vec![0; 8192].leak(), std::vec![0; 8192].leak(), start);
    cl.poll(u64::MAX);
    cl.on_tcp_received(0, 10, u64::MAX);
    let _ = cl.poll_at();
    cl.poll(u64::MAX);
    let _ = cl.report();
}

#[test]
fn watchdog_frees_a_silent_peer() {
    let (mut c, mut d) = ([0u8; 512], [0u8; 512]);
    let mut sv = Session::server(&mut c, &mut d);
    sv.set_watchdog(1_000_000);
    sv.accept_control(10);
    assert_eq!(sv.poll_at(), Some(1_000_010));
    sv.poll(1_000_009);
    assert_eq!(sv.phase(), Phase::Cookie);
    sv.poll(1_000_010);
    assert_eq!(sv.phase(), Phase::Failed(Failure::Timeout));
}

/// A server session past the cookie with `params` sent: (rx, tx) buffers leaked for the
/// test's life.
fn server_with_params(params: &Params, review: bool) -> Session<'static> {
    let mut sv = Session::server(std::vec![0; 8192].leak(), std::vec![0; 8192].leak());
    sv.set_review_params(review);
    sv.accept_control(0);
    feed(&mut sv, &wire::make_cookie(1), 0);
    assert_eq!(take(&mut sv), [state::PARAM_EXCHANGE as u8]);
    let mut json = [0u8; 1024];
    let n = params.to_json(&mut json).unwrap();
    let mut msg = (n as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(&json[..n]);
    feed(&mut sv, &msg, 0);
    sv
}

/// A server session running `params` over UDP streams whose hellos arrived at time 0.
fn udp_server_running(params: Params) -> Session<'static> {
    let mut sv = server_with_params(&params, false);
    assert_eq!(take(&mut sv), [state::CREATE_STREAMS as u8]);
    for _ in 0..sv.streams_wanted() {
        sv.accept_udp_stream(&wire::udp_hello(), 0).unwrap();
    }
    assert_eq!(sv.phase(), Phase::Running);
    take(&mut sv);
    sv
}

#[test]
fn reviewed_parameters_wait_for_the_adapter() {
    let p = Params {
        mss: 1000,
        ..Params::default()
    };
    let mut sv = server_with_params(&p, true);
    assert!(sv.params_pending());
    assert_eq!(sv.params().mss, 1000);
    assert!(
        take(&mut sv).is_empty(),
        "nothing is sent before the verdict"
    );
    sv.refuse_params(123, 95);
    let out = take(&mut sv);
    assert_eq!(out[0], state::SERVER_ERROR as u8);
    assert_eq!(&out[1..], &[0, 0, 0, 123, 0, 0, 0, 95]);
    assert_eq!(sv.phase(), Phase::Failed(Failure::Refused(123, 95)));

    let mut sv = server_with_params(&p, true);
    sv.accept_params();
    assert_eq!(take(&mut sv), [state::CREATE_STREAMS as u8]);
    assert_eq!(sv.phase(), Phase::CreateStreams);
}

#[test]
fn sctp_is_answered_like_a_host_without_it() {
    let mut sv = server_with_params(&Params::default(), false);
    sv.reset();
    sv.accept_control(0);
    feed(&mut sv, &wire::make_cookie(1), 0);
    take(&mut sv);
    let json = br#"{"sctp":true,"time":1,"parallel":1,"len":1000}"#;
    let mut msg = (json.len() as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(json);
    feed(&mut sv, &msg, 0);
    // i_errno 202 (unable to start stream listener), errno 93 (protocol not supported).
    assert_eq!(
        take(&mut sv),
        [state::SERVER_ERROR as u8, 0, 0, 0, 202, 0, 0, 0, 93]
    );
}

#[test]
fn results_wait_for_the_server_output() {
    let p = Params {
        get_server_output: true,
        duration_s: 1,
        ..Params::default()
    };
    let mut sv = server_with_params(&p, false);
    sv.set_supplies_output(true);
    take(&mut sv);
    let cookie = *sv.cookie();
    sv.accept_tcp_stream(&cookie, 0).unwrap();
    take(&mut sv);
    sv.on_tcp_received(0, 1000, 10);
    feed(&mut sv, &[state::TEST_END as u8], 500_000);
    assert_eq!(take(&mut sv), [state::EXCHANGE_RESULTS as u8]);
    let client = br#"{"cpu_util_total":1,"cpu_util_user":0,"cpu_util_system":1,"sender_has_retransmits":0,"streams":[{"id":1,"bytes":1000,"retransmits":0,"jitter":0,"errors":0,"packets":0}]}"#;
    let mut msg = (client.len() as u32).to_be_bytes().to_vec();
    msg.extend_from_slice(client);
    feed(&mut sv, &msg, 500_000);
    assert!(sv.results_held() && take(&mut sv).is_empty());
    sv.set_cpu_util([2.0, 1.0, 1.0]);
    sv.send_results(br#""server_output_text":"hello\n""#);
    let out = take(&mut sv);
    let len = u32::from_be_bytes([out[0], out[1], out[2], out[3]]) as usize;
    let doc = std::str::from_utf8(&out[4..4 + len]).unwrap();
    assert!(doc.starts_with(r#"{"cpu_util_total":2.0"#), "{doc}");
    assert!(
        doc.ends_with(r#","server_output_text":"hello\n"}"#),
        "{doc}"
    );
    assert_eq!(out[4 + len..], [state::DISPLAY_RESULTS as u8]);
}

#[test]
fn a_burst_goes_out_back_to_back_then_the_rate_rules() {
    // -R -u -b 1M/10 -l 1000: ten datagrams at once, then 8 ms per datagram on average.
    let mut sv = udp_server_running(Params {
        protocol: Protocol::Udp,
        reverse: true,
        rate_bps: 1_000_000,
        burst: 10,
        len: 1000,
        ..Params::default()
    });
    let mut buf = [0u8; 1000];
    let mut sent = 0;
    while let Some(n) = sv.udp_next(0, 0, &mut buf) {
        sv.on_udp_sent(0, n, 0);
        sent += 1;
        assert!(sent <= 10);
    }
    assert_eq!(sent, 10);
    // 10 datagrams = 80 ms at 1 Mbit/s: the next burst starts then, on a pacing tick.
    assert_eq!(sv.poll_at(), Some(80_000));
    assert!(!sv.may_send(0, 79_999) && sv.may_send(0, 80_000));
}

#[test]
fn pacing_resumes_on_the_pacing_timer() {
    let mut sv = udp_server_running(Params {
        protocol: Protocol::Udp,
        reverse: true,
        rate_bps: 1_000_000,
        len: 1001,
        pacing_timer_us: 5_000,
        ..Params::default()
    });
    let mut buf = [0u8; 1001];
    let n = sv.udp_next(0, 0, &mut buf).unwrap();
    sv.on_udp_sent(0, n, 0);
    // 1001 bytes at 1 Mbit/s: 8008 µs, held back to the next 5 ms tick.
    assert_eq!(sv.poll_at(), Some(10_000));
}

#[test]
fn software_pacing_stands_in_for_fq_rate_and_a_paced_server_ignores_n() {
    let p = Params {
        protocol: Protocol::Udp,
        reverse: true,
        fq_rate_bps: 8_000_000,
        rate_bps: 0,
        bytes: 2000,
        len: 1000,
        duration_s: 0,
        ..Params::default()
    };
    let mut sv = server_with_params(&p, false);
    sv.set_app_fq_pacing(true);
    take(&mut sv);
    sv.accept_udp_stream(&wire::udp_hello(), 0).unwrap();
    let mut buf = [0u8; 1000];
    let n = sv.udp_next(0, 0, &mut buf).unwrap();
    sv.on_udp_sent(0, n, 0);
    // 1000 bytes at 8 Mbit/s = 1 ms.
    assert!(!sv.may_send(0, 999) && sv.may_send(0, 1000));
    for t in 1..5u64 {
        let n = sv.udp_next(0, t * 1000, &mut buf).unwrap();
        sv.on_udp_sent(0, n, t * 1000);
    }
    // Paced, the server goes past -n until the client ends the test, as iperf3's does.
    assert!(sv.may_send(0, 5000));
}

/// A server whose client's TEST_END is slow in coming (a slow, queued link) waits for it as
/// iperf3's server does: 40 s past `-t`, not 5; then it gives up.
#[test]
fn server_waits_iperf3s_grace_for_a_late_test_end() {
    let p = Params {
        duration_s: 1,
        ..Params::default()
    };
    let running = || {
        let mut sv = server_with_params(&p, false);
        take(&mut sv);
        let cookie = *sv.cookie();
        sv.accept_tcp_stream(&cookie, 0).unwrap();
        take(&mut sv);
        sv
    };
    // Data keeps trickling in (the watchdog stays quiet); TEST_END comes 7 s late.
    let mut sv = running();
    for s in 1..=8 {
        sv.on_tcp_received(0, 1000, s * 1_000_000);
        sv.poll(s * 1_000_000);
    }
    assert_eq!(sv.phase(), Phase::Running);
    feed(&mut sv, &[state::TEST_END as u8], 8_000_000);
    assert_eq!(take(&mut sv), [state::EXCHANGE_RESULTS as u8]);
    // TEST_END never comes: the test fails at `-t` + 40 s.
    let mut sv = running();
    for s in 1..41 {
        sv.on_tcp_received(0, 1000, s * 1_000_000);
        sv.poll(s * 1_000_000);
    }
    assert_eq!(sv.phase(), Phase::Running);
    sv.poll(1_000_000 + SERVER_GRACE_US);
    assert_eq!(sv.phase(), Phase::Failed(Failure::Timeout));
}
