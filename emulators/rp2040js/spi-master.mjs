// An SPI master on the harness's one clock, standing in for the Raspberry Pi that CBA's link
// speed tests put at the other end of the RP2040's SPI: one full-duplex transfer per call
// (what Linux spidev's SPI_IOC_MESSAGE does), SPI mode 0, MSB first, 8-bit words, at a clock
// from 1 to 31.25 MHz; the gap the host leaves between transfers; and the two pins the device
// drives back (READY: armed for a transfer; REQUEST: it has bytes to send). A pure model: it
// keeps no time of its own and is stepped once per cycle of the chip's clock
// (`cycle(ns)`, pico-spi.mjs), driving and sampling pins through `io`.
//
// Timing (docs/spi.md says where each comes from):
// - CS falls with the first byte's MSB on MOSI; the first rising edge of SCK comes half a
//   period later; MOSI changes on falling edges and both ends sample on rising edges (mode 0);
//   CS rises half a period after the last falling edge (assumed: the Pi's controller is not
//   documented to that detail).
// - Bytes follow back to back, unless `byteGapHalfPeriods` adds idle half periods after each
//   (assumed 0: spi-bcm2835 feeds its FIFO by DMA for long transfers).
// - The gap between one transfer's CS rise and the next one's CS fall is at least `gapNs`
//   (CBA's scope: about 10 µs between transfers); a transfer's gap is `tailNs` instead with
//   probability `tailPerMille` / 1000 (CBA: "would sometimes stretch to 50us or so"), drawn
//   from a seeded generator so a run repeats.
// - Each edge lands on the first cycle of the chip's clock at or after its time: the master's
//   clock is not the chip's, so a half period at 20 MHz is 3 or 4 cycles at 125 MHz.
// - The master samples MISO at its rising edge, as the chip drove it before that edge.

/// The pins of the link (pico-spi.mjs wires them to GPIOs).
export const PINS = Object.freeze({ mosi: 'mosi', cs: 'cs', sck: 'sck' });

/// The lowest and highest SPI clock the model takes (CBA's sweep and PIO's bound at 125 MHz).
export const MIN_HZ = 1_000_000;
export const MAX_HZ = 31_250_000;

/// Times closer than this are the same instant (sums of cycle times in floating point).
const EPSILON_NS = 1e-3;

/// A small seeded generator (xorshift32) for the tail gaps: the same seed, the same gaps.
export class Xorshift {
  constructor(seed) {
    this.s = seed >>> 0 || 1;
  }
  /// A number in [0, 1000).
  perMille() {
    let x = this.s;
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    this.s = x >>> 0;
    return this.s % 1000;
  }
}

/// Checks a master's options; returns a message for the first that is out of range, or null.
export function checkOptions({ gapNs, tailNs, tailPerMille, byteGapHalfPeriods, readyTimeoutNs }) {
  if (!(Number.isInteger(gapNs) && gapNs >= 0 && gapNs <= 1e9)) return 'gap: 0..1 s in ns';
  if (!(Number.isInteger(tailNs) && tailNs >= 0 && tailNs <= 1e9)) return 'tail: 0..1 s in ns';
  if (!(Number.isInteger(tailPerMille) && tailPerMille >= 0 && tailPerMille <= 1000)) {
    return 'tail share: 0..1000 per mille';
  }
  if (!(Number.isInteger(byteGapHalfPeriods) && byteGapHalfPeriods >= 0 && byteGapHalfPeriods <= 64)) {
    return 'byte gap: 0..64 half periods';
  }
  if (!(readyTimeoutNs > 0)) return 'ready timeout: a positive number of ns';
  return null;
}

/// The master. `io`: `set(pin, level)` (a pin of PINS to 0 or 1), `miso()` (0 or 1, as the
/// chip drives it now), `ready()` and `request()` (booleans).
export class SpiMaster {
  constructor(io, options = {}) {
    this.io = io;
    this.gapNs = options.gapNs ?? 10_000;
    this.tailNs = options.tailNs ?? 50_000;
    this.tailPerMille = options.tailPerMille ?? 50;
    this.byteGapHalfPeriods = options.byteGapHalfPeriods ?? 0;
    this.readyTimeoutNs = options.readyTimeoutNs ?? 20e6;
    const bad = checkOptions(this);
    if (bad) throw new Error(bad);
    this.random = new Xorshift(options.seed ?? 0x5eed);
    this.state = 'idle';
    this.job = null;
    /// When the last transfer's CS rose (ns), and the gap before the next CS fall.
    this.lastEnd = -Infinity;
    this.nextGap = 0;
    this.stats = { transfers: 0, bytes: 0, not_ready: 0, clocked_ns: 0, tails: 0 };
    io.set(PINS.cs, 1);
    io.set(PINS.sck, 0);
    io.set(PINS.mosi, 0);
  }

