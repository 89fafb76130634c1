//! `linklab emu phy10 BOARD`: linklab-phy10's Manchester decoder counted on the MCU's
//! own ISA: riscv32imac (`riscv32-virt`, `minstret`), thumbv6m (`microbit`) and thumbv8m.main
//! (`mps2-an505`), the last two on SysTick at the core clock (one instruction per nanosecond
//! at `-icount shift=0`; [`super::phy10_boards`]). Builds the board's phy10-bench image
//! (firmware/phy10-bench), boots it in QEMU under `-icount shift=0` (no NIC), and turns its
//! console lines (one per case: frames encoded by linklab-phy10, sent through a drift and
//! jitter model, decoded; the counter read around `Decoder::decode` only) into a table of
//! instructions per wire bit. A loop of known length, counted the same way, checks the
//! counter: a count off by more than [`CALIBRATION_TOLERANCE`] fails the run.

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_results::emu::phy10::{self as doc, Calibration, Phy10Case, Phy10Report};

use super::board::Board;
use super::image::Chosen;
use super::qemu::{self, Boot, Network, Qemu};

/// What one run of the phy10 bench gave: every case, the parts besides the decoder, and the
/// document.
#[derive(Clone, Debug)]
pub struct Phy10Run {
    /// Every case.
    pub cases: Vec<CaseResult>,
    /// The encoder's and the FCS's costs.
    pub parts: Parts,
    /// The `phy10` document.
    pub report: Phy10Report,
}

/// The bench image's name in the board's table.
const BENCH: &str = "phy10-bench";
/// What the image prints for each case, and when it is done.
const CASE_LINE: &str = "phy10-bench case=";
const DONE_LINE: &str = "phy10-bench: done";
/// The line with the encoder's and the MAC FCS's counts.
const PARTS_LINE: &str = "phy10-bench parts ";
/// The line of the counter's check: a loop of known length counted.
const CALIBRATION_LINE: &str = "phy10-bench calibration ";
/// How far the calibration loop's count may be off its known length: the counter's
/// resolution (SysTick at 16 MHz: 62.5 instructions) and the loop's entry.
pub const CALIBRATION_TOLERANCE: f64 = 0.001;
/// The whole run takes about a second of host time; this bounds a hung image.
const RUN_TIMEOUT: Duration = Duration::from_secs(120);

/// One case's figures as the image reports them.
#[derive(Clone, Debug, PartialEq)]
pub struct CaseResult {
    /// The case's name (e.g. `goal-4x+`).
    pub name: String,
    /// Samples per bit.
    pub oversample: u64,
    /// Transmitter clock offset, ppm.
    pub drift_ppm: i64,
    /// Peak edge jitter, samples.
    pub jitter_samples: f64,
    /// Frames sent.
    pub frames: u64,
    /// Frames decoded bit-exact.
    pub ok: u64,
    /// Wire bits (preamble through FCS) of all frames.
    pub bits: u64,
    /// Instructions retired inside `Decoder::decode`, all frames.
    pub instructions: u64,
    /// Fewest and most instructions one frame took.
    pub min_frame: u64,
    /// See `min_frame`.
    pub max_frame: u64,
}

impl CaseResult {
    /// Instructions per wire bit.
    pub fn per_bit(&self) -> f64 {
        self.instructions as f64 / self.bits.max(1) as f64
    }

    fn document(&self) -> Phy10Case {
        Phy10Case {
            case: self.name.clone(),
            oversample: self.oversample,
            drift_ppm: self.drift_ppm,
            jitter_samples: self.jitter_samples,
            frames: self.frames,
            ok: self.ok,
            bits: self.bits,
            instructions: self.instructions,
            instructions_per_bit: (self.per_bit() * 100.0).round() / 100.0,
            min_frame_instructions: self.min_frame,
            max_frame_instructions: self.max_frame,
        }
    }
}

/// The transmit side and the MAC's FCS, counted on the same image: what the soft-PHY device
/// spends besides the decoder.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Parts {
    /// Instructions per wire bit of `encode_frame` at 2x (full-length frames).
    pub encode_per_bit: f64,
    /// Instructions per byte of linklab-mac's FCS (slicing-by-8) over 1514-byte frames.
    pub fcs_per_byte: f64,
}

