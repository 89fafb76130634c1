//! `GET /stats` for a board whose network driver is the HAL's (its counters are its own): the
//! board's name, the uptime, the link, the apps' counters and the connected TCP sockets, as
//! compact JSON with the keys of the emulated images' `/stats` (which add the MAC's counters
//! and the CPU's work), written into the buffer the HTTP server lends (no heap).

use core::fmt::Write;

use embassy_net::Stack;
use embassy_time::Instant;

use super::AppCounters;
use crate::http::{RouteBody, Routes};
use crate::slice_writer::SliceWriter;
use crate::socket::TcpState;

/// The `/stats` route of a board running the apps on its HAL's driver (see the module docs).
pub struct AppStats<'a> {
    board: &'static str,
    counters: &'a AppCounters,
    stack: Stack<'a>,
    /// The stack's link state, read in `before_serve` (`get` runs inside the stack's
    /// borrow: reading it there panics in embassy-net's RefCell).
    link_up: bool,
}

impl<'a> AppStats<'a> {
    /// `/stats` for `board`, from the apps' `counters` and the `stack`'s link.
    pub fn new(board: &'static str, counters: &'a AppCounters, stack: Stack<'a>) -> Self {
        AppStats {
            board,
            counters,
            stack,
            link_up: false,
        }
    }
}

/// Writes `/stats` into `out`; the socket list is cut (and the cut counted in
/// `tcp_omitted`) rather than the JSON. None if even the fixed part does not fit.
fn write_json(
    board: &str,
    uptime_ms: u64,
    link_up: bool,
    counters: &AppCounters,
    out: &mut [u8],
) -> Option<usize> {
    // Room kept for the longest tail: `],"tcp_omitted":NN}`.
    const TAIL: usize = 24;
    let mut w = SliceWriter::new(out);
    let uptime_ds = uptime_ms / 100;
    write!(
        w,
        "{{\"board\":\"{board}\",\"uptime_s\":{}.{},\"link_up\":{link_up}",
        uptime_ds / 10,
        uptime_ds % 10,
    )
    .ok()?;
    // The counters come grouped by app: one object per app.
    let mut app = "";
    for (name, counter, value) in counters.snapshot() {
        if name != app {
            let close = if app.is_empty() { "" } else { "}" };
            write!(w, "{close},\"{name}\":{{\"{counter}\":{value}").ok()?;
            app = name;
        } else {
            write!(w, ",\"{counter}\":{value}").ok()?;
        }
    }
    if !app.is_empty() {
        w.write_str("}").ok()?;
    }
    w.write_str(",\"tcp\":[").ok()?;
    let (mut written, mut omitted) = (0usize, 0usize);
    counters.sockets(|port, state| {
        if matches!(state, TcpState::Listen | TcpState::Closed) {
            return;
        }
        let mark = w.len();
        let sep = if written > 0 { "," } else { "" };
        let r = write!(w, "{sep}{{\"port\":{port},\"state\":\"{}\"}}", state.name());
        if r.is_err() || w.remaining() < TAIL {
            w.truncate(mark);
            omitted += 1;
        } else {
            written += 1;
        }
    });
    w.write_str("]").ok()?;
    if omitted > 0 {
        write!(w, ",\"tcp_omitted\":{omitted}").ok()?;
    }
    w.write_str("}").ok()?;
    Some(w.len())
}

impl Routes for AppStats<'_> {
    fn before_serve(&mut self) {
        self.link_up = self.stack.is_link_up();
    }

    fn get(&mut self, path: &str, out: &mut [u8]) -> Option<RouteBody> {
        if path != "/stats" {
            return None;
        }
        Some(RouteBody {
            len: write_json(
                self.board,
                Instant::now().as_millis(),
                self.link_up,
                self.counters,
                out,
            )?,
            content_type: "application/json",
        })
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::*;
    use std::vec;

    fn render(counters: &AppCounters, len: usize) -> Option<serde_json::Value> {
        let mut out = vec![0u8; len];
        let n = write_json("test-board", 12_345, true, counters, &mut out)?;
        Some(serde_json::from_slice(&out[..n]).expect("valid JSON"))
    }

    #[test]
    fn json_has_the_board_the_apps_and_the_connected_sockets() {
        let c = AppCounters::new();
        let (a, b) = (c.claim_view(), c.claim_view());
        c.set_view(a, 5201, TcpState::Established);
        c.set_view(b, 80, TcpState::Listen);
        let v = render(&c, 2048).unwrap();
        assert_eq!(v["board"], "test-board");
        assert_eq!(v["uptime_s"], 12.3);
        assert_eq!(v["link_up"], true);
        assert_eq!(v["iperf"]["tests_done"], 0);
        assert_eq!(v["http"]["responses"], 0);
        assert_eq!(v["echo"]["udp_rx_datagrams"], 0);
        let tcp = v["tcp"].as_array().unwrap();
        assert_eq!(tcp.len(), 1, "listening sockets are left out");
        assert_eq!(tcp[0]["port"], 5201);
        assert_eq!(tcp[0]["state"], "ESTABLISHED");
    }

    #[test]
    fn a_short_buffer_cuts_the_socket_list_not_the_json() {
        let c = AppCounters::new();
        for _ in 0..16 {
            let v = c.claim_view();
            c.set_view(v, 5201, TcpState::Established);
        }
        let mut out = vec![0u8; 4096];
        let whole = write_json("test-board", 12_345, true, &c, &mut out).unwrap();
        let full = render(&c, 4096).unwrap();
        assert_eq!(full["tcp"].as_array().unwrap().len(), 16);
        // 100 bytes short: a few sockets fewer, counted, and the JSON still whole.
        let cut = render(&c, whole - 100).unwrap();
        let listed = cut["tcp"].as_array().unwrap().len();
        assert!((1..16).contains(&listed), "{listed} listed");
        assert_eq!(cut["tcp_omitted"], 16 - listed as u64);
        assert!(render(&c, 20).is_none());
    }
}
