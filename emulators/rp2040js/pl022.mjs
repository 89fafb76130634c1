// The timing of the RP2040's SPI master (an Arm PL022 "PrimeCell SSP") as a device on its
// bus sees it, for rp2040js 1.4.1's SPI peripheral, which has FIFOs but no time of its own
// (it hands each byte to `onTransmit` and waits for `completeTransmit`).
//
// What is modelled, from the RP2040 datasheet §4.4 (SPI) unless marked otherwise:
// - The clock: f_SCK = clk_peri / (CPSDVSR x (1 + SCR)), as rp2040js computes it from
//   SSPCPSR and SSPCR0 (`clockFrequency`); a byte of 8 bits takes 8 SCK periods.
// - The FIFOs: 8 entries each way (§4.4.2, "the transmit FIFO ... 16 bits wide, 8
//   locations deep"), as rp2040js has them: a DMA or the CPU keeps up to 8 bytes queued, and
//   the master starts the next byte as soon as the last one's gap is over.
// - The gap between words of a continuous transfer, by SSPCR0.SPH (the clock phase; SPO,
//   the polarity, changes nothing here):
//   - SPH = 0 (SPI modes 0 and 2): the master pulses its frame signal SSPFSSOUT high
//     between every two words (§4.4.3.10, "Motorola SPI Format with SPO=0, SPH=0":
//     "SSPFSSOUT must be pulsed HIGH between each data word transfer"; the same in the
//     PL022 TRM and TI's SSI manuals), so the clock stops for **1.5 SCK periods** after each
//     word: 9.5 periods a byte.
//   - SPH = 1 (modes 1 and 3): SSPFSSOUT stays low between words, and the clock stops for
//     **0.5 SCK periods**: 8.5 periods a byte.
//   The datasheet draws the pulse but gives no length: 1.5 and 0.5 periods are what a scope
//   showed on an RP2040 (Raspberry Pi Stack Exchange, question 132758, citing §4.4.3.10)
//   and are **assumed** here, in nanoseconds of the clock the firmware set.
// - The frame signal: the W5500-EVB-Pico drives SCSn from a plain GPIO (GP17), so the pulse
//   never reaches the chip; only its gap on the clock matters (a device that took SSPFSSOUT
//   as its select would see a frame per byte at SPH = 0).
//
// What is not: the SPI's own clock-domain crossing (a byte written while the master is
// idle starts at once here; on the chip a few clk_peri cycles later), slave mode and the
// other frame formats (TI, National Microwire), as in rp2040js.

/// SSPCR0's clock phase bit.
const SPH = 1 << 7;
/// SSPCR0's clock polarity bit.
const SPO = 1 << 6;
/// Entries of each FIFO (RP2040 datasheet §4.4.2); rp2040js's FIFOs have as many.
export const FIFO_DEPTH = 8;
/// SCK periods the clock stops between two words of a continuous transfer, by SPH.
export const GAP_SCK = { sph0: 1.5, sph1: 0.5 };

/// The SPI mode (0..3: CPOL x 2 + CPHA) of the PL022 whose SSPCR0 is `cr0`. (rp2040js's own
/// `spiMode` swaps modes 2 and 3.)
export function spiMode(cr0) {
  return ((cr0 & SPO) ? 2 : 0) + ((cr0 & SPH) ? 1 : 0);
}

/// SCK periods between words for SSPCR0 `cr0`: [`GAP_SCK`] by its SPH, or `gapSck` if given
/// (the harness's `--spi-gap-sck`, e.g. 0 for a master without gaps).
export function gapSck(cr0, override = null) {
  if (override !== null) return override;
  return (cr0 & SPH) ? GAP_SCK.sph1 : GAP_SCK.sph0;
}

/// When each byte of a PL022 master starts and ends on the bus, in ns of the chip's clock.
/// `spi` is rp2040js's peripheral (read for its clock and SSPCR0 at each byte, so a firmware
/// that changes mode or clock is followed); `gapOverride` as [`gapSck`].
export class Pl022Timing {
  constructor(spi, gapOverride = null) {
    this.spi = spi;
    this.gapOverride = gapOverride;
    /// Emulated ns from which the shifter may start the next byte.
    this.freeAt = 0;
    /// The last byte's SCK period and gap (ns), for the figures.
    this.sckNs = 0;
    this.gapNs = 0;
  }

  /// A byte handed to the shifter at `now`: the ns from now until its last bit is in (when
  /// the device answers it). The next byte may start `gap` after that.
  next(now) {
    const hz = this.spi.clockFrequency;
    const cr0 = this.spi.control0;
    this.sckNs = hz ? 1e9 / hz : 0;
    this.gapNs = gapSck(cr0, this.gapOverride) * this.sckNs;
    const start = Math.max(now, this.freeAt);
    const done = start + 8 * this.sckNs;
    this.freeAt = done + this.gapNs;
    // A clock of 0 (SSE off, no divisor): answer within the step, as rp2040js does.
    return hz ? done - now : 1;
  }

  /// A byte's slot on the bus, ns: 8 SCK periods and the gap after it.
  slotNs() {
    return 8 * this.sckNs + this.gapNs;
  }

  /// The figures of the last byte: SPI mode, SCK period, gap.
  status() {
    return {
      spi_mode: spiMode(this.spi.control0),
      spi_sck_ns: this.sckNs,
      spi_gap_sck: gapSck(this.spi.control0, this.gapOverride),
      spi_byte_ns: this.slotNs(),
    };
  }
}
