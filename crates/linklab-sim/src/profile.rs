//! The device profiles: `ideal`; `niccle-initial`, `niccle-memcpy`, `niccle-optimized`, with
//! every figure quoted from Niccle's MAC write-up next to the parameter it sets; the counted
//! profiles, each a data file of instructions counted on one of linklab's firmware images
//! ([`crate::counts`]) turned into time at a clock ([`CostModel::counted`]); and
//! `niccle-measured`, Niccle's interrupt with the counted main loop.

use std::fmt;

use crate::cost::{CostModel, PhyKind, Workload};
use crate::counts::{Clock, CountedProfile, LoopShape};
use crate::name::UnknownName;

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
    /// Instructions counted on linklab's riscv32imac main-loop image (virtio-net) under QEMU
    /// `-icount shift=0`, at a clock and CPI (`--mhz`, `--cpi`): no fitted parameter.
    Riscv32Measured,
    /// The same board's embassy image (embassy-executor, embassy-net), counted the same way;
    /// its runner sends in a pass of its own.
    Riscv32EmbassyMeasured,
    /// The soft-PHY image (`linklab emu riscv32-virt --image soft-phy`: linklab-phy10 decoding line samples
    /// into the MAC's grants, the MAC's FCS, the encoder), counted the same way.
    Riscv32SoftPhy,
    /// The Cortex-M3 image (mps2-an385, LAN9118), counted the same way on its 25 MHz timer
    /// (one instruction per ns at `-icount shift=0`).
    Mps2Measured,
    /// The Cortex-A9 image (QEMU's sabrelite, the i.MX6 FEC iperf study's board: the ENET
    /// through linklab-imx-enet, checksums inserted on transmit), counted the same way on its
    /// global timer (one instruction per ns at `-icount shift=0`).
    SabreliteMeasured,
    /// Niccle's final interrupt (bit-banged PHY, 750 ns latency, 2 µs post-processing, from
    /// the write-up) with the main loop counted on linklab's riscv32imac firmware at a clock
    /// and CPI: what CPI Niccle's flash-resident main loop must have had.
    NiccleMeasured,
}

