//! The device's MCU cost model and the profiles: `ideal`; `niccle-initial`, `niccle-memcpy`,
//! `niccle-optimized`, with every figure quoted from Niccle's MAC write-up next to the parameter
//! it sets; and `riscv32-measured`, from instructions counted on linklab's riscv32imac firmware
//! ([`crate::measured`]) at a clock and CPI ([`Clock`]).
//!
//! The device CPU is one resource. An interrupt preempts the main loop; the main loop
//! (smoltcp + the application) runs only when no interrupt runs. With a bit-banged PHY the
//! receive interrupt samples the whole frame (the CPU is busy from the interrupt's entry to
//! the frame's last bit) and transmitting a frame keeps the CPU busy for the frame's wire
//! time; a DMA PHY does neither.

use std::fmt;

use crate::measured::{Clock, MeasuredCounts};
use crate::name::UnknownName;

/// How the PHY moves bits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum PhyKind {
    /// The CPU samples/drives the line itself (Niccle): frames occupy the CPU.
    BitBanged,
    /// A DMA engine moves the bits; the CPU only runs the post-processing interrupt.
    Dma,
}

/// The device's cost model (all times in nanoseconds, per-byte costs in picoseconds).
#[derive(Clone, Copy, Debug, PartialEq, serde::Serialize)]
pub struct CostModel {
    /// Bit-banged or DMA PHY.
    pub phy: PhyKind,
    /// Time from the first edge of a transmission to the first instruction of the RX
    /// interrupt (ns).
    pub irq_latency_ns: u64,
    /// RX interrupt post-processing after the frame's last bit: fixed part (ns).
    pub isr_fixed_ns: u64,
    /// RX interrupt post-processing: per captured byte (ps).
    pub isr_per_byte_ps: u64,
    /// Main loop (smoltcp + application) per received frame or timer poll: fixed part (ns).
    pub main_fixed_ns: u64,
    /// Main loop per received frame on top of `main_fixed_ns` (ns; 0 in the Niccle profiles,
    /// whose fitted fixed part covers both).
    pub main_rx_frame_ns: u64,
    /// Main loop per received byte (ps).
    pub main_per_byte_ps: u64,
    /// Per transmitted frame (smoltcp egress, MAC, driver; ns), paid by the CPU after the
    /// iteration that sent it (0 in the Niccle profiles).
    pub tx_frame_ns: u64,
    /// Per transmitted byte (ps; 0 in the Niccle profiles).
    pub tx_per_byte_ps: u64,
    /// One main-loop pass ingests every frame committed when it starts, paying
    /// `main_fixed_ns` once (linklab's firmware); false: one frame per pass (the Niccle fit,
    /// whose fixed cost was fitted per frame).
    pub rx_batch: bool,
}

impl CostModel {
    /// RX interrupt post-processing time for `captured` bytes.
    pub fn isr_ns(&self, captured: usize) -> u64 {
        self.isr_fixed_ns + self.isr_per_byte_ps * captured as u64 / 1000
    }

    /// Main-loop time for one iteration that handles a received transmission of `len`
    /// bytes (0 for a timer poll).
    pub fn main_ns(&self, len: usize) -> u64 {
        if len == 0 {
            return self.main_fixed_ns;
        }
        self.main_fixed_ns + self.main_rx_frame_ns + self.main_per_byte_ps * len as u64 / 1000
    }

    /// CPU time for transmitting a frame of `len` bytes (beyond what the iteration cost).
    pub fn tx_ns(&self, len: usize) -> u64 {
        self.tx_frame_ns + self.tx_per_byte_ps * len as u64 / 1000
    }

    /// The cost model of instructions counted on linklab's riscv32imac firmware
    /// (`counts`) at `clock`: a DMA NIC like the measured one (virtio-net), no interrupt
    /// latency beyond the counted instructions.
    pub fn measured(counts: &MeasuredCounts, clock: Clock) -> CostModel {
        let p = &counts.parts;
        CostModel {
            phy: PhyKind::Dma,
            irq_latency_ns: 0,
            isr_fixed_ns: clock.ns(p.isr_per_rx_frame),
            isr_per_byte_ps: clock.ps(p.isr_per_rx_byte),
            main_fixed_ns: clock.ns(p.main_per_pass),
            main_rx_frame_ns: clock.ns(p.main_per_rx_frame),
            main_per_byte_ps: clock.ps(p.main_per_rx_byte),
            tx_frame_ns: clock.ns(p.main_per_tx_frame + p.isr_per_tx_frame),
            tx_per_byte_ps: clock.ps(p.main_per_tx_byte),
            rx_batch: true,
        }
    }
}