/// Parses the parts line (`phy10-bench parts encode_bits=.. encode_instructions=.. ...`).
pub fn parse_parts(line: &str) -> anyhow::Result<Parts> {
    let fields = fields_of(
        line.strip_prefix(PARTS_LINE)
            .context("not the parts line")?,
    );
    let count = |key: &str| -> anyhow::Result<f64> {
        fields
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.parse::<u64>().ok())
            .map(|v| v as f64)
            .with_context(|| format!("no count {key}= in {line:?}"))
    };
    Ok(Parts {
        encode_per_bit: count("encode_instructions")? / count("encode_bits")?.max(1.0),
        fcs_per_byte: count("fcs_instructions")? / count("fcs_bytes")?.max(1.0),
    })
}

/// Checks the calibration line (`phy10-bench calibration loop_instructions=N counted=M`):
/// the counter counts instructions. Returns (known, counted).
pub fn check_calibration(line: &str) -> anyhow::Result<(u64, u64)> {
    let fields = fields_of(
        line.strip_prefix(CALIBRATION_LINE)
            .context("not the calibration line")?,
    );
    let count = |key: &str| -> anyhow::Result<u64> {
        fields
            .iter()
            .find(|(k, _)| *k == key)
            .and_then(|(_, v)| v.parse::<u64>().ok())
            .with_context(|| format!("no count {key}= in {line:?}"))
    };
    let (known, counted) = (count("loop_instructions")?, count("counted")?);
    let off = (counted as f64 - known as f64).abs() / (known.max(1) as f64);
    if off > CALIBRATION_TOLERANCE {
        bail!(
            "phy10: the bench's counter is not counting instructions: a loop of {known} counted {counted}"
        );
    }
    Ok((known, counted))
}

fn fields_of(text: &str) -> Vec<(&str, &str)> {
    text.split_whitespace()
        .filter_map(|kv| kv.split_once('='))
        .collect()
}

/// Parses one case line (`phy10-bench case=NAME key=value ...`).
pub fn parse_case(line: &str) -> anyhow::Result<CaseResult> {
    let fields = fields_of(
        line.strip_prefix("phy10-bench ")
            .context("not a case line")?,
    );
    let text = |key: &str| {
        fields
            .iter()
            .find(|(k, _)| *k == key)
            .map(|(_, v)| *v)
            .with_context(|| format!("no {key}= in {line:?}"))
    };
    let number = |key: &str| -> anyhow::Result<i64> {
        text(key)?
            .parse::<i64>()
            .with_context(|| format!("{key}= is not a number in {line:?}"))
    };
    let count = |key: &str| -> anyhow::Result<u64> {
        u64::try_from(number(key)?).with_context(|| format!("{key}= is negative in {line:?}"))
    };
    Ok(CaseResult {
        name: text("case")?.to_string(),
        oversample: count("oversample")?,
        drift_ppm: number("drift_ppm")?,
        jitter_samples: count("jitter_milli")? as f64 / 1000.0,
        frames: count("frames")?,
        ok: count("ok")?,
        bits: count("bits")?,
        instructions: count("instructions")?,
        min_frame: count("min_frame")?,
        max_frame: count("max_frame")?,
    })
}

/// Builds (or takes `image`) the phy10-bench image of `board` (one of the board table's or
/// of [`super::phy10_boards`]), runs the bench and returns every case. Frames not decoded
/// bit-exact are in the figures ([`Phy10Report::frames_not_decoded`]), not an error.
pub fn measure(board: &Board, image: Option<&Path>) -> anyhow::Result<Phy10Run> {
    // The boards whose instruction counter counts exactly under -icount shift=0 (riscv32's
    // minstret) have the image.
    let spec = board
        .image(BENCH)
        .map_err(|e| linklab_results::usage::usage(format!("phy10: {e}")))?;
    qemu::require(board)?;
    let image = Chosen {
        spec,
        elf: image.map(Path::to_path_buf),
    }
    .find_or_build(board)?;
    let mut qemu = Qemu::start(Boot {
        icount: Some("shift=0".into()),
        ..Boot::new(board, &image, Network::None)
    })?;
    let lines = qemu.lines_until(DONE_LINE, RUN_TIMEOUT)?;
    qemu.stop();
    let cases = lines
        .iter()
        .filter(|l| l.starts_with(CASE_LINE))
        .map(|l| parse_case(l))
        .collect::<anyhow::Result<Vec<_>>>()?;
    if cases.is_empty() {
        bail!("the phy10 bench image reported no case");
    }
    let parts = lines
        .iter()
        .find(|l| l.starts_with(PARTS_LINE))
        .context("the phy10 bench image reported no parts line")
        .and_then(|l| parse_parts(l))?;
    let (known, counted) = lines
        .iter()
        .find(|l| l.starts_with(CALIBRATION_LINE))
        .context("the phy10 bench image reported no calibration line")
        .and_then(|l| check_calibration(l))?;
    let report = Phy10Report {
        kind: doc::KIND.into(),
        schema_version: doc::SCHEMA_VERSION,
        board: board.name.into(),
        isa: board.isa.into(),
        method: method(board).into(),
        calibration: Calibration {
            loop_instructions: known,
            counted,
        },
        wire_bits_per_frame: cases[0].bits / cases[0].frames.max(1),
        cases: cases.iter().map(CaseResult::document).collect(),
        encode_2x_instructions_per_bit: (parts.encode_per_bit * 1000.0).round() / 1000.0,
        mac_fcs_instructions_per_byte: (parts.fcs_per_byte * 1000.0).round() / 1000.0,
    };
    Ok(Phy10Run {
        cases,
        parts,
        report,
    })
}

