//! `linklab emu --phy10-line`: the 10BASE-T line between a TAP and the soft-PHY firmware.
//!
//! The firmware (firmware/riscv32-virt's `fw-riscv32-virt-phy10-line`) is its own PHY: it
//! receives line samples and decodes them with linklab-phy10. QEMU has no sampler, so a
//! virtio-net device stands in for a capture peripheral with DMA, carried over QEMU's
//! `-netdev stream` on a unix socket (each message: a 4-byte big-endian length, then the
//! bytes); what crosses it are sample buffers, not Ethernet frames.
//!
//! * **To the device**: each frame from the TAP gets preamble, SFD, padding and FCS, is
//!   Manchester-encoded by linklab-phy10 with exact half-bit edges (a real transmitter's
//!   20 MHz clock) and goes through linklab-sim's sample wire (the simulator's model: TX
//!   clock offset, edge jitter, noise, the receiver's random sampling phase) at the
//!   receiver's oversampling; the receiver's samples, packed LSB first in little-endian
//!   words, are one capture. Frames are paced at 10 Mbit/s line time plus the 96-bit
//!   inter-packet gap (`--no-pace` lifts it); a capture the device has no buffer for (the
//!   socket is full) is lost, as on a wire. Unpaced, the line waits for the device instead,
//!   so what is measured is the device's CPU. Normal link pulses arrive as short captures
//!   every 16 ± 8 ms of idle line.
//! * **From the device**: each buffer the device sends is its TX DMA's samples at 2x; the
//!   line decodes it with linklab-phy10, checks the FCS and writes the frame to the TAP
//!   (paced at 10 Mbit/s too, unless `--no-pace`).
//!
//! Counters on this side (printed when it stops) obey
//! `tap_frames = frames_sent + dropped_busy + dropped_long`,
//! `captures_sent = frames_sent + pulses_sent + bad_sent`, and
//! `buffers_received = frames_ok + fcs_errors + not_frames`,
//! `frames_ok = tap_written + tap_dropped`.

use std::io::{Read, Write};
use std::os::fd::AsRawFd;
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use linklab_phy10::{Capture, Decoder, Oversample, RxOutcome};
use linklab_sim::sample_wire::{SampleWire, SampleWireConfig};
use rand::{Rng, SeedableRng};

use crate::serve::tap::Tap;
use crate::values::{self, bail_usage};

/// Options of the line (`linklab emu --phy10-line ...`).
#[derive(clap::Args, Debug, Clone)]
pub struct LineArgs {
    /// Boot the soft-PHY image (riscv32-virt): linklab-phy10 decodes line samples on the MCU;
    /// this process is the line between it and the TAP (it creates the TAP).
    #[arg(long, conflicts_with_all = ["serial", "phy10", "cost_parts", "blast"])]
    pub phy10_line: bool,
    /// The device's sampler: samples per bit, 4..=8.
    #[arg(long, value_name = "N", default_value_t = 4, value_parser = values::ranged(4u8, 8),
          requires = "phy10_line")]
    pub oversample: u8,
    /// Transmitter clock offset toward the device, ppm, -5000..=5000 (the range the decoder
    /// is verified over: ±0.5 %).
    #[arg(long, value_name = "PPM", default_value_t = 0, allow_negative_numbers = true,
          value_parser = values::ranged(-MAX_DRIFT_PPM, MAX_DRIFT_PPM), requires = "phy10_line")]
    pub drift: i32,
    /// Peak edge jitter toward the device, in receiver samples (at most 0.25 at 4x, 0.5 at
    /// 5x..7x, 1 at 8x: where the decoder loses at most one frame in 10 000).
    #[arg(
        long,
        value_name = "SAMPLES",
        default_value_t = 0.0,
        requires = "phy10_line"
    )]
    pub jitter: f64,
    /// Probability that each sample toward the device is flipped, 0..1.
    #[arg(long, value_name = "P", default_value_t = 0.0, value_parser = values::fraction_below(1.0),
          requires = "phy10_line")]
    pub noise: f64,
    /// Do not pace the line at 10 Mbit/s: frames go as fast as the device takes them (the
    /// CPU-bound ceiling).
    #[arg(long, requires = "phy10_line")]
    pub no_pace: bool,
    /// First put a fixed set of malformed captures on the line (garbage, all ones, all
    /// zeros, a pulse train, a frame cut short, a frame with one bit flipped, one sample),
    /// to show the firmware counts each and goes on.
    #[arg(long, requires = "phy10_line")]
    pub bad_captures: bool,
}

