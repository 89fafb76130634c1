//! Feature `double-buffered`: an `embassy_usb_driver::Driver` for the RP2040's USB controller
//! whose bulk endpoints use both of the controller's buffers (its "double buffering",
//! RP2040 datasheet §4.1.2.5): the controller sends (or takes) one packet while the CPU fills
//! (or reads) the other, so the bus is not idle while the CPU is busy elsewhere. embassy-rp's
//! driver (read for reference, not copied) arms one buffer per endpoint, so every packet waits
//! for the CPU: a host's next OUT in the same frame meets no buffer and is NAKed, and its whole
//! packet time is lost (pico-sdk #949's effect).
//!
//! How it works:
//! - a bulk endpoint has both buffers, used in turn (0, 1, 0, ...), and a ring of 16 packets
//!   between it and its task, which the interrupt handler keeps moving ([`stream`]): it arms
//!   a free IN buffer with the next queued packet, and empties a full OUT buffer into the ring
//!   and arms it again (the same DATA PID: its next packet is two on) the moment the buffer
//!   completes, whatever the tasks are doing; `write` queues a packet, `read` takes one;
//! - each half of a buffer control word is written on its own (16-bit stores), so arming one
//!   buffer never rewrites the half the controller is writing back;
//! - EP0 and interrupt endpoints keep one buffer.
//!
//! For the tasks of one executor (the futures poll the registers; the interrupt handler only
//! clears what it saw and wakes them).

mod endpoint;
mod regs;
mod stream;

use core::future::poll_fn;
use core::marker::PhantomData;
use core::sync::atomic::{AtomicU8, Ordering};
use core::task::Poll;

use embassy_rp::interrupt::typelevel::{Binding, Interrupt, USBCTRL_IRQ};
use embassy_rp::peripherals::USB;
use embassy_rp::Peri;
use embassy_sync::waitqueue::AtomicWaker;
use embassy_usb_driver as driver;
use embassy_usb_driver::{
    Direction, EndpointAddress, EndpointAllocError, EndpointInfo, EndpointType, Event, Unsupported,
};

pub use endpoint::{ControlPipe, Endpoint, In, Out};

const EP_COUNT: usize = 16;

/// Woken on bus events (reset, suspend, resume).
static BUS_WAKER: AtomicWaker = AtomicWaker::new();
/// Woken when an endpoint's buffer completes (IN and OUT), or on a reset.
static IN_WAKERS: [AtomicWaker; EP_COUNT] = [const { AtomicWaker::new() }; EP_COUNT];
static OUT_WAKERS: [AtomicWaker; EP_COUNT] = [const { AtomicWaker::new() }; EP_COUNT];
/// Counts each endpoint's enables: an endpoint whose count moved starts again at buffer 0 and
/// DATA0 (the controller's selector and toggle were reset with it).
static IN_ENABLES: [AtomicU8; EP_COUNT] = [const { AtomicU8::new(0) }; EP_COUNT];
static OUT_ENABLES: [AtomicU8; EP_COUNT] = [const { AtomicU8::new(0) }; EP_COUNT];

/// The USB controller's interrupt: clears what it reports and wakes whoever waits for it.
pub struct InterruptHandler;

impl embassy_rp::interrupt::typelevel::Handler<USBCTRL_IRQ> for InterruptHandler {
    unsafe fn on_interrupt() {
        let ints = regs::read(regs::INTS);
        let bus = ints & (regs::INT_BUS_RESET | regs::INT_DEV_SUSPEND | regs::INT_DEV_RESUME);
        if bus != 0 {
            // The bus task looks at SIE_STATUS and turns them on again.
            regs::clear(regs::INTE, bus);
            BUS_WAKER.wake();
        }
        if ints & regs::INT_SETUP_REQ != 0 {
            regs::clear(regs::INTE, regs::INT_SETUP_REQ);
            OUT_WAKERS[0].wake();
        }
        if ints & regs::INT_BUFF_STATUS != 0 {
            let done = regs::read(regs::BUFF_STATUS);
            regs::write(regs::BUFF_STATUS, done);
            for ep in 0..EP_COUNT {
                if done & (1 << (2 * ep)) != 0 {
                    // A bulk IN buffer is free: the next queued packet into it at once.
                    if ep < stream::STREAMS && stream::IN_STREAMS[ep].attached() {
                        stream::service_in(ep);
                    }
                    IN_WAKERS[ep].wake();
                }
                if done & (1 << (2 * ep + 1)) != 0 {
                    // A bulk OUT buffer is full: into the ring, and armed again at once.
                    if ep < stream::STREAMS && stream::OUT_STREAMS[ep].attached() {
                        stream::service_out(ep);
                    }
                    OUT_WAKERS[ep].wake();
                }
            }
        }
    }
}

