//! The hostile-peer campaign of tests/hostile.rs (`linklab_testkit::hostile`) against linklab's
//! firmware on an emulated board: `linklab emu riscv32-virt` (and `sabrelite`, over
//! linklab-imx-enet) boots once and every case runs against it in turn (each waits until
//! the previous case's peers are gone). The firmware has 2 HTTP sockets, 1 TCP echo socket
//! and 4 iperf3 sockets, and a 2-datagram UDP echo buffer. Last, `linklab emu` is killed with
//! SIGKILL: its QEMU must die with it.
//! Needs root and QEMU, as tests/emu.rs.

use std::time::Duration;

use linklab_testkit::device::Device;
use linklab_testkit::hostile::{self as campaign, wait_quiet};

#[test]
fn riscv32_virt_survives_the_hostile_campaign() {
    whole_campaign("riscv32-virt");
}

/// The i.MX6 FEC iperf study's board (`linklab emu sabrelite`): the same campaign
/// over the ENET's driver.
#[test]
fn sabrelite_survives_the_hostile_campaign() {
    whole_campaign("sabrelite");
}

/// Every case of the campaign against `board`'s main-loop image, booted once.
fn whole_campaign(board: &str) {
    let mut dev = Device::emu(board);
    let quiet = Duration::from_secs(15);
    campaign::udp_echo_answers_right_after_a_spoofed_burst(&dev);
    wait_quiet(&dev, quiet);
    campaign::idle_http_holders_give_way(&dev, 2);
    wait_quiet(&dev, quiet);
    campaign::idle_http_holders_give_way(&dev, 6);
    wait_quiet(&dev, quiet);
    campaign::idle_iperf3_controls_give_way(&dev, 4);
    wait_quiet(&dev, quiet);
    campaign::a_download_stays_a_zero_window_reader_goes(&dev);
    wait_quiet(&dev, quiet);
    campaign::oversized_requests_do_not_wedge_http(&dev, &linklab_testkit::tempdir("hostile-emu"));
    wait_quiet(&dev, quiet);
    campaign::a_continuous_syn_flood_does_not_lock_out_clients(&dev);
    wait_quiet(&dev, quiet);
    campaign::spoofed_syns_do_not_kill_services(&dev);
    wait_quiet(&dev, quiet);
    campaign::a_syn_behind_filtered_frames_finds_room(&dev);
    // Killed outright, `linklab emu` takes its QEMU (and so the TAP) with it.
    dev.kill_leaves_nothing();
}

/// The campaign's idle-holder and spoofed-SYN cases (a SYN behind filtered frames among
/// them) on the main loop over zynq7000-hal's GEM driver (`linklab emu zynq7000`): the apps'
/// SYN rule there looks at the next frame in the HAL's RX ring (the HAL has no peek of its
/// own).
#[test]
fn zynq7000_idle_holders_and_spoofed_syns_give_way() {
    let mut dev = Device::emu("zynq7000");
    let quiet = Duration::from_secs(15);
    campaign::idle_http_holders_give_way(&dev, 2);
    wait_quiet(&dev, quiet);
    campaign::idle_http_holders_give_way(&dev, 6);
    wait_quiet(&dev, quiet);
    campaign::idle_iperf3_controls_give_way(&dev, 4);
    wait_quiet(&dev, quiet);
    campaign::udp_echo_answers_right_after_a_spoofed_burst(&dev);
    wait_quiet(&dev, quiet);
    campaign::spoofed_syns_do_not_kill_services(&dev);
    wait_quiet(&dev, quiet);
    campaign::a_continuous_syn_flood_does_not_lock_out_clients(&dev);
    wait_quiet(&dev, quiet);
    campaign::a_syn_behind_filtered_frames_finds_room(&dev);
    dev.kill_leaves_nothing();
}
