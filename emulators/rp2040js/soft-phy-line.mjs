// The 10BASE-T line of the soft-PHY examples at the pin level: PIO0's state machine 0
// samples the RX pin, state machine 1 drives the TX pin while the driver enable is high.
//
// - The RX pin (GP2) takes one line sample per step of state machine 0 (40 MHz: the
//   line's 4x of 10 Mbit/s); each capture the line process sends is played sample by
//   sample, captures back to back with 384 samples (96 bit times) of idle line between
//   them; between captures the pin holds the last sample's level.
// - The TX pin (GP3) is read after each step of state machine 1 while its driver enable
//   (GP4) is high: every second step is one sample at 2x (its program: `out pins` then
//   `jmp`); when the enable falls, the samples go to the line process as one transmission.
//
// The line process is `linklab emu line --tap NAME --socket PATH` (the code behind
// `linklab emu riscv32-virt --image soft-phy`): messages on the unix socket are a 4-byte
// big-endian length, then samples packed LSB first in little-endian words.

import { connect } from 'node:net';
import { fail } from './machine.mjs';

const RX_PIN = 2;
const TX_PIN = 3;
const TX_ENABLE_PIN = 4;
/// Idle samples between two captures played on the RX pin: an inter-frame gap at 4x.
const GAP_SAMPLES = 384;
/// Captures queued before the harness stops reading the socket (the line then waits).
const MAX_QUEUED = 8;

/// The RX side: captures from the line, played on the RX pin one sample per SM0 step.
export class RxLine {
  constructor() {
    this.queue = [];
    this.current = null;
    this.bit = 0;
    this.gap = 0;
    this.level = 0;
    this.captures = 0;
  }
  push(bytes) {
    this.queue.push(bytes);
  }
  /// The pin's level for the next sample.
  next() {
    if (this.current === null) {
      if (this.gap > 0) {
        this.gap--;
        return this.level;
      }
      if (this.queue.length === 0) return this.level;
      this.current = this.queue.shift();
      this.bit = 0;
      this.captures++;
    }
    const c = this.current;
    this.level = (c[this.bit >> 3] >> (this.bit & 7)) & 1;
    if (++this.bit === c.length * 8) {
      this.current = null;
      this.gap = GAP_SAMPLES;
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
      if (this.phase === 0) this.samples.push((pins >> TX_PIN) & 1);
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

/// Joins `mcu`'s pins GP2/GP3/GP4 to the line process at `socketPath`; calls `ready(device)`
/// once the socket is connected, with the device for `machine.run`.
export function attachSoftPhyLine(mcu, socketPath, ready) {
  const rx = new RxLine();
  const pio = mcu.pio[0];
  // PIO reads the pins through gpioValues: only the RX pin is driven from outside.
  let rxLevel = 0;
  Object.defineProperty(mcu, 'gpioValues', { get: () => rxLevel << RX_PIN });
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
    beforePioStep: { 0: () => { rxLevel = rx.next(); } },
    afterPioStep: { 1: () => tx.observe(pio.pinValues) },
    endOfSlice() {
      if (paused && rx.queue.length < MAX_QUEUED / 2) {
        paused = false;
        socket.resume();
      }
    },
    status: () => ({
      rx_captures: rx.captures,
      tx_transmissions: tx.transmissions,
      tx_longest_samples: tx.longest,
    }),
    close: () => socket.end(),
  };
  socket.on('connect', () => ready(device));
}
