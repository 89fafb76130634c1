//! The prediction's arithmetic: from the soft PHY's costs counted on a chip's ISA (decoder,
//! encoder, the MAC's FCS) and the stack's counted parts, the instructions per second each
//! core needs for 10BASE-T at line rate, and what share of line rate the chip's clock
//! sustains at a CPI.
//!
//! The traffic is a TCP bulk transfer in full-length frames, back to back: one frame slot is
//! [`SLOT_BITS`] bit times (preamble and SFD, 1514 bytes and the FCS, the inter-frame gap),
//! with an ACK (a minimum frame) the other way every second segment. Per slot:
//! - receive: the decoder over the whole slot (the ring is sampled gap or not), the FCS over
//!   1514 bytes; half an ACK encoded and its FCS;
//! - send: the encoder over the frame's wire bits and the FCS over 1514 bytes; half an ACK
//!   decoded and its FCS;
//! - the stack (the counted main-loop parts): a pass, the frame, its bytes, half an ACK.
//!   Full duplex is both directions at once, summed (ACKs not folded into data: an upper
//!   bound).
//!
//! A single-core chip runs the stack on the PHY's core; a dual-core chip runs it on the other.

use linklab_sim::counts::Parts;

/// 10BASE-T: bits per microsecond.
pub const LINE_MBIT: f64 = 10.0;
/// A full-length frame's bytes the FCS covers (Ethernet header and payload).
pub const FRAME_BYTES: f64 = 1514.0;
/// Wire bits of a full-length frame: preamble and SFD (8 bytes), 1514 bytes, the FCS.
pub const FRAME_WIRE_BITS: f64 = (8.0 + 1514.0 + 4.0) * 8.0;
/// One frame slot at line rate: the frame's wire bits and the 96-bit inter-frame gap.
pub const SLOT_BITS: f64 = FRAME_WIRE_BITS + 96.0;
/// A TCP ACK: a minimum frame (60 bytes and the FCS) with its preamble and SFD.
pub const ACK_WIRE_BITS: f64 = (8.0 + 60.0 + 4.0) * 8.0;
/// The bytes of an ACK the FCS covers.
pub const ACK_BYTES: f64 = 60.0;

/// The soft PHY's costs on one ISA, counted by `linklab emu phy10`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PhyCosts {
    /// Decoder at 4x under 802.3-like conditions (±100 ppm, ±0.25 sample of jitter, the
    /// worse sign), instructions per wire bit.
    pub decode_per_bit: f64,
    /// Encoder at 2x, instructions per wire bit.
    pub encode_per_bit: f64,
    /// The MAC's FCS, instructions per byte.
    pub fcs_per_byte: f64,
}

/// Which way the data goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Direction {
    /// The device receives at line rate.
    Receive,
    /// The device sends at line rate.
    Send,
    /// Both at once.
    FullDuplex,
}

impl Direction {
    /// Every direction, in table order.
    pub const ALL: [Direction; 3] = [Direction::Receive, Direction::Send, Direction::FullDuplex];

    /// Its name in tables and JSON.
    pub fn name(self) -> &'static str {
        match self {
            Direction::Receive => "receive",
            Direction::Send => "send",
            Direction::FullDuplex => "full-duplex",
        }
    }
}

/// The PHY's instructions per line bit time (per slot, over [`SLOT_BITS`]).
pub fn phy_per_bit(c: &PhyCosts, d: Direction) -> f64 {
    let receive = c.decode_per_bit * SLOT_BITS
        + c.fcs_per_byte * FRAME_BYTES
        + (c.encode_per_bit * ACK_WIRE_BITS + c.fcs_per_byte * ACK_BYTES) / 2.0;
    let send = c.encode_per_bit * FRAME_WIRE_BITS
        + c.fcs_per_byte * FRAME_BYTES
        + (c.decode_per_bit * ACK_WIRE_BITS + c.fcs_per_byte * ACK_BYTES) / 2.0;
    let per_slot = match d {
        Direction::Receive => receive,
        Direction::Send => send,
        Direction::FullDuplex => receive + send,
    };
    per_slot / SLOT_BITS
}

