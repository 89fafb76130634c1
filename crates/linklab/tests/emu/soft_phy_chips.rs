//! `linklab emu chips`: the soft PHY counted on the three ISAs of the soft PHY's chips (riscv32imac
//! on `virt`, thumbv8m.main on `mps2-an505`, thumbv6m on `microbit`), then each chip's
//! line-rate prediction. The test recomputes every prediction from the counts the same run
//! measured (its JSON: the bench's raw instruction counts, the stack's counted parts) and
//! holds the goal against them: at least 90 % of 10BASE-T each way on the ESP32-C6 at
//! 160 MHz, the RP2350 at 150 MHz and the RP2040 at 120 MHz with PIO decoding and encoding
//! the line, one core for the PHY at most. Needs QEMU and the images (scripts/check builds
//! them); about 5 s of QEMU.

use std::process::Command;

use linklab_results::emu::chips::{ChipsReport, IsaCosts, Model, StackParts};
use linklab_results::emu::phy10::Phy10Report;
use linklab_testkit::device::one_at_a_time;
use linklab_testkit::linklab_bin;

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The costs of one ISA, recomputed from the bench's raw counts in the report.
struct Costs {
    decode: f64,
    encode: f64,
    fcs: f64,
}

/// The most instructions per wire bit of the bench's cases whose name starts with `prefix`.
fn per_bit(bench: &Phy10Report, prefix: &str) -> f64 {
    bench
        .cases
        .iter()
        .filter(|c| c.case.starts_with(prefix))
        .map(|c| c.instructions as f64 / c.bits as f64)
        .fold(0.0, f64::max)
}

fn costs_from_counts(isa: &IsaCosts) -> Costs {
    let bench = &isa.bench;
    let calibration = &bench.calibration;
    let (known, counted) = (
        calibration.loop_instructions as f64,
        calibration.counted as f64,
    );
    assert!(
        (counted - known).abs() <= known * 0.001,
        "the counter does not count instructions: {calibration:?}"
    );
    for case in &bench.cases {
        assert_eq!(case.ok, case.frames, "a frame decoded wrong: {case:?}");
    }
    let decode = per_bit(bench, "goal-4x");
    assert!(decode > 0.0, "no goal-4x case: {bench:?}");
    let costs = Costs {
        decode,
        encode: isa.encode_2x_per_bit,
        fcs: isa.fcs_per_byte,
    };
    assert!(close(isa.decode_4x_goal_per_bit, costs.decode), "{isa:?}");
    // The bench report rounds the encoder's and the FCS's figures to 0.001.
    assert!((bench.encode_2x_instructions_per_bit - costs.encode).abs() < 0.001);
    assert!((bench.mac_fcs_instructions_per_byte - costs.fcs).abs() < 0.001);
    costs
}

/// The costs with PIO decoding and encoding, recomputed from the bench's raw counts: the
/// symbol decoder per bit (the worse case), the wire bytes' copy per bit, the same FCS.
fn pio_costs_from_counts(isa: &IsaCosts) -> Costs {
    let plain = costs_from_counts(isa);
    let costs = Costs {
        decode: per_bit(&isa.bench, "symbols-"),
        encode: per_bit(&isa.bench, "tx-bytes"),
        fcs: plain.fcs,
    };
    assert!(costs.decode > 0.0 && costs.encode > 0.0, "{:?}", isa.bench);
    let given = |v: Option<f64>| v.unwrap_or_else(|| panic!("no PIO figure: {isa:?}"));
    assert!(
        close(given(isa.pio_symbols_per_bit), costs.decode),
        "{isa:?}"
    );
    assert!(
        close(given(isa.pio_tx_copy_per_bit), costs.encode),
        "{isa:?}"
    );
    costs
}

