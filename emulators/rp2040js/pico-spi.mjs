// The rp2040-spi-link example's board: a Raspberry Pi Pico as an SPI device, the SPI master
// model (spi-master.mjs) standing in for the host (a Raspberry Pi running `linklab serial`)
// on the chip's pins and clock, and the host's end reached over a unix socket: the host asks
// for one transfer at a time, as it would of Linux spidev.
//
// Wiring (examples/boards/rp2040-spi-link, README "Wiring"): MOSI GP16, CS GP17, SCK GP18 into
// the chip; MISO GP19, READY GP20 (the device is armed for a transfer) and REQUEST GP21 (it
// has bytes to send) out of it.
//
// What rp2040js lacks and this file models (docs/spi.md, "The model"):
// - the GPIO input synchronisers: PIO sees a pin's level two cycles of clk_sys after it
//   changed, unless the pin's INPUT_SYNC_BYPASS bit is set (RP2040 datasheet, PIO's
//   INPUT_SYNC_BYPASS register); rp2040js sees it at once;
// - a WAIT that stalled completes in the cycle its condition comes true, the next
//   instruction issuing on the next cycle; rp2040js issues it in the same cycle;
// - a state machine's FIFOs are flushed when its SHIFTCTRL.FJOIN_TX or FJOIN_RX changes (the
//   datasheet's SHIFTCTRL; embassy-rp's `clear_fifos` relies on it); rp2040js keeps them;
// - DMA's CHAN_ABORT reads which channels are still aborting (none: rp2040js aborts at once);
//   rp2040js does not implement the read.
//
// The socket (messages: a 4-byte big-endian length, then the message; integers big-endian):
//   host -> harness  'X' u32 hz, u8 flags (bit 0: wait for READY), bytes: one transfer
//                    'W' u64 until_ns (0: none): run until REQUEST is high or the chip's
//                    clock reaches until_ns
//   harness -> host  'D' u64 start_ns, u64 end_ns, u8 pins, bytes: the transfer's MISO bytes
//                    'N' u64 now_ns, u8 pins: READY never came (the master's ready timeout)
//                    'E' u64 now_ns, u8 pins: the wait of a 'W' is over
// `pins` is READY | REQUEST << 1, read when the message is sent. After each answer the
// chip's clock stops until the host's next message: the host's own time between transfers
// is not the chip's (the master's gap stands for it), so every figure is in the chip's clock.

import { connect } from 'node:net';
import { fail } from './machine.mjs';
import { messages } from './soft-phy-line.mjs';
import { PINS, SpiMaster } from './spi-master.mjs';

/// The board's GPIOs.
export const GPIO = Object.freeze({ mosi: 16, cs: 17, sck: 18, miso: 19, ready: 20, request: 21 });
/// Cycles of clk_sys an input synchroniser delays a pin (RP2040 datasheet: two flip-flops).
export const SYNC_CYCLES = 2;

const NO_PIO = Object.freeze([]);
const CHAN_ABORT = 0x444;
const SHIFTCTRL = 0x08; // from the state machine's CLKDIV
const FJOIN = 0xc0000000;

/// Flushes a state machine's FIFOs when its FJOIN bits change, as the RP2040 does.
export function flushFifosOnJoinChange(pio) {
  for (const sm of pio.machines) {
    const write = sm.writeUint32.bind(sm);
    sm.writeUint32 = (offset, value) => {
      const changed = offset === SHIFTCTRL && ((sm.shiftCtrl ^ value) & FJOIN) !== 0;
      write(offset, value);
      if (changed) {
        sm.rxFIFO.reset();
        sm.txFIFO.reset();
        sm.updateDMATx();
        sm.updateDMARx();
      }
    };
  }
}

/// DMA's CHAN_ABORT reads as the channels still aborting: none, since rp2040js aborts at once
/// (it does not implement the read: 0xffffffff, a wait on it never ends).
export function chanAbortReads(dma) {
  const read = dma.readUint32.bind(dma);
  dma.readUint32 = (offset) => (offset === CHAN_ABORT ? 0 : read(offset));
}

