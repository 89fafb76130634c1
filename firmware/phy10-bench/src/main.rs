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
//! Then the RP2040/RP2350 examples' other RX path, where a PIO state machine decodes each
//! bit on its mid-bit edge (linklab-phy10's `symbols`): the CPU's part, the symbol decoder,
//! counted per bit (`case=symbols-...`). Where the machine holds an 8x line (not the
//! microbit), the frames go through the same drift and jitter model at 8x and the model of
//! the sampler program at 12 cycles a bit (120 MHz); on the microbit the symbols are the
//! ones the sampler emits for the frame's bits (the decoder's work does not depend on the
//! line). And what the CPU does for PIO's Manchester encoder: the wire bytes copied into
//! its buffer (`case=tx-bytes`).
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
use linklab_phy10::symbols::{sample_line, SymbolDecoder};
use linklab_phy10::{
    encode_frame, words_for_frame, Capture, Decoder, Oversample, RxOutcome, SamplerTiming,
};

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

/// Words of a frame's symbols (16 bit times a word), with room for the preamble's first
/// bits and the idle after.
const SYMBOL_WORDS: usize = WIRE_LEN * 8 / 16 + 16;
/// The sampler's cycles per bit the symbols are made at: 120 MHz, the examples' clock.
const SAMPLER_CYCLES_PER_BIT: u32 = 12;
/// True where the machine holds an 8x line: the symbols come from the line's model.
const SYMBOLS_MODELLED: bool = machine::MAX_OVERSAMPLE >= 8;
/// The transmitter's and the 8x receiver's words for the symbols' line (none where the
/// symbols are the sampler's ideal output: the microbit's 16 KiB).
const SYMBOL_TX_WORDS: usize = if SYMBOLS_MODELLED { TX_WORDS } else { 1 };
const SYMBOL_RX_WORDS: usize = if SYMBOLS_MODELLED { RX_WORDS } else { 1 };

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

/// Writes the symbols a resynchronising sampler emits for `wire` into `out`: one `11` or
/// `01` symbol a bit, then idle (`00`) symbols; returns the symbols written.
fn ideal_symbols(wire: &[u8], out: &mut [u32]) -> usize {
    out.fill(0);
    let mut n = 0;
    for &byte in wire {
        for i in 0..8 {
            let symbol = 1 | ((u32::from(byte) >> i) & 1) << 1;
            if let Some(w) = out.get_mut(n / 16) {
                *w |= symbol << (2 * (n % 16));
            }
            n += 1;
        }
    }
    (out.len() * 16).min(n + 32)
}

/// The symbol decoder over full-length frames (the CPU's part of PIO decoding), and the
/// wire bytes copied for PIO's encoder; a case line each. True if every frame was decoded
/// bit-exact.
#[inline(never)]
fn run_symbols(console: &mut Console) -> bool {
    let mut symbols = [0u32; SYMBOL_WORDS];
    let mut tx = [0u32; SYMBOL_TX_WORDS];
    let mut rx = [0u32; SYMBOL_RX_WORDS];
    let mut copied = [0u32; WIRE_LEN.div_ceil(4)];
    let modelled = SYMBOLS_MODELLED;
    let line = Line {
        samples_per_bit: 8,
        drift_ppm: 100,
        jitter_milli: 500,
    };
    let mut rng = Rng::new(0x5eed_5b01);
    let mut wire = [0u8; WIRE_LEN];
    let mut out = [0u8; 1600];
    let mut decoder = SymbolDecoder::new();
    let frames = 16u32;
    let (mut ok, mut spent, mut copy) = (0u32, 0u64, 0u64);
    for frame in 0..frames {
        wire[..7].fill(0x55);
        wire[7] = 0xD5;
        rng.fill(&mut wire[8..]);
        let n = if modelled {
            // ±100 ppm, both signs in turn; ±0.5 sample of jitter at 8x (±6.25 ns).
            let line = Line {
                drift_ppm: if frame % 2 == 0 { 100 } else { -100 },
                ..line
            };
            let Ok(_) = encode_frame(&wire, Oversample::X2, &mut tx) else {
                continue;
            };
            let rx_samples = line::impair(&tx, TX_WORDS * 32, line, &mut rng, &mut rx);
            let timing = SamplerTiming::new(SAMPLER_CYCLES_PER_BIT).unwrap_or(SamplerTiming {
                cycles_per_bit: 12,
                delay: 5,
                timeout_polls: 8,
            });
            let Some(os) = Oversample::new(8) else {
                continue;
            };
            sample_line(&Capture::new(&rx, rx_samples), os, timing, &mut symbols)
        } else {
            ideal_symbols(&wire, &mut symbols)
        };
        let capture = Capture::new(black_box(&symbols[..]), 2 * n);
        out.fill(0);
        let start = counter();
        let outcome = decoder.decode(black_box(&capture), black_box(&mut out));
        spent += instructions_since(start);
        if outcome == (RxOutcome::Frame { len: WIRE_LEN - 8 }) && out[..WIRE_LEN - 8] == wire[8..] {
            ok += 1;
        }
        // PIO's encoder takes the wire bytes as words: the CPU copies them into its buffer.
        let start = counter();
        copy_wire(black_box(&wire), black_box(&mut copied));
        copy += instructions_since(start);
    }
    let bits = u64::from(frames) * WIRE_LEN as u64 * 8;
    let (oversample, drift, jitter) = if modelled { (8, 100, 500) } else { (0, 0, 0) };
    let name = if modelled {
        "symbols-8x"
    } else {
        "symbols-ideal"
    };
    let _ = writeln!(
        console,
        "phy10-bench case={name} oversample={oversample} drift_ppm={drift} jitter_milli={jitter} \
         frames={frames} ok={ok} bits={bits} instructions={spent} min_frame=0 max_frame=0"
    );
    let _ = writeln!(
        console,
        "phy10-bench case=tx-bytes oversample=0 drift_ppm=0 jitter_milli=0 frames={frames} \
         ok={frames} bits={bits} instructions={copy} min_frame=0 max_frame=0"
    );
    ok == frames
}

/// The wire bytes into PIO's words, as the RP examples' transmitter copies them: a plain
/// copy into the words' bytes (the words are little-endian, LSB first on the wire).
#[inline(never)]
fn copy_wire(wire: &[u8], words: &mut [u32]) {
    let len = wire.len().min(4 * words.len());
    // SAFETY: the words' own bytes, `4 * words.len()` of them, written as bytes.
    let bytes = unsafe {
        core::slice::from_raw_parts_mut(words.as_mut_ptr().cast::<u8>(), 4 * words.len())
    };
    bytes[..len].copy_from_slice(&wire[..len]);
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
    let all_ok = all_ok & run_symbols(&mut console);
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
