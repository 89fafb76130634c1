//! `linklab emu chips`: the soft 10BASE-T PHY's costs counted on each chip's ISA, and the
//! clock at which each chip keeps line rate. Runs `linklab emu phy10` on riscv32imac
//! (`riscv32-virt`: the ESP32-C6, the RP2350's Hazard3 cores), thumbv8m.main (`mps2-an505`:
//! the RP2350's Cortex-M33) and thumbv6m (`microbit`: the RP2040's Cortex-M0+), then
//! predicts each chip at its clock ([`model`]): the PHY's core (and the stack's, on the
//! other core of a dual-core chip) at line rate, receiving, sending and both at once.
//!
//! The stack's share comes from the counted profiles of linklab's main-loop images
//! (crates/linklab-sim/data): riscv32imac's own for the RISC-V chips, the Cortex-M3's
//! (thumbv7m, a subset of the M33's ISA) for the Arm ones, the M0+ included — no stack was
//! counted on thumbv6m, so the RP2040's stack core is an estimate (its PHY core is not).
//! Instructions become time at `--cpi` (cycles per instruction; 1 by default, the project's
//! convention): the table's break-even CPI is the margin.

pub mod model;

use anyhow::Context;
use linklab_results::emu::chips::{
    self as doc, ChipPrediction, ChipsReport, DirectionPrediction, IsaCosts, Model, StackParts,
};
use linklab_results::emu::phy10::Phy10Report;
use linklab_sim::counts::{CountedProfile, Parts};

use super::phy10::{self, CaseResult};
use super::phy10_boards;
pub use model::{Direction, PhyCosts, Prediction};

/// A chip the prediction is made for.
#[derive(Clone, Copy, Debug)]
pub struct Chip {
    /// Its name and cores.
    pub name: &'static str,
    /// The board whose ISA its cores run (`linklab emu phy10 BOARD`).
    pub isa_board: &'static str,
    /// The clocks to predict at, MHz.
    pub mhz: &'static [f64],
    /// False: the stack runs on the PHY's core (one core for both).
    pub dual_core: bool,
    /// The counted profile whose main-loop parts stand for the stack.
    pub stack_profile: &'static str,
    /// True: PIO decodes each bit on its mid-bit edge and Manchester-encodes (the RP
    /// examples' default): the PHY's core decodes symbols and copies wire bytes, instead of
    /// decoding 4x samples and encoding at 2x.
    pub pio: bool,
}

/// The chips the soft-PHY projects use, at the clocks they are sold at, and the RP chips at
/// 120 MHz too: the clock the board examples run them at (PIO's divider 3 samples at exactly
/// 40 MHz); the RP2040 once more with PIO decoding and encoding the line (the example's
/// default).
pub const CHIPS: [Chip; 5] = [
    Chip {
        name: "ESP32-C6 (one HP RISC-V core)",
        isa_board: "riscv32-virt",
        mhz: &[160.0],
        dual_core: false,
        stack_profile: "riscv32-measured",
        pio: false,
    },
    Chip {
        name: "RP2350 (2x Cortex-M33)",
        isa_board: "mps2-an505",
        mhz: &[120.0, 150.0],
        dual_core: true,
        stack_profile: "mps2-measured",
        pio: false,
    },
    Chip {
        name: "RP2350 (2x Hazard3 RISC-V)",
        isa_board: "riscv32-virt",
        mhz: &[150.0],
        dual_core: true,
        stack_profile: "riscv32-measured",
        pio: false,
    },
    Chip {
        name: "RP2040 (2x Cortex-M0+)",
        isa_board: "microbit",
        mhz: &[120.0, 125.0, 133.0],
        dual_core: true,
        stack_profile: "mps2-measured",
        pio: false,
    },
    Chip {
        name: "RP2040, PIO decodes/encodes",
        isa_board: "microbit",
        mhz: &[120.0],
        dual_core: true,
        stack_profile: "mps2-measured",
        pio: true,
    },
];

/// The ISAs counted, by board.
const ISA_BOARDS: [&str; 3] = ["riscv32-virt", "mps2-an505", "microbit"];

/// One ISA's counts.
#[derive(Clone, Debug)]
pub struct IsaCount {
    /// The board counted on.
    pub board: &'static str,
    /// Its ISA.
    pub isa: &'static str,
    /// Every case of the bench.
    pub cases: Vec<CaseResult>,
    /// The costs the prediction uses.
    pub costs: PhyCosts,
    /// The costs with PIO decoding and encoding: the symbol decoder per bit, the wire bytes'
    /// copy per bit, the same FCS.
    pub pio_costs: PhyCosts,
    /// The bench's document (cases, parts, calibration).
    pub report: Phy10Report,
}