/// What each allocated endpoint is.
#[derive(Clone, Copy)]
struct Allocated {
    ep_type: EndpointType,
    mps: u16,
    buffer: u16,
}

/// The driver, before `start`: endpoints are allocated from it.
pub struct Driver<'d> {
    _usb: Peri<'d, USB>,
    ins: [Option<Allocated>; EP_COUNT],
    outs: [Option<Allocated>; EP_COUNT],
    /// The next free DPRAM byte for endpoint buffers.
    free: usize,
}

impl<'d> Driver<'d> {
    /// Takes the USB peripheral and its interrupt; turns the controller on (pull-up still off).
    pub fn new(usb: Peri<'d, USB>, _irq: impl Binding<USBCTRL_IRQ, InterruptHandler>) -> Self {
        USBCTRL_IRQ::unpend();
        // SAFETY: the handler is bound (`_irq`); it touches only the controller.
        unsafe { USBCTRL_IRQ::enable() };
        for offset in (0..0x9c).step_by(4) {
            regs::write(offset, 0);
        }
        for offset in (0..regs::FIRST_BUFFER).step_by(4) {
            regs::dpram_write(offset, 0);
        }
        regs::write(regs::USB_MUXING, regs::MUX_TO_PHY | regs::MUX_SOFTCON);
        regs::write(
            regs::USB_PWR,
            regs::PWR_VBUS_DETECT | regs::PWR_VBUS_DETECT_OVERRIDE_EN,
        );
        regs::write(regs::MAIN_CTRL, regs::CONTROLLER_EN);
        Driver {
            _usb: usb,
            ins: [None; EP_COUNT],
            outs: [None; EP_COUNT],
            free: regs::FIRST_BUFFER,
        }
    }

    fn alloc<D: endpoint::Dir>(
        &mut self,
        ep_type: EndpointType,
        ep_addr: Option<EndpointAddress>,
        mps: u16,
        interval_ms: u8,
    ) -> Result<Endpoint<'d, D>, EndpointAllocError> {
        if mps > 64 || ep_type == EndpointType::Isochronous || ep_type == EndpointType::Control {
            return Err(EndpointAllocError);
        }
        let table = if D::OUT {
            &mut self.outs
        } else {
            &mut self.ins
        };
        let index = match ep_addr {
            Some(a) if (1..EP_COUNT).contains(&a.index()) && table[a.index()].is_none() => {
                a.index()
            }
            Some(_) => return Err(EndpointAllocError),
            None => (1..EP_COUNT)
                .find(|&i| table[i].is_none())
                .ok_or(EndpointAllocError)?,
        };
        // Bulk endpoints take both buffers and a ring; the others one buffer.
        let bulk = ep_type == EndpointType::Bulk;
        let size = if bulk { 128 } else { 64 };
        if self.free + size > regs::DPRAM_SIZE || (bulk && index >= stream::STREAMS) {
            return Err(EndpointAllocError);
        }
        let buffer = self.free as u16;
        self.free += size;
        if bulk {
            let streams = if D::OUT {
                &stream::OUT_STREAMS
            } else {
                &stream::IN_STREAMS
            };
            streams[index].attach(usize::from(buffer), mps);
        }
        table[index] = Some(Allocated {
            ep_type,
            mps,
            buffer,
        });
        let dir = if D::OUT {
            Direction::Out
        } else {
            Direction::In
        };
        Ok(Endpoint::new(
            EndpointInfo {
                addr: EndpointAddress::from_parts(index, dir),
                ep_type,
                max_packet_size: mps,
                interval_ms,
            },
            usize::from(buffer),
        ))
    }
}

