//! Idle holders of a device's HTTP sockets, in threads of its namespace (the hostile-peer
//! figures, `benches/hostile_figures.rs`, and the mixed-load soak, `benches/soak_mixed.rs`):
//! each connects to port 80 (again 1 s after a refusal), sends a request head cut short
//! (every other holder) or nothing, and holds the connection until the device closes it;
//! then it stops ([`Kind::Once`]) or connects again at once ([`Kind::Reconnect`], a pool of
//! clients that keep their connections up).

use std::io::{ErrorKind, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::device::{Device, DEVICE};
use super::enter_netns;

/// What a holder does once the device closed its connection.
#[derive(Clone, Copy, PartialEq, Debug)]
pub enum Kind {
    /// Stops.
    Once,
    /// Connects again at once.
    Reconnect,
}

/// Holder threads in the device's namespace, stopped (their connections closed) on drop.
pub struct Holders {
    stop: Arc<AtomicBool>,
    threads: Vec<JoinHandle<()>>,
}

impl Holders {
    /// `n` holders of `dev`'s port 80 (see the module docs).
    pub fn start(dev: &Device, n: usize, kind: Kind) -> Holders {
        let stop = Arc::new(AtomicBool::new(false));
        let path = format!("/run/netns/{}", dev.ns.name);
        let threads = (0..n)
            .map(|i| {
                let (stop, path) = (stop.clone(), path.clone());
                std::thread::spawn(move || {
                    enter_netns(&path);
                    holder(i, kind, &stop);
                })
            })
            .collect();
        Holders { stop, threads }
    }
}

impl Drop for Holders {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }
}

/// One holder (see the module docs), until `stop`.
fn holder(i: usize, kind: Kind, stop: &AtomicBool) {
    let device: SocketAddr = format!("{DEVICE}:80").parse().unwrap();
    let pause = |d: Duration| {
        let until = Instant::now() + d;
        while Instant::now() < until && !stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_millis(20));
        }
    };
    while !stop.load(Ordering::Relaxed) {
        let Ok(mut s) = TcpStream::connect_timeout(&device, Duration::from_secs(3)) else {
            pause(Duration::from_secs(1));
            continue;
        };
        if i % 2 == 1 {
            let _ = s.write_all(b"GET /10kB.txt HTTP/1.1\r\nHost: holder\r\n");
        }
        s.set_read_timeout(Some(Duration::from_millis(50))).unwrap();
        let mut b = [0u8; 512];
        while !stop.load(Ordering::Relaxed) {
            match s.read(&mut b) {
                Ok(0) => break,
                Ok(_) => {}
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(_) => break,
            }
        }
        if kind == Kind::Once {
            pause(Duration::from_secs(3600));
        }
    }
}