/// The stack's instructions per line bit time, from its counted main-loop parts.
pub fn stack_per_bit(p: &Parts, d: Direction) -> f64 {
    let receive = p.main_per_pass
        + p.main_per_rx_frame
        + FRAME_BYTES * p.main_per_rx_byte
        + (p.main_per_tx_frame + ACK_BYTES * p.main_per_tx_byte) / 2.0;
    let send = p.main_per_pass
        + p.main_per_tx_frame
        + FRAME_BYTES * p.main_per_tx_byte
        + (p.main_per_rx_frame + ACK_BYTES * p.main_per_rx_byte) / 2.0;
    let per_slot = match d {
        Direction::Receive => receive,
        Direction::Send => send,
        Direction::FullDuplex => receive + send,
    };
    per_slot / SLOT_BITS
}

/// One chip at one clock, one direction.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Prediction {
    /// The direction.
    pub direction: Direction,
    /// MIPS the PHY's core needs at line rate (the stack's too on a single-core chip).
    pub phy_core_mips: f64,
    /// MIPS the other core needs for the stack (0 on a single-core chip).
    pub stack_core_mips: f64,
    /// Share of line rate the busier core sustains at the clock and CPI, at most 1.
    pub line_rate_share: f64,
    /// The CPI up to which both cores keep line rate at the clock.
    pub break_even_cpi: f64,
    /// The clock (MHz) at which the busier core keeps line rate at the CPI.
    pub mhz_for_line_rate: f64,
}

/// Predicts one direction for a chip at `mhz` and `cpi`; `shared` when the stack runs on the
/// PHY's core.
pub fn predict(
    c: &PhyCosts,
    stack: &Parts,
    shared: bool,
    mhz: f64,
    cpi: f64,
    d: Direction,
) -> Prediction {
    let phy = LINE_MBIT * phy_per_bit(c, d);
    let stack_mips = LINE_MBIT * stack_per_bit(stack, d);
    let (phy_core_mips, stack_core_mips) = if shared {
        (phy + stack_mips, 0.0)
    } else {
        (phy, stack_mips)
    };
    let busiest = phy_core_mips.max(stack_core_mips);
    Prediction {
        direction: d,
        phy_core_mips,
        stack_core_mips,
        line_rate_share: (mhz / cpi / busiest).min(1.0),
        break_even_cpi: mhz / busiest,
        mhz_for_line_rate: busiest * cpi,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parts(pass: f64, rx_frame: f64, rx_byte: f64, tx_frame: f64, tx_byte: f64) -> Parts {
        Parts {
            isr_per_rx_frame: 0.0,
            isr_per_rx_byte: 0.0,
            isr_per_tx_frame: 0.0,
            main_per_pass: pass,
            main_per_rx_frame: rx_frame,
            main_per_rx_byte: rx_byte,
            main_per_misaligned_byte: 0.0,
            main_per_tx_frame: tx_frame,
            main_per_tx_byte: tx_byte,
            http_per_tx_byte: 0.0,
        }
    }

    #[test]
    fn a_decoder_alone_needs_its_cost_times_the_line_rate() {
        let c = PhyCosts {
            decode_per_bit: 8.0,
            encode_per_bit: 0.0,
            fcs_per_byte: 0.0,
        };
        let none = parts(0.0, 0.0, 0.0, 0.0, 0.0);
        let p = predict(&c, &none, false, 160.0, 1.0, Direction::Receive);
        assert_eq!(p.phy_core_mips, 80.0);
        assert_eq!((p.line_rate_share, p.break_even_cpi), (1.0, 2.0));
        assert_eq!(p.mhz_for_line_rate, 80.0);
        let slow = predict(&c, &none, false, 40.0, 1.0, Direction::Receive);
        assert_eq!(slow.line_rate_share, 0.5);
    }

    #[test]
    fn a_shared_core_carries_the_stack_too() {
        let c = PhyCosts {
            decode_per_bit: 1.0,
            encode_per_bit: 1.0,
            fcs_per_byte: 1.0,
        };
        let stack = parts(SLOT_BITS, 0.0, 0.0, 0.0, 0.0);
        let own = predict(&c, &stack, false, 100.0, 1.0, Direction::Send);
        let shared = predict(&c, &stack, true, 100.0, 1.0, Direction::Send);
        assert_eq!(own.stack_core_mips, LINE_MBIT);
        assert_eq!(shared.stack_core_mips, 0.0);
        assert!((shared.phy_core_mips - own.phy_core_mips - LINE_MBIT).abs() < 1e-9);
        let fd = phy_per_bit(&c, Direction::FullDuplex);
        let sum = phy_per_bit(&c, Direction::Receive) + phy_per_bit(&c, Direction::Send);
        assert!((fd - sum).abs() < 1e-12);
    }
}
