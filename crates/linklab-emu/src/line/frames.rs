//! `linklab emu line --frames`: whole Ethernet frames between a TAP and a device emulator that
//! models its own MAC and line, such as the W5500-EVB-Pico harness (emulators/rp2040js), which
//! paces them at 100 Mbit/s on its emulated clock. Nothing is paced, encoded or checked here.
//!
//! Each message on the unix socket is one frame without FCS: a 4-byte big-endian length, then
//! the bytes (the framing of the sample line and of QEMU's `-netdev stream`). Toward the device
//! a message is written whole and blocks while the device is not reading (the TAP's queue then
//! fills and the kernel drops, as at any full interface); a frame over the device's limit is
//! still sent, for the device to drop and count as its chip does.
//!
//! Counters (printed when it stops) obey `tap_frames = frames_sent + dropped_closed` and
//! `frames_received = tap_written + tap_dropped`.

use std::io::Write;
use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use linklab_tap::Tap;

use super::counters::{summary_line, Counters};
use super::socket::read_message;
use super::threads::LineThreads;

/// The largest frame carried either way: a jumbo frame (9 000-byte MTU) and its header; a
/// longer message from the device is not this framing, and ends the line.
pub const MAX_FRAME_BYTES: usize = 9018;

/// The frame line's counters.
#[derive(Debug, Default)]
pub struct FrameCounters {
    tap_frames: AtomicU64,
    frames_sent: AtomicU64,
    /// Frames read from the TAP once the device's end had closed: never sent.
    dropped_closed: AtomicU64,
    frames_received: AtomicU64,
    tap_written: AtomicU64,
    tap_dropped: AtomicU64,
}

impl FrameCounters {
    /// Every counter by name.
    pub fn fields(&self) -> Vec<(&'static str, u64)> {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        vec![
            ("tap_frames", g(&self.tap_frames)),
            ("frames_sent", g(&self.frames_sent)),
            ("dropped_closed", g(&self.dropped_closed)),
            ("frames_received", g(&self.frames_received)),
            ("tap_written", g(&self.tap_written)),
            ("tap_dropped", g(&self.tap_dropped)),
        ]
    }

    /// The laws, once both threads have stopped.
    pub fn check(&self) -> Result<(), &'static str> {
        let g = |c: &AtomicU64| c.load(Ordering::Relaxed);
        if g(&self.tap_frames) != g(&self.frames_sent) + g(&self.dropped_closed) {
            return Err("tap_frames != frames_sent + dropped_closed");
        }
        if g(&self.frames_received) != g(&self.tap_written) + g(&self.tap_dropped) {
            return Err("frames_received != tap_written + tap_dropped");
        }
        Ok(())
    }

    /// One line: `linklab emu: frame line k=v ... law=holds|<the failed equation>`.
    pub fn summary(&self) -> String {
        summary_line("linklab emu: frame line", &self.fields(), self.check())
    }
}

/// The running frame line: its two threads and their counters.
pub struct FrameLine {
    threads: LineThreads,
    counters: Arc<FrameCounters>,
}

impl FrameLine {
    /// Starts both directions between `tap` and the device's socket `stream`.
    pub fn start(tap: Tap, stream: UnixStream) -> anyhow::Result<FrameLine> {
        let tap = Arc::new(tap);
        let stop = Arc::new(AtomicBool::new(false));
        let counters = Arc::new(FrameCounters::default());
        let reader = stream
            .try_clone()
            .context("cannot clone the line's socket")?;
        let control = stream
            .try_clone()
            .context("cannot clone the line's socket")?;
        let threads = LineThreads::spawn(
            stop.clone(),
            control,
            {
                let (tap, stop, counters) = (tap.clone(), stop.clone(), counters.clone());
                move || to_device(&tap, stream, &stop, &counters)
            },
            {
                let counters = counters.clone();
                move || from_device(&tap, reader, &stop, &counters)
            },
        );
        Ok(FrameLine { threads, counters })
    }

    /// Stops both threads and waits for them.
    pub fn stop(mut self) -> Arc<FrameCounters> {
        self.threads.stop();
        Arc::clone(&self.counters)
    }

    /// True if a thread ended by itself (the device closed the socket).
    pub fn broken(&self) -> bool {
        self.threads.broken()
    }
}

/// TAP → device, one message per frame.
fn to_device(tap: &Tap, mut stream: UnixStream, stop: &AtomicBool, counters: &FrameCounters) {
    let mut msg = vec![0u8; 4 + MAX_FRAME_BYTES];
    while !stop.load(Ordering::Relaxed) {
        let _ = linklab_serve::serve::wait_readable(
            &[std::os::fd::AsFd::as_fd(tap)],
            Some(Duration::from_millis(100)),
        );
        loop {
            let len = match tap.recv(&mut msg[4..]) {
                Ok(Some(len)) => len,
                Ok(None) => break,
                Err(_) => return,
            };
            Counters::bump(&counters.tap_frames);
            msg[..4].copy_from_slice(&(len as u32).to_be_bytes());
            if stream.write_all(&msg[..4 + len]).is_err() {
                // The device stopped while the frame was on its way: counted, so the law holds.
                Counters::bump(&counters.dropped_closed);
                return;
            }
            Counters::bump(&counters.frames_sent);
        }
    }
}

/// Device → TAP, one frame per message.
fn from_device(tap: &Tap, mut stream: UnixStream, stop: &AtomicBool, counters: &FrameCounters) {
    let _ = stream.set_read_timeout(Some(Duration::from_millis(200)));
    let mut frame = vec![0u8; MAX_FRAME_BYTES];
    while !stop.load(Ordering::Relaxed) {
        let n = match read_message(&mut stream, &mut frame, stop) {
            Ok(Some(n)) => n,
            Ok(None) => continue,
            Err(_) => return,
        };
        Counters::bump(&counters.frames_received);
        match tap.send(&frame[..n]) {
            Ok(true) => Counters::bump(&counters.tap_written),
            _ => Counters::bump(&counters.tap_dropped),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_laws_hold_on_counts_that_add_up_and_break_otherwise() {
        let c = FrameCounters::default();
        for _ in 0..3 {
            Counters::bump(&c.tap_frames);
        }
        Counters::bump(&c.frames_sent);
        Counters::bump(&c.frames_sent);
        assert!(c.check().is_err());
        Counters::bump(&c.dropped_closed);
        assert!(c.check().is_ok());
        Counters::bump(&c.frames_received);
        assert!(c
            .summary()
            .ends_with("law=broken:frames_received!=tap_written+tap_dropped"));
        Counters::bump(&c.tap_dropped);
        assert!(c.summary().ends_with(" law=holds"), "{}", c.summary());
    }
}
