//! The Teensy 4.1's Ethernet: the i.MX RT1062's ENET (ENET1) wired over RMII to a TI DP83825I
//! at MDIO address 0, which takes its 50 MHz reference from the chip (PLL6 out on
//! `GPIO_B1_10`). Clocks and pads through imxrt-ral; the block itself through
//! linklab-imx-enet, whose receive half runs in the ENET's interrupt and fills linklab-mac's
//! RX queue.

use core::cell::RefCell;

use critical_section::Mutex;
use imxrt_ral as ral;
use linklab_imx_enet::{mdio, Enet, EnetConfig, EnetMemory, EnetRx, EnetTx, Mdio, Mmio, Phy, PhyInterface};
use linklab_mac::Inline;

use crate::{RX_QUEUE, RX_QUEUE_BYTES};

/// The PHY's RMII and bypass control register (RCSR).
const DP83825_RCSR: u8 = 0x17;
/// RCSR: the RMII reference is 50 MHz (bit 7), the receive elastic buffer at its smallest
/// threshold (bits 1:0) — the clock comes from the MCU, not a crystal at the PHY.
const RCSR_50MHZ_REFERENCE: u16 = 0x0081;
/// MDIO reads of the link waited for at start (a cable takes a few seconds to negotiate;
/// the link task reads it again every 100 ms afterwards).
const LINK_POLLS: u32 = 200;
/// The pad setting of every ENET pad: 100 MHz speed, drive strength 5, fast slew, 100 kΩ
/// pull-up kept (NXP's setting for RMII pads in its SDK examples).
const PAD: u32 = 0xB0E9;

/// A mux register's "software input on": the pad's input path stays on in an output mode.
const SION: u32 = 1 << 4;

/// The DMA memory: rings and buffers, in DTCM (`.bss`; the data cache does not cover it).
static mut MEMORY: EnetMemory = EnetMemory::new();

/// The receive half, the ENET interrupt's.
static RX: Mutex<RefCell<Option<EnetRx<Inline<RX_QUEUE_BYTES>, Mmio>>>> =
    Mutex::new(RefCell::new(None));

/// The ENET's registers.
fn regs() -> Mmio {
    // SAFETY: ENET1's register window on the i.MX RT1062.
    unsafe { Mmio::new(ral::enet::ENET1 as usize) }
}

/// PLL6 at 50 MHz driven out on the reference pad, the ENET's clock gate on, the pads
/// muxed (RXD0/1, CRS_DV, RX_ER, TXD0/1, TX_EN, REF_CLK, MDC, MDIO), the PHY powered and
/// out of reset.
pub fn clocks_and_pins() {
    // SAFETY: each instance taken once, here, before anything else uses them.
    let (ccm, analog, gpr, iomuxc, gpio2) = unsafe {
        (
            ral::ccm::CCM::instance(),
            ral::ccm_analog::CCM_ANALOG::instance(),
            ral::iomuxc_gpr::IOMUXC_GPR::instance(),
            ral::iomuxc::IOMUXC::instance(),
            ral::gpio::GPIO2::instance(),
        )
    };
    ral::modify_reg!(ral::ccm_analog, analog, PLL_ENET, POWERDOWN: 0, BYPASS: 0, DIV_SELECT: 1, ENABLE: 1);
    while ral::read_reg!(ral::ccm_analog, analog, PLL_ENET, LOCK == 0) {}
    ral::modify_reg!(ral::ccm, ccm, CCGR1, CG5: 0b11);
    // The ENET's transmit reference from PLL6, driven out to the PHY.
    ral::modify_reg!(ral::iomuxc_gpr, gpr, GPR1, ENET1_CLK_SEL: ENET1_CLK_SEL_0, ENET1_TX_CLK_DIR: ENET1_TX_CLK_DIR_1);

    // Each ENET pad: its mux (ALT3, or ALT0 for MDC/MDIO, ALT6 with SION for the reference
    // clock, which the ENET reads back) and its pad setting; then the daisy chains that pick
    // these pads for the ENET's inputs.
    let i = &*iomuxc;
    let pads = [
        (&i.SW_MUX_CTL_PAD_GPIO_B1_04, &i.SW_PAD_CTL_PAD_GPIO_B1_04, 3), // RXD0
        (&i.SW_MUX_CTL_PAD_GPIO_B1_05, &i.SW_PAD_CTL_PAD_GPIO_B1_05, 3), // RXD1
        (&i.SW_MUX_CTL_PAD_GPIO_B1_06, &i.SW_PAD_CTL_PAD_GPIO_B1_06, 3), // CRS_DV
        (&i.SW_MUX_CTL_PAD_GPIO_B1_07, &i.SW_PAD_CTL_PAD_GPIO_B1_07, 3), // TXD0
        (&i.SW_MUX_CTL_PAD_GPIO_B1_08, &i.SW_PAD_CTL_PAD_GPIO_B1_08, 3), // TXD1
        (&i.SW_MUX_CTL_PAD_GPIO_B1_09, &i.SW_PAD_CTL_PAD_GPIO_B1_09, 3), // TX_EN
        (&i.SW_MUX_CTL_PAD_GPIO_B1_10, &i.SW_PAD_CTL_PAD_GPIO_B1_10, 6 | SION), // REF_CLK
        (&i.SW_MUX_CTL_PAD_GPIO_B1_11, &i.SW_PAD_CTL_PAD_GPIO_B1_11, 3), // RX_ER
        (&i.SW_MUX_CTL_PAD_GPIO_B1_14, &i.SW_PAD_CTL_PAD_GPIO_B1_14, 0), // MDC
        (&i.SW_MUX_CTL_PAD_GPIO_B1_15, &i.SW_PAD_CTL_PAD_GPIO_B1_15, 0), // MDIO
    ];
    for (mux, pad, alt) in pads {
        mux.write(alt);
        pad.write(PAD);
    }
    i.ENET_IPG_CLK_RMII_SELECT_INPUT.write(1); // GPIO_B1_10, ALT6
    i.ENET_MDIO_SELECT_INPUT.write(2); // GPIO_B1_15, ALT0
    i.ENET0_RXDATA_SELECT_INPUT.write(1); // GPIO_B1_04, ALT3
    i.ENET1_RXDATA_SELECT_INPUT.write(1); // GPIO_B1_05, ALT3
    i.ENET_RXEN_SELECT_INPUT.write(1); // GPIO_B1_06, ALT3
    i.ENET_RXERR_SELECT_INPUT.write(1); // GPIO_B1_11, ALT3
    // The PHY's power (GPIO_B0_15) on, its reset (GPIO_B0_14, active low) pulsed.
    ral::write_reg!(ral::iomuxc, iomuxc, SW_MUX_CTL_PAD_GPIO_B0_14, 5);
    ral::write_reg!(ral::iomuxc, iomuxc, SW_MUX_CTL_PAD_GPIO_B0_15, 5);
    ral::modify_reg!(ral::gpio, gpio2, GDIR, |d| d | (1 << 14) | (1 << 15));
    ral::modify_reg!(ral::gpio, gpio2, DR, |d| (d | (1 << 15)) & !(1 << 14));
    cortex_m::asm::delay(100_000);
    ral::modify_reg!(ral::gpio, gpio2, DR, |d| d | (1 << 14));
    cortex_m::asm::delay(1_000_000);
}

