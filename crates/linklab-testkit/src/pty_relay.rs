//! Two pseudo-terminal pairs and an impairment relay between their master sides, under the
//! test's control: `linklab serial` opens the two slave sides as its serial ports, the relay
//! moves bytes between them at a byte rate (a UART at 115 200 or 3 Mbaud), through
//! linklab-serial's impairment model (flipped bits, dropped bytes, garbage bursts), and can
//! stall either direction (a reader that stops reading: the bytes stay in the kernel, the
//! writer blocks, nothing is dropped).

use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use linklab_serial::impair::{Impairer, Impairment};

/// One pseudo-terminal: the master end (the relay's) and the slave's path.
struct Pty {
    master: OwnedFd,
    /// Kept open so the master never sees a hang-up between runs of `linklab serial`.
    _slave: OwnedFd,
    path: String,
}

fn open_pty() -> Pty {
    let (mut m, mut s) = (0, 0);
    // SAFETY: termios is plain old data; cfmakeraw fills it.
    let mut t: libc::termios = unsafe { std::mem::zeroed() };
    // SAFETY: cfmakeraw writes only into the termios it is given, which is ours.
    unsafe { libc::cfmakeraw(&mut t) };
    // SAFETY: openpty writes two descriptors; the name buffer is not used (null).
    let r = unsafe { libc::openpty(&mut m, &mut s, std::ptr::null_mut(), &t, std::ptr::null()) };
    assert_eq!(r, 0, "openpty: {}", std::io::Error::last_os_error());
    // SAFETY: fresh descriptors we own.
    let (master, slave) = unsafe { (OwnedFd::from_raw_fd(m), OwnedFd::from_raw_fd(s)) };
    // SAFETY: fcntl on our descriptor.
    unsafe {
        let fl = libc::fcntl(m, libc::F_GETFL);
        libc::fcntl(m, libc::F_SETFL, fl | libc::O_NONBLOCK);
    }
    let mut name = [0 as libc::c_char; 128];
    // SAFETY: ttyname_r into a buffer we own, with its length.
    let r = unsafe { libc::ttyname_r(s, name.as_mut_ptr(), name.len()) };
    assert_eq!(r, 0, "ttyname_r");
    // SAFETY: ttyname_r wrote a NUL-terminated string.
    let path = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
        .to_string_lossy()
        .into_owned();
    Pty {
        master,
        _slave: slave,
        path,
    }
}

/// What the test controls while the relay runs.
#[derive(Default)]
pub struct Control {
    /// Stop reading A's bytes (A → B stalls).
    pub stall_ab: AtomicBool,
    /// Stop reading B's bytes.
    pub stall_ba: AtomicBool,
    /// Bytes moved A → B and B → A (before impairment).
    pub moved: [AtomicU64; 2],
    stop: AtomicBool,
}

/// The running relay; stops when dropped.
pub struct Relay {
    /// Slave path of end A.
    pub a: String,
    /// Slave path of end B.
    pub b: String,
    /// The test's controls.
    pub control: Arc<Control>,
    thread: Option<JoinHandle<()>>,
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.control.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// One direction: a UART model. Bytes are read from the writer's pty only when the line
/// is (nearly) free, in chunks of about a millisecond of line time, and handed to the far
/// pty when their last byte would have arrived at the line's rate.
struct Direction {
    impairer: Impairer,
    /// When the line finishes sending what was read so far.
    line_free_at: Instant,
    /// Impaired chunks with the time they have fully arrived.
    queue: std::collections::VecDeque<(Instant, Vec<u8>)>,
}

impl Direction {
    fn new(impairer: Impairer) -> Direction {
        Direction {
            impairer,
            line_free_at: Instant::now(),
            queue: Default::default(),
        }
    }

    fn pump(&mut self, from: &OwnedFd, to: &OwnedFd, rate: f64, stalled: bool, moved: &AtomicU64) {
        let now = Instant::now();
        // Deliver what has arrived; the far side's input buffer may take only part.
        while let Some((at, bytes)) = self.queue.front_mut() {
            if *at > now {
                break;
            }
            // SAFETY: write(2) from our buffer.
            let n = unsafe { libc::write(to.as_raw_fd(), bytes.as_ptr().cast(), bytes.len()) };
            if n <= 0 {
                break;
            }
            bytes.drain(..n as usize);
            if !bytes.is_empty() {
                break;
            }
            self.queue.pop_front();
        }
        let horizon = now + Duration::from_millis(1);
        if stalled || self.line_free_at > horizon || self.queue.len() > 64 {
            return;
        }
        let mut buf = [0u8; 8192];
        let want = ((rate / 1000.0) as usize).clamp(1, buf.len());
        // SAFETY: read(2) into our buffer, bounded.
        let n = unsafe { libc::read(from.as_raw_fd(), buf.as_mut_ptr().cast(), want) };
        if n <= 0 {
            return;
        }
        let n = n as usize;
        moved.fetch_add(n as u64, Ordering::Relaxed);
        let start = self.line_free_at.max(now);
        self.line_free_at = start + Duration::from_secs_f64(n as f64 / rate);
        let mut out = Vec::with_capacity(n);
        self.impairer.apply(&buf[..n], |b| out.push(b));
        self.queue.push_back((self.line_free_at, out));
    }
}

/// Starts a relay of `rate` bytes per second each way with `impairment`.
pub fn start(rate: u64, impairment: Impairment, seed: u64) -> Relay {
    let (pa, pb) = (open_pty(), open_pty());
    let control = Arc::new(Control::default());
    let (a, b) = (pa.path.clone(), pb.path.clone());
    let c = control.clone();
    let thread = std::thread::spawn(move || {
        let mut ab = Direction::new(Impairer::new(impairment, seed));
        let mut ba = Direction::new(Impairer::new(impairment, seed ^ 0x55));
        let rate = rate as f64;
        while !c.stop.load(Ordering::Relaxed) {
            std::thread::sleep(Duration::from_micros(200));
            ab.pump(
                &pa.master,
                &pb.master,
                rate,
                c.stall_ab.load(Ordering::Relaxed),
                &c.moved[0],
            );
            ba.pump(
                &pb.master,
                &pa.master,
                rate,
                c.stall_ba.load(Ordering::Relaxed),
                &c.moved[1],
            );
        }
    });
    Relay {
        a,
        b,
        control,
        thread: Some(thread),
    }
}
