//! linklab-phy10's Manchester decoder and encoder, and linklab-mac's FCS, counted on an MCU's
//! own ISA under QEMU `-icount shift=0`: riscv32imac (`virt`, the ESP32-C6's ISA; `minstret`),
//! thumbv6m (`microbit`: the RP2040's Cortex-M0+ ISA) and thumbv8m.main (`mps2-an505`: the
//! RP2350's Cortex-M33), the last two on SysTick at the core clock (one instruction is one
//! nanosecond of virtual time). The target picks the machine (build.rs).
//!
//! For each case, full-length frames are encoded with linklab-phy10's encoder (2x, the
//! transmitter), sent through a deterministic drift and jitter model and sampled at the
//! case's factor ([`line`], shared with the host's `examples/phy_goals.rs`), and decoded; the
//! counter is read around `Decoder::decode` only. One line per case on the UART, a line for
//! the encoder and the FCS, a calibration line (a loop of known length counted the same way),
//! then QEMU is told to exit.
//!
//! `linklab emu phy10 BOARD` builds this image, runs it and prints the table.
#![no_std]
#![no_main]

#[path = "../../../crates/linklab-phy10/examples/common/line.rs"]
mod line;

#[cfg(target_arch = "arm")]
mod cortex_m;
#[cfg_attr(phy10_machine = "riscv32-virt", path = "machine/riscv32_virt.rs")]
#[cfg_attr(phy10_machine = "microbit", path = "machine/microbit.rs")]
#[cfg_attr(phy10_machine = "mps2-an505", path = "machine/mps2_an505.rs")]
mod machine;

// The instruction counter: SysTick on the Arm machines, `minstret` on riscv32-virt.
#[cfg(target_arch = "arm")]
use cortex_m::{count_down, counter, instructions_since};
#[cfg(not(target_arch = "arm"))]
use machine::{count_down, counter, instructions_since};

use core::fmt::Write;
use core::hint::black_box;

use line::{Line, Rng};
use linklab_phy10::{encode_frame, words_for_frame, Capture, Decoder, Oversample, RxOutcome};

/// Preamble and SFD, then a 1514-byte frame and its 4-byte FCS (random bytes stand in for
/// both: the PHY does not look at them).
const WIRE_LEN: usize = 8 + 1514 + 4;
/// Transmitter words: the encoding at 2x plus one idle word.
const TX_WORDS: usize = words_for_frame(WIRE_LEN, Oversample::X2) + 1;
/// Receiver words: at the machine's largest factor, 2 % faster than the transmitter at
/// most, plus the idle tail.
const RX_WORDS: usize = TX_WORDS * machine::MAX_OVERSAMPLE as usize / 2
    + TX_WORDS * machine::MAX_OVERSAMPLE as usize / 96
    + 8;
/// Iterations of the calibration loop (two instructions each).
const CALIBRATION_ITERATIONS: u32 = 1_000_000;

/// One measured condition.
struct Case {
    name: &'static str,
    line: Line,
    frames: u32,
}

const fn case(name: &'static str, oversample: u8, drift_ppm: i32, jitter_milli: u32) -> Case {
    Case {
        name,
        line: Line {
            samples_per_bit: oversample as u32,
            drift_ppm,
            jitter_milli,
        },
        frames: 16,
    }
}

/// The cases: a clean capture; the soft PHY's two goal points (both signs of drift); 802.3's
/// receiver jitter (+-13.5 ns: 0.675 sample at 5x, 0.81 at 6x); and the points earlier
/// figures used (+0.5 % with +-0.25 sample at 4x, +-1 sample at 8x). A machine runs those up
/// to its `MAX_OVERSAMPLE` (the microbit's 16 KiB of RAM hold a 4x capture).
const CASES: [Case; 11] = [
    case("clean-4x", 4, 0, 0),
    case("goal-4x+", 4, 100, 250),
    case("goal-4x-", 4, -100, 250),
    case("goal-5x+", 5, 5000, 500),
    case("goal-5x-", 5, -5000, 500),
    case("ieee-5x+", 5, 5000, 675),
    case("ieee-5x-", 5, -5000, 675),
    case("ieee-6x+", 6, 5000, 810),
    case("ieee-6x-", 6, -5000, 810),
    case("drift-4x", 4, 5000, 250),
    case("drift-8x", 8, 5000, 1000),
];

/// The machine's console as a `core::fmt` sink.
pub struct Console;

impl Write for Console {
    fn write_str(&mut self, s: &str) -> core::fmt::Result {
        machine::write(s);
        Ok(())
    }
}

/// Totals of one case.
#[derive(Default)]
struct Tally {
    ok: u32,
    instructions: u64,
    /// Instructions of `encode_frame` at 2x (the transmitter's side), all frames.
    encode: u64,
    min: u64,
    max: u64,
}