impl<'d> driver::Driver<'d> for Driver<'d> {
    type EndpointOut = Endpoint<'d, Out>;
    type EndpointIn = Endpoint<'d, In>;
    type ControlPipe = ControlPipe<'d>;
    type Bus = Bus<'d>;

    fn alloc_endpoint_out(
        &mut self,
        ep_type: EndpointType,
        ep_addr: Option<EndpointAddress>,
        max_packet_size: u16,
        interval_ms: u8,
    ) -> Result<Self::EndpointOut, EndpointAllocError> {
        self.alloc(ep_type, ep_addr, max_packet_size, interval_ms)
    }

    fn alloc_endpoint_in(
        &mut self,
        ep_type: EndpointType,
        ep_addr: Option<EndpointAddress>,
        max_packet_size: u16,
        interval_ms: u8,
    ) -> Result<Self::EndpointIn, EndpointAllocError> {
        self.alloc(ep_type, ep_addr, max_packet_size, interval_ms)
    }

    fn start(self, control_max_packet_size: u16) -> (Bus<'d>, ControlPipe<'d>) {
        // The endpoints' control words, all disabled until the host configures the device.
        for (out, table) in [(false, &self.ins), (true, &self.outs)] {
            for (ep, a) in table.iter().enumerate() {
                if let Some(a) = a {
                    regs::dpram_write(regs::ep_control(ep, out), endpoint_control(*a, false));
                }
            }
        }
        regs::write(
            regs::INTE,
            regs::INT_BUS_RESET
                | regs::INT_BUFF_STATUS
                | regs::INT_DEV_RESUME
                | regs::INT_DEV_SUSPEND
                | regs::INT_SETUP_REQ,
        );
        regs::write(regs::SIE_CTRL, regs::SIE_EP0_INT_1BUF | regs::SIE_PULLUP_EN);
        (
            Bus {
                _p: PhantomData,
                ins: self.ins,
                outs: self.outs,
                powered: false,
            },
            ControlPipe::new(control_max_packet_size),
        )
    }
}

/// An endpoint's control word: its buffer, type, one interrupt per buffer, both buffers for
/// a bulk endpoint.
fn endpoint_control(a: Allocated, enabled: bool) -> u32 {
    let double = if a.ep_type == EndpointType::Bulk {
        regs::EPC_DOUBLE_BUFFERED
    } else {
        0
    };
    let enable = if enabled { regs::EPC_ENABLE } else { 0 };
    enable
        | double
        | regs::EPC_INTERRUPT_PER_BUFF
        | ((a.ep_type as u32) << regs::EPC_TYPE_SHIFT)
        | u32::from(a.buffer)
}

/// The bus: its events, and the endpoints the host enables and stalls.
pub struct Bus<'d> {
    _p: PhantomData<&'d ()>,
    ins: [Option<Allocated>; EP_COUNT],
    outs: [Option<Allocated>; EP_COUNT],
    powered: bool,
}

