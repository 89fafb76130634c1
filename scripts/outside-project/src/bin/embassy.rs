//! linklab-perf's apps on embassy-net over linklab-mac's embassy driver and the LAN9118: the
//! iperf3 server (5201), HTTP with the bench files and `/stats` (80), TCP and UDP echo (7),
//! each in its own task, as `linklab_perf::embassy_apps!` defines them. embassy's time comes
//! from SysTick (a driver of a dozen lines below).
#![no_std]
#![no_main]

use core::cell::RefCell;
use core::task::Waker;

use cortex_m_rt::exception;
use critical_section::Mutex;
use embassy_executor::Spawner;
use embassy_net::{Runner, StackResources};
use embassy_time::Timer;
use embassy_time_queue_utils::Queue;
use linklab_lan9118::{Lan9118Rx, Lan9118Tx, Mmio};
use linklab_mac::embassy::{AlwaysUp, EmbassyMac, EmbassyTimeClock};
use linklab_mac::{Mac, RxProducer};
use linklab_perf::embassy::{
    self as apps, AppCounters, AppStats, EchoMemory, HttpMemory, IperfMemory,
};
use outside_firmware::{
    lan9118, mac_config, millis, start_clock, tick, DeviceConfig, Queue as RxBytes, RX,
};
use static_cell::ConstStaticCell;

const BOARD: &str = "mps2-an386";

static COUNTERS: AppCounters = AppCounters::new();

linklab_perf::embassy_apps! {
    // TCP sockets, window (the RX queue less two frames), send buffer, UDP datagrams, JSON
    iperf: IperfMemory<4, { 8 * 1460 }, { 4 * 1460 }, 4, 2048>,
    http: HttpMemory<1024, { 4 * 1460 }>,
    echo: EchoMemory<1024, 2>,
    counters: &COUNTERS,
    gate: None,
    routes: |stack| AppStats::new(BOARD, &COUNTERS, stack),
}

/// embassy-time's driver: SysTick counts milliseconds (its ticks) and wakes the timers due.
struct SysTickTime {
    timers: Mutex<RefCell<Queue>>,
}

impl embassy_time_driver::Driver for SysTickTime {
    fn now(&self) -> u64 {
        millis()
    }

    fn schedule_wake(&self, at: u64, waker: &Waker) {
        critical_section::with(|cs| {
            self.timers.borrow_ref_mut(cs).schedule_wake(at, waker);
        });
    }
}

embassy_time_driver::time_driver_impl!(static TIME: SysTickTime = SysTickTime {
    timers: Mutex::new(RefCell::new(Queue::new())),
});

#[exception]
fn SysTick() {
    let now = tick();
    critical_section::with(|cs| {
        TIME.timers.borrow_ref_mut(cs).next_expiration(now);
    });
}

type Driver = EmbassyMac<'static, RxBytes, Lan9118Tx<Mmio>, EmbassyTimeClock, AlwaysUp>;

#[embassy_executor::task]
async fn net_task(mut runner: Runner<'static, Driver>) -> ! {
    runner.run().await
}

/// The controller's RX FIFO into the MAC's queue every 250 µs (each commit wakes the stack).
#[embassy_executor::task]
async fn rx_task(mut nic: Lan9118Rx<Mmio>, producer: RxProducer<'static, RxBytes>) -> ! {
    loop {
        nic.on_interrupt(&producer);
        Timer::after_micros(250).await;
    }
}

#[embassy_executor::main]
async fn main(spawner: Spawner) {
    let cp = cortex_m::Peripherals::take().expect("taken once, here");
    start_clock(cp.SYST);
    let config = DeviceConfig::DEFAULT; // 198.18.0.2/24
    let Some((nic_rx, nic_tx)) = lan9118(&config) else {
        panic!("no LAN9118");
    };
    let (producer, consumer) = RX.split();
    let mac = Mac::new(consumer, nic_tx, EmbassyTimeClock, mac_config(&config));

    static RESOURCES: ConstStaticCell<StackResources<{ app_sockets(true, true) }>> =
        ConstStaticCell::new(StackResources::new());
    let driver: Driver = EmbassyMac::new(mac, AlwaysUp);
    let net = apps::static_ipv4(config.ip, config.prefix);
    let (stack, runner) = embassy_net::new(driver, net, RESOURCES.take(), millis() ^ 0x5eed);

    spawner.spawn(net_task(runner).expect("spawned once"));
    spawner.spawn(rx_task(nic_rx, producer).expect("spawned once"));
    spawn_apps::<true, true>(spawner, stack).expect("spawned once");
    apps::announce(stack, BOARD).await;
}
