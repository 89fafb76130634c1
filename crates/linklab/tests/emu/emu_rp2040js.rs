//! The RP2040 soft-PHY example on one core (examples/boards/rp2040-soft-phy, features
//! `one-core,cpu-decoder`: PIO samples the RX pin at 40 MHz into a DMA ring and
//! linklab-phy10's decoder recovers the clock in a task on core 0, beside the stack) at the
//! pin level: rp2040js runs it under emulators/rp2040js/harness.mjs, which keeps one clock
//! for the cores, the PIO state machines at their dividers and the line; `linklab emu line`
//! joins the line to a TAP in a namespace the test creates (198.18.0.0/15). Stock ping,
//! curl of the bench files with their CRC32s and stock iperf 2 both ways; the rates in the
//! emulated chip's clock (the harness's status file). The design the two-core one
//! (tests/emu_rp2040js_two_cores.rs) is measured against.
//!
//! Needs root and node with `npm ci` in emulators/rp2040js (scripts/setup); builds the
//! example with those features itself (seconds after the check's build of the example).

use linklab_testkit::device::DEVICE;
use linklab_testkit::iperf2::iperf_in;
use linklab_testkit::ping::Ping;
use linklab_testkit::rp2040js::{build_elf, PinLevel};

/// Ping, CRC-checked HTTP and iperf 2 both ways through the pin-level RP2040 on one core.
#[test]
fn rp2040_soft_phy_in_rp2040js_serves_ping_http_iperf2() {
    let elf = build_elf("rp2040-soft-phy", "one-core,cpu-decoder", "one-core");
    let pin = PinLevel::start("rp2040js", &elf, 4, None);

    // The device answers each of 5 pings.
    let ping = Ping::new(DEVICE, 5)
        .deadline(60)
        .assert_answered(|argv| pin.ns.run(argv).stdout);
    println!(
        "rp2040js: ping 5 answered; host clock: {}",
        ping.lines().last().unwrap_or("")
    );

    for path in ["/100kB.txt", "/1MB.txt"] {
        let (len, secs) = pin.curl_crc(path);
        println!(
            "rp2040js: curl {path} {len} B, CRC32 right, in {secs:.3} emulated s: {:.0} kB/s from the device",
            len as f64 / secs / 1e3
        );
    }

    // -R: the device sends on the client's connection for 2 s of the host's time.
    let (run, secs) = pin
        .status
        .timed(|| iperf_in(&pin.ns, 300, &["-t", "2", "-R", "-y", "C"]));
    assert!(run.sent_inline() > 10_000, "{}", run.text);
    println!(
        "rp2040js: iperf 2 -R from the device {} B in {secs:.3} emulated s: {:.0} kB/s",
        run.sent_inline(),
        run.sent_inline() as f64 / secs / 1e3
    );
    pin.wait_iperf2_closed();
    // iperf 2 into the device: exactly the bytes asked for.
    let (run, secs) = pin
        .status
        .timed(|| iperf_in(&pin.ns, 300, &["-n", "100K", "-y", "C"]));
    assert_eq!(run.received(), 100 * 1024, "{}", run.text);
    println!(
        "rp2040js: iperf 2 to the device {} B in {secs:.3} emulated s: {:.0} kB/s",
        run.received(),
        run.received() as f64 / secs / 1e3
    );

    // /stats: the apps' counters, the MAC's and the PHY's; once the test's stream is closed,
    // the iperf 2 bytes it counted are the ones sent to it.
    pin.wait_iperf2_closed();
    let stats = pin.stats();
    assert_eq!(stats.text("board"), "rp2040-soft-phy", "{stats}");
    assert!(stats.top_flag("link_up"), "{stats}");
    assert!(stats.counter("http", "responses") >= 2, "{stats}");
    assert!(
        stats.counter("iperf2", "bytes_received") >= 100_000,
        "{stats}"
    );
    linklab_testkit::assert_conserved(&stats);
    // Every frame the MAC handed the transmitter went out (none refused for a link pulse).
    assert_eq!(stats.counter("phy", "tx_refused"), 0, "{stats}");
    println!("rp2040js: device phy {}", stats.show("phy"));

    let status = pin.status.read();
    let counts = pin.stop();
    assert!(counts.ends_with("law=holds"), "{counts}");
    assert!(counts.contains(" fcs_errors=0 "), "{counts}");
    println!("rp2040js: {counts}");
    println!("rp2040js: harness {status}");
}
