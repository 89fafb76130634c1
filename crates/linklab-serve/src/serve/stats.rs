//! What `linklab serve` reports: the MAC counters (with the RX conservation law checked), the
//! TAP's refusals, the apps' counters and per-socket figures, as compact JSON for
//! `GET /stats` and as `name=value` text for the console.

use std::fmt::Write as _;

use linklab_mac::Counters;
use serde_json::{json, Map, Value};
use smoltcp::iface::SocketSet;
use smoltcp::socket::{tcp, Socket};

/// One TCP connection's figures (listening and closed sockets are left out).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TcpFigures {
    /// Local port.
    pub port: u16,
    /// State name, as smoltcp prints it.
    pub state: String,
    /// Bytes received and not yet read by the app.
    pub rx_queue: usize,
    /// Bytes queued to send (unsent or unacknowledged).
    pub tx_queue: usize,
    /// Receive buffer size: the largest window this socket advertises.
    pub rx_capacity: usize,
}

/// Figures of every connected TCP socket in `sockets`.
pub fn tcp_figures(sockets: &SocketSet<'_>) -> Vec<TcpFigures> {
    sockets
        .iter()
        .filter_map(|(_, socket)| match socket {
            Socket::Tcp(s) if !matches!(s.state(), tcp::State::Listen | tcp::State::Closed) => {
                Some(TcpFigures {
                    port: s.local_endpoint().map_or(0, |e| e.port),
                    state: s.state().to_string(),
                    rx_queue: s.recv_queue(),
                    tx_queue: s.send_queue(),
                    rx_capacity: s.recv_capacity(),
                })
            }
            _ => None,
        })
        .collect()
}

/// Everything reported at one moment.
#[derive(Clone, Debug)]
pub struct Snapshot {
    /// Seconds since start.
    pub uptime_s: f64,
    /// MAC counters.
    pub mac: Counters,
    /// Frames the kernel refused on TAP writes.
    pub tap_tx_refused: u64,
    /// Frames whose TAP write failed otherwise.
    pub tap_tx_errors: u64,
    /// RX queue capacity in full-size frames.
    pub queue_frames: usize,
    /// RX queue ring size in bytes.
    pub queue_bytes: usize,
    /// TCP receive window in bytes, and whether it was derived from the queue.
    pub tcp_window: usize,
    /// True when the window is `auto`.
    pub tcp_window_auto: bool,
    /// Counters of each app, by app name (`echo`, `http`, `iperf`).
    pub apps: Vec<(&'static str, Vec<(&'static str, u64)>)>,
    /// Connected TCP sockets.
    pub tcp: Vec<TcpFigures>,
    /// Connected TCP sockets left out of `tcp` to keep the JSON within its size limit.
    pub tcp_omitted: usize,
    /// True when the apps' counters were left out of `GET /stats` to keep it within its size
    /// limit (`GET /stats/apps` has them).
    pub apps_omitted: bool,
}

