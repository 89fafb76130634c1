//! TAP → encode → capture → device.

use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linklab_sim::sample_wire::SampleWire;
use nix::errno::Errno;
use nix::sys::socket::{send, MsgFlags};

use super::counters::Counters;
use super::samples::{
    bad_captures, capture_bytes, line_time, next_pulse, sleep_until, wire_bytes, MAX_CAPTURE_BYTES,
};
use linklab_tap::Tap;

/// TAP → encode → capture → device.
pub struct ToDevice {
    pub(super) tap: Arc<Tap>,
    pub(super) stream: UnixStream,
    pub(super) wire: SampleWire,
    pub(super) pace: bool,
    pub(super) bad_captures: bool,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) counters: Arc<Counters>,
    pub(super) rng: rand_chacha::ChaCha8Rng,
}

impl ToDevice {
    pub fn run(mut self) {
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
            let _ = linklab_serve::serve::wait_readable(
                &[std::os::fd::AsFd::as_fd(&self.tap)],
                Some(wait),
            );
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
                    // The device stopped while the frame was on its way: counted, so the
                    // law still holds (CI once saw a frame read and never accounted for).
                    Err(_) => {
                        Counters::bump(&self.counters.dropped_closed);
                        return;
                    }
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
            let flags = MsgFlags::MSG_DONTWAIT | MsgFlags::MSG_NOSIGNAL;
            let n = match send(self.stream.as_raw_fd(), &msg, flags) {
                Ok(n) => n,
                Err(Errno::EAGAIN) => return Ok(false),
                Err(e) => return Err(e.into()),
            };
            self.stream.write_all(&msg[n..])?;
        } else {
            self.stream.write_all(&msg)?;
        }
        Counters::bump(&self.counters.captures_sent);
        Ok(true)
    }
}
