//! Bringing the device up: the MAC (or a HAL's device) under smoltcp, the apps over the
//! static buffers, the boot line, then the main loop ([`crate::main_loop`]).

use linklab_mac::{Mac, MacAddr, MacConfig, NoClock, PhyTx, RxFormat, TxFormat};
use linklab_perf::device_config::DeviceConfig;
use smoltcp::iface::{Config as IfaceConfig, Interface};
use smoltcp::wire::{EthernetAddress, IpAddress, IpCidr};

use crate::apps::{device_apps, take_buffers, Apps, BlastParts};
#[cfg(feature = "blast")]
use crate::blast::Blaster;
use crate::console::ConsoleLine;
use crate::main_loop::{now, serve};
use crate::memory::{QUEUE_FRAMES, TCP_WINDOW};
use crate::{stack, Board, NetDevice, RX_QUEUE};

/// Runs the device forever over [`RX_QUEUE`] (filled by the board's NIC interrupt with
/// aligned frames in `rx_format`: without FCS from the LAN9118 in QEMU, tagged with what
/// the device knows of their checksums from virtio-net) and the NIC's transmit side `phy`,
/// which takes plain frames (the controller adds preamble and FCS).
pub fn run<B: Board, T: PhyTx>(board: B, phy: T, rx_format: RxFormat, config: DeviceConfig) -> ! {
    run_mac(
        board,
        phy,
        |address| MacConfig {
            rx_format,
            tx_format: TxFormat::Plain,
            ..MacConfig::aligned_fcs(address)
        },
        config,
    )
}

/// [`run`] for a board whose PHY is software (linklab-phy10; feature `soft-phy`): its receive
/// interrupt decodes line samples straight into [`RX_QUEUE`]'s grants (bytes after the SFD,
/// FCS included, checked by the MAC), and `phy` gets wire-format frames (preamble, SFD,
/// frame, FCS) to encode. The MAC keeps no line timing of its own (rate 0): the sampler's DMA sets the
/// pace on the line.
#[cfg(feature = "soft-phy")]
pub fn run_soft_phy<B: Board, T: PhyTx>(board: B, phy: T, config: DeviceConfig) -> ! {
    run_mac(
        board,
        phy,
        |address| MacConfig::decoding_phy(address, 0),
        config,
    )
}

/// The main loop over a MAC configured by `mac_config` (given the device's address).
///
/// The apps are built first ([`boot_apps`]), from this small frame: their construction
/// takes the deepest frames of the boot, which then never sit under [`serve_mac`]'s, where
/// the MAC and smoltcp's interface live for the firmware's life (the two together were the
/// stack's peak: 18 636 B on mps2-an385's full image).
fn run_mac<B: Board, T: PhyTx>(
    mut board: B,
    phy: T,
    mac_config: impl FnOnce(MacAddr) -> MacConfig,
    config: DeviceConfig,
) -> ! {
    let stack = stack::paint(board.stack_limit(), board.stack_top());
    let Some(apps) = boot_apps() else {
        board.console("linklab firmware: run() called twice\n");
        loop {
            board.sleep_until(None);
        }
    };
    serve_mac(board, phy, mac_config, config, apps, stack)
}

/// The apps over the static buffers, the first time only (None after). Never inlined: its
/// frames are gone before the main loop's are taken.
#[inline(never)]
fn boot_apps() -> Option<(&'static mut Apps, BlastParts)> {
    take_buffers().map(device_apps)
}

