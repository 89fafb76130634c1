//! `--serve`: the device side of the link on a host — smoltcp over linklab-serial's `Device`
//! running linklab-perf's DeviceApps through `linklab serve`'s `Apps` (iperf3 5201, HTTP 80
//! with the bench files, echo 7, ICMP), plus `GET /stats` with the link's counters. What an
//! MCU at the end of a UART would run, without the MCU.

use std::net::Ipv4Addr;
use std::time::Duration;

use linklab_perf::http::{RouteBody, Routes};
use linklab_perf::lifetime::NextFrame;
use smoltcp::iface::{Config as IfaceConfig, Interface, PollResult, SocketSet};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

use super::bridge::Stop;
use super::counters_line;
use super::port::Port;
use crate::serve::apps::Apps;

/// How long a stop waits for the link to carry the RSTs of the connections it resets: a few
/// of the link's retransmission timeouts.
const STOP_DRAIN: Duration = Duration::from_secs(2);

/// How often a stop looks at the link while it drains.
const STOP_POLL: Duration = Duration::from_millis(5);

/// TCP receive window: what the link's window holds in full-size segments; more would only
/// queue in the link's transmit store at the other end.
const TCP_WINDOW: usize = 8 * 1460;

/// `GET /stats`: the link's counters and the conservation verdict, as JSON.
struct LinkStats(Option<String>);

impl Routes for LinkStats {
    fn get(&mut self, path: &str, out: &mut [u8]) -> Option<RouteBody> {
        if path != "/stats" {
            return None;
        }
        let body = self.0.as_deref()?.as_bytes();
        out.get_mut(..body.len())?.copy_from_slice(body);
        Some(RouteBody {
            len: body.len(),
            content_type: "application/json",
        })
    }
}

fn stats_json(port: &Port) -> String {
    let c = port.link.counters();
    let mut map = serde_json::Map::new();
    for (k, v) in c.fields() {
        map.insert(k.into(), v.into());
    }
    serde_json::json!({
        "link": map,
        "conservation": match c.check_conservation() {
            Ok(()) => "ok".to_string(),
            Err(e) => e.to_string(),
        },
        "srtt_us": port.link.srtt(),
        "rto_us": port.link.rto(),
    })
    .to_string()
}

/// Time from `now` until `at` (zero if `at` has passed).
fn until(at: Instant, now: Instant) -> Duration {
    Duration::from_micros((at.total_micros() - now.total_micros()).max(0) as u64)
}

fn now_of(port: &Port) -> Instant {
    Instant::from_micros(port.now() as i64)
}

/// Runs the device side until SIGINT or SIGTERM.
pub fn run(
    port: &mut Port,
    ip: Ipv4Addr,
    prefix: u8,
    mac: [u8; 6],
    signals: &impl Stop,
) -> anyhow::Result<()> {
    let mut config = IfaceConfig::new(EthernetAddress(mac).into());
    config.random_seed = u64::from(std::process::id()) ^ port.now();
    let now = now_of(port);
    let mut iface = Interface::new(config, &mut *port.link, now);
    let mut added = true;
    iface.update_ip_addrs(|a| added = a.push(IpCidr::new(IpAddress::Ipv4(ip), prefix)).is_ok());
    anyhow::ensure!(added, "--ip: smoltcp refused the address");
    let mut sockets = SocketSet::new(vec![]);
    let mut apps = Apps::new(&mut sockets, TCP_WINDOW);
    println!(
        "linklab serial: serving {ip}/{prefix} mac {} on the link (iperf3 5201, http 80, echo 7, icmp)",
        EthernetAddress(mac)
    );
    let stop = loop {
        if let Some(signal) = signals.take() {
            break signal;
        }
        port.read()?;
        let now = now_of(port);
        apps.poll_interface(&mut iface, &mut *port.link, &mut sockets, now, |_| {
            NextFrame::Other
        });
        let stats = apps
            .http_request_pending(&sockets)
            .then(|| stats_json(port));
        apps.poll(&mut sockets, &mut LinkStats(stats), now);
        iface.poll(now, &mut *port.link, &mut sockets);
        port.write()?;
        let now = now_of(port);
        let timeout = [
            iface.poll_at(now, &sockets).map(|at| until(at, now)),
            apps.poll_at().map(|at| until(at, now)),
            port.timeout(),
        ]
        .into_iter()
        .flatten()
        .min();
        port.wait(&[signals.as_fd()], timeout)?;
    };
    // Every open connection gets a RST, and the link carries it, with what is queued before
    // it, to the other end before we go: no peer is left waiting on a device that is gone.
    // Done when smoltcp has nothing more to send and the link's every frame is acknowledged,
    // or after STOP_DRAIN (a peer that never answers ARP, a link that went quiet).
    apps.abort_all(&mut sockets);
    let deadline = std::time::Instant::now() + STOP_DRAIN;
    loop {
        port.read()?;
        let result = iface.poll(now_of(port), &mut *port.link, &mut sockets);
        port.write()?;
        let settled = result == PollResult::None
            && !Apps::resets_pending(&sockets)
            && port.link.tx_pending() == 0;
        if settled || std::time::Instant::now() >= deadline {
            break;
        }
        let wait = port.timeout().map_or(STOP_POLL, |t| t.min(STOP_POLL));
        port.wait(&[], Some(wait))?;
    }
    println!("linklab serial: stopped by {stop}");
    println!("{}", counters_line(port));
    Ok(())
}
