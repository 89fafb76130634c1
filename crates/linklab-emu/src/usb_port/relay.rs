//! The relay's loop: the pseudo-terminal's master on one side, the harness's socket (its
//! messages: emulators/rp2040js/pico-usb.mjs) on the other.

use std::collections::VecDeque;
use std::io::{self, Read, Write};
use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::os::unix::net::UnixStream;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

use anyhow::Context;
use nix::errno::Errno;
use nix::fcntl::{open, OFlag};
use nix::poll::{poll, PollFd, PollFlags, PollTimeout};
use nix::sys::inotify::{AddWatchFlags, InitFlags, Inotify};
use nix::sys::stat::Mode;
use nix::sys::termios::{self, BaudRate, ControlFlags, SetArg};

/// Bytes of one write URB (cdc-acm's 20 × 64).
const WRITE_URB: usize = 1280;
/// Write URBs cdc-acm has (ACM_NW).
const WRITE_URBS: u32 = 16;
/// How often the relay looks at the port's state and termios when nothing else wakes it.
const TICK: Duration = Duration::from_millis(5);

/// The relay's counters. `from_device = to_pty + from_device_dropped_closed + pending_to_pty`.
#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// Times a program opened the port (DTR raised).
    pub opens: u64,
    /// Times the last program closed it (DTR dropped).
    pub closes: u64,
    /// Hang-ups the host's USB reset caused.
    pub hangups: u64,
    /// Bytes programs wrote, handed to cdc-acm's write URBs.
    pub to_device: u64,
    /// Write URBs handed over.
    pub write_urbs: u64,
    /// Write URBs ended.
    pub write_urbs_done: u64,
    /// Bytes the device sent (cdc-acm's read URBs).
    pub from_device: u64,
    /// Of those, written into the pseudo-terminal.
    pub to_pty: u64,
    /// Of those, arrived while no program had the port open.
    pub from_device_dropped_closed: u64,
    /// Waiting for the reader.
    pub pending_to_pty: u64,
    /// Line codings sent (termios changes).
    pub line_codings: u64,
    /// The host's USB state, as the harness last said ("configured", ...).
    pub usb_state: String,
}

impl Counters {
    /// One line: the counters and whether their law holds.
    pub fn summary(&self) -> String {
        let law =
            self.from_device == self.to_pty + self.from_device_dropped_closed + self.pending_to_pty;
        format!(
            "usb port: usb {} opens {} closes {} hangups {} to_device {} write_urbs {}/{} from_device {} to_pty {} dropped_closed {} pending {} line_codings {} | {}",
            if self.usb_state.is_empty() { "detached" } else { &self.usb_state },
            self.opens,
            self.closes,
            self.hangups,
            self.to_device,
            self.write_urbs_done,
            self.write_urbs,
            self.from_device,
            self.to_pty,
            self.from_device_dropped_closed,
            self.pending_to_pty,
            self.line_codings,
            if law { "conserved" } else { "NOT conserved" }
        )
    }
}

/// Whether a program has the port open, and where a close is.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Port {
    Closed,
    Open,
    /// The program closed it; what it wrote before is still being handed over.
    Closing,
}

/// Everything the loop holds.
pub struct State {
    master: OwnedFd,
    pts: PathBuf,
    stream: UnixStream,
    /// Opens and closes of the slave, as they happen (none is missed, however quick).
    opens: Inotify,
    /// Descriptors programs hold on the slave that are not hung up.
    live: u32,
    /// Hung-up descriptors still held (their closes are not the port's).
    dead: u32,
    /// Open and close events of the relay's own (the hang-up's descriptor) to skip.
    own: u32,
    port: Port,
    in_flight: u32,
    to_pty: VecDeque<u8>,
    from_socket: Vec<u8>,
    to_socket: Vec<u8>,
    line: [u8; 7],
    counters: Counters,
}

/// cdc-acm's line coding at bind: 9600 8N1.
const LINE_9600: [u8; 7] = [0x80, 0x25, 0, 0, 0, 0, 8];

