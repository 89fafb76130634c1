//! The measuring verbs that take no namespace of the test's own: `linklab emu phy10`
//! (linklab-phy10's decoder counted on riscv32imac) and `linklab emu throughput`'s clock.
//! Needs root, QEMU and the images (scripts/check builds them).

use std::process::Command;

use linklab_testkit::device::one_at_a_time;
use linklab_testkit::{assert_one_line_error, linklab_bin};
use serde_json::Value;

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
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    assert_eq!(report["isa"], "riscv32imac");
    let cases = report["cases"].as_array().unwrap();
    assert!(cases.len() >= 9, "{report}");
    for case in cases {
        let frames = case["frames"].as_u64().unwrap();
        assert!(frames > 0, "{case}");
        assert_eq!(case["ok"].as_u64(), Some(frames), "{case}");
        assert!(case["instructions"].as_u64().unwrap() > 0, "{case}");
        assert_eq!(
            case["bits"].as_u64(),
            Some(frames * 1526 * 8),
            "wire bits: {case}"
        );
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
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let runs = report["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2, "{report}");
    assert!(runs[0]["icount"].is_null() && runs[1]["icount"] == "shift=4,align=on,sleep=on");
    assert_eq!(runs[1]["mips"], 62.5);
    let stderr = String::from_utf8_lossy(&out.stderr);
    for run in runs {
        for way in ["device_receives", "device_sends", "http_1mb"] {
            let f = &run[way];
            let bytes = f["bytes"].as_f64().unwrap();
            let device_s = f["device_seconds"].as_f64().unwrap();
            assert!(bytes > 0.0 && device_s > 0.0, "{way}: {f}");
            let (rate, host) = if way == "http_1mb" {
                (bytes / device_s / 1000.0, "host_kB_per_s")
            } else {
                (bytes * 8.0 / device_s / 1e6, "host_mbps")
            };
            let given = f[if way == "http_1mb" {
                "kB_per_s"
            } else {
                "mbps"
            }]
            .as_f64()
            .unwrap();
            assert!(
                (given - rate).abs() <= rate * 0.001 + 0.1,
                "{way}: {given} vs {rate}: {f}"
            );
            match f.get("behind") {
                Some(note) => {
                    let note = note.as_str().unwrap();
                    assert!(note.contains("fell behind real time"), "{note}");
                    assert!(stderr.contains(note), "the note is said: {stderr}");
                    let real_s = f["real_seconds"].as_f64().unwrap();
                    assert!(real_s > device_s * 1.1, "{way}: {f}");
                    assert!(f[host].as_f64().unwrap() < given, "{way}: {f}");
                }
                None => assert!(
                    f.get(host).is_none() && f.get("real_seconds").is_none(),
                    "{f}"
                ),
            }
        }
    }
}