/// One direction's prediction recomputed: (PHY core MIPS, stack core MIPS).
fn mips(c: &Costs, p: &StackParts, model: &Model, dual: bool, direction: &str) -> (f64, f64) {
    let (slot, frame_bits) = (model.slot_bits, model.frame_wire_bits);
    let (bytes, ack_bits, ack_bytes) = (model.frame_bytes, model.ack_wire_bits, model.ack_bytes);
    let phy_rx = c.decode * slot + c.fcs * bytes + (c.encode * ack_bits + c.fcs * ack_bytes) / 2.0;
    let phy_tx =
        c.encode * frame_bits + c.fcs * bytes + (c.decode * ack_bits + c.fcs * ack_bytes) / 2.0;
    let st_rx = p.main_per_pass
        + p.main_per_rx_frame
        + bytes * p.main_per_rx_byte
        + (p.main_per_tx_frame + ack_bytes * p.main_per_tx_byte) / 2.0;
    let st_tx = p.main_per_pass
        + p.main_per_tx_frame
        + bytes * p.main_per_tx_byte
        + (p.main_per_rx_frame + ack_bytes * p.main_per_rx_byte) / 2.0;
    let (phy, st) = match direction {
        "receive" => (phy_rx, st_rx),
        "send" => (phy_tx, st_tx),
        _ => (phy_rx + phy_tx, st_rx + st_tx),
    };
    let line = model.line_mbit;
    let (phy, st) = (line * phy / slot, line * st / slot);
    if dual {
        (phy, st)
    } else {
        (phy + st, 0.0)
    }
}

#[test]
fn chips_predictions_follow_from_the_counts_and_meet_the_goal() {
    let _turn = one_at_a_time();
    let json = std::env::temp_dir().join(format!("linklab-chips-{}.json", std::process::id()));
    let out = Command::new(linklab_bin())
        .args(["emu", "chips", "--json"])
        .arg(&json)
        .output()
        .expect("run linklab");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "stdout: {stdout}\nstderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let report: ChipsReport = linklab_testkit::docs::read(&json);
    let _ = std::fs::remove_file(&json);
    let (cpi, model) = (report.cpi, &report.model);
    let boards: Vec<&str> = report.isas.iter().map(|i| i.board.as_str()).collect();
    assert_eq!(boards, ["riscv32-virt", "mps2-an505", "microbit"]);
    let mut goal_rows = 0;
    for chip in &report.predictions {
        let isa = report
            .isas
            .iter()
            .find(|i| i.board == chip.isa_board)
            .unwrap_or_else(|| panic!("no count for {chip:?}"));
        let costs = if chip.pio {
            pio_costs_from_counts(isa)
        } else {
            costs_from_counts(isa)
        };
        let mhz = chip.mhz;
        for d in &chip.directions {
            let direction = d.direction.as_str();
            let (phy, stack) = mips(&costs, &chip.stack_parts, model, chip.dual_core, direction);
            let at = format!("{} {direction}", chip.chip);
            assert!(close(d.phy_core_mips, phy), "{at}: {d:?}: {phy}");
            assert!(close(d.stack_core_mips, stack), "{at}: {d:?}: {stack}");
            let busiest = phy.max(stack);
            let share = (mhz / cpi / busiest).min(1.0);
            assert!(close(d.line_rate_share, share), "{d:?}");
            assert!(close(d.break_even_cpi, mhz / busiest), "{d:?}");
            assert!(close(d.mhz_for_line_rate, busiest * cpi), "{d:?}");
            // The goal: each way (full duplex is reported, not the goal).
            let name = chip.chip.as_str();
            let goal_chip = (name.starts_with("ESP32-C6") && mhz == 160.0)
                || (name.starts_with("RP2350") && mhz == 150.0)
                || (name.starts_with("RP2040") && chip.pio && mhz == 120.0);
            if goal_chip && direction != "full-duplex" {
                goal_rows += 1;
                assert!(share >= 0.9, "{name} at {mhz} MHz, {direction}: {share}");
            }
        }
    }
    assert_eq!(
        goal_rows, 8,
        "ESP32-C6, RP2350 (M33, Hazard3), RP2040 with PIO: receive and send each"
    );
    assert!(stdout.contains("break-even CPI"), "{stdout}");
}
