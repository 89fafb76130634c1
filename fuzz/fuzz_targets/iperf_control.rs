//! Fuzzes the iperf3 control path: arbitrary bytes into a server session (cookie, length-
//! prefixed JSON, state bytes) and a client session, split at fuzzer-chosen points, plus the
//! parameter and results JSON parsers directly. The clock advances by a fuzzer-chosen step
//! per chunk, from 1 µs to jumps near the end of time (late polls, clock steps). Nothing may
//! panic; outputs stay bounded.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_perf::iperf::{ClientOptions, Params, Results, Session};

/// The clock step after `chunk`: 2^k µs with k from its last byte, up to 2^63.
fn step(chunk: &[u8]) -> u64 {
    chunk.last().map_or(1000, |b| 1u64 << (b % 64))
}

fuzz_target!(|data: &[u8]| {
    let _ = Params::from_json(data);
    let _ = Results::<16>::from_json(data);

    let split = data.first().map_or(1, |b| usize::from(*b % 7) + 1);
    let (mut rx, mut tx) = ([0u8; 8192], [0u8; 8192]);
    let mut server = Session::server(&mut rx, &mut tx);
    // The adapters' hooks: parameter review (accepted or refused by a fuzzer bit) and
    // results held for the server's output.
    let flags = data.get(1).copied().unwrap_or(0);
    server.set_review_params(flags & 1 != 0);
    server.set_supplies_output(flags & 2 != 0);
    server.set_app_fq_pacing(flags & 4 != 0);
    server.accept_control(0);
    let mut now = 0;
    for chunk in data.chunks(split) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let n = server.control_input(rest, now);
            if n == 0 {
                break;
            }
            rest = &rest[n..];
        }
        if server.params_pending() {
            if flags & 8 != 0 {
                server.refuse_params(123, 95);
            } else {
                server.accept_params();
            }
        }
        if server.results_held() {
            server.send_results(br#""server_output_text":"x""#);
        }
        // Whatever the server offers (streams, data), exercise it too.
        let _ = server.accept_tcp_stream(server.cookie().clone().as_slice(), now);
        let _ = server.accept_udp_stream(&chunk[..chunk.len().min(4)], now);
        server.on_udp_received(0, chunk, now);
        let _ = server.tcp_send_budget(0, now);
        let out = server.control_output().len();
        assert!(out <= 8192);
        server.control_sent(out);
        now = now.saturating_add(step(chunk));
        server.poll(now);
    }
    let _ = server.report();

    let (mut rx2, mut tx2) = ([0u8; 8192], [0u8; 8192]);
    let opts = ClientOptions {
        strings: Default::default(),
        params: Params::default(),
        interval_us: 1000,
        cookie_seed: 1,
    };
    let mut client = Session::client(&opts, &mut rx2, &mut tx2, 0);
    let mut now = 0;
    for chunk in data.chunks(split) {
        let mut rest = chunk;
        while !rest.is_empty() {
            let n = client.control_input(rest, now);
            if n == 0 {
                break;
            }
            rest = &rest[n..];
        }
        let _ = client.client_stream_opened(now);
        client.on_tcp_received(0, chunk.len(), now);
        let out = client.control_output().len();
        client.control_sent(out);
        now = now.saturating_add(step(chunk));
        client.poll(now);
        let _ = client.take_interval();
    }
    let _ = client.report();
});
