//! `linklab emu riscv32-virt --image soft-phy`: the 10BASE-T line between a TAP and the
//! soft-PHY firmware.
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
//! `tap_frames = frames_sent + dropped_busy + dropped_long + dropped_closed` (the last: read
//! from the TAP as the device stopped),
//! `captures_sent = frames_sent + pulses_sent + bad_sent`, and
//! `buffers_received = frames_ok + fcs_errors + not_frames`,
//! `frames_ok = tap_written + tap_dropped`.

mod counters;
pub mod frames;
mod from_device;
mod samples;
mod settings;
mod socket;
mod threads;
mod to_device;

pub use socket::Socket;

use std::os::unix::net::UnixStream;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;

use anyhow::Context;
use linklab_phy10::Oversample;
use linklab_sim::sample_wire::{SampleWire, SampleWireConfig};
use rand::SeedableRng;

pub use counters::Counters;
use from_device::FromDevice;
use linklab_tap::Tap;
pub use settings::{max_jitter, LineOptions, LineSettings, MAX_DRIFT_PPM};
use socket::set_send_buffer;
use threads::LineThreads;
use to_device::ToDevice;

/// The running line: its two threads and their counters.
pub struct Line {
    threads: LineThreads,
    /// The counters, shared with the threads.
    counters: Arc<Counters>,
}

impl Line {
    /// Starts both directions between `tap` and the device's socket `stream`.
    pub fn start(args: &LineSettings, tap: Tap, stream: UnixStream) -> anyhow::Result<Line> {
        let mut wire = SampleWire::new(SampleWireConfig {
            oversample: args.oversample,
            drift_ppm: args.drift,
            jitter_samples: 0,
            noise: args.noise,
        })
        .map_err(|e| linklab_results::usage::usage(format!("the soft-PHY line: {e}")))?
        .with_transmitter(Oversample::X2);
        wire.set_jitter(args.jitter)
            .map_err(|e| linklab_results::usage::usage(format!("--jitter: {e}")))?;
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
        let threads = LineThreads::spawn(
            stop,
            control,
            move || to_device.run(),
            move || from_device.run(),
        );
        Ok(Line { threads, counters })
    }

    /// Stops both threads and waits for them.
    pub fn stop(mut self) -> Arc<Counters> {
        self.threads.stop();
        Arc::clone(&self.counters)
    }

    /// True if a thread ended by itself (the socket closed: QEMU is gone).
    pub fn broken(&self) -> bool {
        self.threads.broken()
    }
}

/// QEMU's `-icount` for the line: exact counting at shift 0; at other shifts, aligned with
/// real time (`align=on`), since the line runs in real time.
pub fn icount_options(shift: u32) -> String {
    if shift == 0 {
        "shift=0".into()
    } else {
        format!("shift={shift},align=on,sleep=on")
    }
}
