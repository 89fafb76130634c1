//! The HTTP/1.1 server and client parsers of linklab-perf on arbitrary bytes, split at an
//! arbitrary point: neither may panic, and the server must always consume its input and
//! answer with a status.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_perf::http::{Client, NoRoutes, Server};

fuzz_target!(|data: &[u8]| {
    let split = data.first().map_or(0, |&b| b as usize).min(data.len());
    let (a, b) = data.split_at(split);

    let mut server = Server::new();
    for part in [a, b] {
        let mut rest = part;
        while !rest.is_empty() {
            let n = server.receive(rest, &mut NoRoutes);
            assert!(n > 0 && n <= rest.len());
            rest = &rest[n..];
        }
    }
    let mut out = [0u8; 97];
    // The head and the start of the body are enough; a bench file can be megabytes.
    let mut rounds = 0;
    while rounds < 1000 && server.transmit(&mut out) > 0 {
        rounds += 1;
    }
    if data.len() >= linklab_perf::http::MAX_HEAD {
        assert!(
            server.status().is_some(),
            "an oversized request always gets a status"
        );
    }

    if let Ok(mut client) = Client::new("198.18.0.1", "/10kB.txt") {
        let _ = client.receive(a);
        let _ = client.receive(b);
        let _ = client.download();
        let _ = client.finish();
    }
});
