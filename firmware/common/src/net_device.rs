//! What the main loop needs of a network device besides smoltcp's `Device`, and linklab-mac's
//! MAC as one.

use linklab_mac::{Inline, Mac, NoClock, PhyTx};
use linklab_perf::lifetime::NextFrame;
#[cfg(feature = "blast")]
use smoltcp::iface::{Interface, SocketSet};
#[cfg(feature = "blast")]
use smoltcp::time::Instant;

#[cfg(feature = "blast")]
use crate::blast::Blaster;
use crate::memory::QUEUE_BYTES;
#[cfg(feature = "blast")]
use crate::Board;

/// What the main loop needs of a network device besides smoltcp's `Device`: a look at the
/// next received frame for the apps' SYN rule, its counters for `/stats`, and (linklab-mac's
/// MAC only) the packet blaster's raw way.
pub trait NetDevice: smoltcp::phy::Device {
    /// The next frame the stack will receive, looked at without receiving it (frames the
    /// device drops on the way may be released first): the SYN rule's look. The stack then
    /// receives only what this showed ([`NextFrame::Empty`] ends the pass), so a SYN the
    /// device queues between the look and the receive waits for the next look.
    /// [`NextFrame::Other`] when the device cannot show it (then a SYN to a service whose
    /// sockets are all busy gets smoltcp's RST instead of a socket freed for it).
    fn next_frame(&mut self) -> NextFrame;

    /// The counters `/stats` shows, with their conservation law
    /// ([`linklab_mac::Counters::check_conservation`]).
    fn counters(&self) -> linklab_mac::Counters;

    /// Runs the packet blaster ([`Blaster::poll`]) where the device has its raw way; does
    /// nothing by default.
    #[cfg(feature = "blast")]
    fn blast<B: Board>(
        &mut self,
        _blaster: &mut Blaster<'static>,
        _board: &mut B,
        _iface: &mut Interface,
        _sockets: &mut SocketSet<'static>,
        _now: Instant,
    ) {
    }
}

impl<T: PhyTx> NetDevice for Mac<'static, Inline<QUEUE_BYTES>, T, NoClock> {
    fn next_frame(&mut self) -> NextFrame {
        self.peek(NextFrame::of).unwrap_or(NextFrame::Empty)
    }

    fn counters(&self) -> linklab_mac::Counters {
        Mac::counters(self)
    }

    #[cfg(feature = "blast")]
    fn blast<B: Board>(
        &mut self,
        blaster: &mut Blaster<'static>,
        board: &mut B,
        iface: &mut Interface,
        sockets: &mut SocketSet<'static>,
        now: Instant,
    ) {
        blaster.poll(board, iface, sockets, self, now);
    }
}