/// [`run_mac`] once the apps are built: the MAC and the interface, then the main loop.
#[inline(never)]
fn serve_mac<B: Board, T: PhyTx>(
    mut board: B,
    phy: T,
    mac_config: impl FnOnce(MacAddr) -> MacConfig,
    config: DeviceConfig,
    apps: (&'static mut Apps, BlastParts),
    stack: stack::Stack,
) -> ! {
    let mut mac = Mac::new(
        RX_QUEUE.consumer(),
        phy,
        NoClock,
        mac_config(MacAddr(config.mac)),
    );
    // IPv4/TCP/UDP checksums in the MAC, word-wise, instead of smoltcp's 16-bit loops
    // (bad ones are dropped and counted in /stats mac.rx_checksum_errors).
    mac.set_checksum_offload(true);
    let mut iface = interface(&mut board, &mut mac, &config);
    #[cfg(feature = "blast")]
    {
        let (state, (blast_socket, blast_frame)) = apps;
        let mut blaster = Blaster::new(
            &mut state.sockets,
            blast_socket,
            blast_frame,
            config.ip,
            config.mac,
        );
        boot_line(&mut board, &config);
        serve(
            board,
            &mut mac,
            &mut iface,
            state,
            Some(&mut blaster),
            stack,
        )
    }
    #[cfg(not(feature = "blast"))]
    {
        let (state, ()) = apps;
        boot_line(&mut board, &config);
        serve(board, &mut mac, &mut iface, state, stack)
    }
}

/// Runs the device forever over `device`, any smoltcp `Device` that can show the apps its
/// next frame and `/stats` its counters ([`NetDevice`]), e.g. a HAL's driver: the same apps
/// and `/stats` as [`run`], without the packet blaster (its raw way hands frames to
/// linklab-mac's `PhyTx`; its UDP port stays closed).
pub fn run_device<B: Board, D: NetDevice>(mut board: B, device: D, config: DeviceConfig) -> ! {
    let stack = stack::paint(board.stack_limit(), board.stack_top());
    let Some((state, _)) = boot_apps() else {
        board.console("linklab firmware: run() called twice\n");
        loop {
            board.sleep_until(None);
        }
    };
    serve_device(board, device, config, state, stack)
}

/// [`run_device`] once the apps are built (as [`serve_mac`]).
#[inline(never)]
fn serve_device<B: Board, D: NetDevice>(
    mut board: B,
    mut device: D,
    config: DeviceConfig,
    state: &'static mut Apps,
    stack: stack::Stack,
) -> ! {
    let mut iface = interface(&mut board, &mut device, &config);
    boot_line(&mut board, &config);
    serve(
        board,
        &mut device,
        &mut iface,
        state,
        #[cfg(feature = "blast")]
        None,
        stack,
    )
}

/// smoltcp's interface over `device` at the configured address.
fn interface<B: Board, D: smoltcp::phy::Device>(
    board: &mut B,
    device: &mut D,
    config: &DeviceConfig,
) -> Interface {
    let mut iface_config = IfaceConfig::new(EthernetAddress(config.mac).into());
    let m = config.mac;
    iface_config.random_seed =
        board.now_ns() ^ u64::from_le_bytes([m[0], m[1], m[2], m[3], m[4], m[5], 0, 0]);
    let mut iface = Interface::new(iface_config, device, now(board));
    let [a, b, c, d] = config.ip;
    iface.update_ip_addrs(|addrs| {
        let _ = addrs.push(IpCidr::new(IpAddress::v4(a, b, c, d), config.prefix));
    });
    iface
}

/// The console's boot line (`linklab emu` waits for it): the board, the address, the queue
/// and window, and the image's flavour (`minimal` for the iperf3 server alone).
fn boot_line<B: Board>(board: &mut B, config: &DeviceConfig) {
    let [a, b, c, d] = config.ip;
    let mut line = ConsoleLine::new();
    line.text("linklab firmware: ")
        .text(B::NAME)
        .text(" up, ")
        .num(a.into())
        .text(".")
        .num(b.into())
        .text(".")
        .num(c.into())
        .text(".")
        .num(d.into())
        .text("/")
        .num(config.prefix.into())
        .text(", ")
        .num(QUEUE_FRAMES as u64)
        .text(" frame RX queue, tcp window ")
        .num(TCP_WINDOW as u64);
    if cfg!(feature = "minimal") {
        line.text(", minimal");
    }
    if cfg!(feature = "compact") {
        line.text(", compact");
    }
    line.text("\n");
    board.console(line.as_str());
}