impl driver::Bus for Bus<'_> {
    async fn enable(&mut self) {}

    async fn disable(&mut self) {}

    async fn poll(&mut self) -> Event {
        poll_fn(|cx| {
            BUS_WAKER.register(cx.waker());
            if !self.powered {
                self.powered = true;
                return Poll::Ready(Event::PowerDetected);
            }
            let status = regs::read(regs::SIE_STATUS);
            if status & regs::SIE_BUS_RESET != 0 {
                regs::write(regs::SIE_STATUS, regs::SIE_BUS_RESET | regs::SIE_SETUP_REC);
                regs::write(regs::BUFF_STATUS, u32::MAX);
                regs::write(regs::ADDR_ENDP, 0);
                self.disable_all();
                regs::set(regs::INTE, regs::INT_BUS_RESET);
                return Poll::Ready(Event::Reset);
            }
            if status & regs::SIE_RESUME != 0 {
                regs::write(regs::SIE_STATUS, regs::SIE_RESUME);
                regs::set(regs::INTE, regs::INT_DEV_RESUME);
                return Poll::Ready(Event::Resume);
            }
            if status & regs::SIE_SUSPENDED != 0
                && regs::read(regs::INTR) & regs::INT_DEV_SUSPEND != 0
            {
                regs::write(regs::SIE_STATUS, regs::SIE_SUSPENDED);
                regs::set(regs::INTE, regs::INT_DEV_SUSPEND);
                return Poll::Ready(Event::Suspend);
            }
            regs::set(
                regs::INTE,
                regs::INT_BUS_RESET | regs::INT_DEV_RESUME | regs::INT_DEV_SUSPEND,
            );
            Poll::Pending
        })
        .await
    }

    fn endpoint_set_enabled(&mut self, ep_addr: EndpointAddress, enabled: bool) {
        let ep = ep_addr.index();
        if ep == 0 {
            return;
        }
        let out = ep_addr.is_out();
        let Some(a) = (if out { self.outs[ep] } else { self.ins[ep] }) else {
            return;
        };
        let bc = regs::buffer_control(ep, out);
        cortex_m::interrupt::free(|_| {
            regs::dpram_write(bc, 0);
            regs::dpram_write(regs::ep_control(ep, out), endpoint_control(a, enabled));
            if a.ep_type == EndpointType::Bulk {
                let streams = if out {
                    &stream::OUT_STREAMS
                } else {
                    &stream::IN_STREAMS
                };
                streams[ep].restart();
            }
            if enabled && out {
                // Both buffers armed for a bulk endpoint (DATA0 then DATA1), buffer 0 first.
                regs::arm(bc, 0, a.mps | regs::BUF_RESET);
                if a.ep_type == EndpointType::Bulk {
                    regs::arm(bc, 1, a.mps | regs::BUF_DATA1);
                }
            } else if enabled {
                // The controller's selector back at buffer 0, where the next packet goes.
                regs::half_write(bc, 0, regs::BUF_RESET);
            }
        });
        let (enables, wakers) = if out {
            (&OUT_ENABLES, &OUT_WAKERS)
        } else {
            (&IN_ENABLES, &IN_WAKERS)
        };
        // Thread mode only (the M0+ has no atomic add; the interrupt never touches these).
        enables[ep].store(
            enables[ep].load(Ordering::Relaxed).wrapping_add(1),
            Ordering::Relaxed,
        );
        wakers[ep].wake();
    }

    fn endpoint_set_stalled(&mut self, ep_addr: EndpointAddress, stalled: bool) {
        let (ep, out) = (ep_addr.index(), ep_addr.is_out());
        if ep == 0 {
            let bit = if out { 2 } else { 1 };
            if stalled {
                regs::set(regs::EP_STALL_ARM, bit);
            } else {
                regs::clear(regs::EP_STALL_ARM, bit);
            }
        }
        let bc = regs::buffer_control(ep, out);
        let half = regs::half_read(bc, 0);
        let half = if stalled {
            half | regs::BUF_STALL
        } else {
            half & !regs::BUF_STALL
        };
        regs::half_write(bc, 0, half);
        let wakers = if out { &OUT_WAKERS } else { &IN_WAKERS };
        wakers[ep].wake();
    }

    fn endpoint_is_stalled(&mut self, ep_addr: EndpointAddress) -> bool {
        let bc = regs::buffer_control(ep_addr.index(), ep_addr.is_out());
        regs::half_read(bc, 0) & regs::BUF_STALL != 0
    }

    async fn remote_wakeup(&mut self) -> Result<(), Unsupported> {
        Err(Unsupported)
    }
}

impl Bus<'_> {
    /// A bus reset: every endpoint disabled, its waiting futures woken (they fail Disabled).
    fn disable_all(&mut self) {
        for ep in 1..EP_COUNT {
            for (out, a) in [(false, self.ins[ep]), (true, self.outs[ep])] {
                if let Some(a) = a {
                    regs::dpram_write(regs::ep_control(ep, out), endpoint_control(a, false));
                }
            }
        }
        for w in IN_WAKERS.iter().chain(OUT_WAKERS.iter()) {
            w.wake();
        }
    }
}