/// The widest drift accepted: the range the decoder's goals verified.
pub const MAX_DRIFT_PPM: i32 = 5000;
/// The firmware's capture buffer less its virtio header (firmware's `RX_WORDS` − 3 words).
const MAX_CAPTURE_BYTES: usize = (3200 - 3) * 4;
/// The longest message QEMU's stream netdev sends (its buffer is 68 KiB).
const MAX_MESSAGE_BYTES: usize = 69_632;
/// The image's binary in the riscv32-virt package.
pub const BIN: &str = "fw-riscv32-virt-phy10-line";
/// Where the sampler's configuration goes, after the device's blob (firmware's
/// `PHY_CONFIG_ADDR - CONFIG_ADDR`).
const PHY_CONFIG_OFFSET: usize = 0x80;
/// 10BASE-T: 100 ns a bit.
const BIT_NS: u64 = 100;
/// The inter-packet gap: 96 bit times.
const IPG_NS: u64 = 96 * BIT_NS;
/// Preamble and SFD.
const PREAMBLE_SFD: [u8; 8] = [0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0xD5];

/// The largest jitter the decoder takes at `oversample` with at most one frame lost in
/// 10 000 (linklab-phy10's README: goal points and limits, transmitter at 2x).
pub fn max_jitter(oversample: u8) -> f64 {
    match oversample {
        4 => 0.25,
        5..=7 => 0.5,
        _ => 1.0,
    }
}

impl LineArgs {
    /// Checks what clap cannot: the jitter against the factor.
    pub fn validate(&self) -> anyhow::Result<()> {
        let max = max_jitter(self.oversample);
        if !(0.0..=max).contains(&self.jitter) {
            bail_usage!(
                "--jitter {}: out of range at --oversample {} (accepted: 0..={max} samples, what the decoder takes)",
                self.jitter,
                self.oversample
            );
        }
        Ok(())
    }

    /// The options again, as `linklab emu` arguments (for a lab that runs the line).
    pub fn to_argv(&self) -> Vec<String> {
        let mut v = vec![
            "--oversample".to_string(),
            self.oversample.to_string(),
            format!("--drift={}", self.drift),
            "--jitter".into(),
            self.jitter.to_string(),
            "--noise".into(),
            self.noise.to_string(),
        ];
        if self.no_pace {
            v.push("--no-pace".into());
        }
        if self.bad_captures {
            v.push("--bad-captures".into());
        }
        v
    }

    /// The configuration blob: the device's, then `PHY1` and the sampler's factor.
    pub fn blob(&self, device: &[u8]) -> Vec<u8> {
        let mut blob = device.to_vec();
        blob.resize(PHY_CONFIG_OFFSET, 0);
        blob.extend_from_slice(b"PHY1");
        blob.push(self.oversample);
        blob
    }
}

/// QEMU's options for the sampler on the stream socket at `path`.
pub fn qemu_args(path: &Path) -> Vec<String> {
    vec![
        "-global".into(),
        "virtio-mmio.force-legacy=false".into(),
        "-netdev".into(),
        format!(
            "stream,id=n0,server=off,addr.type=unix,addr.path={}",
            path.display()
        ),
        "-device".into(),
        "virtio-net-device,netdev=n0".into(),
    ]
}

/// The line's counters (see the module documentation for the laws).
#[derive(Debug, Default)]
pub struct Counters {
    tap_frames: AtomicU64,
    frames_sent: AtomicU64,
    dropped_busy: AtomicU64,
    dropped_long: AtomicU64,
    pulses_sent: AtomicU64,
    bad_sent: AtomicU64,
    captures_sent: AtomicU64,
    buffers_received: AtomicU64,
    frames_ok: AtomicU64,
    fcs_errors: AtomicU64,
    not_frames: AtomicU64,
    tap_written: AtomicU64,
    tap_dropped: AtomicU64,
}