/// The decoder's cost the prediction takes: the worse of the two 4x goal cases (±100 ppm,
/// ±0.25 sample).
pub fn decode_per_bit(cases: &[CaseResult]) -> anyhow::Result<f64> {
    cases
        .iter()
        .filter(|c| c.name.starts_with("goal-4x"))
        .map(CaseResult::per_bit)
        .reduce(f64::max)
        .context("the phy10 bench reported no goal-4x case")
}

/// The per-bit cost of the bench's case whose name starts with `prefix` (the worst, if
/// several).
fn case_per_bit(cases: &[CaseResult], prefix: &str) -> anyhow::Result<f64> {
    cases
        .iter()
        .filter(|c| c.name.starts_with(prefix))
        .map(CaseResult::per_bit)
        .reduce(f64::max)
        .with_context(|| format!("the phy10 bench reported no {prefix} case"))
}

/// Counts the soft PHY on `board` (builds and runs its phy10-bench image).
fn count(board: &'static str) -> anyhow::Result<IsaCount> {
    let b = phy10_boards::by_name(board).map_err(anyhow::Error::msg)?;
    let phy10::Phy10Run {
        cases,
        parts,
        report,
    } = phy10::measure(&b, None)?;
    let wrong = report.frames_not_decoded();
    if wrong > 0 {
        anyhow::bail!("chips: {wrong} frames were not decoded bit-exact on {board}");
    }
    Ok(IsaCount {
        board,
        isa: b.isa,
        costs: PhyCosts {
            decode_per_bit: decode_per_bit(&cases)?,
            encode_per_bit: parts.encode_per_bit,
            fcs_per_byte: parts.fcs_per_byte,
        },
        pio_costs: PhyCosts {
            decode_per_bit: case_per_bit(&cases, "symbols-")?,
            encode_per_bit: case_per_bit(&cases, "tx-bytes")?,
            fcs_per_byte: parts.fcs_per_byte,
        },
        cases,
        report,
    })
}

/// The stack's counted main-loop parts of `profile`.
fn stack_parts(profile: &str) -> anyhow::Result<Parts> {
    CountedProfile::compiled_in(profile)
        .map(|p| p.parts)
        .with_context(|| format!("no counted profile {profile}"))
}

/// One chip at one clock: its predictions, every direction.
#[derive(Clone, Debug)]
pub struct ChipAtClock {
    /// The chip.
    pub chip: Chip,
    /// The clock, MHz.
    pub mhz: f64,
    /// Receive, send, full duplex.
    pub predictions: Vec<Prediction>,
}

/// Predicts every chip at every clock from the counts.
pub fn predict_all(counts: &[IsaCount], cpi: f64) -> anyhow::Result<Vec<ChipAtClock>> {
    let mut out = Vec::new();
    for chip in CHIPS {
        let count = counts
            .iter()
            .find(|c| c.board == chip.isa_board)
            .with_context(|| format!("no count on {}", chip.isa_board))?;
        let costs = if chip.pio {
            count.pio_costs
        } else {
            count.costs
        };
        let stack = stack_parts(chip.stack_profile)?;
        for &mhz in chip.mhz {
            let predictions = Direction::ALL
                .iter()
                .map(|&d| model::predict(&costs, &stack, !chip.dual_core, mhz, cpi, d))
                .collect();
            out.push(ChipAtClock {
                chip,
                mhz,
                predictions,
            });
        }
    }
    Ok(out)
}

/// What `linklab emu chips` gives: the counts per ISA, the predictions per chip.
#[derive(Clone, Debug)]
pub struct ChipsRun {
    /// Cycles per instruction the predictions assume.
    pub cpi: f64,
    /// The counts, one per ISA.
    pub counts: Vec<IsaCount>,
    /// Each chip at each clock.
    pub chips: Vec<ChipAtClock>,
}

/// Counts the soft PHY on each ISA (building and running each phy10-bench image) and
/// predicts every chip at `cpi` (cycles per instruction, 0.5..=4).
pub fn run(cpi: f64) -> anyhow::Result<ChipsRun> {
    let counts = ISA_BOARDS
        .iter()
        .map(|b| count(b))
        .collect::<anyhow::Result<Vec<_>>>()?;
    let chips = predict_all(&counts, cpi)?;
    Ok(ChipsRun { cpi, counts, chips })
}

impl ChipsRun {
    /// The two tables `linklab emu chips` prints.
    pub fn table(&self) -> String {
        table(&self.counts, &self.chips, self.cpi)
    }

    /// The `chips` document.
    pub fn report(&self) -> anyhow::Result<ChipsReport> {
        report(&self.counts, &self.chips, self.cpi)
    }
}

