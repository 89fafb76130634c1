//! The apps the soft NIC runs: linklab-perf's [`DeviceApps`] — the same code the firmware
//! images run — with host-sized buffers, plus the `GET /stats` route of the soft NIC.

use linklab_perf::apps::DeviceApps;
use linklab_perf::http::{RouteBody, Routes};
use linklab_perf::lifetime::NextFrame;
use linklab_perf_host::apps::host_buffers;
use smoltcp::iface::{Interface, SocketSet};
use smoltcp::phy::Device;
use smoltcp::socket::tcp::State;
use smoltcp::socket::Socket;
use smoltcp::time::Instant;

use super::stats::Snapshot;

/// `GET /stats` (counters, laws, apps, and as many TCP sockets as fit) and `GET /stats/tcp`
/// (every connected TCP socket, compact rows), rendered from a snapshot taken just before the
/// HTTP sockets were polled, into the buffer the HTTP server lends.
pub struct StatsRoute<'a> {
    snapshot: Option<&'a Snapshot>,
}

impl<'a> StatsRoute<'a> {
    /// The routes answering from `snapshot` (None: not taken, so 404).
    pub fn new(snapshot: Option<&'a Snapshot>) -> Self {
        StatsRoute { snapshot }
    }
}

impl Routes for StatsRoute<'_> {
    fn get(&mut self, path: &str, out: &mut [u8]) -> Option<RouteBody> {
        let snapshot = self.snapshot?;
        let body = match path {
            "/stats" => snapshot.to_json_within(out.len()),
            "/stats/tcp" => snapshot.tcp_json_within(out.len()),
            "/stats/apps" => snapshot.apps_json(),
            _ => return None,
        };
        // A body larger than the lent buffer would be cut into invalid JSON: refuse instead.
        let dst = out.get_mut(..body.len())?;
        dst.copy_from_slice(&body);
        Some(RouteBody {
            len: body.len(),
            content_type: "application/json",
        })
    }
}

/// The apps of a host: every socket count linklab-perf allows (iperf3's streams, iperf 2's
/// `-P` and connect-backs), with buffers sized for a host.
type HostApps = DeviceApps<
    'static,
    { linklab_perf::iperf::device::MAX_TCP_SOCKETS },
    { linklab_perf::iperf::wire::MAX_STREAMS },
    { linklab_perf::apps::HTTP_SOCKETS },
    { linklab_perf::iperf2::pool::MAX_TCP_SOCKETS },
>;

/// The apps, with buffers sized for a host.
pub struct Apps {
    inner: HostApps,
}

impl Apps {
    /// Creates every app's sockets in `sockets`; TCP sockets that receive bulk data get a
    /// receive buffer of `tcp_window` bytes (smoltcp advertises its free space as window).
    pub fn new(sockets: &mut SocketSet<'static>, tcp_window: usize) -> Apps {
        Apps {
            inner: DeviceApps::new(sockets, host_buffers(tcp_window)),
        }
    }

    /// True when an HTTP socket holds request bytes, i.e. `/stats` may be asked for now.
    pub fn http_request_pending(&self, sockets: &SocketSet<'_>) -> bool {
        self.inner.http_request_pending(sockets)
    }

    /// Runs every app once over the sockets, answering extra HTTP paths from `routes` (the
    /// soft NIC's [`StatsRoute`], the serial link's counters); call after each
    /// `Interface::poll`.
    pub fn poll(
        &mut self,
        sockets: &mut SocketSet<'static>,
        routes: &mut dyn Routes,
        now: Instant,
    ) {
        self.inner.poll(sockets, routes, now);
    }

    /// Runs the interface, making room for SYNs first (see `DeviceApps::poll_interface`).
    pub fn poll_interface<D: Device + ?Sized>(
        &mut self,
        iface: &mut Interface,
        device: &mut D,
        sockets: &mut SocketSet<'static>,
        now: Instant,
        next_frame: impl FnMut(&mut D) -> NextFrame,
    ) {
        self.inner
            .poll_interface(iface, device, sockets, now, next_frame);
    }

