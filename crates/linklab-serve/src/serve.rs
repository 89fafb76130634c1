//! `linklab serve`: the soft NIC on a Linux TAP. linklab-mac (aligned RX without FCS, the
//! zero-copy RX queue and its counters, plain TX) carries smoltcp, which runs linklab-perf's
//! apps: iperf3 server (TCP/UDP 5201), HTTP bench files and `GET /stats` (TCP 80), echo
//! (UDP/TCP 7), and ICMP echo. Stock ping, curl and iperf3 on the kernel side are the peers.
//!
//! The main loop has the shape firmware has: move what the "PHY" received into the RX
//! queue, poll smoltcp, run the apps, then sleep until the TAP is readable, a signal
//! arrives, or smoltcp's `poll_at` is due. It never spins.

pub(crate) mod apps;
pub mod config;
mod signals;
mod stats;

use std::os::fd::AsFd;
use std::time::Duration;

use anyhow::Context;
use linklab_mac::window::capacity_for_frames;
use linklab_mac::{BoxedSlice, Mac, MacAddr, MacConfig, NoClock, RxQueue, RX_GRANT_LEN};
use linklab_perf::lifetime::NextFrame;
use smoltcp::iface::{Config as IfaceConfig, Interface, PollResult, SocketSet};
use smoltcp::time::Instant;
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

use apps::{Apps, StatsRoute};
pub use config::Config;
use linklab_results::values::TcpWindow;
use linklab_tap::{Tap, TapPhy};

use stats::Snapshot;

pub use signals::{wait_readable, StopSignals};

/// How long a stop waits for the RSTs of the connections it resets to leave.
const STOP_DRAIN: Duration = Duration::from_millis(250);

/// Runs `linklab serve` until SIGINT or SIGTERM: the banner, the counters every
/// `stats_interval` and at the stop on stdout.
pub fn run(config: &Config) -> anyhow::Result<()> {
    let signals = StopSignals::install().context("cannot set up SIGINT/SIGTERM handling")?;
    let tap = Tap::open(&config.tap).map_err(|e| {
        if e.raw_os_error() == Some(nix::errno::Errno::EBUSY as i32) {
            anyhow::anyhow!("--tap {}: the TAP is in use by another process", config.tap)
        } else {
            anyhow::anyhow!(
                "--tap {}: cannot open the TAP interface (needs CAP_NET_ADMIN): {e}",
                config.tap
            )
        }
    })?;

    // The smallest ring that always holds the frames the TAP hands over (no FCS).
    let format = MacConfig::tap(MacAddr(config.mac)).rx_format;
    let queue = RxQueue::boxed(capacity_for_frames(config.rx_frames, format))
        .map_err(|e| anyhow::anyhow!("--rx-frames {}: {e}", config.rx_frames))?;
    serve_on(&queue, config, &tap, &signals)
}