/// Makes a stalled WAIT take the cycle in which its condition comes true, as on the chip:
/// rp2040js's `step` ends the stall and executes the next instruction in the same cycle, one
/// cycle early on every edge a state machine waits for (RP2040 datasheet, WAIT: the
/// instruction completes when the condition is met; the next one issues on the next cycle).
export function exactWaits(pio) {
  for (const sm of pio.machines) {
    const step = sm.step.bind(sm);
    sm.step = () => {
      if (sm.waiting) {
        sm.checkWait();
        // Completed: this cycle was the wait's (the harness counts it).
        if (!sm.waiting) sm.cycles++;
        return;
      }
      step();
    };
  }
}

/// The pins between the master and the chip: the master's levels reach the chip through the
/// synchronisers' delay; MISO, READY and REQUEST are read as the chip drives them.
export class ChipPins {
  constructor(mcu) {
    this.mcu = mcu;
    this.pio = mcu.pio[0];
    /// Changes on their way through the synchronisers: [cycle due, gpio, level].
    this.queue = [];
    this.k = 0;
    this.levels = new Map();
    // The master's idle levels from the start: CS high, SCK and MOSI low.
    this.apply(GPIO.cs, 1);
    this.apply(GPIO.sck, 0);
    this.apply(GPIO.mosi, 0);
  }
  /// The master sets `pin` (a PINS name) to `level`.
  set(pin, level) {
    const gpio = GPIO[pin];
    const bypass = (this.pio.inputSyncBypass >>> gpio) & 1;
    if (bypass) this.apply(gpio, level);
    else this.queue.push([this.k + SYNC_CYCLES, gpio, level]);
  }
  apply(gpio, level) {
    this.levels.set(gpio, level);
    // rp2040js's setInputValue also ends any state machine's WAIT on the pin there and then;
    // the state machine's own step must see it (exactWaits), so PIO is out of its sight.
    const { mcu } = this;
    const pio = mcu.pio;
    mcu.pio = NO_PIO;
    try {
      mcu.gpio[gpio].setInputValue(level === 1);
    } finally {
      mcu.pio = pio;
    }
  }
  /// One cycle: the changes due now reach the chip.
  cycle() {
    this.k++;
    while (this.queue.length > 0 && this.queue[0][0] <= this.k) {
      const [, gpio, level] = this.queue.shift();
      this.apply(gpio, level);
    }
  }
  get settling() {
    return this.queue.length > 0;
  }
  miso() {
    return this.mcu.gpio[GPIO.miso].outputValue ? 1 : 0;
  }
  ready() {
    return this.mcu.gpio[GPIO.ready].outputValue;
  }
  request() {
    return this.mcu.gpio[GPIO.request].outputValue;
  }
  /// READY | REQUEST << 1.
  bits() {
    return (this.ready() ? 1 : 0) | (this.request() ? 2 : 0);
  }
}

/// Encodes a harness -> host message.
export function encode(kind, fields, bytes = new Uint8Array(0)) {
  const head = 1 + 8 * fields.length + 1;
  const msg = Buffer.alloc(4 + head + bytes.length);
  msg.writeUInt32BE(head + bytes.length, 0);
  msg[4] = kind.charCodeAt(0);
  fields.forEach((v, i) => msg.writeBigUInt64BE(BigInt(Math.max(0, Math.round(v))), 5 + 8 * i));
  return { msg, pinsAt: 4 + head - 1, bytesAt: 4 + head };
}

