//! The measuring verbs that take no namespace of the test's own: `linklab emu phy10`
//! (linklab-phy10's decoder counted on riscv32imac) and `linklab emu throughput`'s clock.
//! Needs root, QEMU and the images (scripts/check builds them).

use std::process::Command;

use linklab_results::emu::phy10::Phy10Report;
use linklab_results::emu::throughput::ThroughputReport;
use linklab_testkit::device::one_at_a_time;
use linklab_testkit::{assert_one_line_error, linklab_bin};

/// linklab-phy10's decoder on riscv32imac: `linklab emu phy10` builds firmware/phy10-bench,
/// runs it under QEMU `-icount shift=0` and fails unless every frame of every case (clean, the
/// goal points, 802.3's jitter, +-0.5 % at 4x and 8x) came out bit-exact. The instruction
/// counts are a benchmark (README), not asserted here; that they were counted is.
#[test]
fn phy10_bench_decodes_every_frame_on_riscv32() {
    let _turn = one_at_a_time();
    let json = std::env::temp_dir().join(format!("linklab-phy10-{}.json", std::process::id()));
    let out = Command::new(linklab_bin())
        .args(["emu", "phy10", "riscv32-virt", "--json"])
        .arg(&json)
        .output()
        .expect("run linklab");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(stdout.contains("instructions/bit"), "{stdout}");
    let report: Phy10Report = linklab_testkit::docs::read(&json);
    let _ = std::fs::remove_file(&json);
    assert_eq!(report.isa, "riscv32imac");
    assert!(report.cases.len() >= 9, "{report:?}");
    for case in &report.cases {
        assert!(case.frames > 0, "{case:?}");
        assert_eq!(case.ok, case.frames, "{case:?}");
        assert!(case.instructions > 0, "{case:?}");
        assert_eq!(case.bits, case.frames * 1526 * 8, "wire bits: {case:?}");
    }
    // The bench only runs where minstret counts instructions exactly.
    let out = Command::new(linklab_bin())
        .args(["emu", "phy10", "mps2-an385"])
        .output()
        .expect("run linklab");
    assert_one_line_error(
        &out,
        "phy10: --image phy10-bench: mps2-an385 has no phy10-bench image (riscv32-virt has one",
    );
}

/// `linklab emu throughput` at a fixed instruction rate gives every rate in the device's
/// clock (at 62.5 MIPS the host could not keep up, and the host's rate was printed
/// as the device's): each figure is the device's bytes over the device's seconds, and the
/// host's rate comes beside it only with the line saying the emulator fell behind real time,
/// and then it is below the device's. Free-running, the device's clock is the host's.
#[test]
fn throughput_at_a_fixed_rate_is_in_the_devices_clock() {
    let _turn = one_at_a_time();
    let json = linklab_testkit::tempdir("throughput").join("mps2.json");
    let out = Command::new(linklab_bin())
        .args(["emu", "throughput", "mps2-an385", "--icount", "4", "--json"])
        .arg(&json)
        .output()
        .expect("run linklab");
    assert!(
        out.status.success(),
        "stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: ThroughputReport = linklab_testkit::docs::read(&json);
    let runs = &report.runs;
    assert_eq!(runs.len(), 2, "{report:?}");
    let icount = runs[1].icount.as_deref();
    assert!(runs[0].icount.is_none() && icount == Some("shift=4,align=on,sleep=on"));
    assert_eq!(runs[1].mips, Some(62.5));
    let stderr = String::from_utf8_lossy(&out.stderr);
    for run in runs {
        let http = run.http_1mb.as_ref().expect("the 1 MB download");
        for (way, f) in [
            ("device_receives", &run.device_receives),
            ("device_sends", &run.device_sends),
            ("http_1mb", http),
        ] {
            let (bytes, device_s) = (f.bytes as f64, f.device_seconds);
            assert!(bytes > 0.0 && device_s > 0.0, "{way}: {f:?}");
            let (rate, given, host) = if way == "http_1mb" {
                (bytes / device_s / 1000.0, f.kb_per_s, f.host_kb_per_s)
            } else {
                (bytes * 8.0 / device_s / 1e6, f.mbps, f.host_mbps)
            };
            let given = given.unwrap_or_else(|| panic!("{way}: no rate: {f:?}"));
            assert!(
                (given - rate).abs() <= rate * 0.001 + 0.1,
                "{way}: {given} vs {rate}: {f:?}"
            );
            match &f.behind {
                Some(note) => {
                    assert!(note.contains("fell behind real time"), "{note}");
                    assert!(stderr.contains(note.as_str()), "the note is said: {stderr}");
                    let real_s = f.real_seconds.unwrap();
                    assert!(real_s > device_s * 1.1, "{way}: {f:?}");
                    assert!(host.unwrap() < given, "{way}: {f:?}");
                }
                None => assert!(host.is_none() && f.real_seconds.is_none(), "{f:?}"),
            }
        }
    }
}