impl Profile {
    /// Every profile, from the cheapest to Niccle's last.
    pub const ALL: [Profile; 10] = [
        Profile::Ideal,
        Profile::NiccleInitial,
        Profile::NiccleMemcpy,
        Profile::NiccleOptimized,
        Profile::Riscv32Measured,
        Profile::Riscv32EmbassyMeasured,
        Profile::Riscv32SoftPhy,
        Profile::Mps2Measured,
        Profile::SabreliteMeasured,
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
            Profile::Riscv32EmbassyMeasured => "riscv32-embassy-measured",
            Profile::Riscv32SoftPhy => "riscv32-soft-phy",
            Profile::Mps2Measured => "mps2-measured",
            Profile::SabreliteMeasured => "sabrelite-measured",
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
            Profile::Riscv32Measured => "Instructions counted on linklab's riscv32imac main-loop image (QEMU -icount shift=0, virtio-net) at --mhz and --cpi; no fitted parameter",
            Profile::Riscv32EmbassyMeasured => "Instructions counted on linklab's riscv32imac embassy image (embassy-net; its runner sends in a pass of its own) at --mhz and --cpi; no fitted parameter",
            Profile::Riscv32SoftPhy => "The soft-PHY image of linklab emu riscv32-virt --image soft-phy (linklab-phy10 decoding at 4x, or --oversample with --phy samples; the MAC's FCS; the encoder), counted on riscv32imac, at --mhz and --cpi; no fitted parameter",
            Profile::Mps2Measured => "Instructions counted on linklab's Cortex-M3 image (mps2-an385, LAN9118, no checksum offload; a 25 MHz timer under -icount shift=0) at --mhz and --cpi; no fitted parameter",
            Profile::SabreliteMeasured => "Instructions counted on linklab's Cortex-A9 image (QEMU sabrelite, the i.MX6 FEC iperf study's board: the ENET through linklab-imx-enet; the global timer under -icount shift=0) at --mhz and --cpi; no fitted parameter",
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

impl Profile {
    /// The data file of a counted profile (`niccle-measured` reads `riscv32-measured`'s);
    /// None for the write-up's profiles, whose figures are quoted times.
    pub fn counts(self) -> Option<CountedProfile> {
        let name = match self {
            Profile::NiccleMeasured => Profile::Riscv32Measured.name(),
            Profile::Riscv32Measured
            | Profile::Riscv32EmbassyMeasured
            | Profile::Riscv32SoftPhy
            | Profile::Mps2Measured
            | Profile::SabreliteMeasured => self.name(),
            Profile::Ideal
            | Profile::NiccleInitial
            | Profile::NiccleMemcpy
            | Profile::NiccleOptimized => return None,
        };
        Some(CountedProfile::compiled_in(name).expect("every counted profile has a data file"))
    }

    /// The cost model of this profile (a counted one at 160 MHz, CPI 1).
    pub fn cost(self) -> CostModel {
        self.cost_at(Clock::ESP32_C6)
    }

    /// The cost model of this profile for the default workload; `clock` only matters for
    /// the counted profiles.
    pub fn cost_at(self, clock: Clock) -> CostModel {
        self.cost_for(clock, &Workload::default())
            .expect("the default workload needs nothing a profile lacks")
    }

    /// The cost model of this profile at `clock` for `work` (which only the counted
    /// profiles read); an error if `work` asks for a decoder factor that was not counted.
    pub fn cost_for(self, clock: Clock, work: &Workload) -> Result<CostModel, String> {
        let memcpy_ps_per_byte = NICCLE_MEMCPY_FULL_PACKET_NS * 1000 / NICCLE_FULL_PACKET;
        Ok(match self {
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
                shape: LoopShape::MainLoop,
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
                shape: LoopShape::MainLoop,
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
                shape: LoopShape::MainLoop,
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
                shape: LoopShape::MainLoop,
            },
            Profile::NiccleMeasured => {
                let counts = self
                    .counts()
                    .expect("niccle-measured reads riscv32-measured");
                return Ok(CostModel {
                    phy: PhyKind::BitBanged,
                    irq_latency_ns: NICCLE_IRQ_LATENCY_NS,
                    isr_fixed_ns: NICCLE_OPTIMIZED_ISR_NS,
                    isr_per_byte_ps: 0,
                    ..CostModel::counted(&counts, clock, work)?
                });
            }
            Profile::Riscv32Measured
            | Profile::Riscv32EmbassyMeasured
            | Profile::Riscv32SoftPhy
            | Profile::Mps2Measured
            | Profile::SabreliteMeasured => {
                let counts = self.counts().expect("a counted profile");
                return CostModel::counted(&counts, clock, work);
            }
        })
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
    fn counted_profiles_scale_with_clock_and_cpi() {
        for profile in Profile::ALL.into_iter().filter(|p| p.counts().is_some()) {
            let p = profile.counts().unwrap().parts;
            let at160 = profile.cost();
            assert_eq!(
                at160.main_fixed_ns,
                (p.main_per_pass * 1000.0 / 160.0).round() as u64,
                "{profile}"
            );
            let slow = profile.cost_at(Clock {
                mhz: 80.0,
                cpi: 2.0,
            });
            // A quarter of the speed: every time four times as long (within rounding: each
            // part is rounded to a ns or ps on its own, so allow 0.1 %).
            let four_times =
                |slow: u64, fast: u64| slow.abs_diff(4 * fast) <= (4 * fast / 1000).max(4);
            assert!(
                four_times(slow.main_ns(1000), at160.main_ns(1000)),
                "{profile}"
            );
            assert!(four_times(slow.tx_ns(1514), at160.tx_ns(1514)), "{profile}");
            assert!(at160.main_ns(0) < at160.main_ns(60), "{profile}");
        }
    }

    #[test]
    fn misaligned_copies_and_http_cost_more_per_byte_and_nothing_else() {
        let clock = Clock {
            mhz: 125.0,
            cpi: 1.0,
        };
        let plain = Profile::Riscv32Measured.cost_at(clock);
        let slow = Profile::Riscv32Measured
            .cost_for(
                clock,
                &Workload {
                    rx_misaligned: 1.0,
                    ..Workload::default()
                },
            )
            .unwrap();
        let mis = Profile::Riscv32Measured
            .counts()
            .unwrap()
            .parts
            .main_per_misaligned_byte;
        assert!(mis > 0.0);
        assert_eq!(
            slow.main_per_byte_ps,
            plain.main_per_byte_ps + clock.ps(mis)
        );
        assert_eq!(slow.tx_per_byte_ps, plain.tx_per_byte_ps);
        assert_eq!(slow.main_fixed_ns, plain.main_fixed_ns);
        let http = Profile::Riscv32Measured
            .cost_for(
                clock,
                &Workload {
                    http_sender: true,
                    ..Workload::default()
                },
            )
            .unwrap();
        assert!(http.tx_per_byte_ps > plain.tx_per_byte_ps);
        assert_eq!(http.main_per_byte_ps, plain.main_per_byte_ps);
    }

    #[test]
    fn only_a_soft_phy_decodes_at_another_factor() {
        let clock = Clock::ESP32_C6;
        let at = |p: Profile, f| {
            p.cost_for(
                clock,
                &Workload {
                    oversample: Some(f),
                    ..Workload::default()
                },
            )
        };
        let four = at(Profile::Riscv32SoftPhy, 4).unwrap();
        assert_eq!(four, Profile::Riscv32SoftPhy.cost_at(clock));
        let five = at(Profile::Riscv32SoftPhy, 5).unwrap();
        assert!(five.isr_per_byte_ps > four.isr_per_byte_ps);
        let e = at(Profile::Riscv32SoftPhy, 7).unwrap_err();
        assert!(e.contains("--oversample 7"), "{e}");
        assert!(at(Profile::Riscv32Measured, 4).is_err());
    }

    #[test]
    fn the_embassy_profile_sends_in_a_pass_of_its_own() {
        assert_eq!(
            Profile::Riscv32EmbassyMeasured.cost().shape,
            LoopShape::Executor
        );
        for p in [
            Profile::Riscv32Measured,
            Profile::Mps2Measured,
            Profile::SabreliteMeasured,
            Profile::Riscv32SoftPhy,
        ] {
            assert_eq!(p.cost().shape, LoopShape::MainLoop);
        }
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
