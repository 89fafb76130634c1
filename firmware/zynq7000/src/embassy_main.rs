//! linklab firmware for QEMU's xilinx-zynq-a9, embassy image: this package's bring-up (its
//! library), zynq7000-hal's embassy-net `Driver` for the GEM (behind `GemDevice`, which adds
//! the counters of `/stats`, QEMU's RX restart and linklab-perf's `ServiceGate`), embassy-net
//! 0.9.1, and linklab-firmware's embassy image — linklab-perf's embassy apps, each in its own
//! task, on the buffer sizes of the main-loop image, the executor measured as the main loop
//! is, `/stats` — as the linklab-mac images run it. Logs are defmt frames on UART0, decoded
//! by `linklab emu zynq7000 --image embassy`.
#![no_std]
#![no_main]

use core::cell::Cell;

use embassy_net::Runner;
use fw_zynq7000::embassy::idle;
use fw_zynq7000::gem::{self, GemDevice, Rings};
use fw_zynq7000::{init, uart, wake, CONFIG_ADDR, TIMER};
use linklab_firmware::embassy::{self as image, measured, EmbassyBoard, Layer};
use linklab_mac::Counters;
use static_cell::StaticCell;

/// Where the rings are, for `/stats` (set once, before the tasks run).
struct RingsCell(Cell<Option<Rings>>);

// SAFETY: one core, no interrupt taken.
unsafe impl Sync for RingsCell {}

static RINGS: RingsCell = RingsCell(Cell::new(None));

/// The GEM's counters for `/stats`, from its registers and rings.
fn counters() -> Counters {
    RINGS
        .0
        .get()
        .map_or_else(Counters::default, |rings| gem::counters(&rings))
}

/// Nanoseconds since the global timer started.
fn now_ns() -> u64 {
    TIMER.now_ns()
}

extern "C" {
    static _stack_limit: u8;
    static _stack_top: u8;
}

#[no_mangle]
extern "C" fn main_entry() -> ! {
    let board = EmbassyBoard {
        name: "zynq7000",
        now_ns,
        work: now_ns,
        counts_instructions: false,
        link_up: fw_zynq7000::phy::link_up_now,
        idle,
        console: uart::write_bytes,
        stack_limit: core::ptr::addr_of!(_stack_limit) as usize,
        stack_top: Some(core::ptr::addr_of!(_stack_top) as usize),
    };
    let painted = linklab_firmware::stack::paint(board.stack_limit, board.stack_top);
    uart::init();
    linklab_cortex_a9::set_console(uart::write);
    let mut periphs = init();
    TIMER.init();
    wake::init(&mut periphs);
    linklab_firmware::embassy::logger::set_console(board.console);
    // SAFETY: RAM, inside the region the linker script keeps free for the blob.
    let config = unsafe { image::config(CONFIG_ADDR) };
    let (driver, rings, _phy) = match gem::start(config.mac) {
        Ok(parts) => parts,
        Err(why) => {
            defmt::error!("linklab firmware: {=str}", why);
            fw_zynq7000::halt();
        }
    };
    RINGS.0.set(Some(rings));
    static DEVICE: StaticCell<GemDevice> = StaticCell::new();
    let device = DEVICE.init(GemDevice::new(driver, rings).with_gate(image::gate()));
    // The HAL's embassy driver reports the link through its own state; the PHY is up.
    zynq7000_hal::eth::embassy_net::update_link_state(embassy_net_driver::LinkState::Up);
    let (stack, runner) = image::net_stack(&board, device, &config);
    image::serve(board, painted, stack, &config, counters, move |spawner| {
        if net_task(runner).map(|t| spawner.spawn(t)).is_err() {
            defmt::error!("linklab firmware: a task could not be spawned");
        }
    })
}

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, &'static mut GemDevice>) -> ! {
    measured(Layer::Stack, runner.run()).await
}

#[panic_handler]
fn panic(info: &core::panic::PanicInfo) -> ! {
    image::panic(info);
    fw_zynq7000::halt()
}
