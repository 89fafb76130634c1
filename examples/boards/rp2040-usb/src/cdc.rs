//! The CDC-ACM class's two bulk endpoints as an `embedded_io_async` byte stream, for
//! linklab-serial's `pump`:
//! - [`PacketReader`]: one read is one packet from the host; a zero-length packet carries no
//!   byte and is skipped (it would read as "closed");
//! - [`PacketWriter`]: one write is one packet to the host (up to 64 bytes); `flush` sends a
//!   zero-length packet after a whole one, so the host's read completes (a bulk transfer ends
//!   with a short packet: Linux's cdc-acm reads 128 bytes at a time and would otherwise hold a
//!   lone 64-byte packet until more comes).

use embassy_usb::class::cdc_acm::{Receiver, Sender};
use embassy_usb::driver::EndpointError;
use embedded_io_async::{ErrorKind, ErrorType, Read, Write};

use crate::{UsbDriver, MAX_PACKET};

/// Why the stream stopped: the host disabled the endpoints (a bus reset, a new configuration,
/// the cable), or a read buffer shorter than a packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq, defmt::Format)]
pub enum StreamError {
    /// The endpoint is disabled: wait for the host to configure the device again.
    Disconnected,
    /// The caller's buffer cannot hold a packet.
    BufferTooSmall,
}

impl core::fmt::Display for StreamError {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(match self {
            StreamError::Disconnected => "the endpoint is disabled",
            StreamError::BufferTooSmall => "the buffer cannot hold a packet",
        })
    }
}

impl core::error::Error for StreamError {}

impl embedded_io_async::Error for StreamError {
    fn kind(&self) -> ErrorKind {
        match self {
            StreamError::Disconnected => ErrorKind::NotConnected,
            StreamError::BufferTooSmall => ErrorKind::InvalidInput,
        }
    }
}

impl From<EndpointError> for StreamError {
    fn from(e: EndpointError) -> Self {
        match e {
            EndpointError::Disabled => StreamError::Disconnected,
            EndpointError::BufferOverflow => StreamError::BufferTooSmall,
        }
    }
}

/// The bulk OUT endpoint, packet by packet.
pub struct PacketReader {
    rx: Receiver<'static, UsbDriver>,
}

impl PacketReader {
    /// Reads from `rx`.
    pub fn new(rx: Receiver<'static, UsbDriver>) -> Self {
        PacketReader { rx }
    }

    /// Waits until the host has configured the device.
    pub async fn wait_connection(&mut self) {
        self.rx.wait_connection().await;
    }
}

impl ErrorType for PacketReader {
    type Error = StreamError;
}

impl Read for PacketReader {
    /// The next packet's bytes (`buf` must hold 64), and the packets already waiting after it
    /// while they fit: the link is handed a few packets at a time, not one (its bookkeeping
    /// per call is what a 64-byte packet would otherwise pay).
    async fn read(&mut self, buf: &mut [u8]) -> Result<usize, StreamError> {
        let mps = usize::from(MAX_PACKET);
        if buf.len() < mps {
            return Err(StreamError::BufferTooSmall);
        }
        let mut n = 0;
        while n == 0 {
            n = self.rx.read_packet(buf).await?;
        }
        // A packet already in a buffer completes at its first poll (the read is cancel-safe:
        // a pending one has taken nothing).
        while buf.len() - n >= mps {
            match embassy_futures::poll_once(self.rx.read_packet(&mut buf[n..])) {
                core::task::Poll::Ready(Ok(k)) => n += k,
                core::task::Poll::Ready(Err(e)) => return Err(e.into()),
                core::task::Poll::Pending => break,
            }
        }
        Ok(n)
    }
}

/// The bulk IN endpoint, packet by packet.
pub struct PacketWriter {
    tx: Sender<'static, UsbDriver>,
    /// The last packet sent was a whole one: a transfer must still end.
    open_transfer: bool,
}

impl PacketWriter {
    /// Writes to `tx`.
    pub fn new(tx: Sender<'static, UsbDriver>) -> Self {
        PacketWriter {
            tx,
            open_transfer: false,
        }
    }
}

impl ErrorType for PacketWriter {
    type Error = StreamError;
}

impl Write for PacketWriter {
    /// Sends up to one packet of `buf`; returns how many bytes went.
    async fn write(&mut self, buf: &[u8]) -> Result<usize, StreamError> {
        let n = buf.len().min(usize::from(MAX_PACKET));
        self.tx.write_packet(&buf[..n]).await?;
        self.open_transfer = n == usize::from(MAX_PACKET);
        Ok(n)
    }

    /// Ends the transfer with a zero-length packet if its last packet was a whole one.
    async fn flush(&mut self) -> Result<(), StreamError> {
        if self.open_transfer {
            self.tx.write_packet(&[]).await?;
            self.open_transfer = false;
        }
        Ok(())
    }
}
