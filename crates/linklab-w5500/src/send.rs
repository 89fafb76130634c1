//! The transmit half of a service: every frame the MAC queued into the chip's TX buffer and
//! out. A frame's bytes are written while the frame before it is still on the line; its
//! SEND waits until that one has left (Sn_TX_RD at its end), so the chip never sees a SEND
//! before the last one's SEND_OK (what it does then is not documented). A SEND that does not
//! complete in [`SEND_TIMEOUT_NS`] is issued again, then the socket is reopened.

use embedded_hal::digital::{InputPin, OutputPin};
use embedded_hal::spi::SpiBus;
use embedded_hal_async::delay::DelayNs;
use embedded_hal_async::digital::Wait;
use embedded_hal_async::spi::SpiBus as AsyncSpiBus;
use linklab_mac::timing::Clock;
use linklab_mac::Storage;

use crate::counters::Counter;
use crate::regs::{self, socket, Block, BUFFER_LEN, MAX_FRAME};
use crate::runner::{Next, Runner, SEND_TIMEOUT_NS};
use crate::{open_macraw, BusError};

/// How often Sn_TX_RD is read while a SEND is awaited: 10 µs (a full frame is 123 µs on a
/// 100 Mbit/s line; each read is 5 bytes, 1.4 µs at 31.25 MHz).
const SEND_POLL_NS: u32 = 10_000;

impl<S, CS, INT, D, C, P, L, const N: usize> Runner<'_, S, CS, INT, D, C, P, L, N>
where
    S: SpiBus<u8> + AsyncSpiBus<u8>,
    CS: OutputPin,
    INT: InputPin + Wait,
    D: DelayNs,
    C: Clock,
    P: Storage,
    L: FnMut(bool),
{
    /// Sends what the MAC queued; stops to let the receive half look when INTn falls
    /// between two frames (the peer's ACKs). Also checks a SEND due to have completed.
    pub(crate) async fn send_queued(&mut self) -> Next {
        let tx = self.tx;
        let mut sent = 0;
        while let Some(frame) = tx.front() {
            if sent > 0 && self.int_low() {
                return Next::Again;
            }
            let len = frame.len();
            if len == 0 || len > MAX_FRAME {
                tx.pop();
                self.counters.bump(Counter::tx_dropped);
                continue;
            }
            match self.send_one(frame).await {
                Ok(true) => {
                    tx.pop();
                    sent += 1;
                    self.counters.bump(Counter::tx_frames);
                    self.counters.add(Counter::tx_bytes, len as u32);
                }
                // The frame stays queued: no room in the chip yet, or the socket was
                // reopened under it (it is written again at the new pointer).
                Ok(false) => return Next::Retry,
                Err(e) => {
                    self.bus_failed(e);
                    return Next::Retry;
                }
            }
        }
        if self.send_end.is_some() && self.send_overdue() {
            if let Err(e) = self.wait_send().await {
                self.bus_failed(e);
                return Next::Retry;
            }
        }
        Next::Idle
    }

    /// INTn is low (a pin that cannot be read counts as low: look).
    fn int_low(&mut self) -> bool {
        self.int_pin().is_low().unwrap_or(true)
    }

    /// Writes `frame` at Sn_TX_WR, waits for the last SEND, then moves Sn_TX_WR on and
    /// SENDs it. False: not sent (no room in the chip, or the socket was reopened).
    async fn send_one(&mut self, frame: &[u8]) -> Result<bool, BusError> {
        let len = frame.len();
        let room = |r: &Self| BUFFER_LEN as usize - r.tx_wr.wrapping_sub(r.tx_rd) as usize;
        if room(self) < len {
            self.tx_rd = self.bus.read_u16(Block::Socket0, socket::TX_RD)?;
            if room(self) < len {
                return Ok(false);
            }
        }
        self.bus
            .write_frame(Block::TxBuffer, self.tx_wr, frame)
            .await?;
        if !self.wait_send().await? {
            return Ok(false);
        }
        let end = self.tx_wr.wrapping_add(len as u16);
        self.bus
            .write(Block::Socket0, socket::TX_WR, &end.to_be_bytes())?;
        self.bus
            .write(Block::Socket0, socket::CR, &[regs::CMD_SEND])?;
        self.tx_wr = end;
        self.send_end = Some(end);
        self.send_at_ns = self.clock.now_ns();
        self.send_retried = false;
        Ok(true)
    }

    /// The last SEND has been due to complete for [`SEND_TIMEOUT_NS`].
    fn send_overdue(&self) -> bool {
        self.clock.now_ns() >= self.send_at_ns.saturating_add(SEND_TIMEOUT_NS)
    }

    /// Waits until the last SEND has completed (Sn_TX_RD at its end). Overdue, it is issued
    /// again (counted); overdue again, the socket is reopened (counted) and the answer is
    /// false: what was written since is gone.
    async fn wait_send(&mut self) -> Result<bool, BusError> {
        while let Some(end) = self.send_end {
            if self.tx_rd != end {
                self.tx_rd = self.bus.read_u16(Block::Socket0, socket::TX_RD)?;
            }
            if self.tx_rd == end {
                self.send_end = None;
                break;
            }
            if !self.send_overdue() {
                self.delay.delay_ns(SEND_POLL_NS).await;
            } else if !self.send_retried {
                warn!("w5500: a SEND did not complete, issued again");
                self.counters.bump(Counter::tx_send_retries);
                self.bus
                    .write(Block::Socket0, socket::CR, &[regs::CMD_SEND])?;
                self.send_at_ns = self.clock.now_ns();
                self.send_retried = true;
            } else {
                self.reopen()?;
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Closes socket 0 and opens it again: the chip's pointers start over, and what its
    /// buffers held is given up (counted).
    fn reopen(&mut self) -> Result<(), BusError> {
        warn!("w5500: a SEND did not complete twice, socket 0 reopened");
        self.counters.bump(Counter::socket_reopens);
        self.counters.bump(Counter::tx_dropped);
        let received = self.bus.read_u16(Block::Socket0, socket::RX_RSR)?;
        self.counters
            .add(Counter::rx_dropped_bytes, received as u32);
        self.bus
            .write(Block::Socket0, socket::CR, &[regs::CMD_CLOSE])?;
        let config = self.config;
        self.rx_rd = open_macraw(&mut self.bus, &config).map_err(|e| match e {
            crate::InitError::Bus(b) => b,
            _ => BusError::Spi,
        })?;
        self.tx_wr = self.bus.read_u16(Block::Socket0, socket::TX_WR)?;
        self.tx_rd = self.tx_wr;
        self.send_end = None;
        self.rx_pending = false;
        Ok(())
    }
}
