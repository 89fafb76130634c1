//! The endpoints and the control pipe of the double-buffered driver (see the module above).

use core::future::poll_fn;
use core::marker::PhantomData;
use core::sync::atomic::Ordering;
use core::task::Poll;

use embassy_usb_driver as driver;
use embassy_usb_driver::{EndpointError, EndpointInfo, EndpointType};

use super::{regs, stream, IN_ENABLES, IN_WAKERS, OUT_ENABLES, OUT_WAKERS};

/// An endpoint's direction, as a type.
pub trait Dir {
    /// True for OUT (host to device).
    const OUT: bool;
}

/// Host to device.
pub enum Out {}
/// Device to host.
pub enum In {}

impl Dir for Out {
    const OUT: bool = true;
}
impl Dir for In {
    const OUT: bool = false;
}

/// One endpoint (not EP0).
pub struct Endpoint<'d, D: Dir> {
    _p: PhantomData<(&'d (), D)>,
    info: EndpointInfo,
    /// Its first buffer in the DPRAM (the second, for bulk, 64 bytes on).
    buffer: usize,
    /// The enable it last saw: another one means buffer 0 and DATA0 again.
    enable: u8,
    /// The buffer whose turn it is.
    turn: usize,
    /// IN: the DATA PID of the next packet.
    data1: bool,
}

impl<D: Dir> Endpoint<'_, D> {
    pub(super) fn new(info: EndpointInfo, buffer: usize) -> Self {
        Endpoint {
            _p: PhantomData,
            info,
            buffer,
            enable: 0,
            turn: 0,
            data1: false,
        }
    }

    fn index(&self) -> usize {
        self.info.addr.index()
    }

    fn double(&self) -> bool {
        self.info.ep_type == EndpointType::Bulk
    }

    fn enabled(&self) -> bool {
        regs::dpram_read(regs::ep_control(self.index(), D::OUT)) & regs::EPC_ENABLE != 0
    }

    /// After an enable (the host configured the device again): start over.
    fn follow_enable(&mut self) {
        let enables = if D::OUT { &OUT_ENABLES } else { &IN_ENABLES };
        let count = enables[self.index()].load(Ordering::Relaxed);
        if count != self.enable {
            self.enable = count;
            self.turn = 0;
            self.data1 = false;
        }
    }

    fn waker(&self) -> &'static embassy_sync::waitqueue::AtomicWaker {
        let wakers = if D::OUT { &OUT_WAKERS } else { &IN_WAKERS };
        &wakers[self.index()]
    }

    /// Waits until buffer `turn` is `ready` (its half of the buffer control word); Disabled
    /// if the endpoint is disabled meanwhile.
    async fn wait_buffer(&mut self, ready: impl Fn(u16) -> bool) -> Result<u16, EndpointError> {
        let bc = regs::buffer_control(self.index(), D::OUT);
        poll_fn(|cx| {
            self.waker().register(cx.waker());
            self.follow_enable();
            if !self.enabled() {
                return Poll::Ready(Err(EndpointError::Disabled));
            }
            let half = regs::half_read(bc, self.turn);
            if ready(half) {
                Poll::Ready(Ok(half))
            } else {
                Poll::Pending
            }
        })
        .await
    }
}

impl<D: Dir> driver::Endpoint for Endpoint<'_, D> {
    fn info(&self) -> &EndpointInfo {
        &self.info
    }

    async fn wait_enabled(&mut self) {
        poll_fn(|cx| {
            self.waker().register(cx.waker());
            if self.enabled() {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }
}

impl<D: Dir> Endpoint<'_, D> {
    /// A bulk endpoint's stream (its ring and the interrupt's state).
    fn stream(&self) -> &'static stream::Stream {
        let streams = if D::OUT {
            &stream::OUT_STREAMS
        } else {
            &stream::IN_STREAMS
        };
        &streams[self.index()]
    }

    /// Waits until `ready()` (or the endpoint is disabled: Disabled).
    async fn wait_until(
        &mut self,
        ready: impl Fn(&stream::Stream) -> bool,
    ) -> Result<(), EndpointError> {
        let s = self.stream();
        poll_fn(|cx| {
            self.waker().register(cx.waker());
            if !self.enabled() {
                return Poll::Ready(Err(EndpointError::Disabled));
            }
            if ready(s) {
                Poll::Ready(Ok(()))
            } else {
                Poll::Pending
            }
        })
        .await
    }
}

impl driver::EndpointOut for Endpoint<'_, Out> {
    /// The next packet: from the ring the interrupt fills (bulk), or from the one buffer once
    /// the controller filled it, armed again at once with the other PID (interrupt).
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, EndpointError> {
        if !self.double() {
            let half = self
                .wait_buffer(|h| h & regs::BUF_AVAILABLE == 0 && h & regs::BUF_FULL != 0)
                .await?;
            let n = usize::from(half & regs::BUF_LEN);
            if n > buf.len() {
                return Err(EndpointError::BufferOverflow);
            }
            regs::copy_from(self.buffer, &mut buf[..n]);
            let bc = regs::buffer_control(self.index(), true);
            regs::arm(bc, 0, self.info.max_packet_size | (!half & regs::BUF_DATA1));
            return Ok(n);
        }
        self.wait_until(|s| !s.ring.is_empty()).await?;
        let s = self.stream();
        let mut result = Err(EndpointError::BufferOverflow);
        s.ring.pop(|p| {
            if p.len() <= buf.len() {
                buf[..p.len()].copy_from_slice(p);
                result = Ok(p.len());
            }
        });
        // A buffer that waited for room in the ring goes in now.
        let ep = self.index();
        cortex_m::interrupt::free(|_| stream::service_out(ep));
        result
    }
}