/// One app's counters as a JSON object.
fn counters_object(fields: &[(&'static str, u64)]) -> Value {
    Value::Object(
        fields
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect(),
    )
}

impl Snapshot {
    /// `GET /stats` as compact JSON of at most `limit` bytes: when the per-socket list does
    /// not fit, its last entries are left out and counted in `tcp_omitted` (never cut JSON).
    /// Past that, the apps' counters are left out too (`"apps_omitted": true`; `GET
    /// /stats/apps` has them): a server's counters after a long run (20-digit values) fill
    /// more than the HTTP server's buffer.
    pub fn to_json_within(&self, limit: usize) -> Vec<u8> {
        let mut trimmed = self.clone();
        loop {
            let json = trimmed.to_json();
            if json.len() <= limit {
                return json;
            }
            if trimmed.tcp.pop().is_some() {
                trimmed.tcp_omitted += 1;
            } else if !trimmed.apps.is_empty() {
                trimmed.apps.clear();
                trimmed.apps_omitted = true;
            } else {
                return json;
            }
        }
    }

    /// `GET /stats/apps`: the apps' counters alone, by app name.
    pub fn apps_json(&self) -> Vec<u8> {
        let mut root = Map::new();
        for (app, fields) in &self.apps {
            root.insert(app.to_string(), counters_object(fields));
        }
        serde_json::to_vec(&Value::Object(root)).unwrap_or_default()
    }

    /// `GET /stats/tcp`: every connected TCP socket as a compact row, at most `limit` bytes
    /// (rows that do not fit are counted in `omitted`).
    pub fn tcp_json_within(&self, limit: usize) -> Vec<u8> {
        let mut rows: Vec<Value> = self
            .tcp
            .iter()
            .map(|t| json!([t.port, t.state, t.rx_queue, t.tx_queue, t.rx_capacity]))
            .collect();
        let mut omitted = self.tcp_omitted;
        loop {
            let doc = json!({
                "fields": ["port", "state", "rx_queue", "tx_queue", "rx_capacity"],
                "sockets": rows,
                "omitted": omitted,
            });
            let bytes = serde_json::to_vec(&doc).unwrap_or_default();
            if bytes.len() <= limit || rows.is_empty() {
                return bytes;
            }
            rows.pop();
            omitted += 1;
        }
    }

    /// `GET /stats`: compact JSON.
    pub fn to_json(&self) -> Vec<u8> {
        let mac: Map<String, Value> = self
            .mac
            .fields()
            .iter()
            .map(|(k, v)| (k.to_string(), json!(v)))
            .collect();
        let law = match self.mac.check_conservation() {
            Ok(()) => json!({"holds": true}),
            Err(e) => json!({"holds": false, "error": e.to_string()}),
        };
        let mut root = json!({
            "uptime_s": (self.uptime_s * 10.0).round() / 10.0,
            "mac": mac,
            "conservation": law,
            "tap": {"tx_refused": self.tap_tx_refused, "tx_errors": self.tap_tx_errors},
            "rx_queue": {"frames": self.queue_frames, "bytes": self.queue_bytes},
            "tcp_window": {"bytes": self.tcp_window, "auto": self.tcp_window_auto},
            "tcp": self.tcp.iter().map(|t| json!({
                "port": t.port, "state": t.state, "rx_queue": t.rx_queue, "tx_queue": t.tx_queue, "rx_capacity": t.rx_capacity
            })).collect::<Vec<_>>(),
        });
        if self.tcp_omitted > 0 {
            root["tcp_omitted"] = json!(self.tcp_omitted);
        }
        if self.apps_omitted {
            root["apps_omitted"] = json!(true);
        }
        for (app, fields) in &self.apps {
            root[*app] = counters_object(fields);
        }
        serde_json::to_vec(&root).unwrap_or_default()
    }

    /// The console form: one `name=value` line for the MAC, one for the rest.
    pub fn to_text(&self) -> String {
        let mut out = String::from("mac:");
        for (k, v) in self.mac.fields() {
            let _ = write!(out, " {k}={v}");
        }
        match self.mac.check_conservation() {
            Ok(()) => out.push_str(" conservation=ok"),
            Err(e) => {
                let _ = write!(out, " conservation=BROKEN({e})");
            }
        }
        let _ = write!(
            out,
            "\ntap: tx_refused={} tx_errors={}",
            self.tap_tx_refused, self.tap_tx_errors
        );
        for (app, fields) in &self.apps {
            let _ = write!(out, " | {app}:");
            for (k, v) in fields {
                let _ = write!(out, " {k}={v}");
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn snapshot() -> Snapshot {
        let mac = Counters {
            rx_transmissions: 10,
            rx_committed: 9,
            rx_dequeued: 9,
            rx_packets: 8,
            rx_filtered: 1,
            rx_missed_errors: 1,
            ..Counters::default()
        };
        Snapshot {
            uptime_s: 1.25,
            mac,
            tap_tx_refused: 0,
            tap_tx_errors: 0,
            queue_frames: 4,
            queue_bytes: 7624,
            tcp_window: 2920,
            tcp_window_auto: true,
            apps: vec![("echo", vec![("udp_rx_datagrams", 3)])],
            tcp: vec![
                TcpFigures {
                    port: 5201,
                    state: "ESTABLISHED".into(),
                    rx_queue: 1,
                    tx_queue: 2,
                    rx_capacity: 2920
                };
                20
            ],
            tcp_omitted: 0,
            apps_omitted: false,
        }
    }

    #[test]
    fn json_has_counters_law_and_apps() {
        let v: Value = serde_json::from_slice(&snapshot().to_json()).unwrap();
        assert_eq!(v["mac"]["rx_missed_errors"], 1);
        assert_eq!(v["conservation"]["holds"], true);
        assert_eq!(v["echo"]["udp_rx_datagrams"], 3);
        assert_eq!(v["tcp"][0]["port"], 5201);
    }

    #[test]
    fn json_within_a_limit_drops_sockets_not_validity() {
        let s = snapshot();
        let full = s.to_json();
        let small = s.to_json_within(full.len() - 1);
        assert!(small.len() < full.len());
        let v: Value = serde_json::from_slice(&small).unwrap();
        assert!(v["tcp_omitted"].as_u64().unwrap() >= 1);
        assert_eq!(
            v["tcp"].as_array().unwrap().len() + v["tcp_omitted"].as_u64().unwrap() as usize,
            20
        );
    }

    #[test]
    fn tcp_rows_fit_where_full_objects_do_not() {
        let s = snapshot();
        let v: Value = serde_json::from_slice(&s.tcp_json_within(1024)).unwrap();
        assert_eq!(v["sockets"].as_array().unwrap().len(), 20);
        assert_eq!(v["sockets"][0][0], 5201);
        assert_eq!(v["omitted"], 0);
        let v: Value = serde_json::from_slice(&s.tcp_json_within(200)).unwrap();
        assert_eq!(
            v["sockets"].as_array().unwrap().len() + v["omitted"].as_u64().unwrap() as usize,
            20
        );
    }

    #[test]
    fn a_broken_law_is_reported_not_hidden() {
        let mut s = snapshot();
        s.mac.rx_packets += 1;
        let v: Value = serde_json::from_slice(&s.to_json()).unwrap();
        assert_eq!(v["conservation"]["holds"], false);
        assert!(s.to_text().contains("conservation=BROKEN"));
    }
}