/// The two tables: counted costs per ISA, predictions per chip.
pub fn table(counts: &[IsaCount], chips: &[ChipAtClock], cpi: f64) -> String {
    let mut out = String::from(
        "The soft PHY counted on each ISA (QEMU -icount shift=0; instructions):\n\
         board        decoder 4x clean/bit  decoder 4x goal/bit  encoder 2x/bit  MAC FCS/byte  PIO: symbols/bit  PIO: TX copy/bit  ISA\n",
    );
    for c in counts {
        let clean = c
            .cases
            .iter()
            .find(|k| k.name == "clean-4x")
            .map_or(f64::NAN, CaseResult::per_bit);
        out.push_str(&format!(
            "{:<12} {:>20.2} {:>20.2} {:>15.2} {:>13.2} {:>17.2} {:>17.2}  {}\n",
            c.board,
            clean,
            c.costs.decode_per_bit,
            c.costs.encode_per_bit,
            c.costs.fcs_per_byte,
            c.pio_costs.decode_per_bit,
            c.pio_costs.encode_per_bit,
            c.isa
        ));
    }
    out.push_str(&format!(
        "\nLine rate (10BASE-T, full-length TCP segments) at CPI {cpi}:\n\
         chip                          MHz  direction    PHY core MIPS  stack core MIPS  share of line rate  break-even CPI  MHz for line rate\n"
    ));
    for c in chips {
        for p in &c.predictions {
            let stack = if c.chip.dual_core {
                format!("{:.1}", p.stack_core_mips)
            } else {
                "(on PHY core)".into()
            };
            out.push_str(&format!(
                "{:<28} {:>5.0}  {:<11} {:>14.1} {:>16} {:>18.1}% {:>15.2} {:>18.1}\n",
                c.chip.name,
                c.mhz,
                p.direction.name(),
                p.phy_core_mips,
                stack,
                p.line_rate_share * 100.0,
                p.break_even_cpi,
                p.mhz_for_line_rate
            ));
        }
    }
    out
}

/// The document: every count with its inputs, every prediction with what it used.
pub fn report(counts: &[IsaCount], chips: &[ChipAtClock], cpi: f64) -> anyhow::Result<ChipsReport> {
    let isas = counts
        .iter()
        .map(|c| IsaCosts {
            board: c.board.into(),
            isa: c.isa.into(),
            decode_4x_goal_per_bit: c.costs.decode_per_bit,
            encode_2x_per_bit: c.costs.encode_per_bit,
            fcs_per_byte: c.costs.fcs_per_byte,
            pio_symbols_per_bit: Some(c.pio_costs.decode_per_bit),
            pio_tx_copy_per_bit: Some(c.pio_costs.encode_per_bit),
            bench: c.report.clone(),
        })
        .collect();
    let mut predictions = Vec::new();
    for c in chips {
        let p = stack_parts(c.chip.stack_profile)?;
        predictions.push(ChipPrediction {
            chip: c.chip.name.into(),
            isa_board: c.chip.isa_board.into(),
            mhz: c.mhz,
            dual_core: c.chip.dual_core,
            pio: c.chip.pio,
            stack_profile: c.chip.stack_profile.into(),
            stack_parts: StackParts {
                isr_per_rx_frame: p.isr_per_rx_frame,
                isr_per_rx_byte: p.isr_per_rx_byte,
                isr_per_tx_frame: p.isr_per_tx_frame,
                main_per_pass: p.main_per_pass,
                main_per_rx_frame: p.main_per_rx_frame,
                main_per_rx_byte: p.main_per_rx_byte,
                main_per_misaligned_byte: p.main_per_misaligned_byte,
                main_per_tx_frame: p.main_per_tx_frame,
                main_per_tx_byte: p.main_per_tx_byte,
                http_per_tx_byte: p.http_per_tx_byte,
            },
            directions: c
                .predictions
                .iter()
                .map(|p| DirectionPrediction {
                    direction: p.direction.name().into(),
                    phy_core_mips: p.phy_core_mips,
                    stack_core_mips: p.stack_core_mips,
                    line_rate_share: p.line_rate_share,
                    break_even_cpi: p.break_even_cpi,
                    mhz_for_line_rate: p.mhz_for_line_rate,
                })
                .collect(),
        });
    }
    Ok(ChipsReport {
        kind: doc::KIND.into(),
        schema_version: doc::SCHEMA_VERSION,
        cpi,
        model: Model {
            line_mbit: model::LINE_MBIT,
            frame_bytes: model::FRAME_BYTES,
            frame_wire_bits: model::FRAME_WIRE_BITS,
            slot_bits: model::SLOT_BITS,
            ack_wire_bits: model::ACK_WIRE_BITS,
            ack_bytes: model::ACK_BYTES,
        },
        isas,
        predictions,
    })
}
