// The hostile line, injected by the harness at times of the chip's clock (`--inject PLAN`):
// what a bad cable, a babbling partner or a PHY core that fell behind does to the soft PHY.
//
// PLAN is a comma-separated list of `MS:CASE`, MS in milliseconds of the chip's clock from
// the plan's start (harness.mjs starts it on SIGUSR1):
// - `noise`: a burst of random line samples, 2 000 bit times long;
// - `cut`: a frame cut mid-byte: preamble, SFD, 40 random bytes and 3 bits, then the line
//   stops moving;
// - `pulses`: 20 link pulses (100 ns high) and nothing else, 9.6 µs apart;
// - `stuck-high` / `stuck-low`: the line held high / low for 20 ms;
// - `stall`: core 1 (the PHY's core) stops for 20 ms, longer than the sample ring lasts:
//   the ring overruns.
// Each is played on the RX pin next (before the line process's captures), or done to the
// machine, once the chip's clock has passed MS.

/// The cases and what each needs.
export const CASES = ['noise', 'cut', 'pulses', 'stuck-high', 'stuck-low', 'stall'];

/// How long a stuck line or a stall lasts, ms of the chip's clock.
export const HOLD_MS = 20;

/// The plan as `[{ atNs, kind }]` sorted by time; throws on a malformed one.
export function parsePlan(text) {
  const plan = text.split(',').filter(Boolean).map((entry) => {
    const [ms, kind] = entry.split(':');
    const at = Number(ms);
    if (!(at >= 0) || !CASES.includes(kind)) {
      throw new Error(`--inject: "${entry}" is not MS:CASE with CASE one of ${CASES.join(', ')}`);
    }
    return { atNs: at * 1e6, kind };
  });
  return plan.sort((a, b) => a.atNs - b.atNs);
}

/// A deterministic generator (xorshift32): the same plan plays the same samples.
export function rng(seed = 0x2545f491) {
  let x = seed >>> 0 || 1;
  return () => {
    x ^= x << 13;
    x >>>= 0;
    x ^= x >>> 17;
    x ^= x << 5;
    x >>>= 0;
    return x;
  };
}

/// Packs `levels` (0/1 per sample) LSB first, as the line process sends captures.
export function pack(levels) {
  const bytes = new Uint8Array(Math.ceil(levels.length / 8));
  levels.forEach((l, i) => {
    if (l) bytes[i >> 3] |= 1 << (i & 7);
  });
  return bytes;
}

/// Manchester samples of `bits` at `oversample` per bit (802.3: a 1 is low then high).
export function manchester(bits, oversample) {
  const half = oversample / 2;
  const out = [];
  for (const b of bits) {
    for (let i = 0; i < oversample; i++) out.push(i < half ? 1 - b : b);
  }
  return out;
}

/// The bits of `bytes`, LSB first.
function bitsOf(bytes) {
  const bits = [];
  for (const b of bytes) for (let i = 0; i < 8; i++) bits.push((b >> i) & 1);
  return bits;
}

/// What the RX line plays for `kind` at `oversample` samples per bit: `{ bytes }` (a
/// capture) or `[{ bytes }...]` or `{ hold, samples }`; null for what is not played on the
/// line (a stall).
export function lineItems(kind, oversample, next = rng()) {
  const idle = (n) => new Array(n).fill(0);
  switch (kind) {
    case 'noise': {
      const levels = [];
      for (let i = 0; i < 2000 * oversample; i++) levels.push(next() & 1);
      return [{ bytes: pack([...levels, ...idle(8 * oversample)]) }];
    }
    case 'cut': {
      const wire = [0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0xd5];
      for (let i = 0; i < 40; i++) wire.push(next() & 0xff);
      const bits = [...bitsOf(wire), 1, 0, 1];
      const levels = manchester(bits, oversample);
      // Cut mid-cell: the line stays where it is.
      levels.length -= oversample / 2;
      const last = levels[levels.length - 1];
      return [{ bytes: pack([...levels, ...new Array(16 * oversample).fill(last)]) }];
    }
    case 'pulses': {
      const pulse = pack([...idle(oversample), ...new Array(oversample).fill(1), ...idle(6 * oversample)]);
      return new Array(20).fill(0).map(() => ({ bytes: pulse }));
    }
    case 'stuck-high':
    case 'stuck-low':
      return [{ hold: kind === 'stuck-high' ? 1 : 0, samples: HOLD_MS * 1e4 * oversample }];
    default:
      return null;
  }
}
