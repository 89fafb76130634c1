//! Device → decode → FCS → TAP.

use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use linklab_phy10::{Capture, Decoder, Oversample, RxOutcome};

use super::counters::Counters;
use super::samples::{line_time, sleep_until, words_of};
use super::socket::read_message;
use linklab_tap::Tap;

/// The longest message QEMU's stream netdev sends (its buffer is 68 KiB).
const MAX_MESSAGE_BYTES: usize = 69_632;

/// Device → decode → FCS → TAP.
pub struct FromDevice {
    pub(super) tap: Arc<Tap>,
    pub(super) stream: UnixStream,
    pub(super) pace: bool,
    pub(super) stop: Arc<AtomicBool>,
    pub(super) counters: Arc<Counters>,
}

impl FromDevice {
    pub fn run(mut self) {
        let _ = self
            .stream
            .set_read_timeout(Some(Duration::from_millis(200)));
        let mut decoder = Decoder::new(Oversample::X2);
        let mut frame = vec![0u8; 2048];
        let mut message = vec![0u8; MAX_MESSAGE_BYTES];
        let mut line_free = Instant::now();
        while !self.stop.load(Ordering::Relaxed) {
            let n = match read_message(&mut self.stream, &mut message, &self.stop) {
                Ok(Some(n)) => n,
                Ok(None) => continue,
                Err(_) => return,
            };
            let bytes = &message[..n];
            Counters::bump(&self.counters.buffers_received);
            let words = words_of(bytes);
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
}
