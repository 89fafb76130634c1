//! The interrupts the CPU wakes on: the GEM's (SPI, ID 54) and the global timer's (PPI, ID
//! 27), enabled in the GIC and routed to CPU 0. None is ever taken (IRQs stay masked): WFI
//! ends when the GIC signals one, and [`clear`] drops the sources, then acknowledges and
//! ends what the GIC latched.

use zynq7000_hal::eth::EthernetId;

/// The GIC's CPU interface.
const GICC: usize = 0xF8F0_0100;
/// Interrupt acknowledge.
const ICCIAR: usize = 0x0C;
/// End of interrupt.
const ICCEOIR: usize = 0x10;
/// Highest pending interrupt.
const ICCHPIR: usize = 0x18;
/// "No interrupt pending".
const SPURIOUS: u32 = 1023;

fn gicc(offset: usize) -> *mut u32 {
    (GICC + offset) as *mut u32
}

/// The GIC set up by zynq7000-hal: its fixed sensitivities, every line enabled and routed to
/// CPU 0, distributor and CPU interface on; the CPU's IRQs left masked.
pub fn init(periphs: &mut zynq7000::Peripherals) {
    // SAFETY: the registers zynq7000-hal's init handed over in `periphs`, used here once.
    let (gicc, gicd) = unsafe { (periphs.gicc.clone(), periphs.gicd.clone()) };
    let mut gic = zynq7000_hal::gic::Configurator::new_with_init(gicc, gicd);
    gic.enable_all_interrupts();
    gic.set_all_spi_interrupt_targets_cpu0();
    gic.enable();
}

/// True when the GIC signals an interrupt (WFI would end at once).
pub fn pending() -> bool {
    // SAFETY: a read-only register of the GIC's CPU interface.
    unsafe { gicc(ICCHPIR).read_volatile() & 0x3FF != SPURIOUS }
}

/// Clears what woke the CPU: the GEM's interrupt status (zynq7000-hal's handler), the
/// timer's event, then every interrupt the GIC latched (acknowledged and ended; a line still
/// up is signalled again).
pub fn clear() {
    crate::gem::note_interrupt(zynq7000_hal::eth::smoltcp::on_interrupt(EthernetId::Eth0));
    crate::timer::clear_event();
    ack_all();
}

/// Acknowledges and ends every interrupt the GIC latched (a line still up is signalled
/// again).
fn ack_all() {
    for _ in 0..8 {
        // SAFETY: acknowledging and ending interrupts on the GIC's CPU interface.
        unsafe {
            let id = gicc(ICCIAR).read_volatile() & 0x3FF;
            if id == SPURIOUS {
                break;
            }
            gicc(ICCEOIR).write_volatile(id);
        }
    }
}

/// [`clear`] for the embassy image: the HAL's embassy-net handler (which wakes the driver's
/// wakers), and embassy-time's alarm when the timer's event was what fired.
#[cfg(feature = "embassy")]
pub fn clear_embassy() {
    crate::gem::note_interrupt(zynq7000_hal::eth::embassy_net::on_interrupt(
        EthernetId::Eth0,
    ));
    if crate::timer::take_event() {
        crate::embassy::on_alarm();
    }
    ack_all();
}
