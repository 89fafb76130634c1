//! The ENET's registers the driver uses: byte offsets from the block's base and their bits,
//! as the i.MX6 and i.MX RT reference manuals name them (the same block on every chip the
//! crate README lists).

/// Interrupt event register (write 1 to clear).
pub const EIR: usize = 0x004;
/// Interrupt mask register (1 = the event raises the interrupt line).
pub const EIMR: usize = 0x008;
/// Receive descriptor active: written (any value with [`RDAR_ACTIVE`]) after empty
/// descriptors were added; the ENET clears it when it finds none.
pub const RDAR: usize = 0x010;
/// Transmit descriptor active: written after ready descriptors were added.
pub const TDAR: usize = 0x014;
/// Ethernet control register.
pub const ECR: usize = 0x024;
/// MII management frame register (MDIO).
pub const MMFR: usize = 0x040;
/// MII speed control register (the MDC divider).
pub const MSCR: usize = 0x044;
/// MIB control register.
pub const MIBC: usize = 0x064;
/// Receive control register.
pub const RCR: usize = 0x084;
/// Transmit control register.
pub const TCR: usize = 0x0C4;
/// Physical address, lower (the first four bytes of the station address).
pub const PALR: usize = 0x0E4;
/// Physical address, upper (the last two bytes, in bits 31:16).
pub const PAUR: usize = 0x0E8;
/// Opcode and pause duration of the PAUSE frames the ENET sends.
pub const OPD: usize = 0x0EC;
/// Individual (unicast) hash table, upper and lower.
pub const IAUR: usize = 0x118;
/// Individual hash table, lower.
pub const IALR: usize = 0x11C;
/// Group (multicast) hash table, upper.
pub const GAUR: usize = 0x120;
/// Group hash table, lower.
pub const GALR: usize = 0x124;
/// Transmit FIFO watermark (store and forward).
pub const TFWR: usize = 0x144;
/// Receive descriptor ring start.
pub const RDSR: usize = 0x180;
/// Transmit descriptor ring start.
pub const TDSR: usize = 0x184;
/// Maximum receive buffer size (a multiple of 16).
pub const MRBR: usize = 0x188;
/// Receive FIFO section full threshold (0: store and forward).
pub const RSFL: usize = 0x190;
/// Frame truncation length.
pub const FTRL: usize = 0x1B0;
/// Transmit accelerator function configuration.
pub const TACC: usize = 0x1C0;
/// Receive accelerator function configuration.
pub const RACC: usize = 0x1C4;

/// EIR/EIMR: a frame was received (the last descriptor of a frame written).
pub const EIR_RXF: u32 = 1 << 25;
/// EIR/EIMR: a receive descriptor (not the frame's last) was written.
pub const EIR_RXB: u32 = 1 << 24;
/// EIR/EIMR: an MDIO transfer completed.
pub const EIR_MII: u32 = 1 << 23;
/// EIR/EIMR: the DMA saw a bus error (the ENET stops; it needs a restart).
pub const EIR_EBERR: u32 = 1 << 22;
/// EIR/EIMR: a frame longer than RCR's maximum was received (babbling receive).
pub const EIR_BABR: u32 = 1 << 30;
/// EIR/EIMR: a transmitted frame was longer than the maximum (babbling transmit).
pub const EIR_BABT: u32 = 1 << 29;

/// RDAR/TDAR: the ring is active.
pub const RDAR_ACTIVE: u32 = 1 << 24;
/// TDAR: the ring is active.
pub const TDAR_ACTIVE: u32 = 1 << 24;

/// ECR: reset the block (self-clearing).
pub const ECR_RESET: u32 = 1 << 0;
/// ECR: the MAC is enabled.
pub const ECR_ETHEREN: u32 = 1 << 1;
/// ECR: enhanced (32-byte) buffer descriptors and the 1588 timer.
pub const ECR_EN1588: u32 = 1 << 4;
/// ECR: 1000 Mbit/s (the gigabit ENETs: i.MX6, i.MX RT1170's ENET_1G).
pub const ECR_SPEED_1000: u32 = 1 << 5;
/// ECR: descriptors are little-endian (descriptor byte swap).
pub const ECR_DBSWP: u32 = 1 << 8;

/// MMFR: start of frame (01).
pub const MMFR_ST: u32 = 0b01 << 30;
/// MMFR: operation write (01).
pub const MMFR_OP_WRITE: u32 = 0b01 << 28;
/// MMFR: operation read (10).
pub const MMFR_OP_READ: u32 = 0b10 << 28;
/// MMFR: the PHY address field's shift.
pub const MMFR_PA_SHIFT: u32 = 23;
/// MMFR: the register address field's shift.
pub const MMFR_RA_SHIFT: u32 = 18;
/// MMFR: turnaround (10).
pub const MMFR_TA: u32 = 0b10 << 16;

/// MSCR: the MDC divider's shift (MDC = module clock / ((MII_SPEED + 1) × 2)).
pub const MSCR_MII_SPEED_SHIFT: u32 = 1;

/// MIBC: the statistics counters are disabled.
pub const MIBC_DIS: u32 = 1 << 31;

/// RCR: MII or RMII mode (must be set).
pub const RCR_MII_MODE: u32 = 1 << 2;
/// RCR: flow control: received PAUSE frames pause the transmitter.
pub const RCR_FCE: u32 = 1 << 5;
/// RCR: RGMII mode (the gigabit ENETs).
pub const RCR_RGMII_EN: u32 = 1 << 6;
/// RCR: RMII mode.
pub const RCR_RMII_MODE: u32 = 1 << 8;
/// RCR: 10 Mbit/s in RMII mode.
pub const RCR_RMII_10T: u32 = 1 << 9;
/// RCR: drop the FCS of received frames (left clear: the FCS is written, the driver drops it).
pub const RCR_CRCFWD: u32 = 1 << 14;
/// RCR: the maximum frame length field's shift.
pub const RCR_MAX_FL_SHIFT: u32 = 16;
/// RCR: disable receive while transmitting (half duplex).
pub const RCR_DRT: u32 = 1 << 1;

/// TCR: full duplex.
pub const TCR_FDEN: u32 = 1 << 2;

/// TFWR: store and forward (the whole frame in the FIFO before it goes out, which the
/// checksum insertion needs).
pub const TFWR_STRFWD: u32 = 1 << 8;

/// TACC: the frames handed over start with two bytes to skip (the MAC's word-aligned
/// layout, [`linklab_mac::FRAME_ALIGN`]).
pub const TACC_SHIFT16: u32 = 1 << 0;

/// RACC: two bytes are written in front of each received frame, so its IPv4 header lands on
/// a word.
pub const RACC_SHIFT16: u32 = 1 << 7;

/// The frame truncation length at reset: frames longer than 2047 bytes are cut there and
/// flagged truncated.
pub const FTRL_RESET: u32 = 0x7FF;
