//! A Raspberry Pi Pico whose own USB port (full speed, the RP2040's controller) is its
//! network: embassy-usb's CDC-ACM class carries linklab-serial's reliable link, embassy-net
//! runs over the link (198.18.0.2/24) with linklab-perf's iperf3 and iperf 2 servers, HTTP
//! server (80: bench files, `/stats`, `/link`) and echo (7). On the host the port is
//! /dev/ttyACM0 and `linklab serial --dev /dev/ttyACM0 --tap T --ip 198.18.0.1/24` bridges it
//! to a TAP. Feature `echo`: a plain CDC-ACM echo instead (the firmware of CBA's USB test).
//! Feature `sys-240mhz`: clk_sys 240 MHz (CBA's overclocked run) instead of 125. Feature
//! `double-buffered`: this example's USB driver, both buffers of each bulk endpoint, instead of
//! embassy-rp's one. Feature `ncm`: embassy-usb's CDC-NCM class instead of CDC-ACM, a network
//! interface a Linux host's own `cdc_ncm` driver takes, with embassy-net and the same apps
//! ([`ncm`]).
#![no_std]
#![no_main]

#[cfg(not(feature = "ncm"))]
mod cdc;
#[cfg(feature = "double-buffered")]
mod dbuf;
#[cfg(all(feature = "echo", not(feature = "ncm")))]
mod echo;
#[cfg(feature = "ncm")]
mod frame_queues;
#[cfg(feature = "ncm")]
mod ncm;
#[cfg(not(any(feature = "echo", feature = "ncm")))]
mod network;

#[cfg(feature = "double-buffered")]
use dbuf::{Driver, InterruptHandler};
use defmt::{info, unwrap};
use embassy_executor::Spawner;
use embassy_rp::bind_interrupts;
use embassy_rp::clocks::ClockConfig;
#[cfg(not(feature = "double-buffered"))]
use embassy_rp::peripherals::USB;
#[cfg(not(feature = "double-buffered"))]
use embassy_rp::usb::{Driver, InterruptHandler};
#[cfg(not(feature = "ncm"))]
use embassy_usb::class::cdc_acm::{CdcAcmClass, State};
use embassy_usb::{Builder, UsbDevice};
use static_cell::ConstStaticCell;
#[cfg(not(feature = "ncm"))]
use static_cell::StaticCell;
use {defmt_rtt as _, panic_probe as _};

/// The board's name in logs and `/stats`.
pub const BOARD: &str = if cfg!(feature = "ncm") {
    "rp2040-usb-ncm"
} else if cfg!(feature = "echo") {
    "rp2040-usb-echo"
} else {
    "rp2040-usb"
};

/// clk_sys: embassy-rp's default 125 MHz, or 240 MHz with feature `sys-240mhz`.
const SYS_HZ: u32 = if cfg!(feature = "sys-240mhz") {
    240_000_000
} else {
    125_000_000
};

/// The USB driver: embassy-rp's (one buffer per endpoint), or with feature `double-buffered`
/// this example's (both buffers of each bulk endpoint: [`dbuf`]).
#[cfg(not(feature = "double-buffered"))]
pub type UsbDriver = Driver<'static, USB>;
#[cfg(feature = "double-buffered")]
pub type UsbDriver = Driver<'static>;

/// The bulk endpoints' max packet size: full speed's largest.
pub const MAX_PACKET: u16 = 64;

#[cfg(not(feature = "double-buffered"))]
bind_interrupts!(struct Irqs {
    USBCTRL_IRQ => InterruptHandler<USB>;
});
#[cfg(feature = "double-buffered")]
bind_interrupts!(struct Irqs {
    USBCTRL_IRQ => InterruptHandler;
});

/// The USB device: enumeration, control requests, bus events.
#[embassy_executor::task]
async fn usb_task(mut usb: UsbDevice<'static, UsbDriver>) -> ! {
    usb.run().await
}

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    let clocks = unwrap!(ClockConfig::system_freq(SYS_HZ).ok());
    let p = embassy_rp::init(embassy_rp::config::Config::new(clocks));
    info!("{} booting at {} Hz", BOARD, SYS_HZ);

    let driver = Driver::new(p.USB, Irqs);
    // linklab's test ids (not registered: change them for a product).
    let mut config = embassy_usb::Config::new(0xc0de, 0xcafe);
    config.manufacturer = Some("linklab");
    config.product = Some(BOARD);
    config.serial_number = Some("0001");
    config.max_power = 100;
    config.max_packet_size_0 = 64;

    static CONFIG_DESCRIPTOR: ConstStaticCell<[u8; 256]> = ConstStaticCell::new([0; 256]);
    static BOS_DESCRIPTOR: ConstStaticCell<[u8; 256]> = ConstStaticCell::new([0; 256]);
    static CONTROL_BUF: ConstStaticCell<[u8; 64]> = ConstStaticCell::new([0; 64]);
    #[cfg(not(feature = "ncm"))]
    static CDC_STATE: StaticCell<State<'static>> = StaticCell::new();
    let mut builder = Builder::new(
        driver,
        config,
        CONFIG_DESCRIPTOR.take(),
        BOS_DESCRIPTOR.take(),
        &mut [],
        CONTROL_BUF.take(),
    );
    #[cfg(not(feature = "ncm"))]
    let class = CdcAcmClass::new(&mut builder, CDC_STATE.init(State::new()), MAX_PACKET);
    #[cfg(feature = "ncm")]
    let class = ncm::class(&mut builder);
    spawner.spawn(unwrap!(usb_task(builder.build())));

    #[cfg(feature = "ncm")]
    ncm::start(spawner, class).await;
    #[cfg(all(feature = "echo", not(feature = "ncm")))]
    spawner.spawn(unwrap!(echo::echo_task(class)));
    #[cfg(not(any(feature = "echo", feature = "ncm")))]
    network::start(spawner, class).await;
}