impl Counters {
    fn bump(c: &AtomicU64) {
        c.fetch_add(1, Ordering::Relaxed);
    }

    /// Every counter by name.
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("tap_frames", g(&self.tap_frames)),
            ("frames_sent", g(&self.frames_sent)),
            ("dropped_busy", g(&self.dropped_busy)),
            ("dropped_long", g(&self.dropped_long)),
            ("pulses_sent", g(&self.pulses_sent)),
            ("bad_sent", g(&self.bad_sent)),
            ("captures_sent", g(&self.captures_sent)),
            ("buffers_received", g(&self.buffers_received)),
            ("frames_ok", g(&self.frames_ok)),
            ("fcs_errors", g(&self.fcs_errors)),
            ("not_frames", g(&self.not_frames)),
            ("tap_written", g(&self.tap_written)),
            ("tap_dropped", g(&self.tap_dropped)),
        ]
    }

    /// The line's laws, once both threads have stopped.
    pub fn check(&self) -> Result<(), &'static str> {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        if g(&self.tap_frames)
            != g(&self.frames_sent) + g(&self.dropped_busy) + g(&self.dropped_long)
        {
            return Err("tap_frames != frames_sent + dropped_busy + dropped_long");
        }
        if g(&self.captures_sent) != g(&self.frames_sent) + g(&self.pulses_sent) + g(&self.bad_sent)
        {
            return Err("captures_sent != frames_sent + pulses_sent + bad_sent");
        }
        if g(&self.buffers_received)
            != g(&self.frames_ok) + g(&self.fcs_errors) + g(&self.not_frames)
        {
            return Err("buffers_received != frames_ok + fcs_errors + not_frames");
        }
        if g(&self.frames_ok) != g(&self.tap_written) + g(&self.tap_dropped) {
            return Err("frames_ok != tap_written + tap_dropped");
        }
        Ok(())
    }

    /// One line: `linklab emu: line k=v ... law=holds|<the failed equation>`.
    pub fn summary(&self) -> String {
        let mut s = String::from("linklab emu: line");
        for (k, v) in self.fields() {
            s.push_str(&format!(" {k}={v}"));
        }
        match self.check() {
            Ok(()) => s.push_str(" law=holds"),
            Err(e) => s.push_str(&format!(" law=broken:{}", e.replace(' ', ""))),
        }
        s
    }
}

/// The socket QEMU connects to, removed when dropped.
pub struct Socket {
    listener: UnixListener,
    path: PathBuf,
}

impl Socket {
    /// Listens at a fresh path in the temporary directory.
    pub fn bind() -> anyhow::Result<Socket> {
        let path = std::env::temp_dir().join(format!("linklab-line-{}.sock", std::process::id()));
        let _ = std::fs::remove_file(&path);
        let listener = UnixListener::bind(&path)
            .with_context(|| format!("cannot listen on {}", path.display()))?;
        Ok(Socket { listener, path })
    }

