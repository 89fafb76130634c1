//! A model of the ENET as QEMU's `imx.enet` behaves with enhanced descriptors (read in its
//! `hw/net/imx_fec.c`): the registers the driver uses, a receive side that walks the ring
//! from `RDSR` writing the shift, the frame and its FCS into empty descriptors (a frame
//! longer than `MRBR` spreads over several; one past `FTRL` is cut and flagged), a transmit
//! side that sends the ready descriptors from `TDSR` when `TDAR` is written (inserting the
//! TCP/UDP checksum where `PINS` asks), and a PHY behind MDIO. What silicon adds and QEMU
//! does not model (error bits, the checksum status) the tests inject.

extern crate std;

use core::cell::RefCell;
use std::vec;
use std::vec::Vec;

use crate::descriptor::*;
use crate::regs::*;
use crate::Registers;

/// The PHY behind the model's MDIO.
pub struct PhyModel {
    pub address: u8,
    pub id: (u16, u16),
    /// The link is up and auto-negotiation complete (QEMU's PHY: from reset).
    pub links: bool,
    pub bmcr: u16,
    pub anar: u16,
    pub anlpar: u16,
}

pub struct State {
    pub regs: [u32; 0x200],
    rx_at: u32,
    tx_at: u32,
    /// Frames sent, as they left (shift skipped, checksum inserted).
    pub sent: Vec<Vec<u8>>,
    /// The `PINS` bit of each frame sent.
    pub sent_pins: Vec<bool>,
    /// The DMA address of each frame sent (its first byte read).
    pub sent_at: Vec<u32>,
    /// The buffer address of each receive descriptor written.
    pub rx_buffers: Vec<u32>,
    pub phy: PhyModel,
    /// MDIO transfers never complete.
    pub mdio_hangs: bool,
    /// The block's reset never completes.
    pub reset_hangs: bool,
    pub doorbells_rx: u32,
}

pub struct Model(pub RefCell<State>);

impl State {
    /// Moves past the receive descriptor whose word 0 was `word0` (to the ring's start after
    /// the one marked wrap).
    fn next_rx(&mut self, word0: u32) {
        self.rx_at = if word0 & WRAP != 0 {
            self.regs[RDSR / 4]
        } else {
            self.rx_at + 32
        };
    }

    /// Stops receiving when the next descriptor is not empty, as QEMU does.
    fn rx_stop_if_full(&mut self) {
        let next_empty = desc(self.rx_at).read(0) & RX_EMPTY != 0;
        self.regs[RDAR / 4] = if next_empty { RDAR_ACTIVE } else { 0 };
    }
}

fn desc(at: u32) -> &'static Descriptor {
    // SAFETY: the driver told the model where its rings are (RDSR/TDSR, advanced by 32);
    // they live in leaked memory for the whole test. Read and written as the DMA would.
    unsafe { &*(at as usize as *const Descriptor) }
}

/// The Internet checksum of `data` (for the model's checksum insertion and the tests).
pub fn internet_sum(chunks: &[&[u8]]) -> u16 {
    let mut sum: u32 = 0;
    for c in chunks {
        for pair in c.chunks(2) {
            let word = u16::from_be_bytes([pair[0], *pair.get(1).unwrap_or(&0)]);
            sum += u32::from(word);
        }
    }
    while sum >> 16 != 0 {
        sum = (sum & 0xFFFF) + (sum >> 16);
    }
    !(sum as u16)
}

/// Inserts the TCP or UDP checksum of an IPv4 frame (the field zeroed first, as the ENET
/// expects it).
fn insert_l4_checksum(frame: &mut [u8]) {
    if frame.len() < 34 || frame[12..14] != [0x08, 0x00] {
        return;
    }
    let ihl = usize::from(frame[14] & 0xF) * 4;
    let total = usize::from(u16::from_be_bytes([frame[16], frame[17]]));
    let proto = frame[23];
    let at = match proto {
        6 => 16,
        17 => 6,
        _ => return,
    };
    let l4 = 14 + ihl..14 + total;
    let l4_len = (total - ihl) as u16;
    let mut pseudo = [0u8; 12];
    pseudo[..8].copy_from_slice(&frame[26..34]);
    pseudo[9] = proto;
    pseudo[10..].copy_from_slice(&l4_len.to_be_bytes());
    let field = l4.start + at;
    let sum = internet_sum(&[&pseudo, &frame[l4.clone()]]);
    frame[field..field + 2].copy_from_slice(&sum.to_be_bytes());
}

impl Model {
    pub fn new(phy: PhyModel) -> Model {
        Model(RefCell::new(State {
            regs: [0; 0x200],
            rx_at: 0,
            tx_at: 0,
            sent: Vec::new(),
            sent_pins: Vec::new(),
            sent_at: Vec::new(),
            rx_buffers: Vec::new(),
            phy,
            mdio_hangs: false,
            reset_hangs: false,
            doorbells_rx: 0,
        }))
    }

    fn reg(&self, offset: usize) -> u32 {
        self.0.borrow().regs[offset / 4]
    }