fn run_case(case: &Case, seed: u64, tx: &mut [u32], rx: &mut [u32]) -> Tally {
    let Some(os) = Oversample::new(case.line.samples_per_bit as u8) else {
        return Tally::default();
    };
    let mut rng = Rng::new(seed);
    let mut wire = [0u8; WIRE_LEN];
    // A MAC grant with room to spare, as the MAC's RX queue hands out.
    let mut out = [0u8; 1600];
    let mut decoder = Decoder::new(os);
    let mut tally = Tally {
        min: u64::MAX,
        ..Tally::default()
    };
    for _ in 0..case.frames {
        wire[..7].fill(0x55);
        wire[7] = 0xD5;
        rng.fill(&mut wire[8..]);
        // One idle word after TP_IDL, so its falling edge is on the line.
        let start = counter();
        let encoded = encode_frame(black_box(&wire), Oversample::X2, &mut tx[..TX_WORDS]);
        tally.encode += instructions_since(start);
        if encoded.is_err() {
            continue;
        }
        let rx_samples = line::impair(tx, TX_WORDS * 32, case.line, &mut rng, rx);
        let capture = Capture::new(black_box(&rx[..]), rx_samples);
        out.fill(0);
        let start = counter();
        let outcome = decoder.decode(black_box(&capture), black_box(&mut out));
        let spent = instructions_since(start);
        tally.instructions += spent;
        tally.min = tally.min.min(spent);
        tally.max = tally.max.max(spent);
        if outcome == (RxOutcome::Frame { len: WIRE_LEN - 8 }) && out[..WIRE_LEN - 8] == wire[8..] {
            tally.ok += 1;
        }
    }
    tally
}

/// Every case the machine's RAM holds; prints one line each and the encoder's part. True if
/// every frame was decoded bit-exact.
#[inline(never)]
fn run_cases(console: &mut Console) -> bool {
    let mut tx = [0u32; TX_WORDS];
    let mut rx = [0u32; RX_WORDS];
    let mut all_ok = true;
    let (mut encode, mut encoded_frames) = (0u64, 0u64);
    for (i, case) in CASES.iter().enumerate() {
        if case.line.samples_per_bit > machine::MAX_OVERSAMPLE {
            continue;
        }
        let tally = run_case(case, 0x5eed_0000 + i as u64, &mut tx, &mut rx);
        all_ok &= tally.ok == case.frames;
        encode += tally.encode;
        encoded_frames += u64::from(case.frames);
        let _ = writeln!(
            console,
            "phy10-bench case={} oversample={} drift_ppm={} jitter_milli={} frames={} ok={} \
             bits={} instructions={} min_frame={} max_frame={}",
            case.name,
            case.line.samples_per_bit,
            case.line.drift_ppm,
            case.line.jitter_milli,
            case.frames,
            tally.ok,
            u64::from(case.frames) * WIRE_LEN as u64 * 8,
            tally.instructions,
            tally.min,
            tally.max,
        );
    }
    let _ = write!(
        console,
        "phy10-bench parts encode_frames={encoded_frames} encode_bits={} encode_instructions={encode} ",
        encoded_frames * WIRE_LEN as u64 * 8,
    );
    all_ok
}

/// The MAC's FCS over full-length frames (1514 bytes), as the soft-PHY device's MAC checks it
/// on receive and computes it on transmit; ends the parts line.
#[inline(never)]
fn count_fcs(console: &mut Console) {
    let mut rng = Rng::new(0xfc5);
    let mut frame = [0u8; WIRE_LEN - 12];
    let (mut fcs, fcs_frames) = (0u64, 16u64);
    for _ in 0..fcs_frames {
        rng.fill(&mut frame);
        let start = counter();
        black_box(linklab_mac::fcs::fcs(black_box(&frame)));
        fcs += instructions_since(start);
    }
    let _ = writeln!(
        console,
        "fcs_frames={fcs_frames} fcs_bytes={} fcs_instructions={fcs}",
        fcs_frames * frame.len() as u64,
    );
}

/// The bench, called by the machine's entry; returns the exit status (0: every frame decoded
/// bit-exact).
pub fn run() -> u32 {
    let mut console = Console;
    let _ = writeln!(
        console,
        "phy10-bench: machine {} ({}), {WIRE_LEN} bytes on the wire per frame",
        machine::NAME,
        machine::ISA
    );
    let all_ok = run_cases(&mut console);
    count_fcs(&mut console);
    // The counter checked against a loop of known length: `counted` must equal
    // `loop_instructions` give or take the counter's resolution and the loop's entry.
    let start = counter();
    count_down(black_box(CALIBRATION_ITERATIONS));
    let counted = instructions_since(start);
    let _ = writeln!(
        console,
        "phy10-bench calibration loop_instructions={} counted={counted}",
        2 * u64::from(CALIBRATION_ITERATIONS)
    );
    let _ = writeln!(console, "phy10-bench: done");
    u32::from(!all_ok)
}