/// The firmware-shaped main loop over `queue`.
fn serve_on(
    queue: &RxQueue<BoxedSlice>,
    config: &Config,
    tap: &Tap,
    signals: &StopSignals,
) -> anyhow::Result<()> {
    let started = std::time::Instant::now();
    let (producer, consumer) = queue.split();
    let mut mac = Mac::new(
        consumer,
        TapPhy::new(tap),
        NoClock,
        MacConfig::tap(MacAddr(config.mac)),
    );
    let (window, auto) = match config.tcp_window {
        TcpWindow::Auto => (mac.tcp_rx_window(), true),
        TcpWindow::Bytes(bytes) => (bytes, false),
    };

    let mut iface = interface(config, &mut mac, auto, started)?;

    let mut sockets = SocketSet::new(vec![]);
    let mut apps = Apps::new(&mut sockets, window);
    let mut scratch = vec![0u8; RX_GRANT_LEN];
    let snapshot = |mac: &Mac<'_, BoxedSlice, TapPhy<'_>, NoClock>,
                    apps: &Apps,
                    sockets: &SocketSet<'_>| Snapshot {
        uptime_s: started.elapsed().as_secs_f64(),
        mac: mac.counters(),
        tap_tx_refused: mac.phy().refused,
        tap_tx_errors: mac.phy().errors,
        queue_frames: config.rx_frames,
        queue_bytes: queue.capacity(),
        tcp_window: window,
        tcp_window_auto: auto,
        apps: apps.counters(),
        tcp: stats::tcp_figures(sockets),
        tcp_omitted: 0,
        apps_omitted: false,
    };

    println!(
        "linklab serve: {} {}/{} mac {} | rx queue {} frames ({} bytes) | tcp window {} bytes{} | {}",
        tap.name(),
        config.ip,
        config.prefix,
        EthernetAddress(config.mac),
        config.rx_frames,
        queue.capacity(),
        window,
        if auto { " (auto)" } else { "" },
        if tap.created() { "TAP created" } else { "TAP existed" }
    );

    let mut next_stats = config.stats_interval.map(|i| started + i);
    let stop = loop {
        if let Some(signal) = signals.take() {
            break signal;
        }
        linklab_tap::pump_rx(tap, &producer, &mut scratch).context("reading the TAP")?;
        let now = device_now(started);
        apps.poll_interface(&mut iface, &mut mac, &mut sockets, now, |mac| {
            mac.peek(NextFrame::of).unwrap_or(NextFrame::Empty)
        });

        // Only when a request may ask for it: a snapshot walks every counter and socket.
        let taken = apps
            .http_request_pending(&sockets)
            .then(|| snapshot(&mac, &apps, &sockets));
        apps.poll(&mut sockets, &mut StatsRoute::new(taken.as_ref()), now);

        if let (Some(at), Some(interval)) = (next_stats, config.stats_interval) {
            if std::time::Instant::now() >= at {
                println!("{}", snapshot(&mac, &apps, &sockets).to_text());
                next_stats = Some(at + interval);
            }
        }

        let now = device_now(started);
        let deadlines = [iface.poll_at(now, &sockets), apps.poll_at()];
        let mut timeout = deadlines
            .into_iter()
            .flatten()
            .map(|at| until(at, now))
            .min();
        if let Some(at) = next_stats {
            let left = at.saturating_duration_since(std::time::Instant::now());
            timeout = Some(timeout.map_or(left, |t| t.min(left)));
        }
        if timeout == Some(Duration::ZERO) {
            continue;
        }
        signals::wait_readable(&[tap.as_fd(), signals.as_fd()], timeout)
            .context("waiting for the TAP")?;
    };

    // Every open connection gets a RST before we go, so no peer is left hanging: the
    // interface is polled until it has nothing more to send (a RST to a peer that never
    // answers ARP never leaves: it is given up after STOP_DRAIN).
    apps.abort_all(&mut sockets);
    let deadline = std::time::Instant::now() + STOP_DRAIN;
    loop {
        let result = iface.poll(device_now(started), &mut mac, &mut sockets);
        let settled = result == PollResult::None && !Apps::resets_pending(&sockets);
        if settled || std::time::Instant::now() >= deadline {
            break;
        }
        linklab_tap::pump_rx(tap, &producer, &mut scratch).context("reading the TAP")?;
        signals::wait_readable(&[tap.as_fd()], Some(Duration::from_millis(5)))
            .context("waiting for the TAP")?;
    }
    let last = snapshot(&mac, &apps, &sockets);
    println!(
        "linklab serve: stopped by signal {stop} after {:.1} s",
        last.uptime_s
    );
    println!("{}", last.to_text());
    Ok(())
}

/// smoltcp's interface over `mac`, at `--ip`, its sequence numbers seeded per run.
fn interface(
    config: &Config,
    mac: &mut Mac<'_, BoxedSlice, TapPhy<'_>, NoClock>,
    auto: bool,
    started: std::time::Instant,
) -> anyhow::Result<Interface> {
    let mut iface_config = IfaceConfig::new(EthernetAddress(config.mac).into());
    // Seeds smoltcp's TCP initial sequence numbers and ports: differ per run.
    let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
    iface_config.random_seed =
        wall.map_or(0, |d| d.as_nanos() as u64) ^ u64::from(std::process::id());
    // With an explicit --tcp-window the burst cap (which would quietly shrink the window back
    // to what the queue holds) is lifted, so the window on the wire is the one asked for.
    mac.set_burst_cap(auto);
    let mut iface = Interface::new(iface_config, mac, device_now(started));
    let mut added = true;
    iface.update_ip_addrs(|addrs| {
        added = addrs
            .push(IpCidr::new(IpAddress::Ipv4(config.ip), config.prefix))
            .is_ok()
    });
    anyhow::ensure!(added, "--ip: smoltcp refused the address");
    Ok(iface)
}

/// The device's time: microseconds since `started` on the monotonic clock. smoltcp's
/// `Instant::now()` reads the wall clock, which NTP or an admin may step; a step back would
/// stall every TCP and iperf3 timer for its length, a step forward would fire them at once
/// (and fail a running iperf3 test on its watchdog).
fn device_now(started: std::time::Instant) -> Instant {
    Instant::from_micros(i64::try_from(started.elapsed().as_micros()).unwrap_or(i64::MAX))
}

/// Time from `now` until `at` (zero if `at` has passed).
fn until(at: Instant, now: Instant) -> Duration {
    Duration::from_micros((at.total_micros() - now.total_micros()).max(0) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_clock_counts_from_start_not_from_the_wall_clock_epoch() {
        let started = std::time::Instant::now();
        let a = device_now(started);
        // smoltcp's `Instant::now()` (the wall clock) is ~1.7e9 s here and fails this.
        assert!(a >= Instant::ZERO && a < Instant::from_secs(60), "{a}");
        std::thread::sleep(Duration::from_millis(2));
        let b = device_now(started);
        assert!(
            b - a >= smoltcp::time::Duration::from_millis(2),
            "{a} then {b}"
        );
    }
}
