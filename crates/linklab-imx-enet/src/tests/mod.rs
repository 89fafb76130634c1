//! The driver against a model of the ENET ([`model`]): bring-up, frames straight into the
//! RX queue's grants, bursts, a full queue, unaligned runs, every error a descriptor can
//! carry, frames longer than a buffer, lengths no frame has, transmit with checksum
//! insertion and a full ring, MDIO, the PHY scan and a PHY that never links.

extern crate std;

mod model;
mod receive;
mod transmit;

use std::vec::Vec;

use linklab_mac::{Inline, Mac, MacAddr, MacConfig, NoClock, RxFormat, RxQueue};

use self::model::{low, qemu_phy, Model, PhyModel};
use super::*;

pub(crate) const MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];

/// The RX queue of a firmware image (nine frames' worth, as `memory::QUEUE_BYTES`).
type Queue = RxQueue<Inline<16384>>;

fn model(phy: PhyModel) -> &'static Model {
    std::boxed::Box::leak(std::boxed::Box::new(Model::new(phy)))
}

/// A queue below 4 GiB (the model's DMA writes the addresses the driver posts).
fn queue() -> &'static Queue {
    low(Queue::new())
}

/// The configuration under test: QEMU's, with the alignment `rx_align`.
fn config(rx_align: usize) -> EnetConfig {
    EnetConfig {
        rx_align,
        ..EnetConfig::qemu_imx6(MAC)
    }
}

/// An ENET over `m`, started over `q`.
fn started(
    m: &'static Model,
    q: &'static Queue,
    config: EnetConfig,
) -> (
    EnetRx<Inline<16384>, &'static Model>,
    EnetTx<&'static Model>,
) {
    let enet = Enet::new(m, low(EnetMemory::new()), config).expect("init");
    enet.start(q.producer())
}

