//! Ethernet frames between embassy-net, on the thread-mode executor, and the task that moves
//! them over USB, on an interrupt executor of higher priority ([`crate::ncm`]): two queues of
//! whole frames (to the stack, from it) behind a critical section, and embassy-net's driver
//! over them.
//!
//! embassy-net-driver-channel does the same with a no-op mutex, so its runner must run on the
//! stack's own executor. Measured here (`linklab emu throughput pico --image usb-ncm`, the
//! bus capture of emulators/rp2040js `--usb-capture`): with the class's runner in thread mode,
//! each full-size segment the stack builds (checksum and copies, some 300 µs of the chip at
//! 125 MHz) held the runner off the endpoints, whose one buffer each needs the CPU every
//! packet (64 bytes, 51 µs of bus): the bus idled about 370 µs per transfer block, 18 % of
//! the time from the device. At a higher priority the runner refills an endpoint while the
//! stack works.

use core::task::Context;

use embassy_net_driver::{Capabilities, HardwareAddress, LinkState};
use embassy_sync::blocking_mutex::raw::CriticalSectionRawMutex;
use embassy_sync::waitqueue::AtomicWaker;
use embassy_sync::zerocopy_channel::{Channel, Receiver, Sender};
use portable_atomic::{AtomicBool, Ordering};

/// An Ethernet frame without FCS, at most [`MTU`] bytes.
pub const MTU: usize = 1514;
/// A frame's room: CDC-NCM's largest transfer block (embassy-usb's NTB_MAX_SIZE), so that the
/// class can read a datagram straight into it whatever length the block claims.
pub const ROOM: usize = 2048;

/// One frame's room and length.
pub struct Frame {
    len: usize,
    buf: [u8; ROOM],
}

impl Frame {
    /// An empty frame.
    pub const EMPTY: Frame = Frame { len: 0, buf: [0; ROOM] };

    /// The frame's bytes.
    pub fn bytes(&self) -> &[u8] {
        &self.buf[..self.len]
    }

    /// The whole room, to read a datagram into.
    pub fn room(&mut self) -> &mut [u8; ROOM] {
        &mut self.buf
    }

    /// Sets the frame's length to `len` (at most [`MTU`]: the caller checked).
    pub fn set_len(&mut self, len: usize) {
        self.len = len.min(MTU);
    }
}

type Queue = Channel<'static, CriticalSectionRawMutex, Frame>;

/// The link state the USB side sets and embassy-net reads.
pub struct Link {
    up: AtomicBool,
    waker: AtomicWaker,
}

impl Link {
    /// Down.
    pub const fn new() -> Link {
        Link {
            up: AtomicBool::new(false),
            waker: AtomicWaker::new(),
        }
    }

    /// Sets the state; embassy-net hears of a change.
    pub fn set(&self, up: bool) {
        if self.up.swap(up, Ordering::Relaxed) != up {
            self.waker.wake();
        }
    }
}

/// The queues' storage: `N` frames each way.
pub struct Storage<const N: usize> {
    to_stack: [Frame; N],
    from_stack: [Frame; N],
    to_stack_queue: Option<Queue>,
    from_stack_queue: Option<Queue>,
}

impl<const N: usize> Storage<N> {
    /// Empty (zeroed: a `static` of it is `.bss`).
    pub const fn new() -> Self {
        Storage {
            to_stack: [Frame::EMPTY; N],
            from_stack: [Frame::EMPTY; N],
            to_stack_queue: None,
            from_stack_queue: None,
        }
    }

    /// embassy-net's driver (`mac` its address) and the USB side's two ends.
    pub fn split(
        &'static mut self,
        link: &'static Link,
        mac: [u8; 6],
    ) -> (NetDriver, Sender<'static, CriticalSectionRawMutex, Frame>, Receiver<'static, CriticalSectionRawMutex, Frame>) {
        let to_stack = self.to_stack_queue.insert(Channel::new(&mut self.to_stack));
        let from_stack = self.from_stack_queue.insert(Channel::new(&mut self.from_stack));
        let (to_stack_tx, to_stack_rx) = to_stack.split();
        let (from_stack_tx, from_stack_rx) = from_stack.split();
        let driver = NetDriver {
            rx: to_stack_rx,
            tx: from_stack_tx,
            link,
            mac,
        };
        (driver, to_stack_tx, from_stack_rx)
    }
}

/// embassy-net's driver over the queues.
pub struct NetDriver {
    rx: Receiver<'static, CriticalSectionRawMutex, Frame>,
    tx: Sender<'static, CriticalSectionRawMutex, Frame>,
    link: &'static Link,
    mac: [u8; 6],
}

impl embassy_net_driver::Driver for NetDriver {
    type RxToken<'a> = RxToken<'a>;
    type TxToken<'a> = TxToken<'a>;

    fn receive(&mut self, cx: &mut Context) -> Option<(RxToken<'_>, TxToken<'_>)> {
        if self.rx.poll_receive(cx).is_ready() && self.tx.poll_send(cx).is_ready() {
            Some((RxToken { rx: &mut self.rx }, TxToken { tx: &mut self.tx }))
        } else {
            None
        }
    }

    fn transmit(&mut self, cx: &mut Context) -> Option<TxToken<'_>> {
        if self.tx.poll_send(cx).is_ready() {
            Some(TxToken { tx: &mut self.tx })
        } else {
            None
        }
    }

    fn link_state(&mut self, cx: &mut Context) -> LinkState {
        self.link.waker.register(cx.waker());
        if self.link.up.load(Ordering::Relaxed) {
            LinkState::Up
        } else {
            LinkState::Down
        }
    }

    fn capabilities(&self) -> Capabilities {
        let mut caps = Capabilities::default();
        caps.max_transmission_unit = MTU;
        caps
    }

    fn hardware_address(&self) -> HardwareAddress {
        HardwareAddress::Ethernet(self.mac)
    }
}

/// A frame to the stack, taken when consumed.
pub struct RxToken<'a> {
    rx: &'a mut Receiver<'static, CriticalSectionRawMutex, Frame>,
}

impl embassy_net_driver::RxToken for RxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, f: F) -> R {
        // The driver made this token only after seeing a frame, and only the stack takes them.
        let frame = self.rx.try_receive().expect("a frame behind the token");
        let len = frame.len;
        let r = f(&mut frame.buf[..len]);
        self.rx.receive_done();
        r
    }
}

/// Room for a frame from the stack, filled when consumed.
pub struct TxToken<'a> {
    tx: &'a mut Sender<'static, CriticalSectionRawMutex, Frame>,
}

impl embassy_net_driver::TxToken for TxToken<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        // The driver made this token only after seeing room, and only the stack sends.
        let frame = self.tx.try_send().expect("room behind the token");
        frame.len = len.min(MTU);
        let r = f(&mut frame.buf[..frame.len]);
        self.tx.send_done();
        r
    }
}
