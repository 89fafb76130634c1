//! Feature `echo`: every byte the host writes comes back, packet by packet, as CBA's firmware
//! did for its USB test (raw bytes, no framing, no check). A whole packet with nothing behind
//! it within a frame is followed by a zero-length packet, so the host's read completes.

use defmt::info;
use embassy_futures::select::{select, Either};
use embassy_time::{Duration, Timer};
use embassy_usb::class::cdc_acm::CdcAcmClass;
use embedded_io_async::{Read, Write};

use crate::cdc::{PacketReader, PacketWriter};
use crate::UsbDriver;

/// How long a whole packet waits for the next before the transfer is ended: one USB frame.
const TRANSFER_END: Duration = Duration::from_millis(1);

/// Echoes until the host goes away, then waits for it again.
#[embassy_executor::task]
pub async fn echo_task(class: CdcAcmClass<'static, UsbDriver>) -> ! {
    let (tx, rx) = class.split();
    let mut reader = PacketReader::new(rx);
    let mut writer = PacketWriter::new(tx);
    let mut buf = [0u8; 64];
    loop {
        reader.wait_connection().await;
        info!("echo: connected");
        loop {
            let n = match select(reader.read(&mut buf), Timer::after(TRANSFER_END)).await {
                Either::First(Ok(n)) => n,
                Either::First(Err(_)) => break,
                Either::Second(()) => {
                    if writer.flush().await.is_err() {
                        break;
                    }
                    match reader.read(&mut buf).await {
                        Ok(n) => n,
                        Err(_) => break,
                    }
                }
            };
            if writer.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        info!("echo: disconnected");
    }
}
