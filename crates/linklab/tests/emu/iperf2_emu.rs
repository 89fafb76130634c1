//! iperf 2 and iperf3's streams on linklab's firmware images, against the stock tools:
//! `linklab emu` boots each board's main-loop and embassy image once (mps2-an385, riscv32
//! virt, sabrelite; zynq7000's main-loop image, and its embassy image for the MSS alone; as
//! tests/emu.rs does, in a network namespace the test creates) and Debian's iperf 2.1.8 runs
//! every mode the images serve in sequence (`-n`, `-t`, `-P 2`, `-r`, `-d`, `-R`,
//! `--full-duplex`, `-X`, UDP with its server report; `-t 1` each), each test's bytes as the
//! client counted them equal to the device's counters; then stock iperf3 with three streams
//! each way and the full MSS on every connection (the regressions once seen: `-P 3`
//! refused, a 512-byte MSS); on mps2-an385's main-loop image the hostile cases (2^31
//! threads, connect-back port 0, an iperf3 cookie on 5001, a cut header, a silent holder).
//! About 40 s an image.
//!
//! These tests need root, QEMU (Debian's qemu-system-arm and qemu-system-misc), iperf3,
//! iperf and tshark.

use linklab_testkit::device::Device;
use linklab_testkit::iperf2;

/// Boots `board`'s image (`extra`: `--image embassy` for the embassy one) and runs the stock
/// peers' checks; the hostile cases too when `hostile`.
fn image(board: &str, extra: &[&str], hostile: bool) {
    let dev = Device::emu_args(board, extra);
    iperf2::iperf3_streams_and_mss(&dev);
    iperf2::tcp_modes(&dev, 2);
    iperf2::udp_mode(&dev);
    if hostile {
        iperf2::hostile(&dev);
    }
    iperf2::counters_conserve(&dev);
}

#[test]
fn mps2_an385_image_serves_iperf2_iperf3_three_streams_and_survives_hostile_headers() {
    image("mps2-an385", &[], true);
}

#[test]
fn mps2_an385_embassy_image_serves_iperf2_and_iperf3_three_streams() {
    image("mps2-an385", &["--image", "embassy"], false);
}

#[test]
fn riscv32_virt_image_serves_iperf2_and_iperf3_three_streams() {
    image("riscv32-virt", &[], false);
}

#[test]
fn riscv32_virt_embassy_image_serves_iperf2_and_iperf3_three_streams() {
    image("riscv32-virt", &["--image", "embassy"], false);
}

/// The i.MX6 FEC iperf study's board and its loop (`iperf -c HOST -r`, among the modes):
/// QEMU's sabrelite over linklab-imx-enet.
#[test]
fn sabrelite_image_serves_iperf2_and_iperf3_three_streams() {
    image("sabrelite", &[], false);
}

#[test]
fn sabrelite_embassy_image_serves_iperf2_and_iperf3_three_streams() {
    image("sabrelite", &["--image", "embassy"], false);
}

/// zynq7000-hal's GEM driver under the same apps.
#[test]
fn zynq7000_image_serves_iperf2_and_iperf3_three_streams() {
    image("zynq7000", &[], false);
}

/// zynq7000's embassy image: stock iperf3's three streams each way with the full MSS (its
/// driver had passed the HAL's 1536-byte buffer size to embassy-net as the link's MTU, and
/// every SYN-ACK offered an MSS of 1482).
#[test]
fn zynq7000_embassy_image_offers_the_full_mss() {
    let dev = Device::emu_args("zynq7000", &["--image", "embassy"]);
    iperf2::iperf3_streams_and_mss(&dev);
}
