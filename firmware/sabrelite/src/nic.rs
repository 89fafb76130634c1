//! The i.MX6's ENET at 0x0218_8000 (GIC 150) through linklab-imx-enet: brought up once (the
//! PHY found by scanning MDIO, auto-negotiation waited for a bounded time), its receive half
//! moved into a static for the interrupt handler, which fills linklab-firmware's RX queue;
//! its transmit half is the main loop's `PhyTx`. The rings, buffers and the RX queue live in
//! the non-cacheable section (sabrelite.x).

use core::sync::atomic::{AtomicBool, AtomicU8, Ordering};

use linklab_cortex_a9::polled::IrqOwned;

use linklab_firmware::memory::QUEUE_BYTES;
use linklab_firmware::RX_QUEUE;
use linklab_imx_enet::mdio::{self, LinkError};
use linklab_imx_enet::{Enet, EnetConfig, EnetMemory, EnetRx, EnetTx, Link, Mdio, Mmio, Speed};
use linklab_mac::Inline;

/// The ENET's register window.
pub const ENET_BASE: usize = 0x0218_8000;
/// The ENET's MAC interrupt at the GIC (SPI 118).
pub const IRQ_ENET: u32 = 32 + 118;
/// Reads of the PHY's link waited for at boot (QEMU's PHY is up from reset; a silicon PHY
/// takes a few seconds to negotiate, which the main loop's link bit then shows).
const LINK_POLLS: u32 = 2_000;

/// The rings and buffers the ENET's DMA shares, in the non-cacheable section.
#[link_section = ".uncached"]
static mut MEMORY: EnetMemory = EnetMemory::new();
static MEMORY_TAKEN: AtomicBool = AtomicBool::new(false);

/// The receive half, the ENET's interrupt handler's once started.
static RX: IrqOwned<EnetRx<Inline<QUEUE_BYTES>, Mmio>> = IrqOwned::new();

/// The PHY's MDIO address (0xFF: none found).
static PHY_ADDRESS: AtomicU8 = AtomicU8::new(0xFF);

extern "C" {
    /// The non-cacheable section's bounds (linklab-cortex-a9's cortex-a9.x).
    static __uncached_start: u8;
    static __uncached_end: u8;
}

/// True if `addr` lies in the non-cacheable section, where the DMA's memory must be.
fn in_uncached_section(addr: usize) -> bool {
    let start = core::ptr::addr_of!(__uncached_start) as usize;
    let end = core::ptr::addr_of!(__uncached_end) as usize;
    (start..end).contains(&addr)
}

/// The registers.
pub fn regs() -> Mmio {
    // SAFETY: the ENET's window on the i.MX6.
    unsafe { Mmio::new(ENET_BASE) }
}

/// The transmit half the main loop sends through.
pub type Tx = EnetTx<Mmio>;

/// Brings the ENET up with address `mac` (the PHY, its link, the rings) and hands its
/// receive half to the interrupt handler (the line stays disabled at the GIC until the board
/// enables it); the transmit half, or the console line saying why not.
pub fn start(mac: [u8; 6]) -> Result<Tx, &'static str> {
    if !in_uncached_section(core::ptr::addr_of!(RX_QUEUE) as usize) {
        // sabrelite.x's section picks the queue by its symbol's name: a rename moves it.
        return Err("linklab firmware: the RX queue is not in the non-cacheable section\n");
    }
    if MEMORY_TAKEN.swap(true, Ordering::AcqRel) {
        return Err("linklab firmware: the NIC was started twice\n");
    }
    // SAFETY: MEMORY_TAKEN makes this the only reference, taken once.
    let memory = unsafe { &mut *core::ptr::addr_of_mut!(MEMORY) };
    let mut enet = match Enet::new(regs(), memory, EnetConfig::qemu_imx6(mac)) {
        Ok(e) => e,
        Err(_) => return Err("linklab firmware: the ENET did not come out of reset\n"),
    };
    let mdio = enet.mdio();
    let Some(phy) = mdio::scan(&mdio) else {
        return Err("linklab firmware: no PHY answers on the ENET's MDIO\n");
    };
    PHY_ADDRESS.store(phy.address, Ordering::Release);
    let link = match phy
        .restart_autoneg(&mdio)
        .map_err(LinkError::from)
        .and_then(|()| phy.wait_link(&mdio, LINK_POLLS))
    {
        Ok(link) => link,
        Err(_) => {
            crate::uart::write("linklab firmware: the PHY reports no link yet\n");
            Link {
                speed: Speed::Mbps100,
                full_duplex: true,
            }
        }
    };
    enet.set_link(link);
    let (rx, tx) = enet.start(RX_QUEUE.producer());
    // SAFETY: the ENET's line is not enabled at the GIC yet.
    if !unsafe { RX.give(rx) } {
        return Err("linklab firmware: the NIC was started twice\n");
    }
    Ok(tx)
}

/// The ENET's interrupt: frames into the RX queue. False before [`start`].
pub fn on_interrupt() -> bool {
    // SAFETY: called only from the ENET's interrupt handler.
    unsafe { RX.get() }.map(|rx| rx.on_interrupt()).is_some()
}

/// The PHY's link bit (false before [`start`] found a PHY).
pub fn link_up() -> bool {
    match PHY_ADDRESS.load(Ordering::Acquire) {
        0xFF => false,
        address => linklab_imx_enet::Phy { address, id: 0 }.link_up(&Mdio::new(regs())),
    }
}
