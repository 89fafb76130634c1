//! The pin-level RP2040 harness's own tests (emulators/rp2040js/test, `node --test`): core 1
//! over rp2040js on a bare chip (CPUID, the FIFOs and their flags and interrupts, the
//! per-core divider and interpolators, shared spinlocks and GPIO, each core's interrupt
//! routing, the boot ROM's holding pen) and on the two-core test image
//! (examples/boards/rp2040-two-cores-test: embassy-rp's spawn_core1, FIFO ping-pong, a
//! contended spinlock, an interrupt on each core, pause and resume), and that the cores keep
//! step. Builds the test image itself; needs node with `npm ci` in emulators/rp2040js.

use std::process::Command;

use linklab_testkit::rp2040js::{build_elf, root};
use linklab_testkit::run_ok;

#[test]
fn the_harness_node_tests_pass_on_a_bare_chip_and_the_two_core_image() {
    let elf = build_elf("rp2040-two-cores-test", "", "image");
    let out = run_ok(
        Command::new("node")
            .args(["--test", "emulators/rp2040js/test"])
            .env("RP2040JS_TWO_CORES_ELF", &elf)
            .current_dir(root()),
    );
    let text = String::from_utf8_lossy(&out.stdout);
    let summary: Vec<&str> = text.lines().filter(|l| l.starts_with("# ")).collect();
    println!("{}", summary.join("\n"));
    assert!(text.contains("# fail 0"), "{text}");
    let passed: u32 = text
        .lines()
        .find_map(|l| l.strip_prefix("# pass "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0);
    assert!(
        passed >= 10,
        "node ran {passed} tests (a folder without its tests?): {text}"
    );
}
