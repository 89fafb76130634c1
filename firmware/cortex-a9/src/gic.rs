//! The MPCore's GIC (v1): its CPU interface at PERIPHBASE + 0x100 and distributor at
//! PERIPHBASE + 0x1000. A board enables the lines it serves, routed to CPU 0; the firmware
//! either takes the interrupts (sabrelite) or keeps IRQs masked and lets WFI end on a
//! signalled one (zynq7000), then acknowledges what the GIC latched.

/// CPU interface: control.
const ICCICR: usize = 0x00;
/// CPU interface: priority mask.
const ICCPMR: usize = 0x04;
/// CPU interface: interrupt acknowledge.
const ICCIAR: usize = 0x0C;
/// CPU interface: end of interrupt.
const ICCEOIR: usize = 0x10;
/// CPU interface: highest pending interrupt.
const ICCHPIR: usize = 0x18;
/// Distributor: control.
const ICDDCR: usize = 0x000;
/// Distributor: set-enable, one bit per interrupt.
const ICDISER: usize = 0x100;
/// Distributor: priorities, one byte per interrupt.
const ICDIPR: usize = 0x400;
/// Distributor: targets, one byte per interrupt.
const ICDIPTR: usize = 0x800;
/// "No interrupt pending".
pub const SPURIOUS: u32 = 1023;

/// The GIC of the MPCore whose private region starts at a PERIPHBASE.
#[derive(Clone, Copy)]
pub struct Gic {
    cpu: usize,
    dist: usize,
}

impl Gic {
    /// The GIC of the MPCore at `periphbase`.
    pub const fn at(periphbase: usize) -> Gic {
        Gic {
            cpu: periphbase + 0x100,
            dist: periphbase + 0x1000,
        }
    }

    fn cpu(&self, offset: usize) -> *mut u32 {
        (self.cpu + offset) as *mut u32
    }

    fn dist(&self, offset: usize) -> *mut u32 {
        (self.dist + offset) as *mut u32
    }

    /// Distributor and CPU interface on, every priority let through.
    pub fn init(&self) {
        // SAFETY: the GIC's registers, word aligned.
        unsafe {
            self.cpu(ICCPMR).write_volatile(0xF0);
            self.dist(ICDDCR).write_volatile(1);
            self.cpu(ICCICR).write_volatile(1);
        }
    }

    /// Enables interrupt `id` at the highest priority, routed to CPU 0.
    pub fn enable(&self, id: u32) {
        let id = id as usize;
        // SAFETY: as above; byte registers reached byte-wise, as the GIC allows.
        unsafe {
            (self.dist(ICDIPR) as *mut u8).add(id).write_volatile(0);
            (self.dist(ICDIPTR) as *mut u8).add(id).write_volatile(1);
            self.dist(ICDISER + 4 * (id / 32))
                .write_volatile(1 << (id % 32));
        }
    }

    /// True when the GIC signals an interrupt (WFI would end at once).
    pub fn pending(&self) -> bool {
        // SAFETY: a read-only register of the CPU interface.
        unsafe { self.cpu(ICCHPIR).read_volatile() & 0x3FF != SPURIOUS }
    }

    /// Acknowledges the highest pending interrupt: its ID ([`SPURIOUS`]: none). End it with
    /// [`Gic::end`].
    pub fn acknowledge(&self) -> u32 {
        // SAFETY: as above.
        unsafe { self.cpu(ICCIAR).read_volatile() & 0x3FF }
    }

    /// Ends interrupt `id` (acknowledged before).
    pub fn end(&self, id: u32) {
        // SAFETY: as above.
        unsafe { self.cpu(ICCEOIR).write_volatile(id) };
    }

    /// Acknowledges and ends every interrupt the GIC latched (a line still up is signalled
    /// again).
    pub fn ack_all(&self) {
        for _ in 0..8 {
            let id = self.acknowledge();
            if id == SPURIOUS {
                break;
            }
            self.end(id);
        }
    }
}
