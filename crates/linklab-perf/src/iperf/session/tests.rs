//! Sessions back to back, refusals, late polls, the end of time and the watchdog.

extern crate std;

use super::*;
use crate::iperf::wire::state;

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
