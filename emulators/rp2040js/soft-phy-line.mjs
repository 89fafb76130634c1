// The 10BASE-T line of the soft-PHY examples at the pin level: PIO0's state machine 0
// samples the RX pin, state machine 1 drives the TX pin while the driver enable is high.
//
// - The RX pin (GP2) shows the line as the line process samples it (`oversample` samples per
//   100 ns bit, 4 by default), one line sample after another at the line's rate in the
//   chip's time: before each step of state machine 0, which reads the pin (as its `in` and
//   its `jmp` pin), the line moves on by the step's time (a 40 MHz `in pins, 1` program
//   on 4x samples takes exactly one sample a step; a sampler at clk_sys on 8x samples, two
//   thirds of one at 120 MHz). Each capture the line process sends is played sample by
//   sample, captures back to back with 96 bit times of idle line between them; between
//   captures the pin holds the last sample's level.
// - Link pulses: the line process sends one every 16 ± 8 ms of its own (real) time, which
//   at the emulator's speed (tens of times slower than the chip) would be one every few
//   hundred microseconds of the chip's. A short capture (under 16 bytes per sample of a
//   bit: a pulse, not a frame) that comes less than 8 ms of the chip's time after the last one played is
//   skipped and counted (802.3 clause 14: normal link pulses are 8 to 24 ms apart).
// - The TX pin (GP3) is read after each step of state machine 1 (at 40 MHz, waiting or
//   not) while its driver enable (GP4) is high: every second step, from the second after the
//   enable rose, is one sample at 2x (each level the transmitters drive lasts two steps: the
//   frame encoder's half bits, the pulse shifter's samples); when the enable falls, the
//   samples go to the line process as one transmission.
//
// The line process is `linklab emu line --tap NAME --socket PATH` (the code behind
// `linklab emu riscv32-virt --image soft-phy`): messages on the unix socket are a 4-byte
// big-endian length, then samples packed LSB first in little-endian words.

import { connect } from 'node:net';
import { fail } from './machine.mjs';

const RX_PIN = 2;
const TX_PIN = 3;
const TX_ENABLE_PIN = 4;
/// Idle bit times between two captures played on the RX pin: an inter-frame gap.
const GAP_BITS = 96;
/// Captures queued before the harness stops reading the socket (the line then waits).
const MAX_QUEUED = 8;
/// A capture shorter than this many bytes per sample of a bit is a link pulse: a minimal
/// frame is 72 bytes per sample of a bit (288 at 4x).
const PULSE_BYTES_PER_OVERSAMPLE = 16;
/// The least time between two link pulses played, ns of the chip's clock.
const PULSE_MIN_NS = 8e6;

/// The RX side: captures from the line (at `oversample` samples per bit), played on the RX
/// pin sample by sample.
export class RxLine {
  /// `nowNs()`: the chip's clock, for the link pulses' spacing.
  constructor(nowNs = () => 0, oversample = 4) {
    this.nowNs = nowNs;
    this.gapSamples = GAP_BITS * oversample;
    this.pulseBytes = PULSE_BYTES_PER_OVERSAMPLE * oversample;
    this.queue = [];
    this.current = null;
    this.bit = 0;
    this.gap = 0;
    this.level = 0;
    this.captures = 0;
    this.lastPulseNs = -Infinity;
    this.pulsesSkipped = 0;
    /// What the harness injects (hostile.mjs), played before the line's captures.
    this.injected = [];
    this.holdLeft = 0;
    this.injectedPlayed = 0;
  }
  push(bytes) {
    this.queue.push(bytes);
  }
  /// Plays `items` next: `{ bytes }` (a capture, link pulse spacing or not) or `{ hold,
  /// samples }` (the line held at a level).
  inject(items) {
    this.injected.push(...items);
  }
  /// The pin's level for the next sample.
  next() {
    if (this.holdLeft > 0) {
      this.holdLeft--;
      return this.level;
    }
    if (this.current === null) {
      if (this.gap > 0) {
        this.gap--;
        return this.level;
      }
      const item = this.injected.shift();
      if (item !== undefined) {
        this.injectedPlayed++;
        if (item.hold !== undefined) {
          this.level = item.hold;
          this.holdLeft = item.samples;
          return this.level;
        }
        this.current = item.bytes;
        this.bit = 0;
        return this.next();
      }
      if (this.queue.length === 0) return this.level;
      const capture = this.queue.shift();
      if (capture.length < this.pulseBytes) {
        const now = this.nowNs();
        if (now - this.lastPulseNs < PULSE_MIN_NS) {
          this.pulsesSkipped++;
          return this.level;
        }
        this.lastPulseNs = now;
      }
      this.current = capture;
      this.bit = 0;
      this.captures++;
    }
    const c = this.current;
    this.level = (c[this.bit >> 3] >> (this.bit & 7)) & 1;
    if (++this.bit === c.length * 8) {
      this.current = null;
      this.gap = this.gapSamples;
    }
    return this.level;
  }
}

