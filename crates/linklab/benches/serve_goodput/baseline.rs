//! The bare smoltcp baseline: smoltcp's own `TunTapInterface` (no linklab-mac, no RX queue)
//! running the same apps as `linklab serve` on the same sockets and buffers (linklab-perf's
//! `DeviceApps` with `host_buffers`), in the loop shape of smoltcp's examples/benchmark.rs (poll, serve, `phy::wait` until
//! `poll_at`). So the only difference to the soft NIC is the device under smoltcp.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use linklab_perf::apps::DeviceApps;
use linklab_perf::http::NoRoutes;
use linklab_perf_host::apps::host_buffers;
use smoltcp::iface::{Config, Interface, SocketSet};
use smoltcp::phy::{wait as phy_wait, Medium, TunTapInterface};
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

/// A running baseline server; [`Baseline::stop`] ends it.
pub struct Baseline {
    stop: Arc<AtomicBool>,
    tid: Arc<AtomicI32>,
    thread: Option<JoinHandle<()>>,
}

impl Baseline {
    /// The server thread's id (for /proc/PID/task/TID/stat).
    pub fn tid(&self) -> i32 {
        self.tid.load(Ordering::SeqCst)
    }

    /// Stops the server thread and waits for it (the TAP goes away with it).
    pub fn stop(mut self) {
        self.stop.store(true, Ordering::SeqCst);
        if let Some(t) = self.thread.take() {
            t.join().expect("baseline thread");
        }
    }
}

/// Starts the baseline on TAP `tap` inside namespace `ns` at 198.18.0.2/24 with TCP receive
/// buffers of `window` bytes. smoltcp's TunTapInterface sets no burst cap, so the window on
/// the wire is the buffer, as with `linklab serve --tcp-window BYTES`.
pub fn start(ns: &str, tap: &str, window: usize) -> Baseline {
    let stop = Arc::new(AtomicBool::new(false));
    let tid = Arc::new(AtomicI32::new(0));
    let (ns, tap, flag, tid_out) = (
        format!("/run/netns/{ns}"),
        tap.to_string(),
        stop.clone(),
        tid.clone(),
    );
    let thread = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        // SAFETY: gettid(2) takes nothing and cannot fail.
        tid_out.store(unsafe { libc::gettid() }, Ordering::SeqCst);
        let netns = File::open(&ns).expect("open netns");
        // SAFETY: setns(2) moves only this thread into the namespace.
        let rc = unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(rc, 0, "setns");
        run(&tap, window, &flag);
    });
    Baseline {
        stop,
        tid,
        thread: Some(thread),
    }
}

/// Set by SIGINT in [`serve_until_sigint`].
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

extern "C" fn on_sigint(_: libc::c_int) {
    INTERRUPTED.store(true, Ordering::SeqCst);
}

/// Runs the baseline on the calling thread inside namespace `ns` until SIGINT (the bench
/// re-runs itself this way under callgrind to count the baseline's instructions).
pub fn serve_until_sigint(ns: &str, tap: &str, window: usize) {
    let netns = File::open(format!("/run/netns/{ns}")).expect("open netns");
    // SAFETY: setns(2) on this (the only) thread; the handler only stores an atomic.
    unsafe {
        assert_eq!(
            libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET),
            0,
            "setns"
        );
        libc::signal(libc::SIGINT, on_sigint as *const () as libc::sighandler_t);
    }
    run(tap, window, &INTERRUPTED);
}

fn run(tap: &str, window: usize, stop: &AtomicBool) {
    let mut device = TunTapInterface::new(tap, Medium::Ethernet).expect("TunTapInterface");
    let fd = device.as_raw_fd();
    let mut config = Config::new(EthernetAddress([0x02, 0x4c, 0x4c, 0, 0, 2]).into());
    config.random_seed = 0x5eed;
    let mut iface = Interface::new(config, &mut device, Instant::now());
    iface.update_ip_addrs(|a| {
        a.push(IpCidr::new(IpAddress::v4(198, 18, 0, 2), 24))
            .expect("address")
    });

    let mut sockets = SocketSet::new(vec![]);
    // The same apps and buffers as linklab serve.
    let mut apps: DeviceApps = DeviceApps::new(&mut sockets, host_buffers(window));

    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        iface.poll(now, &mut device, &mut sockets);
        apps.poll(&mut sockets, &mut NoRoutes, now);
        let wake = [iface.poll_at(now, &sockets), apps.poll_at()]
            .into_iter()
            .flatten()
            .min();
        // Bounded so the stop flag is seen within 100 ms.
        let limit = Duration::from_millis(100);
        let timeout = match wake {
            Some(at) if at <= now => continue,
            Some(at) => (at - now).min(limit),
            None => limit,
        };
        phy_wait(fd, Some(timeout)).expect("phy_wait");
    }
}