    /// Resets every open TCP connection (the RSTs leave on the next interface polls: see
    /// [`Apps::resets_pending`]).
    pub fn abort_all(&mut self, sockets: &mut SocketSet<'_>) {
        self.inner.abort_all(sockets);
    }

    /// True while an aborted TCP socket has not sent its RST yet (smoltcp forgets the peer
    /// once the RST is out).
    pub fn resets_pending(sockets: &SocketSet<'_>) -> bool {
        sockets.iter().any(|(_, s)| match s {
            Socket::Tcp(tcp) => tcp.state() == State::Closed && tcp.remote_endpoint().is_some(),
            #[allow(unreachable_patterns)]
            _ => false,
        })
    }

    /// When the apps next need a poll regardless of traffic (pacing timers), if ever.
    pub fn poll_at(&self) -> Option<Instant> {
        self.inner.poll_at()
    }

    /// Counters of every app, grouped by app, for `/stats` and the console.
    pub fn counters(&self) -> Vec<(&'static str, Vec<(&'static str, u64)>)> {
        let mut grouped: Vec<(&'static str, Vec<(&'static str, u64)>)> = Vec::new();
        for (app, name, value) in self.inner.counters() {
            match grouped.last_mut() {
                Some((last, fields)) if *last == app => fields.push((name, value)),
                _ => grouped.push((app, vec![(name, value)])),
            }
        }
        grouped
    }
}

#[cfg(test)]
mod tests {
    use linklab_mac::Counters;
    use serde_json::Value;
    use smoltcp::iface::SocketSet;

    use super::super::stats::Snapshot;
    use super::Apps;

    /// A server that ran for years still answers `/stats`: every counter at 10^18 (19 digits)
    /// and the real app counter list still fit the buffer the HTTP server lends a route.
    #[test]
    fn stats_of_a_long_running_server_fit_the_route_buffer() {
        const HUGE: u64 = 1_000_000_000_000_000_000;
        let mut sockets = SocketSet::new(vec![]);
        let apps = Apps::new(&mut sockets, 10_220);
        let mac = Counters {
            rx_transmissions: HUGE,
            rx_committed: HUGE,
            rx_dequeued: HUGE,
            rx_cancelled: HUGE,
            rx_packets: HUGE,
            rx_bytes: HUGE,
            rx_pause_frames: HUGE,
            rx_filtered: HUGE,
            rx_frame_errors: HUGE,
            rx_crc_errors: HUGE,
            rx_short_length_errors: HUGE,
            rx_long_length_errors: HUGE,
            rx_missed_errors: HUGE,
            rx_checksum_errors: HUGE,
            tx_requests: HUGE,
            tx_packets: HUGE,
            tx_bytes: HUGE,
            tx_dropped: HUGE,
            tx_deferred: HUGE,
            tx_pause_frames: HUGE,
        };
        let s = Snapshot {
            uptime_s: 1e9,
            mac,
            tap_tx_refused: HUGE,
            tap_tx_errors: HUGE,
            queue_frames: 256,
            queue_bytes: usize::MAX,
            tcp_window: 1_048_576,
            tcp_window_auto: false,
            apps: apps
                .counters()
                .into_iter()
                .map(|(app, fields)| (app, fields.into_iter().map(|(k, _)| (k, HUGE)).collect()))
                .collect(),
            tcp: vec![],
            tcp_omitted: 0,
            apps_omitted: false,
        };
        let json = s.to_json_within(linklab_perf::http::MAX_HEAD);
        assert!(
            json.len() <= linklab_perf::http::MAX_HEAD,
            "{} bytes: {}",
            json.len(),
            String::from_utf8_lossy(&json)
        );
        // What /stats left out, /stats/apps has, within the same buffer.
        let apps = s.apps_json();
        assert!(apps.len() <= linklab_perf::http::MAX_HEAD, "{}", apps.len());
        let a: Value = serde_json::from_slice(&apps).unwrap();
        for (app, fields) in &s.apps {
            for (k, _) in fields {
                assert_eq!(a[*app][*k], HUGE, "{app}.{k}");
            }
        }
        let v: Value = serde_json::from_slice(&json).unwrap();
        assert_eq!(v["mac"]["rx_packets"], HUGE);
    }
}
