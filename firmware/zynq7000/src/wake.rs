//! The interrupts the CPU wakes on: the GEM's (SPI, ID 54) and the global timer's (PPI, ID
//! 27), enabled in the GIC and routed to CPU 0. None is ever taken (IRQs stay masked): WFI
//! ends when the GIC signals one, and [`clear`] drops the sources, then acknowledges and
//! ends what the GIC latched.

use zynq7000_hal::eth::EthernetId;

use crate::mpcore::{GIC, TIMER};

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

/// Clears what woke the CPU: the GEM's interrupt status (zynq7000-hal's handler), the
/// timer's event, then every interrupt the GIC latched (acknowledged and ended; a line still
/// up is signalled again).
pub fn clear() {
    crate::gem::note_interrupt(zynq7000_hal::eth::smoltcp::on_interrupt(EthernetId::Eth0));
    TIMER.clear_event();
    GIC.ack_all();
}
