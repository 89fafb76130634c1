//! The `riscv32-soft-phy` profile's data: linklab-phy10's decoder (instructions per wire bit
//! at each oversampling factor), its encoder at 2x and linklab-mac's FCS, counted on
//! riscv32imac under QEMU `-icount shift=0` by firmware/phy10-bench
//! (`linklab emu --board riscv32-virt --phy10 --json`, [`DATA_PATH`]). With the
//! `riscv32-measured` parts (the rest of the device: trap, virtio, main loop, smoltcp, apps)
//! they make the cost model of the soft-PHY device (`linklab emu --phy10-line`): no fitted
//! parameter.

use crate::measured::{Clock, MeasuredCounts};
use crate::profile::CostModel;

/// The data file, compiled in.
pub const DATA_JSON: &str = include_str!("../data/riscv32-phy10.json");

/// The data file's path relative to the repository root.
pub const DATA_PATH: &str = "crates/linklab-sim/data/riscv32-phy10.json";

/// The command that writes it (from the repository root).
pub const COMMAND: &str =
    "linklab emu --board riscv32-virt --phy10 --json crates/linklab-sim/data/riscv32-phy10.json";

/// One decoder case of the data file.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct DecodeCase {
    /// The case's name (e.g. `goal-4x+`).
    pub case: String,
    /// Samples per bit.
    pub oversample: u8,
    /// Instructions per wire bit (preamble through FCS).
    pub instructions_per_bit: f64,
}

/// The counts the profile uses.
#[derive(Clone, Debug, PartialEq, serde::Deserialize)]
pub struct Phy10Counts {
    /// The ISA counted on.
    pub isa: String,
    /// The decoder, case by case.
    pub cases: Vec<DecodeCase>,
    /// `encode_frame` at 2x, instructions per wire bit.
    pub encode_2x_instructions_per_bit: f64,
    /// linklab-mac's FCS, instructions per byte.
    pub mac_fcs_instructions_per_byte: f64,
}

impl Phy10Counts {
    /// The compiled-in data file.
    pub fn compiled_in() -> Phy10Counts {
        serde_json::from_str(DATA_JSON).expect("data/riscv32-phy10.json is valid (tested)")
    }

    /// The decoder's instructions per wire bit at `oversample`: the costliest case counted at
    /// that factor (the goal points carry drift and jitter), or None if none was.
    pub fn decode_per_bit(&self, oversample: u8) -> Option<f64> {
        self.cases
            .iter()
            .filter(|c| c.oversample == oversample)
            .map(|c| c.instructions_per_bit)
            .reduce(f64::max)
    }
}

/// The soft-PHY device at `clock`, decoding at `oversample`: the `riscv32-measured` parts,
/// with the RX interrupt's copy replaced by the decoder (per wire byte: it writes straight
/// into the grant), the FCS added to the main loop's per-byte cost each way (the MAC checks
/// and computes it; virtio-net's device did), and the encoder at 2x added per transmitted
/// byte. None if `oversample` has no decoder count.
pub fn cost_model(
    parts: &MeasuredCounts,
    phy10: &Phy10Counts,
    clock: Clock,
    oversample: u8,
) -> Option<CostModel> {
    let decode_per_byte = phy10.decode_per_bit(oversample)? * 8.0;
    let p = &parts.parts;
    let fcs = phy10.mac_fcs_instructions_per_byte;
    let encode_per_byte = phy10.encode_2x_instructions_per_bit * 8.0;
    Some(CostModel {
        isr_per_byte_ps: clock.ps(decode_per_byte),
        main_per_byte_ps: clock.ps(p.main_per_rx_byte + fcs),
        tx_per_byte_ps: clock.ps(p.main_per_tx_byte + fcs + encode_per_byte),
        ..CostModel::measured(parts, clock)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_data_file_parses_and_has_the_goal_points() {
        let c = Phy10Counts::compiled_in();
        assert_eq!(c.isa, "riscv32imac");
        for os in [4, 5, 6, 8] {
            let per_bit = c.decode_per_bit(os).unwrap();
            assert!((5.0..30.0).contains(&per_bit), "{os}x: {per_bit}");
        }
        assert!(c.decode_per_bit(5) > c.decode_per_bit(4));
        assert_eq!(c.decode_per_bit(7), None);
        assert!(c.encode_2x_instructions_per_bit > 0.0);
        assert!(c.mac_fcs_instructions_per_byte > 0.0);
    }

    #[test]
    fn the_decoder_replaces_the_copy_and_scales_with_the_clock() {
        let parts = MeasuredCounts::compiled_in();
        let phy10 = Phy10Counts::compiled_in();
        let at = |mhz| cost_model(&parts, &phy10, Clock { mhz, cpi: 1.0 }, 4).unwrap();
        let fast = at(125.0);
        let nic = CostModel::measured(
            &parts,
            Clock {
                mhz: 125.0,
                cpi: 1.0,
            },
        );
        assert!(fast.isr_ns(1526) > 4 * nic.isr_ns(1526));
        assert!(fast.tx_ns(1526) > nic.tx_ns(1526));
        assert_eq!(fast.main_fixed_ns, nic.main_fixed_ns);
        let slow = at(62.5);
        assert!(slow.isr_ns(1526).abs_diff(2 * fast.isr_ns(1526)) <= 2);
        assert!(cost_model(
            &parts,
            &phy10,
            Clock {
                mhz: 125.0,
                cpi: 1.0
            },
            7
        )
        .is_none());
    }
}
