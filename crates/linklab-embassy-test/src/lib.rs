//! embassy-net over linklab-mac on a Linux TAP, as a firmware would run it: the host proof of
//! linklab-mac's `embassy` feature (tests/embassy_net_tap.rs drives it with stock ping, curl
//! and nc from a network namespace).
//!
//! * The TAP is the PHY, exactly as in `linklab serve` (linklab-tap, which both use): a thread plays the receive interrupt, moving each frame the kernel hands
//!   over into a grant of the MAC's RX queue; each commit wakes the embassy task through the
//!   queue's waker. Transmit writes the MAC's frames back to the TAP.
//! * The MAC keeps 10 Mb/s line timing (inter-packet gap) on embassy-time's std driver
//!   (`EmbassyTimeClock`), so deferred frames and their timer wake-ups are on the path.
//! * The link starts down and comes up through a `LinkSignal` set by the interrupt thread.
//! * embassy-executor (std, thread mode) runs two tasks, as a firmware would: embassy-net's
//!   runner, and the application — linklab-perf's embassy apps: the iperf3 server (5201),
//!   HTTP with the bench files (80), TCP and UDP echo (7) — until told to stop; the runner's
//!   task then hands back the MAC and app counters. The driver holds each SYN for a served
//!   port until its service made room, and each UDP echo request until the reply before it
//!   had its turn to leave (linklab-perf's `ServiceGate` as the driver's gate).

mod app;
mod device;

pub use device::{start, Report, Running, DEVICE_CIDR, LINE_RATE_BPS};
