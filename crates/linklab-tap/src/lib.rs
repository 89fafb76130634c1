//! linklab-tap: a Linux TAP interface as linklab-mac's PHY (std, Linux).
//!
//! [`Tap`] opens (or creates) a TAP interface through `/dev/net/tun`: whole Ethernet frames,
//! one per non-blocking read or write. [`TapPhy`] is the TAP as the MAC's transmit PHY, and
//! [`pump_rx`] plays the receive interrupt, moving each frame the kernel hands over into a
//! grant of the MAC's RX queue (or counting it missed when the queue is full). [`set_ipv4`]
//! gives the kernel side an address, as `ip addr add` would.
//!
//! The soft NIC (`linklab serve`), the serial link's bridge (`linklab serial --tap`), the
//! soft-PHY line of `linklab emu` and embassy-net on a TAP (linklab-embassy-test) all use it.

mod address;
mod phy;
mod tap;

pub use address::set_ipv4;
pub use phy::{pump_rx, TapPhy, MAX_FRAMES_PER_ROUND};
pub use tap::Tap;
