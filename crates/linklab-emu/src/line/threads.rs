//! A line's two threads (TAP → device and device → TAP), the flag that stops them and the
//! socket shut down to unblock them: the same for the sample line and the frame line.

use std::os::unix::net::UnixStream;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

/// The running threads of one line.
pub(super) struct LineThreads {
    stop: Arc<AtomicBool>,
    /// The socket, to shut down on stop (unblocks a thread waiting on the device).
    control: UnixStream,
    threads: Vec<JoinHandle<()>>,
}

impl LineThreads {
    /// Starts `to_device` and `from_device`; `stop` is their stop flag, `control` a clone of
    /// their socket.
    pub(super) fn spawn(
        stop: Arc<AtomicBool>,
        control: UnixStream,
        to_device: impl FnOnce() + Send + 'static,
        from_device: impl FnOnce() + Send + 'static,
    ) -> LineThreads {
        let threads = vec![
            std::thread::spawn(to_device),
            std::thread::spawn(from_device),
        ];
        LineThreads {
            stop,
            control,
            threads,
        }
    }

    /// Stops both threads and waits for them.
    pub(super) fn stop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        let _ = self.control.shutdown(std::net::Shutdown::Both);
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
    }

    /// True if a thread ended by itself (the socket closed: the device is gone).
    pub(super) fn broken(&self) -> bool {
        self.threads.iter().any(|t| t.is_finished())
    }
}
