//! The device side of linklab on a Linux host: linklab-mac, smoltcp and linklab-perf's apps
//! on a TAP ([`serve`], the code of `linklab serve`), and linklab-serial's reliable link on a
//! serial port ([`serial`]: bridged to a TAP, the device side with the same apps, or the
//! link's self-test).
//!
//! On a signal both reset every open connection and let the RSTs out before they go.
//!
//! The soft NIC on TAP `ll0` at 198.18.0.2/24 until Ctrl-C:
//!
//! ```no_run
//! use linklab_results::values::TcpWindow;
//! use linklab_serve::serve::{self, Config};
//!
//! serve::run(&Config {
//!     tap: "ll0".into(),
//!     ip: "198.18.0.2".parse()?,
//!     prefix: 24,
//!     mac: [0x02, 0x4c, 0x4c, 0, 0, 1],
//!     rx_frames: serve::config::DEFAULT_RX_FRAMES,
//!     tcp_window: TcpWindow::Auto,
//!     stats_interval: None,
//! })?;
//! # Ok::<(), anyhow::Error>(())
//! ```
//!
//! Where this crate sits among the others: the repository's ARCHITECTURE.md.

pub mod serial;
pub mod serve;