/// A named device profile (`FromStr`/`Display` use the kebab-case names, e.g.
/// `niccle-optimized`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Profile {
    /// Zero cost: a DMA PHY, no interrupt latency, no CPU time anywhere. Shows the limit
    /// that the protocol and the link set by themselves.
    Ideal,
    /// Niccle's first MAC: alignment, FCS check and a copy inside the RX interrupt.
    NiccleInitial,
    /// Niccle's intermediate MAC: validation moved out of the interrupt, memcpy in RAM,
    /// but still one copy of the frame in the interrupt.
    NiccleMemcpy,
    /// Niccle's final MAC: zero-copy grant/commit in the interrupt, code in RAM.
    NiccleOptimized,
    /// Instructions counted on linklab's riscv32imac firmware (QEMU `-icount shift=0`) at a
    /// clock and CPI (`--mhz`, `--cpi`), with a DMA NIC: no fitted parameter.
    Riscv32Measured,
    /// The soft-PHY device (`linklab emu --phy10-line`): linklab-phy10's decoder, encoder and
    /// the MAC's FCS counted on riscv32imac (`emu --phy10`) plus the `riscv32-measured`
    /// parts, at `--mhz` and `--cpi`, decoding at 4x: no fitted parameter.
    Riscv32SoftPhy,
    /// Niccle's final interrupt (bit-banged PHY, 750 ns latency, 2 µs post-processing, from
    /// the write-up) with the main loop counted on linklab's riscv32imac firmware at a clock
    /// and CPI: what CPI Niccle's flash-resident main loop must have had.
    NiccleMeasured,
}

impl Profile {
    /// Every profile, from the cheapest to Niccle's last.
    pub const ALL: [Profile; 7] = [
        Profile::Ideal,
        Profile::NiccleInitial,
        Profile::NiccleMemcpy,
        Profile::NiccleOptimized,
        Profile::Riscv32Measured,
        Profile::Riscv32SoftPhy,
        Profile::NiccleMeasured,
    ];

    /// The profile's name, as `FromStr` accepts it.
    pub const fn name(self) -> &'static str {
        match self {
            Profile::Ideal => "ideal",
            Profile::NiccleInitial => "niccle-initial",
            Profile::NiccleMemcpy => "niccle-memcpy",
            Profile::NiccleOptimized => "niccle-optimized",
            Profile::Riscv32Measured => "riscv32-measured",
            Profile::Riscv32SoftPhy => "riscv32-soft-phy",
            Profile::NiccleMeasured => "niccle-measured",
        }
    }

    /// One sentence on what the profile models (for help texts).
    pub const fn summary(self) -> &'static str {
        match self {
            Profile::Ideal => "Zero cost: a DMA PHY, no interrupt latency, no CPU time anywhere. Shows the limit that the protocol and the link set by themselves",
            Profile::NiccleInitial => "Niccle's first MAC: alignment, FCS check and a copy inside the RX interrupt",
            Profile::NiccleMemcpy => "Niccle's intermediate MAC: validation moved out of the interrupt, memcpy in RAM, but still one copy of the frame in the interrupt",
            Profile::NiccleOptimized => "Niccle's final MAC: zero-copy grant/commit in the interrupt, code in RAM. The main loop's 1080 µs per pass is fitted to the write-up's 620 kB/s: no model from counted instructions reaches it at CPI 1 (see niccle-measured)",
            Profile::Riscv32Measured => "Instructions counted on linklab's riscv32imac firmware (QEMU -icount shift=0, a DMA NIC) at --mhz and --cpi; no fitted parameter",
            Profile::Riscv32SoftPhy => "The soft-PHY device of linklab emu --phy10-line: linklab-phy10's decoder (at 4x, or --oversample with --phy samples), encoder and the MAC's FCS counted on riscv32imac, plus riscv32-measured's parts, at --mhz and --cpi; no fitted parameter",
            Profile::NiccleMeasured => "Niccle's final interrupt (bit-banged PHY, from the write-up) with the main loop counted on linklab's riscv32imac firmware at --mhz and --cpi (Niccle's ~620 kB/s needs a CPI near 14: code running from flash through the cache)",
        }
    }
}

impl fmt::Display for Profile {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl std::str::FromStr for Profile {
    type Err = UnknownName;

    fn from_str(s: &str) -> Result<Profile, UnknownName> {
        Profile::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| UnknownName::new("profile", s, Profile::ALL.map(Profile::name)))
    }
}