    /// Receives `frame` as the ENET would, with `flags` (word 0) and `status` (word 2) also
    /// set on its last descriptor (errors QEMU never reports); false if no descriptor was
    /// empty (the frame waits in QEMU, which stops taking frames).
    pub fn deliver_with(&self, frame: &[u8], flags: u32, status: u32, protocol: u32) -> bool {
        let mut s = self.0.borrow_mut();
        if s.regs[RDAR / 4] == 0 {
            return false;
        }
        let shift = s.regs[RACC / 4] & RACC_SHIFT16 != 0;
        let mut bytes = Vec::new();
        if shift {
            bytes.extend_from_slice(&[0, 0]);
        }
        bytes.extend_from_slice(frame);
        bytes.extend_from_slice(&linklab_mac::fcs::fcs(frame).to_le_bytes());
        let mut last_flags = flags;
        let ftrl = s.regs[FTRL / 4] as usize;
        if bytes.len() > ftrl {
            bytes.truncate(ftrl);
            last_flags |= RX_TR | RX_LG;
        }
        if bytes.len() > (s.regs[RCR / 4] >> RCR_MAX_FL_SHIFT) as usize {
            last_flags |= RX_LG;
        }
        let mrbr = s.regs[MRBR / 4] as usize;
        if desc(s.rx_at).read(0) & RX_EMPTY == 0 {
            s.regs[RDAR / 4] = 0;
            return false;
        }
        let mut written = 0;
        while written < bytes.len() {
            let d = desc(s.rx_at);
            let word0 = d.read(0);
            if word0 & RX_EMPTY == 0 {
                // QEMU: "lost end of frame".
                break;
            }
            let chunk = (bytes.len() - written).min(mrbr);
            let address = d.read(1);
            s.rx_buffers.push(address);
            // SAFETY: the driver posted `address..address + MRBR` for the DMA to write.
            unsafe {
                core::ptr::copy_nonoverlapping(
                    bytes[written..].as_ptr(),
                    address as usize as *mut u8,
                    chunk,
                )
            };
            written += chunk;
            let last = written == bytes.len();
            let mut w0 = (word0 & WRAP) | chunk as u32;
            if last {
                w0 |= LAST | last_flags;
                d.write(2, d.read(2) | status);
                d.write(3, protocol);
                d.write(4, 1 << 31);
            }
            d.write(0, w0);
            if d.read(2) & RX_INT != 0 {
                s.regs[EIR / 4] |= if last { EIR_RXF } else { EIR_RXB };
            }
            s.next_rx(word0);
        }
        s.rx_stop_if_full();
        true
    }

    /// Receives a good frame.
    pub fn deliver(&self, frame: &[u8]) -> bool {
        self.deliver_with(frame, 0, 0, 0)
    }

    /// Hands back the next descriptor as a broken device might: `word0` as given (its
    /// length and flags), nothing written to the buffer.
    pub fn hand_back_raw(&self, word0: u32) -> bool {
        let mut s = self.0.borrow_mut();
        let d = desc(s.rx_at);
        let old = d.read(0);
        if s.regs[RDAR / 4] == 0 || old & RX_EMPTY == 0 {
            return false;
        }
        d.write(0, (old & WRAP) | (word0 & !(RX_EMPTY | WRAP)));
        s.regs[EIR / 4] |= EIR_RXF;
        s.next_rx(old);
        s.rx_stop_if_full();
        true
    }

    /// True if the interrupt line is up (an unmasked event pending).
    pub fn irq(&self) -> bool {
        let s = self.0.borrow();
        s.regs[EIR / 4] & s.regs[EIMR / 4] != 0
    }

    fn transmit(&self) {
        let mut s = self.0.borrow_mut();
        let shift = s.regs[TACC / 4] & TACC_SHIFT16 != 0;
        for _ in 0..64 {
            let d = desc(s.tx_at);
            let word0 = d.read(0);
            if word0 & TX_READY == 0 {
                break;
            }
            let len = (word0 & LENGTH) as usize;
            let address = d.read(1);
            // SAFETY: the driver gave `address..address + len` for the DMA to read.
            let mut frame =
                unsafe { core::slice::from_raw_parts(address as usize as *const u8, len) }.to_vec();
            if shift {
                frame.drain(..2.min(frame.len()));
            }
            let pins = d.read(2) & TX_PINS != 0;
            if pins {
                insert_l4_checksum(&mut frame);
            }
            s.sent.push(frame);
            s.sent_pins.push(pins);
            s.sent_at.push(address);
            d.write(0, word0 & !TX_READY);
            d.write(4, 1 << 31);
            s.tx_at = if word0 & WRAP != 0 {
                s.regs[TDSR / 4]
            } else {
                s.tx_at + 32
            };
        }
    }

