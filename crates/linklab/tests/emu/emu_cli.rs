//! `linklab emu`'s command line: bad input gets one line and leaves nothing behind (no TAP,
//! no namespace, no QEMU left). Needs root for the namespaces; the one boot here is an image
//! that must fail to boot.

use std::process::Command;

use linklab_testkit::{assert_one_line_error, linklab_bin, linklab_in, Netns};

/// `linklab emu ARGS`, run.
fn emu(args: &[&str]) -> std::process::Output {
    Command::new(linklab_bin())
        .arg("emu")
        .args(args)
        .output()
        .expect("run linklab")
}

#[test]
fn bad_input_gets_one_line_and_leaves_nothing_behind() {
    assert_one_line_error(
        &emu(&["esp32", "--tap", "t0", "--ip", "198.18.0.2/24"]),
        "invalid value 'esp32' for '<BOARD>': unknown board; expected one of mps2-an385, riscv32-virt, zynq7000, sabrelite",
    );
    assert_one_line_error(
        &emu(&["cost", "esp32"]),
        "invalid value 'esp32' for '<BOARD>': unknown board",
    );
    assert_one_line_error(&emu(&["mps2-an385", "--tap", "t0", "--ip", "nope"]), "--ip");
    assert_one_line_error(
        &emu(&[
            "mps2-an385",
            "--tap",
            "t0",
            "--ip",
            "198.18.0.2/24",
            "--icount",
            "99",
        ]),
        "--icount",
    );

    soft_phy_line_options_are_refused();

    // A TAP that exists and is not ours.
    let ns = Netns::new("emubad");
    ns.run(&["ip", "tuntap", "add", "dev", "taken0", "mode", "tap"]);
    for image in ["main", "embassy"] {
        let out = linklab_in(
            &ns,
            &[
                "emu",
                "riscv32-virt",
                "--image",
                image,
                "--tap",
                "taken0",
                "--ip",
                "198.18.0.2/24",
            ],
        );
        assert_one_line_error(&out, "already exists");
    }
    ns.run(&["ip", "link", "show", "taken0"]);
    images_a_verb_does_not_take_are_refused();

    // No QEMU on PATH: the package to install.
    let out = Command::new(linklab_bin())
        .args([
            "emu",
            "riscv32-virt",
            "--tap",
            "llq0",
            "--ip",
            "198.18.0.2/24",
        ])
        .env("PATH", "/nonexistent")
        .output()
        .expect("run linklab");
    assert_one_line_error(&out, "install Debian's qemu-system-misc package");

    an_image_that_does_not_boot_leaves_no_tap(&ns);
}

/// The soft-PHY line: a board without the image, factors and jitter the decoder does not
/// take, line options for an image without a line.
fn soft_phy_line_options_are_refused() {
    let line = |extra: &[&str]| {
        let mut a = vec!["riscv32-virt", "--tap", "t0", "--ip", "198.18.0.2/24"];
        a.extend_from_slice(extra);
        emu(&a)
    };
    assert_one_line_error(
        &emu(&[
            "mps2-an385",
            "--tap",
            "t0",
            "--ip",
            "198.18.0.2/24",
            "--image",
            "soft-phy",
        ]),
        "--image soft-phy: mps2-an385 has no soft-phy image (riscv32-virt has one",
    );
    let soft = ["--image", "soft-phy"];
    for (bad, names) in [
        (
            &[&soft[..], &["--oversample", "3"]].concat(),
            "--oversample",
        ),
        (
            &[&soft[..], &["--oversample", "9"]].concat(),
            "--oversample",
        ),
        (&[&soft[..], &["--drift", "6000"]].concat(), "--drift"),
        (&[&soft[..], &["--drift=-20000"]].concat(), "--drift"),
        (
            &[&soft[..], &["--jitter", "0.5"]].concat(),
            "--jitter 0.5: out of range at --oversample 4",
        ),
        (
            &[&soft[..], &["--oversample", "8", "--jitter", "1.5"]].concat(),
            "--jitter",
        ),
        (&[&soft[..], &["--jitter", "x"]].concat(), "--jitter"),
        (&[&soft[..], &["--noise", "1.5"]].concat(), "--noise"),
        (
            &vec!["--oversample", "5"],
            "--oversample: only with --image soft-phy",
        ),
    ] {
        assert_one_line_error(&line(bad), names);
    }
    assert!(!std::path::Path::new("/sys/class/net/t0").exists());
}

/// A measuring verb with an image it does not measure, one image at a time; an image without
/// a simulator profile is neither counted nor predicted.
fn images_a_verb_does_not_take_are_refused() {
    assert_one_line_error(
        &emu(&["cost", "mps2-an385", "--image", "serial"]),
        "cost: mps2-an385's serial image has no NIC",
    );
    assert_one_line_error(
        &emu(&["blast", "zynq7000"]),
        "blast: zynq7000's main image has no packet blaster",
    );
    assert_one_line_error(
        &emu(&[
            "mps2-an385",
            "--image",
            "embassy",
            "--image",
            "serial",
            "--tap",
            "t0",
            "--ip",
            "198.18.0.2/24",
        ]),
        "--image",
    );
    // An image without a simulator profile is neither counted nor predicted.
    assert_one_line_error(
        &emu(&["parts", "mps2-an385", "--image", "embassy"]),
        "has no simulator profile",
    );
    assert_one_line_error(&emu(&["predict", "zynq7000"]), "has no simulator profile");
    assert_one_line_error(
        &emu(&["phy10", "mps2-an385"]),
        "mps2-an385 has no phy10-bench image",
    );
}

/// An image that does not boot (the riscv image on the ARM board): a timeout with the
/// console's last lines, and no TAP left behind.
fn an_image_that_does_not_boot_leaves_no_tap(ns: &Netns) {
    let image = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../firmware/target/riscv32imac-unknown-none-elf/release/fw-riscv32-virt");
    if image.is_file() {
        let out = linklab_in(
            ns,
            &[
                "emu",
                "mps2-an385",
                "--tap",
                "llbad0",
                "--ip",
                "198.18.0.2/24",
                "--image",
                image.to_str().unwrap(),
                "--boot-timeout",
                "3",
            ],
        );
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("did not boot within 3 s") || stderr.contains("QEMU exited"),
            "{stderr}"
        );
        let links = String::from_utf8(ns.run(&["ip", "-o", "link", "show"]).stdout).unwrap();
        assert!(!links.contains(" llbad0:"), "{links}");
    }
}
