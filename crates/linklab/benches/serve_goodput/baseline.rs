//! The bare smoltcp baseline: smoltcp's own `TunTapInterface` (no linklab-mac, no RX queue)
//! running linklab-perf's iperf3 server with the same sockets and buffers as `linklab serve`,
//! in the loop shape of smoltcp's examples/benchmark.rs (poll, serve, `phy::wait` until
//! `poll_at`). It runs on a thread that has entered the bench's network namespace.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use linklab_perf::iperf::device::{IperfServer, MAX_TCP_SOCKETS};
use linklab_perf::iperf::wire::{DEFAULT_PORT, MAX_JSON_LEN};
use smoltcp::iface::{Config, Interface, SocketHandle, SocketSet};
use smoltcp::phy::{wait as phy_wait, Medium, TunTapInterface};
use smoltcp::socket::{tcp, udp};
use smoltcp::time::{Duration, Instant};
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

/// Same as `linklab serve` (crates/linklab/src/serve/apps.rs).
const TCP_TX_BUFFER: usize = 64 * 1024;
const UDP_PACKETS: usize = 128;
const UDP_BYTES: usize = UDP_PACKETS * 1500;

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
    let (ns, tap, flag, tid_out) = (format!("/run/netns/{ns}"), tap.to_string(), stop.clone(), tid.clone());
    let thread = std::thread::spawn(move || {
        // SAFETY: gettid has no preconditions.
        tid_out.store(unsafe { libc::gettid() }, Ordering::SeqCst);
        let netns = File::open(&ns).expect("open netns");
        // SAFETY: setns(2) moves only this thread into the namespace.
        assert_eq!(unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) }, 0, "setns");
        run(&tap, window, &flag);
    });
    Baseline { stop, tid, thread: Some(thread) }
}

fn run(tap: &str, window: usize, stop: &AtomicBool) {
    let mut device = TunTapInterface::new(tap, Medium::Ethernet).expect("TunTapInterface");
    let fd = device.as_raw_fd();
    let mut config = Config::new(EthernetAddress([0x02, 0x4c, 0x4c, 0, 0, 2]).into());
    config.random_seed = 0x5eed;
    let mut iface = Interface::new(config, &mut device, Instant::now());
    iface.update_ip_addrs(|a| a.push(IpCidr::new(IpAddress::v4(198, 18, 0, 2), 24)).expect("address"));

    let mut sockets = SocketSet::new(vec![]);
    let tcp: Vec<SocketHandle> = (0..MAX_TCP_SOCKETS)
        .map(|_| sockets.add(tcp::Socket::new(tcp::SocketBuffer::new(vec![0; window]), tcp::SocketBuffer::new(vec![0; TCP_TX_BUFFER]))))
        .collect();
    let udp = sockets.add(udp::Socket::new(
        udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; UDP_PACKETS], vec![0; UDP_BYTES]),
        udp::PacketBuffer::new(vec![udp::PacketMetadata::EMPTY; UDP_PACKETS], vec![0; UDP_BYTES]),
    ));
    let (mut rx, mut tx) = (vec![0; MAX_JSON_LEN], vec![0; MAX_JSON_LEN]);
    let mut server = IperfServer::new(&tcp, udp, DEFAULT_PORT, &mut rx, &mut tx);

    while !stop.load(Ordering::SeqCst) {
        let now = Instant::now();
        iface.poll(now, &mut device, &mut sockets);
        server.poll(&mut sockets, now);
        let _ = server.take_outcome();
        let wake = [iface.poll_at(now, &sockets), server.poll_at()].into_iter().flatten().min();
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