    fn mdio(&self, frame: u32) {
        let mut s = self.0.borrow_mut();
        s.regs[MMFR / 4] = frame;
        if s.mdio_hangs {
            return;
        }
        let phy = ((frame >> MMFR_PA_SHIFT) & 0x1F) as u8;
        let reg = ((frame >> MMFR_RA_SHIFT) & 0x1F) as u8;
        let read = frame & MMFR_OP_READ != 0;
        let p = &mut s.phy;
        let mut value = 0xFFFF;
        if phy == p.address {
            let aneg_done = p.links;
            if read {
                value = match reg {
                    0 => p.bmcr,
                    1 => 0x7809 | if aneg_done { 0x0024 } else { 0 },
                    2 => p.id.0,
                    3 => p.id.1,
                    4 => p.anar,
                    5 => p.anlpar,
                    _ => 0,
                };
            } else if reg == 0 {
                p.bmcr = (frame & 0x7980) as u16;
            } else if reg == 4 {
                p.anar = frame as u16;
            }
        }
        if read {
            s.regs[MMFR / 4] = (frame & 0xFFFF_0000) | u32::from(value);
        }
        s.regs[EIR / 4] |= EIR_MII;
    }
}

impl Registers for &Model {
    fn read(&self, offset: usize) -> u32 {
        self.reg(offset)
    }

    fn write(&self, offset: usize, value: u32) {
        match offset {
            EIR => self.0.borrow_mut().regs[EIR / 4] &= !value,
            ECR => {
                let mut s = self.0.borrow_mut();
                if value & ECR_RESET != 0 {
                    let phy = core::mem::replace(
                        &mut s.phy,
                        PhyModel {
                            address: 0,
                            id: (0, 0),
                            links: false,
                            bmcr: 0,
                            anar: 0,
                            anlpar: 0,
                        },
                    );
                    let hangs = s.reset_hangs;
                    s.regs = [0; 0x200];
                    s.phy = phy;
                    s.regs[ECR / 4] = if hangs { ECR_RESET } else { 0xF000_0000 };
                    s.regs[RCR / 4] = 0x05EE_0001;
                    s.regs[FTRL / 4] = FTRL_RESET;
                    return;
                }
                s.regs[ECR / 4] = value;
                if value & ECR_ETHEREN == 0 {
                    s.regs[RDAR / 4] = 0;
                    s.rx_at = s.regs[RDSR / 4];
                    s.tx_at = s.regs[TDSR / 4];
                }
            }
            RDAR => {
                let mut s = self.0.borrow_mut();
                s.doorbells_rx += 1;
                if s.regs[ECR / 4] & ECR_ETHEREN != 0 && s.regs[RDAR / 4] == 0 {
                    let empty = desc(s.rx_at).read(0) & RX_EMPTY != 0;
                    s.regs[RDAR / 4] = if empty { RDAR_ACTIVE } else { 0 };
                }
            }
            TDAR if self.reg(ECR) & ECR_ETHEREN != 0 => self.transmit(),
            MMFR => self.mdio(value),
            RDSR => {
                let mut s = self.0.borrow_mut();
                s.regs[RDSR / 4] = value & !7;
                s.rx_at = value & !7;
            }
            TDSR => {
                let mut s = self.0.borrow_mut();
                s.regs[TDSR / 4] = value & !7;
                s.tx_at = value & !7;
            }
            MRBR => self.0.borrow_mut().regs[MRBR / 4] = value & 0x3FF0,
            o if o < 0x800 => self.0.borrow_mut().regs[o / 4] = value,
            _ => {}
        }
    }
}

/// `value` moved to memory below 4 GiB (the ENET's descriptors hold 32-bit addresses), for
/// the rest of the test run.
pub fn low<T>(value: T) -> &'static mut T {
    let size = core::mem::size_of::<T>().max(1);
    assert!(core::mem::align_of::<T>() <= 4096);
    // SAFETY: a fresh anonymous private mapping, read and written only through the returned
    // reference (and the model's DMA through the addresses the driver hands it).
    unsafe {
        let p = libc::mmap(
            core::ptr::null_mut(),
            size,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_32BIT,
            -1,
            0,
        );
        assert!(p != libc::MAP_FAILED, "mmap(MAP_32BIT) failed");
        let p = p.cast::<T>();
        p.write(value);
        &mut *p
    }
}

/// A PHY as QEMU's i.MX6 has it: at address 6, the identifier 0x0007_C0D1, advertising and
/// seeing 10/100.
pub fn qemu_phy() -> PhyModel {
    PhyModel {
        address: 6,
        id: (0x0007, 0xC0D1),
        links: true,
        bmcr: 0x3000,
        anar: 0x01E1,
        anlpar: 0x0F71,
    }
}

/// Frames of every length from `min` to `max` bytes, `n` of them, with recognisable bytes.
pub fn frames(n: usize, min: usize, max: usize) -> Vec<Vec<u8>> {
    (0..n)
        .map(|i| {
            let len = min + (i * 379) % (max - min + 1);
            let mut f = vec![0u8; len];
            for (j, b) in f.iter_mut().enumerate() {
                *b = (i * 31 + j) as u8;
            }
            f[..6].copy_from_slice(&super::MAC);
            f[12..14].copy_from_slice(&[0x88, 0xB5]);
            f
        })
        .collect()
}