/// How the board's bench counts.
fn method(board: &Board) -> &'static str {
    if board.target.starts_with("riscv32") {
        "QEMU -icount shift=0, minstret read around Decoder::decode"
    } else {
        "QEMU -icount shift=0, SysTick at the core clock read around Decoder::decode (1 ns = 1 instruction)"
    }
}

/// The table `linklab emu phy10` prints.
pub fn table(board: &Board, cases: &[CaseResult], parts: &Parts) -> String {
    let mut out = format!(
        "linklab-phy10 decoder on {} ({}), {}\n",
        board.name,
        board.isa,
        method(board)
    );
    out.push_str(
        "case       oversample drift_ppm jitter_samples frames   ok instructions/bit min/frame max/frame\n",
    );
    for c in cases {
        out.push_str(&format!(
            "{:<10} {:>10} {:>9} {:>14.3} {:>6} {:>4} {:>16.2} {:>9} {:>9}\n",
            c.name,
            c.oversample,
            c.drift_ppm,
            c.jitter_samples,
            c.frames,
            c.ok,
            c.per_bit(),
            c.min_frame,
            c.max_frame
        ));
    }
    out.push_str(&format!(
        "encoder at 2x: {:.2} instructions/bit; linklab-mac FCS: {:.2} instructions/byte\n",
        parts.encode_per_bit, parts.fcs_per_byte
    ));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn case_lines_parse() {
        let c = parse_case(
            "phy10-bench case=goal-4x+ oversample=4 drift_ppm=-100 jitter_milli=250 frames=16 \
             ok=15 bits=195328 instructions=976640 min_frame=60000 max_frame=62000",
        )
        .unwrap();
        assert_eq!(c.name, "goal-4x+");
        assert_eq!(
            (c.oversample, c.drift_ppm, c.frames, c.ok),
            (4, -100, 16, 15)
        );
        assert_eq!(c.jitter_samples, 0.25);
        assert_eq!(c.per_bit(), 5.0);
        assert!(parse_case("phy10-bench case=x oversample=4").is_err());
        assert!(parse_case("phy10-bench case=x oversample=-4 drift_ppm=0 jitter_milli=0 frames=1 ok=1 bits=1 instructions=1 min_frame=1 max_frame=1").is_err());
        assert!(parse_case("something else").is_err());
        let p = parse_parts(
            "phy10-bench parts encode_frames=2 encode_bits=1000 encode_instructions=1500 \
             fcs_frames=2 fcs_bytes=100 fcs_instructions=400",
        )
        .unwrap();
        assert_eq!((p.encode_per_bit, p.fcs_per_byte), (1.5, 4.0));
        assert!(parse_parts("phy10-bench parts encode_bits=1").is_err());
        assert_eq!(
            check_calibration("phy10-bench calibration loop_instructions=2000000 counted=2000062")
                .unwrap(),
            (2_000_000, 2_000_062)
        );
        assert!(check_calibration(
            "phy10-bench calibration loop_instructions=2000000 counted=2500000"
        )
        .is_err());
        assert!(check_calibration("phy10-bench calibration counted=1").is_err());
    }
}