/// The board as a device of `machine.run`: the master on the chip's pins, stepped per cycle
/// while it works, answering the host on `socket`. `options`: the master's (spi-master.mjs).
export class SpiBoard {
  constructor(mcu, send, options = {}) {
    this.mcu = mcu;
    this.send = send;
    this.pins = new ChipPins(mcu);
    this.master = new SpiMaster(this.pins, options);
    this.chip = null;
    /// The 'W' under way: { until } or null.
    this.waiting = null;
    this.untilAlarm = mcu.clock.createAlarm(() => {
      this.counts.waits_by_time++;
      this.endWait();
    });
    this.counts = { transfers_asked: 0, waits: 0, waits_by_request: 0, waits_by_time: 0, bad_messages: 0 };
    flushFifosOnJoinChange(this.pins.pio);
    exactWaits(this.pins.pio);
    chanAbortReads(mcu.dma);
    mcu.gpio[GPIO.request].addListener(() => {
      if (this.waiting && this.pins.request()) {
        this.counts.waits_by_request++;
        this.endWait();
      }
    });
  }
  attach(chip) {
    this.chip = chip;
  }
  get cycling() {
    return this.master.busy || this.pins.settling;
  }
  cycle(ns) {
    this.pins.cycle();
    this.master.cycle(ns);
  }
  /// Answers the host and stops the chip's clock until its next message.
  answer(kind, fields, bytes) {
    const { msg, pinsAt, bytesAt } = encode(kind, fields, bytes);
    msg[pinsAt] = this.pins.bits();
    if (bytes) msg.set(bytes, bytesAt);
    if (this.chip) this.chip.halt = true;
    this.send(msg);
  }
  endWait() {
    if (!this.waiting) return;
    this.waiting = null;
    this.untilAlarm.cancel();
    this.answer('E', [this.mcu.clock.nanos]);
  }
  /// A message from the host.
  message(m) {
    if (this.chip) this.chip.halt = false;
    const kind = String.fromCharCode(m[0] ?? 0);
    const view = Buffer.from(m.buffer, m.byteOffset, m.length);
    if (kind === 'X' && m.length >= 7) {
      if (this.waiting) {
        // The host has bytes before the wait ended: the wait is over unanswered.
        this.waiting = null;
        this.untilAlarm.cancel();
      }
      const hz = view.readUInt32BE(1);
      const flags = m[5];
      const tx = m.slice(6);
      this.counts.transfers_asked++;
      try {
        this.master.start(tx, { hz, waitReady: (flags & 1) !== 0 }, (r) => this.done(r));
      } catch (e) {
        fail(`the host's transfer: ${e.message}`);
      }
      return;
    }
    if (kind === 'W' && m.length === 9) {
      this.counts.waits++;
      const until = Number(view.readBigUInt64BE(1));
      this.waiting = { until };
      if (this.pins.request()) {
        this.counts.waits_by_request++;
        this.endWait();
        return;
      }
      if (until > 0) {
        const now = this.mcu.clock.nanos;
        if (until <= now) {
          this.counts.waits_by_time++;
          this.endWait();
          return;
        }
        this.untilAlarm.schedule(until - now);
      }
      return;
    }
    this.counts.bad_messages++;
    fail(`a message the host should not send: kind ${m[0]}, ${m.length} bytes`);
  }
  done(r) {
    if (r.notReady) this.answer('N', [r.atNs]);
    else this.answer('D', [r.startNs, r.endNs], r.rx);
  }
  status() {
    return {
      board: 'pico-spi',
      spi_master: this.master.stats,
      spi_host: this.counts,
      spi_ready: this.pins.ready(),
      spi_request: this.pins.request(),
      spi_device: this.deviceState(),
    };
  }
  /// The device side as the chip holds it: the shifter's state machine and the two DMA
  /// channels the example uses (for a stuck link's diagnosis).
  deviceState() {
    const sm = this.pins.pio.machines[0];
    const ch = (i) => {
      const c = this.mcu.dma.channels[i];
      return { busy: (c.ctrl & (1 << 24)) !== 0, left: c.transCount };
    };
    return {
      sm0: { on: sm.enabled, pc: sm.pc, waiting: sm.waiting, tx: sm.txFIFO.itemCount, rx: sm.rxFIFO.itemCount },
      pins: (this.pins.pio.pinValues >>> 16) & 0x3f,
      dirs: (this.pins.pio.pinDirections >>> 16) & 0x3f,
      code: Array.from(this.pins.pio.instructions.slice(0, 12), (x) => x.toString(16)),
      exec: (sm.execCtrl >>> 0).toString(16),
      pinctrl: (sm.pinCtrl >>> 0).toString(16),
      func20: this.mcu.gpio[20].functionSelect,
      dma_rx: ch(0),
      dma_tx: ch(1),
    };
  }
}

/// Joins the board to the host's socket at `socketPath`; calls `ready(device)` once connected.
export function attachPicoSpi(mcu, socketPath, options, ready) {
  const socket = connect(socketPath);
  const board = new SpiBoard(mcu, (msg) => socket.write(msg), options);
  board.untilAlarm.cancel();
  socket.on('data', messages((m) => board.message(m)));
  socket.on('error', (e) => fail(`the host's socket: ${e.message}`));
  socket.on('close', () => {
    console.log('harness: the host closed the socket');
    process.exit(0);
  });
  board.close = () => socket.end();
  socket.on('connect', () => ready(board));
}

export { PINS };
