//! The firmware's packet blaster on both emulated boards: `linklab emu blast BOARD` boots each
//! image at QEMU `-icount shift=0` in a namespace of its own, asks for 1472- and 18-byte UDP
//! datagrams sent raw (straight to the NIC driver) and through smoltcp, receives them, and
//! sends four requests the device must refuse, then frames with wrong IPv4, TCP and UDP
//! checksums from a raw socket. Every frame must be accounted for (received = handed to the
//! driver − driver drops − host drops), every payload intact, every bad request counted, every
//! wrong checksum dropped and counted. The figures are a benchmark (firmware README), not asserted; that they were
//! measured is.
//!
//! Needs root and QEMU, like tests/emu.rs (scripts/check builds the images first).

use std::process::Command;

use linklab_results::emu::blast::BlastReport;
use linklab_testkit::{assert_one_line_error, linklab_bin};

fn blast(board: &str) {
    let json =
        std::env::temp_dir().join(format!("linklab-blast-{board}-{}.json", std::process::id()));
    let out = Command::new(linklab_bin())
        .args(["emu", "blast", board, "--ms", "50", "--json"])
        .arg(&json)
        .output()
        .expect("run linklab");
    let report: Option<BlastReport> = json.exists().then(|| linklab_testkit::docs::read(&json));
    let _ = std::fs::remove_file(&json);
    assert!(
        out.status.success(),
        "stdout: {}\nstderr: {}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let report = report.expect("--json written");
    assert_eq!(report.runs.len(), 4, "{report:?}");
    for (run, (way, len)) in report.runs.iter().zip([
        ("raw", 1472),
        ("stack_udp", 1472),
        ("raw", 18),
        ("stack_udp", 18),
    ]) {
        assert_eq!((run.way.as_str(), run.payload_bytes), (way, len));
        assert!(run.frames_to_driver > 100, "{run:?}");
        let handed = u64::from(run.frames_to_driver - run.driver_drops);
        assert_eq!(run.received, handed - run.host_drops, "{run:?}");
        assert_eq!((run.pattern_errors, run.duplicates), (0, 0), "{run:?}");
        assert!(run.send_work > 0 && run.send_work <= run.work, "{run:?}");
    }
    assert_eq!(report.requests_refused_counted, 4, "{report:?}");
    assert_eq!(report.requests_refused_sent, 4, "{report:?}");
    assert_eq!(report.blasts_counted, 4, "{report:?}");
    // Wrong IPv4 header, TCP and UDP checksums from a raw socket: dropped (no answer, while
    // the same frames with right checksums are answered) and counted by the firmware's MAC.
    let bad = &report.bad_checksums;
    assert_eq!((bad.sent_wrong, bad.counted), (3, 3), "{bad:?}");
    assert_eq!(bad.cases.len(), 3, "{bad:?}");
    for c in &bad.cases {
        assert!(!c.wrong_answered, "{c:?}");
        assert!(c.right_answered, "{c:?}");
    }
    for size in [1472, 18] {
        let c = report
            .ceiling
            .iter()
            .find(|c| c.payload_bytes == size)
            .unwrap_or_else(|| panic!("no ceiling for {size} B: {report:?}"));
        assert!(c.blast_instr_per_frame > 0.0, "{c:?}");
        assert!(c.stack_udp_instr_per_frame > 0.0, "{c:?}");
    }
}

#[test]
fn blaster_on_both_boards_accounts_for_every_frame() {
    blast("riscv32-virt");
    blast("mps2-an385");
    // Bad options: one line, no QEMU started.
    let out = Command::new(linklab_bin())
        .args(["emu", "blast", "riscv32-virt", "--ms", "0"])
        .output()
        .expect("run linklab");
    assert_one_line_error(&out, "--ms");
    let out = Command::new(linklab_bin())
        .args(["emu", "riscv32-virt", "--ms", "10"])
        .output()
        .expect("run linklab");
    assert_one_line_error(&out, "--ms");
}