impl State {
    /// The loop's state over `master` (non-blocking) and the harness's `stream`; the port's
    /// termios set to cdc-acm's initial one (9600 baud, CS8, CREAD, HUPCL, CLOCAL).
    pub fn new(master: OwnedFd, pts: PathBuf, stream: UnixStream) -> anyhow::Result<State> {
        stream.set_nonblocking(true)?;
        let mut t = termios::tcgetattr(&master).context("the pseudo-terminal's termios")?;
        termios::cfsetspeed(&mut t, BaudRate::B9600)?;
        t.control_flags &= !(ControlFlags::CSIZE | ControlFlags::PARENB | ControlFlags::CSTOPB);
        t.control_flags |=
            ControlFlags::CS8 | ControlFlags::CREAD | ControlFlags::HUPCL | ControlFlags::CLOCAL;
        termios::tcsetattr(&master, SetArg::TCSANOW, &t).context("setting the port's termios")?;
        let opens = Inotify::init(InitFlags::IN_NONBLOCK | InitFlags::IN_CLOEXEC)
            .context("inotify, to follow the port's opens")?;
        opens
            .add_watch(&pts, AddWatchFlags::IN_OPEN | AddWatchFlags::IN_CLOSE)
            .with_context(|| format!("watching {}", pts.display()))?;
        Ok(State {
            master,
            pts,
            stream,
            opens,
            live: 0,
            dead: 0,
            own: 0,
            port: Port::Closed,
            in_flight: 0,
            to_pty: VecDeque::new(),
            from_socket: Vec::new(),
            to_socket: Vec::new(),
            line: LINE_9600,
            counters: Counters::default(),
        })
    }

    fn send(&mut self, kind: u8, body: &[u8]) {
        let len = u32::try_from(body.len() + 1).unwrap_or(u32::MAX);
        self.to_socket.extend_from_slice(&len.to_be_bytes());
        self.to_socket.push(kind);
        self.to_socket.extend_from_slice(body);
    }

    /// Follows the program's opens and closes (inotify on the slave: a close and an open in
    /// between two looks are both seen), and its termios while it has the port.
    fn watch_port(&mut self) -> anyhow::Result<()> {
        let events = match self.opens.read_events() {
            Ok(e) => e,
            Err(Errno::EAGAIN) => Vec::new(),
            Err(e) => return Err(e).context("reading the port's opens"),
        };
        for e in events {
            if self.own > 0 {
                self.own -= 1;
                continue;
            }
            if e.mask.contains(AddWatchFlags::IN_OPEN) {
                self.live += 1;
                if self.port == Port::Closed {
                    self.port = Port::Open;
                    self.counters.opens += 1;
                    self.send(b'O', &[]);
                }
            } else if self.dead > 0 {
                self.dead -= 1;
            } else {
                self.live = self.live.saturating_sub(1);
                if self.live == 0 && self.port == Port::Open {
                    self.port = Port::Closing;
                }
            }
        }
        if self.port == Port::Open {
            if let Some(line) = line_coding(&self.master)? {
                if line != self.line {
                    self.line = line;
                    self.counters.line_codings += 1;
                    self.send(b'L', &line);
                }
            }
        }
        Ok(())
    }

    /// The host hung the port up (a USB reset): every descriptor on it is dead, the port
    /// closed (cdc-acm shut it down), what waited for the reader lost and counted.
    fn hung_up(&mut self) {
        self.counters.hangups += 1;
        // The relay's own open and close of the slave, for the ioctl.
        self.own += 2;
        hang_up(&self.pts);
        self.dead += self.live;
        self.live = 0;
        if self.port != Port::Closed {
            self.port = Port::Closed;
            self.counters.closes += 1;
        }
        self.counters.from_device_dropped_closed += self.to_pty.len() as u64;
        self.to_pty.clear();
        // What the program wrote before: never sent (its descriptor is dead).
        let mut buf = [0u8; WRITE_URB];
        while matches!(read_nonblocking(&self.master, &mut buf), Ok(n) if n > 0) {}
    }

    /// Hands what the program wrote to write URBs while one is free; a closing port is
    /// closed once all it wrote is handed over.
    fn from_program(&mut self) -> anyhow::Result<()> {
        if self.port == Port::Closed {
            return Ok(());
        }
        let mut buf = [0u8; WRITE_URB];
        while self.in_flight < WRITE_URBS {
            let n = match read_nonblocking(&self.master, &mut buf) {
                Ok(n) => n,
                // EIO: the slave is closed and nothing is left to read.
                Err(e) if e.raw_os_error() == Some(Errno::EIO as i32) => 0,
                Err(e) => return Err(e).context("reading the pseudo-terminal"),
            };
            if n == 0 {
                if self.port == Port::Closing {
                    self.port = Port::Closed;
                    self.counters.closes += 1;
                    let dropped = self.to_pty.len() as u64;
                    self.counters.from_device_dropped_closed += dropped;
                    self.to_pty.clear();
                    self.send(b'X', &[]);
                    if self.live > 0 {
                        // Opened again while the close was handed over.
                        self.port = Port::Open;
                        self.counters.opens += 1;
                        self.send(b'O', &[]);
                    }
                }
                return Ok(());
            }
            self.in_flight += 1;
            self.counters.write_urbs += 1;
            self.counters.to_device += n as u64;
            self.send(b'W', &buf[..n]);
        }
        Ok(())
    }

