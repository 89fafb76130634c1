//! The device's MAC: linklab-mac's RX queue, sized at run time from a number of frames,
//! [`Mac`] (and its smoltcp `Device`) with the simulator's clock and transmit sink.
//!
//! The simulator plays the PHY: its receive interrupt takes a grant, writes what the line
//! carried into it (the captured bits, or the bytes linklab-phy10 decoded) and commits (or
//! cancels for a link pulse); the main loop calls smoltcp, which reads the frames in place
//! through the MAC (SFD search and realignment for raw captures, the FCS check always).

use std::cell::Cell;
use std::collections::VecDeque;
use std::rc::Rc;

use linklab_mac::window::capacity_for_frames;
use linklab_mac::{BoxedSlice, Clock, Mac, MacAddr, MacConfig, PhyTx, RxFormat, RxQueue};

/// Queue sizes (full-size frames) the simulator builds: at least 2 (one for the window and
/// one spare slot), at most 1024 (1.5 MB of ring).
pub const RX_FRAMES_RANGE: std::ops::RangeInclusive<usize> = 2..=1024;

/// The device's RX queue: heap storage, sized at run time.
pub type DeviceQueue = RxQueue<BoxedSlice>;

/// The device's MAC over a [`DeviceQueue`].
pub type DeviceMac<'q> = Mac<'q, BoxedSlice, TxSink, VirtualClock>;

/// Virtual time shared between the simulator and the device's MAC clock (ns).
#[derive(Clone, Default, Debug)]
pub struct VirtualClock(pub Rc<Cell<u64>>);

impl Clock for VirtualClock {
    fn now_ns(&self) -> u64 {
        self.0.get()
    }
}

/// The PHY transmit side of the device: wire images the MAC handed over, in order.
#[derive(Default, Debug)]
pub struct TxSink(pub VecDeque<Vec<u8>>);

impl PhyTx for TxSink {
    fn transmit(&mut self, wire: &[u8]) {
        self.0.push_back(wire.to_vec());
    }
}

/// The RX queue that always holds `frames` full-size frames (at least 1) as the PHY stores
/// them in `format`: the smallest such ring (linklab-mac's `capacity_for_frames`).
pub fn queue_for_frames(frames: usize, format: RxFormat) -> DeviceQueue {
    match RxQueue::boxed(capacity_for_frames(frames.max(1), format)) {
        Ok(q) => q,
        // capacity_for_frames never goes below the capacity rule's minimum.
        Err(e) => unreachable!("{e}"),
    }
}

/// The device's MAC with address `address` at `line_rate_bps` on `queue`, for a PHY that
/// hands over `format` (raw captures for the byte wire, decoded frames for linklab-phy10).
///
/// smoltcp's burst cap is lifted: the TCP window is what the socket buffer says
/// (`SimConfig::tcp_window`), even when that is larger than the queue — the experiment that
/// shows why it must not be.
pub fn device_mac<'q>(
    queue: &'q DeviceQueue,
    address: MacAddr,
    line_rate_bps: u64,
    format: RxFormat,
    clock: VirtualClock,
) -> DeviceMac<'q> {
    let config = match format {
        RxFormat::Raw => MacConfig::raw_phy(address, line_rate_bps),
        RxFormat::Aligned { .. } | RxFormat::Tagged => MacConfig {
            rx_format: format,
            ..MacConfig::decoding_phy(address, line_rate_bps)
        },
    };
    let mut mac = Mac::new(queue.consumer(), TxSink::default(), clock, config);
    mac.set_burst_cap(false);
    mac
}