/// The MAC the firmware runs over what the driver commits.
fn mac(q: &'static Queue) -> Mac<'static, Inline<16384>, impl linklab_mac::PhyTx, NoClock> {
    Mac::new(
        q.consumer(),
        |_: &[u8]| {},
        NoClock,
        MacConfig {
            rx_format: RxFormat::Tagged,
            ..MacConfig::tap(MacAddr(MAC))
        },
    )
}

/// Every frame the MAC passes on now.
fn drain<T: linklab_mac::PhyTx>(mac: &mut Mac<'static, Inline<16384>, T, NoClock>) -> Vec<Vec<u8>> {
    let mut got = Vec::new();
    while let Some(f) = mac.receive() {
        got.push(f.to_vec());
    }
    got
}

/// The address range of `q`'s memory.
fn range_of(q: &'static Queue) -> core::ops::Range<u32> {
    let start = q as *const Queue as usize as u32;
    start..start + core::mem::size_of::<Queue>() as u32
}

#[test]
fn bring_up_programs_the_block_as_the_driver_documents() {
    let m = model(qemu_phy());
    let mem = low(EnetMemory::new());
    let rings = (mem.rx[0].address(), mem.tx[0].address());
    let enet = Enet::new(m, mem, config(16)).unwrap();
    let q = queue();
    let (rx, _tx) = enet.start(q.producer());
    let s = m.0.borrow();
    let r = |o: usize| s.regs[o / 4];
    assert_eq!(r(ECR), ECR_ETHEREN | ECR_EN1588 | ECR_DBSWP);
    assert_eq!(r(RDSR), rings.0);
    assert_eq!(r(TDSR), rings.1);
    assert_eq!(r(MRBR), 1536);
    assert_eq!(r(RACC), RACC_SHIFT16);
    assert_eq!(r(TACC), 0, "QEMU's config: no transmit shift");
    assert_eq!(r(EIMR), EIR_RXF);
    assert_eq!(r(PALR), 0x5254_0012);
    assert_eq!(r(PAUR) >> 16, 0x3456);
    assert_eq!(r(RCR) >> 16, 1522);
    assert_eq!(
        r(RCR) & RCR_CRCFWD,
        0,
        "the FCS is written, the driver drops it"
    );
    assert_ne!(r(RCR) & RCR_FCE, 0, "received PAUSE frames are honoured");
    assert_eq!(r(TCR), TCR_FDEN);
    assert_eq!(r(RDAR), RDAR_ACTIVE, "buffers posted and the ring active");
    assert!(rx.posted() > 0);
}

#[test]
fn a_reset_that_never_completes_is_an_error_not_a_hang() {
    let m = model(qemu_phy());
    m.0.borrow_mut().reset_hangs = true;
    assert_eq!(
        Enet::new(m, low(EnetMemory::new()), config(16)).err(),
        Some(InitError::ResetTimeout)
    );
}

#[test]
fn the_scan_finds_qemus_phy_and_the_link_resolves_to_100_full() {
    let m = model(qemu_phy());
    let enet = Enet::new(m, low(EnetMemory::new()), config(16)).unwrap();
    let mdio = enet.mdio();
    let phy = mdio::scan(&mdio).expect("a PHY answers");
    assert_eq!(phy.address, 6);
    assert_eq!(phy.id, 0x0007_C0D1);
    let up = Some(Link {
        speed: Speed::Mbps100,
        full_duplex: true,
    });
    assert_eq!(phy.link(&mdio), Ok(up), "QEMU's PHY is up from reset");
    phy.restart_autoneg(&mdio).unwrap();
    assert_eq!(
        phy.wait_link(&mdio, 10),
        Ok(Link {
            speed: Speed::Mbps100,
            full_duplex: true
        })
    );
    assert!(phy.link_up(&mdio));
    assert_eq!(mdio.timeouts(), 0);
}

/// "A PHY that never reports link": the wait ends after its polls, the driver goes on.
#[test]
fn a_phy_that_never_links_ends_the_wait_and_the_enet_still_starts() {
    let m = model(PhyModel {
        links: false,
        ..qemu_phy()
    });
    let mut enet = Enet::new(m, low(EnetMemory::new()), config(16)).unwrap();
    let mdio = enet.mdio();
    let phy = mdio::scan(&mdio).unwrap();
    phy.restart_autoneg(&mdio).unwrap();
    assert_eq!(phy.wait_link(&mdio, 50), Err(mdio::LinkError::NoLink));
    assert!(!phy.link_up(&mdio));
    enet.set_link(Link {
        speed: Speed::Mbps10,
        full_duplex: false,
    });
    assert_ne!(m.0.borrow().regs[RCR / 4] & RCR_DRT, 0, "half duplex");
    let q = queue();
    let (mut rx, _tx) = enet.start(q.producer());
    assert!(m.deliver(&model::frames(1, 60, 60)[0]));
    assert_eq!(rx.on_interrupt(), 1);
}

/// "An MDIO read that times out": counted, the scan finds nobody, nothing hangs.
#[test]
fn mdio_timeouts_are_counted_and_the_scan_finds_nobody() {
    let m = model(qemu_phy());
    m.0.borrow_mut().mdio_hangs = true;
    let enet = Enet::new(m, low(EnetMemory::new()), config(16)).unwrap();
    let mdio = enet.mdio();
    assert_eq!(mdio.read(6, mdio::BMSR), Err(MdioTimeout));
    assert_eq!(mdio::scan(&mdio), None);
    assert_eq!(mdio.timeouts(), 33, "one read, then one per address");
    let phy = Phy { address: 6, id: 0 };
    assert_eq!(
        phy.wait_link(&mdio, 3),
        Err(mdio::LinkError::Mdio(MdioTimeout))
    );
    assert!(!phy.link_up(&mdio));
}

#[test]
fn memory_the_32_bit_dma_cannot_reach_is_refused() {
    let m = model(qemu_phy());
    let far: &'static mut EnetMemory =
        std::boxed::Box::leak(std::boxed::Box::new(EnetMemory::new()));
    assert!(
        far as *const EnetMemory as usize as u64 >= 1 << 32,
        "the host's heap lies above 4 GiB (x86-64)"
    );
    assert_eq!(Enet::new(m, far, config(16)).err(), Some(InitError::Memory));
}
