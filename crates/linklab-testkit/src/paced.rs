//! A download by stock curl whose output the test reads at a steady rate: a client that keeps
//! acknowledging, slowly, for as long as the file lasts.
//!
//! Not `curl --limit-rate`: curl's limiter averages over seconds, so it reads a burst as fast
//! as the link gives it and then stops reading for as long as it ran ahead — on a loaded
//! machine, seconds with a shut window, which to the device is exactly an idle holder.
//! Here curl reads freely but writes into a pipe the test drains in small steps, so curl
//! reads the socket again each time its last write has drained (a fraction of a second).

use std::io::Read;
use std::process::{ExitStatus, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::{exit_within, ChildGuard, Netns};

/// A running paced download.
pub struct PacedDownload {
    curl: ChildGuard,
    drained: JoinHandle<u64>,
}

impl PacedDownload {
    /// Starts `curl --fail URL` in `ns`, its body read at `bytes_per_s`.
    pub fn start(ns: &Netns, url: &str, bytes_per_s: u64) -> PacedDownload {
        let mut child = ns
            .command(&["curl", "-sS", "--fail", "-m", "60", url])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("could not start curl");
        let mut body = child.stdout.take().expect("piped stdout");
        let drained = std::thread::spawn(move || {
            let step = (bytes_per_s / 50).max(1) as usize;
            let mut chunk = vec![0u8; step];
            let started = Instant::now();
            let mut total = 0u64;
            loop {
                // Read no faster than the rate from the start (no drift, no catch-up burst
                // bigger than one step).
                let due = started + Duration::from_secs_f64(total as f64 / bytes_per_s as f64);
                if let Some(wait) = due.checked_duration_since(Instant::now()) {
                    std::thread::sleep(wait);
                }
                match body.read(&mut chunk) {
                    Ok(0) | Err(_) => return total,
                    Ok(n) => total += n as u64,
                }
            }
        });
        PacedDownload {
            curl: ChildGuard(Some(child)),
            drained,
        }
    }

    /// Waits (at most `within`) for curl to exit: its status (None: still running, killed)
    /// and the body bytes it delivered.
    pub fn finish(mut self, within: Duration) -> (Option<ExitStatus>, u64) {
        let status = exit_within(self.curl.0.as_mut().expect("running"), within);
        (status, self.drained.join().unwrap())
    }
}
