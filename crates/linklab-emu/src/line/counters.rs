//! The line's counters and their laws (see [`super`]).

use std::sync::atomic::{AtomicU64, Ordering};

/// The line's counters (see the module documentation for the laws).
#[derive(Debug, Default)]
pub struct Counters {
    pub(super) tap_frames: AtomicU64,
    pub(super) frames_sent: AtomicU64,
    pub(super) dropped_busy: AtomicU64,
    pub(super) dropped_long: AtomicU64,
    /// Frames read from the TAP when the device's end had closed (it stopped): never sent.
    pub(super) dropped_closed: AtomicU64,
    pub(super) pulses_sent: AtomicU64,
    pub(super) bad_sent: AtomicU64,
    pub(super) captures_sent: AtomicU64,
    pub(super) buffers_received: AtomicU64,
    pub(super) frames_ok: AtomicU64,
    pub(super) fcs_errors: AtomicU64,
    pub(super) not_frames: AtomicU64,
    pub(super) tap_written: AtomicU64,
    pub(super) tap_dropped: AtomicU64,
}

impl Counters {
    pub(super) fn bump(c: &AtomicU64) {
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
            ("dropped_closed", g(&self.dropped_closed)),
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
        let dropped = g(&self.dropped_busy) + g(&self.dropped_long) + g(&self.dropped_closed);
        if g(&self.tap_frames) != g(&self.frames_sent) + dropped {
            return Err("tap_frames != frames_sent + dropped_busy + dropped_long + dropped_closed");
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
        summary_line("linklab emu: line", &self.fields(), self.check())
    }
}

/// One line of counters: `PREFIX k=v ... law=holds`, or `law=broken:<the failed equation>`.
pub(super) fn summary_line(
    prefix: &str,
    fields: &[(&'static str, u64)],
    law: Result<(), &str>,
) -> String {
    let mut s = String::from(prefix);
    for (k, v) in fields {
        s.push_str(&format!(" {k}={v}"));
    }
    match law {
        Ok(()) => s.push_str(" law=holds"),
        Err(e) => s.push_str(&format!(" law=broken:{}", e.replace(' ', ""))),
    }
    s
}