    /// Its path, for QEMU.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Waits up to `timeout` for QEMU to connect.
    pub fn accept(&self, timeout: Duration) -> anyhow::Result<UnixStream> {
        self.listener.set_nonblocking(true)?;
        let deadline = Instant::now() + timeout;
        loop {
            match self.listener.accept() {
                Ok((s, _)) => {
                    s.set_nonblocking(false)?;
                    return Ok(s);
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                    if Instant::now() >= deadline {
                        bail!(
                            "QEMU did not connect to the line's socket within {} s",
                            timeout.as_secs()
                        );
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
                Err(e) => return Err(e).context("accept on the line's socket"),
            }
        }
    }
}

impl Drop for Socket {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// The running line: its two threads and their counters.
pub struct Line {
    stop: Arc<AtomicBool>,
    /// The socket, to shut down on stop (unblocks a thread waiting on the device).
    control: UnixStream,
    threads: Vec<std::thread::JoinHandle<()>>,
    /// The counters, shared with the threads.
    counters: Arc<Counters>,
}

impl Line {
    /// Starts both directions between `tap` and the device's socket `stream`.
    pub fn start(args: &LineArgs, tap: Tap, stream: UnixStream) -> anyhow::Result<Line> {
        let mut wire = SampleWire::new(SampleWireConfig {
            oversample: args.oversample,
            drift_ppm: args.drift,
            jitter_samples: 0,
            noise: args.noise,
        })
        .map_err(|e| values::usage(format!("--phy10-line: {e}")))?
        .with_transmitter(Oversample::X2);
        wire.set_jitter(args.jitter)
            .map_err(|e| values::usage(format!("--jitter: {e}")))?;
        let tap = Arc::new(tap);
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(Counters::default());
        let reader = stream
            .try_clone()
            .context("cannot clone the line's socket")?;
        let control = stream
            .try_clone()
            .context("cannot clone the line's socket")?;
        // A send buffer of a few captures: past it, the device is not taking captures.
        set_send_buffer(&stream, 64 * 1024);
        let to_device = ToDevice {
            tap: Arc::clone(&tap),
            stream,
            wire,
            pace: !args.no_pace,
            bad_captures: args.bad_captures,
            stop: Arc::clone(&stop),
            counters: Arc::clone(&counters),
            rng: rand_chacha::ChaCha8Rng::seed_from_u64(0x11e),
        };
        let from_device = FromDevice {
            tap,
            stream: reader,
            pace: !args.no_pace,
            stop: Arc::clone(&stop),
            counters: Arc::clone(&counters),
        };
        let threads = vec![
            std::thread::spawn(move || to_device.run()),
            std::thread::spawn(move || from_device.run()),
        ];
        Ok(Line {
            stop,
            control,
            threads,
            counters,
        })
    }

    /// Stops both threads and waits for them.
    pub fn stop(mut self) -> Arc<Counters> {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.control.shutdown(std::net::Shutdown::Both);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        Arc::clone(&self.counters)
    }

    /// True if a thread ended by itself (the socket closed: QEMU is gone).
    pub fn broken(&self) -> bool {
        self.threads.iter().any(|t| t.is_finished())
    }
}

fn set_send_buffer(stream: &UnixStream, bytes: libc::c_int) {
    // SAFETY: setsockopt with a pointer to an int that outlives the call.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_SNDBUF,
            (&bytes as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
    }
}

/// Packs `capture`'s samples as little-endian bytes (LSB first within each).
fn capture_bytes(capture: &Capture<'_>) -> Vec<u8> {
    let n = capture.len().div_ceil(8);
    let mut out: Vec<u8> = capture
        .words()
        .iter()
        .flat_map(|w| w.to_le_bytes())
        .collect();
    out.truncate(n);
    // Clear samples past the end in the last byte.
    if capture.len() % 8 != 0 {
        if let Some(last) = out.last_mut() {
            *last &= (1u8 << (capture.len() % 8)) - 1;
        }
    }
    out
}

/// Packed samples as bytes (little-endian words, as the device's DMA sees them) back into
/// words; a last partial word is padded with idle.
fn words_of(bytes: &[u8]) -> Vec<u32> {
    bytes
        .chunks(4)
        .map(|c| {
            let mut w = [0u8; 4];
            w[..c.len()].copy_from_slice(c);
            u32::from_le_bytes(w)
        })
        .collect()
}

/// Preamble, SFD, the frame padded to 60 bytes, FCS.
pub fn wire_bytes(frame: &[u8]) -> Vec<u8> {
    let mut wire = PREAMBLE_SFD.to_vec();
    wire.extend_from_slice(frame);
    wire.resize(PREAMBLE_SFD.len() + frame.len().max(60), 0);
    let fcs = crc32fast::hash(&wire[PREAMBLE_SFD.len()..]);
    wire.extend_from_slice(&fcs.to_le_bytes());
    wire
}

/// Time a transmission of `bits` occupies the line, with the gap after it.
fn line_time(bits: u64) -> Duration {
    Duration::from_nanos(bits * BIT_NS + IPG_NS)
}

/// Sleeps until `t` (no-op if it has passed).
fn sleep_until(t: Instant) {
    let now = Instant::now();
    if t > now {
        std::thread::sleep(t - now);
    }
}

/// The next normal link pulse: 16 ± 8 ms from now.
fn next_pulse(rng: &mut impl Rng) -> Instant {
    Instant::now() + Duration::from_micros(rng.gen_range(8_000..=24_000))
}

/// TAP → encode → capture → device.
struct ToDevice {
    tap: Arc<Tap>,
    stream: UnixStream,
    wire: SampleWire,
    pace: bool,
    bad_captures: bool,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
    rng: rand_chacha::ChaCha8Rng,
}

impl ToDevice {
    fn run(mut self) {
        let mut frame = vec![0u8; 2048];
        let mut line_free = Instant::now();
        let mut pulse_at = next_pulse(&mut self.rng);
        if self.bad_captures {
            for capture in bad_captures(self.wire.oversample()) {
                if self.send(&capture, false).is_err() {
                    return;
                }
                Counters::bump(&self.counters.bad_sent);
            }
        }
        while !self.stop.load(Ordering::Relaxed) {
            let wait = pulse_at
                .saturating_duration_since(Instant::now())
                .min(Duration::from_millis(100));
            let _ = crate::serve::wait_readable(&[self.tap.as_raw_fd()], Some(wait));
            if Instant::now() >= pulse_at {
                let bytes = capture_bytes(&self.wire.pulse_capture(&mut self.rng));
                if self.send(&bytes, false).is_err() {
                    return;
                }
                Counters::bump(&self.counters.pulses_sent);
                pulse_at = next_pulse(&mut self.rng);
            }
            loop {
                let len = match self.tap.recv(&mut frame) {
                    Ok(Some(len)) => len,
                    Ok(None) => break,
                    Err(_) => return,
                };
                Counters::bump(&self.counters.tap_frames);
                // The line is a clock: the frame starts when it is ready and the line is
                // free, and the next one when this one and its gap are over, whatever the
                // host's sleeps overshoot.
                let start = Instant::now().max(line_free);
                let wire = wire_bytes(&frame[..len]);
                let bytes = capture_bytes(&self.wire.capture(&wire, 0, &mut self.rng));
                if self.pace {
                    sleep_until(start);
                }
                if bytes.len() > MAX_CAPTURE_BYTES {
                    Counters::bump(&self.counters.dropped_long);
                    continue;
                }
                match self.send(&bytes, self.pace) {
                    Ok(true) => Counters::bump(&self.counters.frames_sent),
                    Ok(false) => Counters::bump(&self.counters.dropped_busy),
                    Err(_) => return,
                }
                line_free = start + line_time(wire.len() as u64 * 8);
                pulse_at = next_pulse(&mut self.rng);
            }
        }
    }

    /// Sends one capture. With `may_drop`, a socket with no room at all (the device has
    /// no buffer for it) drops it: Ok(false).
    fn send(&mut self, capture: &[u8], may_drop: bool) -> std::io::Result<bool> {
        if capture.is_empty() {
            return Ok(false);
        }
        let mut msg = Vec::with_capacity(4 + capture.len());
        msg.extend_from_slice(&(capture.len() as u32).to_be_bytes());
        msg.extend_from_slice(capture);
        if may_drop {
            // SAFETY: send(2) from a borrowed buffer, bounded by its length.
            let n = unsafe {
                libc::send(
                    self.stream.as_raw_fd(),
                    msg.as_ptr().cast(),
                    msg.len(),
                    libc::MSG_DONTWAIT | libc::MSG_NOSIGNAL,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::WouldBlock {
                    return Ok(false);
                }
                return Err(e);
            }
            self.stream.write_all(&msg[n as usize..])?;
        } else {
            self.stream.write_all(&msg)?;
        }
        Counters::bump(&self.counters.captures_sent);
        Ok(true)
    }
}

/// The malformed captures of `--bad-captures`, at the receiver's factor.
fn bad_captures(os: Oversample) -> Vec<Vec<u8>> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
    let garbage: Vec<u8> = (0..1500).map(|_| rng.gen()).collect();
    let all_ones = vec![0xFF; 2000];
    let all_zeros = vec![0; 200];
    // A pulse train: 100 ns high every 1.6 us, 200 of them.
    let n = os.samples_per_bit();
    let mut train = vec![0u8; (200 * 16 * n).div_ceil(8)];
    for p in 0..200 {
        for s in 0..n {
            let i = p * 16 * n + s;
            train[i / 8] |= 1 << (i % 8);
        }
    }
    // A real frame to the device (broadcast ARP-sized), exactly encoded.
    let mut frame = vec![0xFFu8; 6];
    frame.extend_from_slice(&[0x02, 0x4c, 0x4c, 0, 0, 0x99, 0x08, 0x06]);
    frame.resize(60, 0xA5);
    let wire = wire_bytes(&frame);
    // The same frame with one payload bit flipped after its FCS was computed: a bit error
    // on the line, which the MAC's FCS check must catch.
    let mut damaged = wire.clone();
    damaged[8 + 40] ^= 0x08;
    let mut exact = SampleWire::new(SampleWireConfig {
        oversample: os.get(),
        drift_ppm: 0,
        jitter_samples: 0,
        noise: 0.0,
    })
    .expect("a valid factor")
    .with_transmitter(Oversample::X2);
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
    let clean = capture_bytes(&exact.capture(&wire, 0, &mut rng));
    // Cut short in the middle of the frame.
    let truncated = clean[..clean.len() / 2].to_vec();
    let flipped = capture_bytes(&exact.capture(&damaged, 0, &mut rng));
    vec![
        garbage,
        all_ones,
        all_zeros,
        train,
        truncated,
        flipped,
        // The shortest capture the transport carries (QEMU's virtio-net takes a 0-byte
        // message as "no room" and stops receiving: a sampler never completes an empty
        // capture, and the line never sends one).
        vec![0x01],
        vec![0xAA; MAX_CAPTURE_BYTES],
    ]
}

/// Device → decode → FCS → TAP.
struct FromDevice {
    tap: Arc<Tap>,
    stream: UnixStream,
    pace: bool,
    stop: Arc<AtomicBool>,
    counters: Arc<Counters>,
}

impl FromDevice {
    fn run(mut self) {
        let _ = self
            .stream
            .set_read_timeout(Some(Duration::from_millis(200)));
        let mut decoder = Decoder::new(Oversample::X2);
        let mut frame = vec![0u8; 2048];
        let mut line_free = Instant::now();
        while !self.stop.load(Ordering::Relaxed) {
            let mut len = [0u8; 4];
            match self.stream.read(&mut len[..1]) {
                Ok(0) => return,
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    continue
                }
                Err(_) => return,
            }
            if self.read_rest(&mut len[1..]).is_err() {
                return;
            }
            let n = u32::from_be_bytes(len) as usize;
            if n > MAX_MESSAGE_BYTES {
                // Not QEMU's stream framing: nothing after it can be trusted.
                return;
            }
            let mut bytes = vec![0u8; n];
            if self.read_rest(&mut bytes).is_err() {
                return;
            }
            Counters::bump(&self.counters.buffers_received);
            let words = words_of(&bytes);
            let got = decoder.decode(&Capture::new(&words, n * 8), &mut frame);
            let RxOutcome::Frame { len } = got else {
                Counters::bump(&self.counters.not_frames);
                continue;
            };
            let Some(body) = len.checked_sub(4).map(|l| &frame[..l]) else {
                Counters::bump(&self.counters.not_frames);
                continue;
            };
            let fcs = u32::from_le_bytes([
                frame[len - 4],
                frame[len - 3],
                frame[len - 2],
                frame[len - 1],
            ]);
            if crc32fast::hash(body) != fcs {
                Counters::bump(&self.counters.fcs_errors);
                continue;
            }
            Counters::bump(&self.counters.frames_ok);
            if self.pace {
                let start = Instant::now().max(line_free);
                sleep_until(start);
                line_free = start + line_time((len as u64 + 8) * 8);
            }
            match self.tap.send(body) {
                Ok(true) => Counters::bump(&self.counters.tap_written),
                _ => Counters::bump(&self.counters.tap_dropped),
            }
        }
    }

    /// Reads exactly `buf`, riding out read timeouts unless stopping.
    fn read_rest(&mut self, buf: &mut [u8]) -> std::io::Result<()> {
        let mut done = 0;
        while done < buf.len() {
            match self.stream.read(&mut buf[done..]) {
                Ok(0) => return Err(std::io::ErrorKind::UnexpectedEof.into()),
                Ok(n) => done += n,
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) =>
                {
                    if self.stop.load(Ordering::Relaxed) {
                        return Err(e);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        Ok(())
    }
}

/// What [`run`] needs besides the line's options.
pub struct Session<'a> {
    /// The board (riscv32-virt).
    pub board: &'a super::board::Board,
    /// The TAP to create.
    pub tap: &'a str,
    /// The device's configuration blob (`DeviceConfig::to_bytes`).
    pub device_config: Vec<u8>,
    /// The image, if given.
    pub image: Option<&'a Path>,
    /// `--icount N`.
    pub icount: Option<u32>,
    /// How long to wait for the boot line.
    pub boot_timeout: Duration,
}

/// QEMU's `-icount` for the line: exact counting at shift 0; at other shifts, aligned with
/// real time (`align=on`), since the line runs in real time.
fn icount_options(shift: u32) -> String {
    if shift == 0 {
        "shift=0".into()
    } else {
        format!("shift={shift},align=on,sleep=on")
    }
}

/// Runs the soft-PHY image with the line until a signal; prints the line's counters then.
pub fn run(
    s: &Session<'_>,
    args: &LineArgs,
    signals: &crate::serve::StopSignals,
) -> anyhow::Result<()> {
    args.validate()?;
    let image = super::image::find_or_build_line(s.board, s.image)?;
    if Path::new("/sys/class/net").join(s.tap).exists() {
        bail!(
            "--tap {}: an interface of that name already exists; linklab emu only uses a TAP it creates (pick another name)",
            s.tap
        );
    }
    let tap = Tap::open(s.tap).with_context(|| format!("cannot create TAP {}", s.tap))?;
    let blob = std::env::temp_dir().join(format!("linklab-emu-{}.cfg", std::process::id()));
    std::fs::write(&blob, args.blob(&s.device_config)).context("cannot write the config blob")?;
    let _remove_blob = super::RemoveOnDrop(blob.clone());
    let socket = Socket::bind()?;
    let mut qemu = super::qemu::Qemu::start(&super::qemu::Boot {
        board: s.board,
        image: &image,
        config_blob: Some(&blob),
        tap: None,
        icount: s.icount.map(icount_options),
        stream: Some(socket.path()),
        netns: None,
        echo_console: true,
        serial: false,
    })?;
    let stream = socket.accept(Duration::from_secs(10))?;
    qemu.wait_for_boot(s.boot_timeout)?;
    let line = Line::start(args, tap, stream)?;
    println!(
        "linklab emu: {} soft PHY at {}x on TAP {} (drift {} ppm, jitter {} samples, noise {}, {}); Ctrl-C stops it",
        s.board.name,
        args.oversample,
        s.tap,
        args.drift,
        args.jitter,
        args.noise,
        if args.no_pace { "unpaced" } else { "paced at 10 Mbit/s" }
    );
    let outcome = loop {
        if let Some(sig) = signals.take() {
            break Ok(sig);
        }
        if let Some(status) = qemu.exited() {
            break Err(anyhow::anyhow!(
                "QEMU exited ({status}); the console's last lines: {}",
                qemu.last_lines()
            ));
        }
        if line.broken() {
            break Err(anyhow::anyhow!(
                "the line's socket closed; the console's last lines: {}",
                qemu.last_lines()
            ));
        }
        crate::serve::wait_readable(&[signals.as_raw_fd()], Some(Duration::from_millis(200)))?;
    };
    let counters = line.stop();
    qemu.stop();
    println!("{}", counters.summary());
    let sig = outcome?;
    println!("linklab emu: stopped by signal {sig}");
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_bytes_pad_and_end_with_the_fcs() {
        let w = wire_bytes(&[1, 2, 3]);
        assert_eq!(w.len(), 8 + 60 + 4);
        assert_eq!(&w[..8], &PREAMBLE_SFD);
        let fcs = crc32fast::hash(&w[8..68]).to_le_bytes();
        assert_eq!(&w[68..], &fcs);
    }

    #[test]
    fn captures_through_the_line_decode_at_every_factor() {
        let frame: Vec<u8> = (0..1514u32).map(|i| (i * 7) as u8).collect();
        let wire = wire_bytes(&frame);
        for os in 4..=8u8 {
            let mut line = SampleWire::new(SampleWireConfig {
                oversample: os,
                drift_ppm: 5000,
                jitter_samples: 0,
                noise: 0.0,
            })
            .unwrap()
            .with_transmitter(Oversample::X2);
            line.set_jitter(max_jitter(os)).unwrap();
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(u64::from(os));
            let bytes = capture_bytes(&line.capture(&wire, 0, &mut rng));
            assert!(bytes.len() <= MAX_CAPTURE_BYTES, "{os}x: {}", bytes.len());
            let words = words_of(&bytes);
            let mut out = vec![0u8; 1600];
            let got = Decoder::new(Oversample::new(os).unwrap())
                .decode(&Capture::new(&words, bytes.len() * 8), &mut out);
            assert_eq!(got, RxOutcome::Frame { len: 1518 }, "{os}x");
            assert_eq!(&out[..1518], &wire[8..], "{os}x");
        }
    }

    #[test]
    fn jitter_is_bounded_by_the_factor() {
        let args = |oversample, jitter| LineArgs {
            phy10_line: true,
            oversample,
            drift: 0,
            jitter,
            noise: 0.0,
            no_pace: false,
            bad_captures: false,
        };
        assert!(args(4, 0.25).validate().is_ok());
        assert!(args(4, 0.3).validate().is_err());
        assert!(args(5, 0.5).validate().is_ok());
        assert!(args(8, 1.0).validate().is_ok());
        assert!(args(8, -0.1).validate().is_err());
        assert!(args(8, f64::NAN).validate().is_err());
    }

    #[test]
    fn the_blob_carries_the_factor_after_the_device_config() {
        let b = LineArgs {
            phy10_line: true,
            oversample: 5,
            drift: 0,
            jitter: 0.0,
            noise: 0.0,
            no_pace: false,
            bad_captures: false,
        }
        .blob(&[9; 32]);
        assert_eq!(&b[..32], &[9; 32]);
        assert_eq!(&b[0x80..], b"PHY1\x05");
    }
}
#[cfg(test)]
mod bad_capture_tests {
    use super::*;
    use linklab_phy10::RxInterrupt;

    /// Every malformed capture, at every factor, through the same receive interrupt the
    /// firmware runs: it ends, never commits more than the grant, and lands in a bucket.
    #[test]
    fn bad_captures_decode_to_a_bucket_quickly() {
        for os in 4..=8u8 {
            let factor = Oversample::new(os).unwrap();
            let mut rx = RxInterrupt::new(factor);
            let mut grant = vec![0u8; 1536];
            for (i, bytes) in bad_captures(factor).iter().enumerate() {
                let words = words_of(bytes);
                let t = Instant::now();
                let n = rx.receive(&Capture::new(&words, bytes.len() * 8), &mut grant);
                eprintln!(
                    "{os}x capture {i}: {:?} {n} in {:?}",
                    rx.last_outcome(),
                    t.elapsed()
                );
                assert!(n <= grant.len());
            }
        }
    }
}
