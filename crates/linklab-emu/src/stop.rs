//! Stopping a process the lab started (QEMU, the rp2040js harness): SIGTERM, a grace period
//! to exit on its own, then SIGKILL, and reaped either way.

use std::process::Child;
use std::time::{Duration, Instant};

use nix::sys::signal::{kill, killpg, Signal};
use nix::unistd::Pid;

/// Whom the signals go to.
#[derive(Clone, Copy)]
pub(crate) enum Whom {
    /// The child alone.
    Process,
    /// The child's process group (the child leads it: QEMU and what it forked).
    Group,
}

/// Stops `child`: SIGTERM to it (or its group), up to `grace` for it to exit, then SIGKILL;
/// reaps it.
pub(crate) fn stop(mut child: Child, whom: Whom, grace: Duration) {
    let pid = Pid::from_raw(child.id() as i32);
    let send = |signal| match whom {
        Whom::Process => kill(pid, signal),
        Whom::Group => killpg(pid, signal),
    };
    let _ = send(Signal::SIGTERM);
    let deadline = Instant::now() + grace;
    while Instant::now() < deadline {
        if let Ok(Some(_)) = child.try_wait() {
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let _ = send(Signal::SIGKILL);
    let _ = child.wait();
}