/// A full-length packet as Niccle measured it: "when we have to copy 1526 bytes of data
/// (a full length packet)".
pub const NICCLE_FULL_PACKET: u64 = 1526;

/// "just invoking the interrupt routine in response to the next incoming packet already
/// takes close to 750 ns".
pub const NICCLE_IRQ_LATENCY_NS: u64 = 750;

/// "it took the MAC RX layer 1050 μs to process the previous packet" (a full-length
/// packet, initial implementation).
pub const NICCLE_INITIAL_ISR_NS: u64 = 1_050_000;

/// "the other 2.5 μs or so in the above screenshot" — the interrupt's overhead besides
/// the copy; we use it as the fixed part of the initial interrupt.
pub const NICCLE_ISR_OVERHEAD_NS: u64 = 2_500;

/// "it already brought the post processing latency down to about 16.25 μs or so"
/// (intermediate implementation: one memcpy of the frame left in the interrupt).
pub const NICCLE_MEMCPY_ISR_NS: u64 = 16_250;

/// "we were now only taking about 2 μs to post-process a packet" (final implementation).
pub const NICCLE_OPTIMIZED_ISR_NS: u64 = 2_000;

/// "I measured it taking close to 14 μs" — one memcpy of a full-length (1526-byte)
/// packet; the main loop's per-byte cost is one such copy (smoltcp copies the payload into
/// the socket buffer).
pub const NICCLE_MEMCPY_FULL_PACKET_NS: u64 = 14_000;

/// The one fitted parameter: the main loop's fixed cost per iteration (smoltcp ingress +
/// egress + the HTTP client), fitted so that `niccle-optimized` downloads `/1MB.txt` at
/// Niccle's ~620 kB/s ("Received 1000070 bytes over 1.618 s (618.1 kB/sec)") with the
/// defaults (9-frame queue, auto window, 10 Mbit/s half duplex, seed 1). See the README
/// for the fit.
pub const FITTED_MAIN_FIXED_NS: u64 = 1_080_000;

/// The soft-PHY profile's default factor: the 4x goal point (802.3's ±100 ppm clocks).
pub const SOFT_PHY_OVERSAMPLE: u8 = 4;

impl Profile {
    /// The cost model of `riscv32-soft-phy` decoding at `oversample` (4, 5, 6 or 8: the
    /// factors counted; any other falls back to 8x, the costliest counted).
    pub fn soft_phy_at(self, clock: Clock, oversample: u8) -> CostModel {
        let parts = MeasuredCounts::compiled_in();
        let phy10 = crate::soft_phy::Phy10Counts::compiled_in();
        crate::soft_phy::cost_model(&parts, &phy10, clock, oversample)
            .or_else(|| crate::soft_phy::cost_model(&parts, &phy10, clock, 8))
            .expect("the data file has an 8x case (tested)")
    }

    /// The cost model of this profile (`riscv32-measured` at 160 MHz, CPI 1).
    pub fn cost(self) -> CostModel {
        self.cost_at(Clock::ESP32_C6)
    }