/// Brings the ENET up with address `mac`: the PHY found by scanning MDIO, its RMII clock
/// set, the link waited for (a bounded time), the receive half handed to the interrupt
/// (unmasked by the caller). The transmit half, and what reads the link for the stack.
pub fn start(mac: [u8; 6]) -> Option<(EnetTx<Mmio>, LinkReader)> {
    // SAFETY: taken once, here.
    let memory = unsafe { &mut *core::ptr::addr_of_mut!(MEMORY) };
    let config = EnetConfig {
        mac,
        interface: PhyInterface::Rmii,
        // MDC at most 2.5 MHz from an IPG clock of up to 150 MHz.
        mdc_divider: 29,
        rx_align: 16,
        // The RT's transmit accelerator skips the two bytes in front of the frame.
        tx_shift16: true,
        tx_checksum_insertion: true,
        // The receive accelerator checks IPv4 TCP/UDP checksums into each descriptor.
        rx_checksum_status: true,
    };
    let mut enet = Enet::new(regs(), memory, config).ok()?;
    let mdio = enet.mdio();
    let phy = mdio::scan(&mdio)?;
    defmt::info!("PHY {=u32:#x} at MDIO address {=u8}", phy.id, phy.address);
    mdio.write(phy.address, DP83825_RCSR, RCSR_50MHZ_REFERENCE).ok()?;
    phy.restart_autoneg(&mdio).ok()?;
    match phy.wait_link(&mdio, LINK_POLLS) {
        Ok(link) => enet.set_link(link),
        Err(_) => defmt::warn!("no link yet: starting at 100 Mbit/s full duplex"),
    }
    let (rx, tx) = enet.start(RX_QUEUE.producer());
    critical_section::with(|cs| RX.borrow(cs).replace(Some(rx)));
    Some((tx, LinkReader { mdio, phy }))
}

/// The PHY's link bit, read over MDIO (linklab-mac's driver asks every 100 ms).
pub struct LinkReader {
    mdio: Mdio<Mmio>,
    phy: Phy,
}

impl linklab_mac::embassy::LinkStatus for LinkReader {
    fn is_up(&mut self, _now_ns: u64) -> bool {
        self.phy.link_up(&self.mdio)
    }
}

/// The ENET's interrupt (ENET1, IRQ 114): frames into the RX queue.
#[no_mangle]
extern "C" fn ENET() {
    critical_section::with(|cs| {
        if let Some(rx) = RX.borrow(cs).borrow_mut().as_mut() {
            rx.on_interrupt();
        }
    });
}
