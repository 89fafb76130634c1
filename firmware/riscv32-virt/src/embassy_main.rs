//! linklab firmware for QEMU's riscv32 `virt` machine, embassy image: the board's bring-up
//! (this package's library: entry, CSRs, UART, PLIC, virtio-net and its interrupt), an
//! `embassy_time_driver::Driver` on the ACLINT's mtime/mtimecmp, and linklab-firmware's
//! embassy image (embassy-executor, embassy-net over linklab-mac's `EmbassyMac`,
//! linklab-perf's embassy apps). Logs are defmt frames on the NS16550, decoded by
//! `linklab emu BOARD --image embassy`.
#![no_std]
#![no_main]

use fw_riscv32_virt::board::CONFIG_ADDR;
use fw_riscv32_virt::{cpu, nic, timer, uart};
use linklab_firmware::embassy::{logger, EmbassyBoard};
use linklab_mac::RxFormat;
use static_cell::StaticCell;

// embassy-time on the ACLINT: mtime (10 MHz) for now, mtimecmp for the alarm.
linklab_firmware::board_time_driver!(TIME, timer);

/// The trap handler (called from `entry.S` with interrupts off).
#[no_mangle]
extern "C" fn trap_handler() {
    let start = cpu::instret();
    let cause = cpu::mcause();
    const INTERRUPT: usize = 1 << 31;
    match (cause & INTERRUPT != 0, cause & !INTERRUPT) {
        (true, 7) => {
            // mtimecmp stays due until moved: off first, then the queue arms the next.
            timer::disarm();
            TIME.on_alarm();
        }
        (true, 11) => nic::on_external_interrupt(),
        (_, code) => {
            defmt::error!(
                "linklab firmware: unexpected trap, mcause {=usize:#x} mepc {=usize:#x}",
                code,
                cpu::mepc()
            );
            loop {
                cpu::wfi();
            }
        }
    }
    linklab_firmware::add_isr_work(cpu::instret().wrapping_sub(start));
}

/// Masks interrupts; WFI unless `ready()` or an interrupt is pending (a pending one ends
/// WFI even masked, and is taken after the unmask); unmasks.
fn idle(ready: fn() -> bool) {
    cpu::disable_interrupts();
    if !(ready() || cpu::interrupt_pending()) {
        cpu::wfi();
    }
    cpu::enable_interrupts();
}

extern "C" {
    static _ebss: u8;
    /// The top of RAM, where entry.S puts the stack pointer (link.x).
    static _stack_top: u8;
}

#[no_mangle]
extern "C" fn main_entry() -> ! {
    logger::set_console(uart::write_bytes);
    // SAFETY: RAM, inside the region the linker script keeps free for the blob.
    let config = unsafe { linklab_firmware::embassy::config(CONFIG_ADDR) };
    let tx = match nic::start() {
        Ok(tx) => tx,
        Err(why) => {
            defmt::error!("{=str}", why.trim_end());
            loop {
                cpu::wfi();
            }
        }
    };
    static TX: StaticCell<nic::Tx> = StaticCell::new();
    let tx = TX.init(tx);
    timer::disarm();
    cpu::enable_machine_interrupts();
    let board = EmbassyBoard {
        name: "riscv32-virt",
        now_ns: timer::now_ns,
        work: cpu::instret,
        counts_instructions: true,
        link_up: nic::ready,
        idle,
        console: uart::write_bytes,
        // SAFETY: taking the address of a linker symbol.
        stack_limit: core::ptr::addr_of!(_ebss) as usize,
        // SAFETY: as above.
        stack_top: Some(core::ptr::addr_of!(_stack_top) as usize),
    };
    linklab_firmware::embassy::run(board, tx, RxFormat::Tagged, config)
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    cpu::disable_interrupts();
    linklab_firmware::embassy::panic(info);
    loop {
        cpu::wfi();
    }
}