    /// The cost model of this profile; `clock` only matters for `riscv32-measured`.
    pub fn cost_at(self, clock: Clock) -> CostModel {
        let memcpy_ps_per_byte = NICCLE_MEMCPY_FULL_PACKET_NS * 1000 / NICCLE_FULL_PACKET;
        match self {
            Profile::Ideal => CostModel {
                phy: PhyKind::Dma,
                irq_latency_ns: 0,
                isr_fixed_ns: 0,
                isr_per_byte_ps: 0,
                main_fixed_ns: 0,
                main_rx_frame_ns: 0,
                main_per_byte_ps: 0,
                tx_frame_ns: 0,
                tx_per_byte_ps: 0,
                rx_batch: false,
            },
            Profile::NiccleInitial => CostModel {
                phy: PhyKind::BitBanged,
                irq_latency_ns: NICCLE_IRQ_LATENCY_NS,
                isr_fixed_ns: NICCLE_ISR_OVERHEAD_NS,
                // (1050 µs − 2.5 µs) spread over a 1526-byte packet: ≈ 686 ns per byte.
                isr_per_byte_ps: (NICCLE_INITIAL_ISR_NS - NICCLE_ISR_OVERHEAD_NS) * 1000
                    / NICCLE_FULL_PACKET,
                main_fixed_ns: FITTED_MAIN_FIXED_NS,
                main_rx_frame_ns: 0,
                main_per_byte_ps: memcpy_ps_per_byte,
                tx_frame_ns: 0,
                tx_per_byte_ps: 0,
                rx_batch: false,
            },
            Profile::NiccleMemcpy => CostModel {
                phy: PhyKind::BitBanged,
                irq_latency_ns: NICCLE_IRQ_LATENCY_NS,
                // 16.25 µs for a full-length packet, of which the 14 µs memcpy scales with
                // the length.
                isr_fixed_ns: NICCLE_MEMCPY_ISR_NS - NICCLE_MEMCPY_FULL_PACKET_NS,
                isr_per_byte_ps: memcpy_ps_per_byte,
                main_fixed_ns: FITTED_MAIN_FIXED_NS,
                main_rx_frame_ns: 0,
                main_per_byte_ps: memcpy_ps_per_byte,
                tx_frame_ns: 0,
                tx_per_byte_ps: 0,
                rx_batch: false,
            },
            Profile::NiccleOptimized => CostModel {
                phy: PhyKind::BitBanged,
                irq_latency_ns: NICCLE_IRQ_LATENCY_NS,
                isr_fixed_ns: NICCLE_OPTIMIZED_ISR_NS,
                isr_per_byte_ps: 0,
                main_fixed_ns: FITTED_MAIN_FIXED_NS,
                main_rx_frame_ns: 0,
                main_per_byte_ps: memcpy_ps_per_byte,
                tx_frame_ns: 0,
                tx_per_byte_ps: 0,
                rx_batch: false,
            },
            Profile::Riscv32Measured => CostModel::measured(&MeasuredCounts::compiled_in(), clock),
            Profile::Riscv32SoftPhy => self.soft_phy_at(clock, SOFT_PHY_OVERSAMPLE),
            Profile::NiccleMeasured => CostModel {
                phy: PhyKind::BitBanged,
                irq_latency_ns: NICCLE_IRQ_LATENCY_NS,
                isr_fixed_ns: NICCLE_OPTIMIZED_ISR_NS,
                isr_per_byte_ps: 0,
                ..CostModel::measured(&MeasuredCounts::compiled_in(), clock)
            },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_say_what_is_accepted() {
        for p in Profile::ALL {
            assert_eq!(p.to_string().parse::<Profile>(), Ok(p));
        }
        let e = "fast".parse::<Profile>().unwrap_err().to_string();
        assert!(
            e.contains("\"fast\"") && e.contains("niccle-optimized"),
            "{e}"
        );
    }

    #[test]
    fn measured_profile_scales_with_clock_and_cpi() {
        let p = MeasuredCounts::compiled_in().parts;
        let at160 = Profile::Riscv32Measured.cost();
        assert_eq!(
            at160.main_fixed_ns,
            (p.main_per_pass * 1000.0 / 160.0).round() as u64
        );
        let slow = Profile::Riscv32Measured.cost_at(Clock {
            mhz: 80.0,
            cpi: 2.0,
        });
        // A quarter of the speed: every time four times as long (within rounding: each
        // part is rounded to a ns or ps on its own, so allow 0.1 %).
        let four_times = |slow: u64, fast: u64| slow.abs_diff(4 * fast) <= (4 * fast / 1000).max(4);
        assert!(four_times(slow.main_ns(1000), at160.main_ns(1000)));
        assert!(four_times(slow.tx_ns(1514), at160.tx_ns(1514)));
        assert!(at160.isr_ns(1514) > at160.isr_ns(60));
        assert!(at160.main_ns(0) < at160.main_ns(60));
        assert_eq!(at160.phy, PhyKind::Dma);
    }

    #[test]
    fn initial_isr_is_1050_us_for_a_full_packet() {
        let c = Profile::NiccleInitial.cost();
        let t = c.isr_ns(NICCLE_FULL_PACKET as usize);
        assert!((1_049_000..=1_051_000).contains(&t), "{t}");
    }

    #[test]
    fn optimized_isr_fits_the_gap_and_initial_does_not() {
        // "the 15.2 μs we technically have available": 9.6 µs gap + 7 preamble bytes.
        let window = 9_600 + 5_600;
        let o = Profile::NiccleOptimized.cost();
        assert!(o.isr_ns(1526) + o.irq_latency_ns < window);
        // "it still meant that the interrupt for the next packet would fire too late".
        let m = Profile::NiccleMemcpy.cost();
        let t = m.isr_ns(1526);
        assert!((16_200..=16_300).contains(&t), "{t}");
        assert!(t + m.irq_latency_ns > window);
        let i = Profile::NiccleInitial.cost();
        assert!(i.isr_ns(1526) + i.irq_latency_ns > window);
    }
}
