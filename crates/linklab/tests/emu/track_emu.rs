//! `linklab track` end to end on booted images (root, qemu-system-arm, iperf, iperf3, gcc):
//! the lwIP peer's ELF measured twice under two labels compares unchanged (exit 0); linklab's
//! compact image beside a deliberately costlier build of it (the profile's opt-level at 1,
//! built into a target folder of its own) compares worse (exit 3) naming the received and
//! sent cost.

use std::path::{Path, PathBuf};
use std::process::Command;

use linklab_testkit::track::{stderr, stdout, track};

fn manifest() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// Writes a suite of one `[[image]]` table.
fn suite(dir: &Path, name: &str, table: &str) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    std::fs::write(&path, format!("[[image]]\n{table}")).unwrap();
    path
}

fn run(db: &Path, suite: &Path, label: &str) {
    let out = track(db, &["run", suite.to_str().unwrap(), "--label", label]);
    let text = stdout(&out);
    assert!(out.status.success(), "{text}\n{}", stderr(&out));
    assert!(!text.contains("failed"), "{text}\n{}", stderr(&out));
    eprintln!("{text}");
}

/// The compact image built with its profile's opt-level at 1 (the profile's own packages
/// keep theirs: smoltcp "s", the apps "z"): the board crate, the driver and the MAC at 1
/// (measured: flash 35 864 -> 58 356 B, 2.18 -> 2.98 / 3.17 -> 4.97 instructions per byte
/// received / sent; "z" moved them by 8 and 12 % only).
fn costlier_compact() -> PathBuf {
    let target = Path::new(env!("CARGO_TARGET_TMPDIR")).join("track-costlier-target");
    let out = Command::new("cargo")
        .current_dir(manifest().join("../../firmware"))
        .args(["build", "-q", "--profile", "minimal", "-p", "fw-mps2-an385"])
        .args(["--target", "thumbv7m-none-eabi", "--no-default-features"])
        .args(["--features", "compact", "--bin", "fw-mps2-an385-compact"])
        .env("CARGO_TARGET_DIR", &target)
        .env("CARGO_PROFILE_MINIMAL_OPT_LEVEL", "1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", stderr(&out));
    target.join("thumbv7m-none-eabi/minimal/fw-mps2-an385-compact")
}

#[test]
fn unchanged_firmware_compares_unchanged_and_a_costlier_build_worse() {
    let dir = linklab_testkit::tempdir("track-emu");
    let db = dir.join("t.sqlite");
    let lwip = manifest().join("tests/data/lwip-2.2.1-mps2-an385.elf");
    let lwip_suite = suite(
        &dir,
        "lwip",
        &format!(
            "name = \"lwip\"\nboard = \"mps2-an385\"\nelf = {:?}\naddress = \"198.18.9.2\"\nmac = \"02:4c:57:00:00:02\"\niperf = 2\nfigures = [\"flash\", \"cost\"]\n",
            lwip.to_str().unwrap()
        ),
    );
    run(&db, &lwip_suite, "lwip-a");
    run(&db, &lwip_suite, "lwip-b");
    // The default rule (5 %): with an ACK per segment this ELF's costs repeat within 0.14 %
    // over five boots (docs/track.md, Noise).
    let out = track(&db, &["compare", "lwip-a", "lwip-b"]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}\n{}",
        stdout(&out),
        stderr(&out)
    );
    eprintln!("{}", stdout(&out));

    let compact = "name = \"compact\"\nboard = \"mps2-an385\"\nimage = \"compact\"\nfigures = [\"flash\", \"cost\"]\n";
    run(&db, &suite(&dir, "compact", compact), "compact");
    let costlier = costlier_compact();
    let table = format!("{compact}elf = {:?}\n", costlier.to_str().unwrap());
    run(&db, &suite(&dir, "costlier", &table), "costlier");
    let out = track(&db, &["compare", "compact", "costlier"]);
    eprintln!("{}", stdout(&out));
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
    let named = stderr(&out);
    assert!(
        named.starts_with("linklab: worse than compact: "),
        "{named}"
    );
    for figure in ["compact rx_instr_per_byte", "compact tx_instr_per_byte"] {
        assert!(named.contains(figure), "{named}");
    }
}