/// The TX side: the TX pin's samples at 2x while the driver is enabled.
export class TxLine {
  constructor(send) {
    this.send = send;
    this.samples = [];
    this.enabled = false;
    this.phase = 0;
    this.transmissions = 0;
    this.longest = 0;
  }
  observe(pins) {
    const enable = (pins >> TX_ENABLE_PIN) & 1;
    if (enable) {
      if (!this.enabled) {
        this.enabled = true;
        this.phase = 0;
      }
      if (this.phase === 1) this.samples.push((pins >> TX_PIN) & 1);
      this.phase ^= 1;
    } else if (this.enabled) {
      this.enabled = false;
      this.flush();
    }
  }
  flush() {
    const n = this.samples.length;
    const bytes = Buffer.alloc(4 + Math.ceil(n / 32) * 4);
    bytes.writeUInt32BE(bytes.length - 4, 0);
    for (let i = 0; i < n; i++) {
      if (this.samples[i]) bytes[4 + (i >> 3)] |= 1 << (i & 7);
    }
    this.transmissions++;
    this.longest = Math.max(this.longest, n);
    this.samples = [];
    this.send(bytes);
  }
}

/// Splits a socket's byte stream into messages (4-byte big-endian length, then the bytes).
export function messages(onMessage) {
  let pending = Buffer.alloc(0);
  return (chunk) => {
    pending = Buffer.concat([pending, chunk]);
    while (pending.length >= 4) {
      const n = pending.readUInt32BE(0);
      if (pending.length < 4 + n) break;
      onMessage(Uint8Array.prototype.slice.call(pending, 4, 4 + n));
      pending = pending.subarray(4 + n);
    }
  };
}

/// Moves the line on by whole line samples as state machine 0 steps: each step is
/// `div / 256` cycles of clk_sys, the line `oversample` x 10 MHz samples a second.
export class LineClock {
  constructor(oversample) {
    this.rate = oversample * 10e6;
    this.acc = 0;
    this.perStep = 0;
    this.perSample = 1;
  }
  /// clk_sys and the state machine's divider (x 256), as they are now.
  set(clkSys, div) {
    this.perStep = this.rate * div;
    this.perSample = clkSys * 256;
  }
  /// Line samples to move on by before this step.
  step() {
    this.acc += this.perStep;
    let n = 0;
    while (this.acc >= this.perSample) {
      this.acc -= this.perSample;
      n++;
    }
    return n;
  }
}

/// Joins `mcu`'s pins GP2/GP3/GP4 to the line process at `socketPath` (its samples at
/// `oversample` per bit); calls `ready(device)` once the socket is connected, with the
/// device for `machine.run`.
export function attachSoftPhyLine(mcu, socketPath, ready, { oversample = 4 } = {}) {
  const rx = new RxLine(() => mcu.clock.nanos, oversample);
  const lineClock = new LineClock(oversample);
  const pio = mcu.pio[0];
  const sm0 = pio.machines[0];
  const retime = () => lineClock.set(mcu.clkSys, ((sm0.clockDivInt || 65536) << 8) + sm0.clockDivFrac);
  // PIO reads the pins through gpioValues (`in pins`) and the pin's inputValue (`jmp pin`,
  // `wait pin`): only the RX pin is driven from outside.
  let rxLevel = 0;
  Object.defineProperty(mcu, 'gpioValues', { get: () => rxLevel << RX_PIN });
  Object.defineProperty(mcu.gpio[RX_PIN], 'inputValue', { get: () => rxLevel === 1 });
  const socket = connect(socketPath);
  const tx = new TxLine((bytes) => socket.write(bytes));
  let paused = false;
  socket.on('data', messages((m) => {
    rx.push(m);
    if (rx.queue.length >= MAX_QUEUED && !paused) {
      paused = true;
      socket.pause();
    }
  }));
  socket.on('error', (e) => fail(`the line's socket: ${e.message}`));
  socket.on('close', () => {
    console.log('harness: the line closed the socket');
    process.exit(0);
  });
  const device = {
    beforePioStep: {
      0: () => {
        for (let n = lineClock.step(); n > 0; n--) rxLevel = rx.next();
      },
    },
    afterPioStep: { 1: () => tx.observe(pio.pinValues) },
    endOfSlice() {
      retime();
      if (paused && rx.queue.length < MAX_QUEUED / 2) {
        paused = false;
        socket.resume();
      }
    },
    status: () => ({
      rx_captures: rx.captures,
      rx_pulses_skipped: rx.pulsesSkipped,
      rx_injected: rx.injectedPlayed,
      tx_transmissions: tx.transmissions,
      tx_longest_samples: tx.longest,
    }),
    close: () => socket.end(),
    /// The RX side, for the hostile line's injections.
    rx,
  };
  socket.on('connect', () => {
    retime();
    ready(device);
  });
}
