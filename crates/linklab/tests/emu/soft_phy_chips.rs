//! `linklab emu chips`: the soft PHY counted on the three ISAs of the soft PHY's chips (riscv32imac
//! on `virt`, thumbv8m.main on `mps2-an505`, thumbv6m on `microbit`), then each chip's
//! line-rate prediction. The test recomputes every prediction from the counts the same run
//! measured (its JSON: the bench's raw instruction counts, the stack's counted parts) and
//! holds the goal against them: at least 90 % of 10BASE-T each way on the ESP32-C6 at
//! 160 MHz, the RP2350 at 150 MHz and the RP2040 at 120 MHz with PIO decoding and encoding
//! the line, one core for the PHY at most. Needs QEMU and the images (scripts/check builds
//! them); about 5 s of QEMU.

use std::process::Command;

use linklab_testkit::device::one_at_a_time;
use linklab_testkit::linklab_bin;
use serde_json::Value;

fn num(v: &Value, key: &str) -> f64 {
    v[key]
        .as_f64()
        .unwrap_or_else(|| panic!("no number {key} in {v}"))
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// The costs of one ISA, recomputed from the bench's raw counts in the report.
struct Costs {
    decode: f64,
    encode: f64,
    fcs: f64,
}

fn costs_from_counts(isa: &Value) -> Costs {
    let bench = &isa["bench"];
    let calibration = &bench["calibration"];
    let known = num(calibration, "loop_instructions");
    let counted = num(calibration, "counted");
    assert!(
        (counted - known).abs() <= known * 0.001,
        "the counter does not count instructions: {calibration}"
    );
    let mut decode: f64 = 0.0;
    for case in bench["cases"].as_array().unwrap() {
        assert_eq!(case["ok"], case["frames"], "a frame decoded wrong: {case}");
        if case["case"].as_str().unwrap().starts_with("goal-4x") {
            decode = decode.max(num(case, "instructions") / num(case, "bits"));
        }
    }
    assert!(decode > 0.0, "no goal-4x case: {bench}");
    let costs = Costs {
        decode,
        encode: num(isa, "encode_2x_per_bit"),
        fcs: num(isa, "fcs_per_byte"),
    };
    assert!(
        close(num(isa, "decode_4x_goal_per_bit"), costs.decode),
        "{isa}"
    );
    // The bench report rounds the encoder's and the FCS's figures to 0.001.
    assert!((num(bench, "encode_2x_instructions_per_bit") - costs.encode).abs() < 0.001);
    assert!((num(bench, "mac_fcs_instructions_per_byte") - costs.fcs).abs() < 0.001);
    costs
}

/// The costs with PIO decoding and encoding, recomputed from the bench's raw counts: the
/// symbol decoder per bit (the worse case), the wire bytes' copy per bit, the same FCS.
fn pio_costs_from_counts(isa: &Value) -> Costs {
    let plain = costs_from_counts(isa);
    let bench = &isa["bench"];
    let per_bit = |prefix: &str| {
        bench["cases"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|c| c["case"].as_str().unwrap().starts_with(prefix))
            .map(|c| num(c, "instructions") / num(c, "bits"))
            .fold(0.0, f64::max)
    };
    let costs = Costs {
        decode: per_bit("symbols-"),
        encode: per_bit("tx-bytes"),
        fcs: plain.fcs,
    };
    assert!(costs.decode > 0.0 && costs.encode > 0.0, "{bench}");
    assert!(
        close(num(isa, "pio_symbols_per_bit"), costs.decode),
        "{isa}"
    );
    assert!(
        close(num(isa, "pio_tx_copy_per_bit"), costs.encode),
        "{isa}"
    );
    costs
}

/// One direction's prediction recomputed: (PHY core MIPS, stack core MIPS).
fn mips(c: &Costs, stack: &Value, model: &Value, dual: bool, direction: &str) -> (f64, f64) {
    let (slot, frame_bits) = (num(model, "slot_bits"), num(model, "frame_wire_bits"));
    let (bytes, ack_bits, ack_bytes) = (
        num(model, "frame_bytes"),
        num(model, "ack_wire_bits"),
        num(model, "ack_bytes"),
    );
    let phy_rx = c.decode * slot + c.fcs * bytes + (c.encode * ack_bits + c.fcs * ack_bytes) / 2.0;
    let phy_tx =
        c.encode * frame_bits + c.fcs * bytes + (c.decode * ack_bits + c.fcs * ack_bytes) / 2.0;
    let p = |k: &str| num(stack, k);
    let st_rx = p("main_per_pass")
        + p("main_per_rx_frame")
        + bytes * p("main_per_rx_byte")
        + (p("main_per_tx_frame") + ack_bytes * p("main_per_tx_byte")) / 2.0;
    let st_tx = p("main_per_pass")
        + p("main_per_tx_frame")
        + bytes * p("main_per_tx_byte")
        + (p("main_per_rx_frame") + ack_bytes * p("main_per_rx_byte")) / 2.0;
    let (phy, st) = match direction {
        "receive" => (phy_rx, st_rx),
        "send" => (phy_tx, st_tx),
        _ => (phy_rx + phy_tx, st_rx + st_tx),
    };
    let line = num(model, "line_mbit");
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
    let report: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let _ = std::fs::remove_file(&json);
    let cpi = num(&report, "cpi");
    let model = &report["model"];
    let isas = report["isas"].as_array().unwrap();
    let boards: Vec<&str> = isas.iter().map(|i| i["board"].as_str().unwrap()).collect();
    assert_eq!(boards, ["riscv32-virt", "mps2-an505", "microbit"]);
    let mut goal_rows = 0;
    for chip in report["predictions"].as_array().unwrap() {
        let isa = isas
            .iter()
            .find(|i| i["board"] == chip["isa_board"])
            .unwrap_or_else(|| panic!("no count for {chip}"));
        let pio = chip["pio"].as_bool().unwrap_or(false);
        let costs = if pio {
            pio_costs_from_counts(isa)
        } else {
            costs_from_counts(isa)
        };
        let mhz = num(chip, "mhz");
        let dual = chip["dual_core"].as_bool().unwrap();
        for d in chip["directions"].as_array().unwrap() {
            let direction = d["direction"].as_str().unwrap();
            let (phy, stack) = mips(&costs, &chip["stack_parts"], model, dual, direction);
            assert!(close(num(d, "phy_core_mips"), phy), "{chip} {d}: {phy}");
            assert!(
                close(num(d, "stack_core_mips"), stack),
                "{chip} {d}: {stack}"
            );
            let busiest = phy.max(stack);
            let share = (mhz / cpi / busiest).min(1.0);
            assert!(close(num(d, "line_rate_share"), share), "{d}");
            assert!(close(num(d, "break_even_cpi"), mhz / busiest), "{d}");
            assert!(close(num(d, "mhz_for_line_rate"), busiest * cpi), "{d}");
            // The goal: each way (full duplex is reported, not the goal).
            let name = chip["chip"].as_str().unwrap();
            let goal_chip = (name.starts_with("ESP32-C6") && mhz == 160.0)
                || (name.starts_with("RP2350") && mhz == 150.0)
                || (name.starts_with("RP2040") && pio && mhz == 120.0);
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