  /// True while a transfer is under way (the clock must step `cycle` every cycle).
  get busy() {
    return this.state !== 'idle';
  }

  /// Starts a transfer of `tx` (a Uint8Array) at `hz`, after the gap and, with `waitReady`,
  /// once READY is high (at most `readyTimeoutNs`). `done(result)` gets `{ rx, startNs,
  /// endNs }`, or `{ notReady: true, atNs }` if READY never came.
  start(tx, { hz, waitReady = true }, done) {
    if (this.busy) throw new Error('a transfer is under way');
    if (!(hz >= MIN_HZ && hz <= MAX_HZ)) throw new Error(`SPI clock ${hz} Hz: ${MIN_HZ}..${MAX_HZ}`);
    if (tx.length === 0) throw new Error('an empty transfer');
    this.job = {
      tx,
      rx: new Uint8Array(tx.length),
      half: 1e9 / (2 * hz),
      waitReady,
      done,
      since: null,
      byte: 0,
      bit: 7,
      acc: 0,
      nextAt: 0,
      startNs: 0,
    };
    this.state = 'gap';
  }

  /// One cycle of the chip's clock at `ns`.
  cycle(ns) {
    const j = this.job;
    switch (this.state) {
      case 'idle':
        return;
      case 'gap':
        if (j.since === null) j.since = ns;
        if (ns + EPSILON_NS < this.lastEnd + this.nextGap) return;
        this.state = 'ready';
      // falls through
      case 'ready':
        if (j.waitReady && !this.io.ready()) {
          if (ns - j.since >= this.readyTimeoutNs) {
            this.stats.not_ready++;
            this.finish({ notReady: true, atNs: ns });
          }
          return;
        }
        this.select(ns);
        return;
      case 'rise':
        if (ns + EPSILON_NS < j.nextAt) return;
        j.acc = (j.acc << 1) | this.io.miso();
        this.io.set(PINS.sck, 1);
        j.nextAt += j.half;
        this.state = 'fall';
        return;
      case 'fall':
        if (ns + EPSILON_NS < j.nextAt) return;
        this.io.set(PINS.sck, 0);
        this.fall();
        return;
      case 'deselect':
        if (ns + EPSILON_NS < j.nextAt) return;
        this.io.set(PINS.cs, 1);
        this.stats.transfers++;
        this.stats.bytes += j.tx.length;
        this.stats.clocked_ns += ns - j.startNs;
        this.lastEnd = ns;
        this.finish({ rx: j.rx, startNs: j.startNs, endNs: ns });
        return;
      default:
        throw new Error(`SPI master: state ${this.state}`);
    }
  }

  select(ns) {
    const j = this.job;
    j.startNs = ns;
    this.io.set(PINS.cs, 0);
    this.io.set(PINS.mosi, (j.tx[0] >> 7) & 1);
    j.nextAt = ns + j.half;
    this.state = 'rise';
  }

  /// After a falling edge: the next bit on MOSI, the next byte, or the end.
  fall() {
    const j = this.job;
    if (j.bit > 0) {
      j.bit--;
      this.io.set(PINS.mosi, (j.tx[j.byte] >> j.bit) & 1);
      j.nextAt += j.half;
      this.state = 'rise';
      return;
    }
    j.rx[j.byte] = j.acc & 0xff;
    j.acc = 0;
    j.byte++;
    if (j.byte === j.tx.length) {
      j.nextAt += j.half;
      this.state = 'deselect';
      return;
    }
    j.bit = 7;
    this.io.set(PINS.mosi, (j.tx[j.byte] >> 7) & 1);
    j.nextAt += j.half * (1 + this.byteGapHalfPeriods);
    this.state = 'rise';
  }

  finish(result) {
    const { done } = this.job;
    this.job = null;
    this.state = 'idle';
    this.nextGap = this.drawGap();
    done(result);
  }

  /// The gap before the next transfer: the usual one, or now and then the tail.
  drawGap() {
    if (this.tailPerMille > 0 && this.random.perMille() < this.tailPerMille) {
      this.stats.tails++;
      return this.tailNs;
    }
    return this.gapNs;
  }
}