impl driver::EndpointIn for Endpoint<'_, In> {
    /// Queues one packet: into the ring the interrupt empties into the controller's buffers
    /// (bulk: returns at once while the ring has room), or into the one buffer once it is free
    /// (interrupt). Does not wait for the host to take it.
    async fn write(&mut self, buf: &[u8]) -> Result<(), EndpointError> {
        if buf.len() > usize::from(self.info.max_packet_size) {
            return Err(EndpointError::BufferOverflow);
        }
        if !self.double() {
            self.wait_buffer(|h| h & regs::BUF_AVAILABLE == 0).await?;
            self.follow_enable();
            regs::copy_to(self.buffer, buf);
            let pid = if self.data1 { regs::BUF_DATA1 } else { 0 };
            let bc = regs::buffer_control(self.index(), false);
            regs::arm(bc, 0, buf.len() as u16 | pid | regs::BUF_FULL);
            self.data1 = !self.data1;
            return Ok(());
        }
        self.wait_until(|s| !s.ring.is_full()).await?;
        self.stream().ring.push(|slot| {
            slot[..buf.len()].copy_from_slice(buf);
            buf.len()
        });
        // Into a free buffer now if the interrupt has none to wait for.
        let ep = self.index();
        cortex_m::interrupt::free(|_| stream::service_in(ep));
        Ok(())
    }
}

/// EP0: SETUP packets, data stages, status stages, one buffer each way.
pub struct ControlPipe<'d> {
    _p: PhantomData<&'d ()>,
    mps: u16,
}

impl ControlPipe<'_> {
    pub(super) fn new(mps: u16) -> Self {
        ControlPipe {
            _p: PhantomData,
            mps,
        }
    }

    /// Arms EP0's IN (`out` false) or OUT buffer with `half` and waits until the host used it.
    async fn transact(&mut self, out: bool, half: u16) {
        let bc = regs::buffer_control(0, out);
        regs::arm(bc, 0, half);
        let waker = if out { &OUT_WAKERS[0] } else { &IN_WAKERS[0] };
        poll_fn(|cx| {
            waker.register(cx.waker());
            if regs::half_read(bc, 0) & regs::BUF_AVAILABLE == 0 {
                Poll::Ready(())
            } else {
                Poll::Pending
            }
        })
        .await;
    }

    /// The PID the next EP0 packet this way carries (the one after the last one armed).
    fn next_pid(out: bool) -> u16 {
        !regs::half_read(regs::buffer_control(0, out), 0) & regs::BUF_DATA1
    }
}

impl driver::ControlPipe for ControlPipe<'_> {
    fn max_packet_size(&self) -> usize {
        usize::from(self.mps)
    }

    async fn setup(&mut self) -> [u8; 8] {
        regs::set(regs::INTE, regs::INT_SETUP_REQ);
        poll_fn(|cx| {
            OUT_WAKERS[0].register(cx.waker());
            if regs::read(regs::SIE_STATUS) & regs::SIE_SETUP_REC != 0 {
                Poll::Ready(())
            } else {
                regs::set(regs::INTE, regs::INT_SETUP_REQ);
                Poll::Pending
            }
        })
        .await;
        let mut packet = [0u8; 8];
        regs::copy_from(0, &mut packet);
        regs::write(regs::SIE_STATUS, regs::SIE_SETUP_REC);
        // A new transfer: its first data packet is DATA1, whichever way.
        regs::dpram_write(regs::buffer_control(0, false), 0);
        regs::dpram_write(regs::buffer_control(0, true), 0);
        packet
    }

    async fn data_out(
        &mut self,
        buf: &mut [u8],
        _first: bool,
        _last: bool,
    ) -> Result<usize, EndpointError> {
        self.transact(true, self.mps | Self::next_pid(true)).await;
        let n = usize::from(regs::half_read(regs::buffer_control(0, true), 0) & regs::BUF_LEN);
        if n > buf.len() {
            return Err(EndpointError::BufferOverflow);
        }
        regs::copy_from(regs::EP0_BUFFER, &mut buf[..n]);
        Ok(n)
    }

    async fn data_in(
        &mut self,
        data: &[u8],
        _first: bool,
        last: bool,
    ) -> Result<(), EndpointError> {
        if data.len() > usize::from(self.mps) {
            return Err(EndpointError::BufferOverflow);
        }
        regs::copy_to(regs::EP0_BUFFER, data);
        self.transact(
            false,
            data.len() as u16 | Self::next_pid(false) | regs::BUF_FULL,
        )
        .await;
        if last {
            // The status stage: the host's zero-length OUT, DATA1; not waited for.
            regs::arm(regs::buffer_control(0, true), 0, regs::BUF_DATA1);
        }
        Ok(())
    }

    async fn accept(&mut self) {
        // The status stage: a zero-length IN, DATA1; waited for (SET_ADDRESS follows it).
        self.transact(false, regs::BUF_DATA1 | regs::BUF_FULL).await;
    }

    async fn reject(&mut self) {
        regs::set(regs::EP_STALL_ARM, 3);
        regs::half_write(regs::buffer_control(0, true), 0, regs::BUF_STALL);
        regs::half_write(regs::buffer_control(0, false), 0, regs::BUF_STALL);
    }

    async fn accept_set_address(&mut self, addr: u8) {
        self.accept().await;
        regs::write(regs::ADDR_ENDP, u32::from(addr));
    }
}