    /// Writes what the device sent into the pty as far as it takes it, and tells the harness.
    fn to_program(&mut self) -> anyhow::Result<()> {
        if self.port != Port::Open || self.to_pty.is_empty() {
            return Ok(());
        }
        let mut taken = 0usize;
        while !self.to_pty.is_empty() {
            let (a, _) = self.to_pty.as_slices();
            let n = match write_nonblocking(&self.master, a) {
                Ok(n) => n,
                Err(e) if e.raw_os_error() == Some(Errno::EIO as i32) => 0,
                Err(e) => return Err(e).context("writing the pseudo-terminal"),
            };
            if n == 0 {
                break;
            }
            self.to_pty.drain(..n);
            taken += n;
        }
        if taken > 0 {
            self.counters.to_pty += taken as u64;
            self.send(
                b'C',
                &u32::try_from(taken).unwrap_or(u32::MAX).to_be_bytes(),
            );
        }
        Ok(())
    }

    /// One message from the harness.
    fn message(&mut self, kind: u8, body: &[u8]) {
        match kind {
            b'D' if body.len() >= 8 => {
                let bytes = &body[8..];
                self.counters.from_device += bytes.len() as u64;
                if self.port == Port::Open {
                    self.to_pty.extend(bytes);
                } else {
                    // A read URB that ended as the program closed the port.
                    self.counters.from_device_dropped_closed += bytes.len() as u64;
                    self.send(
                        b'C',
                        &u32::try_from(bytes.len()).unwrap_or(u32::MAX).to_be_bytes(),
                    );
                }
            }
            b'w' => {
                self.in_flight = self.in_flight.saturating_sub(1);
                self.counters.write_urbs_done += 1;
            }
            b'H' => self.hung_up(),
            b'S' => self.counters.usb_state = String::from_utf8_lossy(body).into_owned(),
            _ => {}
        }
    }

    /// Reads the socket; false once the harness closed it.
    fn from_harness(&mut self) -> anyhow::Result<bool> {
        let mut buf = [0u8; 16384];
        loop {
            match (&self.stream).read(&mut buf) {
                Ok(0) => return Ok(false),
                Ok(n) => self.from_socket.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).context("reading the harness's socket"),
            }
        }
        let mut at = 0;
        while self.from_socket.len() >= at + 4 {
            let len = u32::from_be_bytes(self.from_socket[at..at + 4].try_into().unwrap_or([0; 4]))
                as usize;
            if self.from_socket.len() < at + 4 + len {
                break;
            }
            let msg = self.from_socket[at + 4..at + 4 + len].to_vec();
            at += 4 + len;
            if let Some((&kind, body)) = msg.split_first() {
                self.message(kind, body);
            }
        }
        self.from_socket.drain(..at);
        Ok(true)
    }

    fn to_harness(&mut self) -> anyhow::Result<()> {
        while !self.to_socket.is_empty() {
            match (&self.stream).write(&self.to_socket) {
                Ok(n) => {
                    self.to_socket.drain(..n);
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => break,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(e).context("writing the harness's socket"),
            }
        }
        Ok(())
    }

    /// Sleeps until the socket or the pty has something, or a tick passes.
    fn wait(&self) -> anyhow::Result<()> {
        let mut socket = PollFlags::POLLIN;
        if !self.to_socket.is_empty() {
            socket |= PollFlags::POLLOUT;
        }
        let mut pty = PollFlags::empty();
        if self.port == Port::Open && self.in_flight < WRITE_URBS {
            pty |= PollFlags::POLLIN;
        }
        if self.port == Port::Open && !self.to_pty.is_empty() {
            pty |= PollFlags::POLLOUT;
        }
        let mut fds = vec![PollFd::new(self.stream.as_fd(), socket)];
        if !pty.is_empty() {
            fds.push(PollFd::new(self.master.as_fd(), pty));
        }
        let timeout = PollTimeout::try_from(TICK.as_millis() as u32).unwrap_or(PollTimeout::MAX);
        match poll(&mut fds, timeout) {
            Ok(_) | Err(Errno::EINTR) => Ok(()),
            Err(e) => Err(e).context("waiting for the port"),
        }
    }
}

