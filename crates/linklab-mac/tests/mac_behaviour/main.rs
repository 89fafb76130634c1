//! MAC behaviour: address filter, inter-packet gap, PAUSE (both directions), TAP mode,
//! the TCP window formula.
//!
//! The tests over a TAP or a controller run in every build; those whose frames are in the
//! soft PHY's formats (`TxFormat::Wire`, `MacConfig::raw_phy`) need `soft-framing`.

#[path = "../common/mod.rs"]
mod common;

use common::*;
use linklab_mac::deframe::RxFormat;
use linklab_mac::pause::{self, MacControl};
use linklab_mac::{
    Inline, Mac, MacAddr, MacConfig, NoClock, PauseWatermarks, RxQueue, MIN_QUEUE_CAPACITY,
};

mod filter_and_gap;
mod offload;
mod pause_both_ways;
mod sizes_and_window;

// What only the soft PHY's tests use.
#[cfg(feature = "soft-framing")]
use linklab_mac::{
    pause::PAUSE_DESTINATION,
    queue::{FRAME_HEADER_LEN, GRANT_FOOTPRINT},
    tx::{build, TxFormat},
    window::{capacity_for_frames, queue_frames, stored_len, tcp_rx_window, RESERVED_FRAMES},
    TxError,
};

#[cfg(feature = "soft-framing")]
fn wire_frame(dst: MacAddr, payload: &[u8]) -> Vec<u8> {
    let mut buf = vec![0u8; 1600];
    let (n, ()) = build(&mut buf, TxFormat::Wire, 14 + payload.len(), |f| {
        fill_frame(f, dst, PEER, payload)
    })
    .unwrap();
    buf.truncate(n);
    buf
}