/// Runs the relay until `stop` or until the harness closes the socket (then `broken`).
pub fn run(
    mut s: State,
    stop: &AtomicBool,
    broken: &AtomicBool,
    counters: &Mutex<Counters>,
) -> anyhow::Result<()> {
    let mut published = Instant::now();
    let result = (|| -> anyhow::Result<()> {
        while !stop.load(Ordering::Relaxed) {
            if !s.from_harness()? {
                return Ok(());
            }
            s.watch_port()?;
            s.to_program()?;
            s.from_program()?;
            s.to_harness()?;
            s.counters.pending_to_pty = s.to_pty.len() as u64;
            if published.elapsed() >= TICK {
                published = Instant::now();
                if let Ok(mut c) = counters.lock() {
                    *c = s.counters.clone();
                }
            }
            s.wait()?;
        }
        Ok(())
    })();
    s.counters.pending_to_pty = s.to_pty.len() as u64;
    if let Ok(mut c) = counters.lock() {
        *c = s.counters.clone();
    }
    broken.store(true, Ordering::Relaxed);
    result
}

fn read_nonblocking(fd: &OwnedFd, buf: &mut [u8]) -> io::Result<usize> {
    match nix::unistd::read(fd, buf) {
        Ok(n) => Ok(n),
        Err(Errno::EAGAIN) | Err(Errno::EINTR) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

fn write_nonblocking(fd: &OwnedFd, buf: &[u8]) -> io::Result<usize> {
    match nix::unistd::write(fd, buf) {
        Ok(n) => Ok(n),
        Err(Errno::EAGAIN) | Err(Errno::EINTR) => Ok(0),
        Err(e) => Err(e.into()),
    }
}

/// Hangs up every descriptor programs hold on the slave (TIOCVHANGUP, as the kernel's
/// tty_vhangup does for cdc-acm after a USB reset).
fn hang_up(pts: &PathBuf) {
    let flags = OFlag::O_RDWR | OFlag::O_NOCTTY | OFlag::O_NONBLOCK | OFlag::O_CLOEXEC;
    if let Ok(fd) = open(pts, flags, Mode::empty()) {
        // SAFETY: TIOCVHANGUP takes no argument; `fd` is an open terminal descriptor.
        unsafe { libc::ioctl(fd.as_raw_fd(), libc::TIOCVHANGUP, 0) };
    }
}

/// The rates termios names, and their numbers (for SET_LINE_CODING's dwDTERate).
const RATES: [(BaudRate, u32); 24] = [
    (BaudRate::B300, 300),
    (BaudRate::B600, 600),
    (BaudRate::B1200, 1200),
    (BaudRate::B2400, 2400),
    (BaudRate::B4800, 4800),
    (BaudRate::B9600, 9600),
    (BaudRate::B19200, 19_200),
    (BaudRate::B38400, 38_400),
    (BaudRate::B57600, 57_600),
    (BaudRate::B115200, 115_200),
    (BaudRate::B230400, 230_400),
    (BaudRate::B460800, 460_800),
    (BaudRate::B500000, 500_000),
    (BaudRate::B576000, 576_000),
    (BaudRate::B921600, 921_600),
    (BaudRate::B1000000, 1_000_000),
    (BaudRate::B1152000, 1_152_000),
    (BaudRate::B1500000, 1_500_000),
    (BaudRate::B2000000, 2_000_000),
    (BaudRate::B2500000, 2_500_000),
    (BaudRate::B3000000, 3_000_000),
    (BaudRate::B3500000, 3_500_000),
    (BaudRate::B4000000, 4_000_000),
    (BaudRate::B0, 0),
];

/// The port's line coding as cdc-acm derives it from termios (acm_tty_set_termios): rate,
/// stop bits, parity, data bits. None for a rate outside the table (kept as it was).
fn line_coding(master: &OwnedFd) -> anyhow::Result<Option<[u8; 7]>> {
    let t = termios::tcgetattr(master).context("the port's termios")?;
    let speed = termios::cfgetospeed(&t);
    let Some(&(_, rate)) = RATES.iter().find(|(b, _)| *b == speed) else {
        return Ok(None);
    };
    if rate == 0 {
        return Ok(None);
    }
    let c = t.control_flags;
    let stop = if c.contains(ControlFlags::CSTOPB) {
        2
    } else {
        0
    };
    let parity = if c.contains(ControlFlags::PARENB) {
        (if c.contains(ControlFlags::PARODD) {
            1
        } else {
            2
        }) + if c.contains(ControlFlags::CMSPAR) {
            2
        } else {
            0
        }
    } else {
        0
    };
    let bits = match c & ControlFlags::CSIZE {
        x if x == ControlFlags::CS5 => 5,
        x if x == ControlFlags::CS6 => 6,
        x if x == ControlFlags::CS7 => 7,
        _ => 8,
    };
    let r = rate.to_le_bytes();
    Ok(Some([r[0], r[1], r[2], r[3], stop, parity, bits]))
}
