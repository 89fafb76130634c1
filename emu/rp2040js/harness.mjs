// linklab's pin-level RP2040 harness: rp2040js's core 0, PIO, DMA and timer run an
// embassy-rp ELF (examples/boards/rp2040-soft-phy, feature `one-core`), and this loop keeps
// one clock for all of them and for the 10BASE-T line.
//
// Clock rules (the only time there is, emulated; real time plays no part):
// - The core executes one instruction at a time; each takes the cycles rp2040js counts
//   for it, at clk_sys as the firmware set it (120 MHz); the timer, and the DMA (whose
//   transfers rp2040js schedules on the clock), advance by those cycles' nanoseconds.
// - Each enabled PIO state machine steps once per `CLKDIV` cycles of clk_sys (integer and
//   fractional parts, as the hardware), counted on the same cycles: rp2040js's own PIO
//   loop (1 000 steps per timer tick, no divider) is switched off. clk_sys and the
//   dividers are read once per slice of 120 000 cycles (1 ms at 120 MHz; the firmware sets
//   them once, at boot).
// - The RX pin (GP2) takes one line sample per step of state machine 0 (40 MHz: the
//   line's 4x of 10 Mbit/s); each capture the line process sends is played sample by
//   sample, captures back to back with 384 samples (96 bit times) of idle line between
//   them; between captures the pin holds the last sample's level.
// - The TX pin (GP3) is read after each step of state machine 1 while its driver enable
//   (GP4) is high: every second step is one sample at 2x (its program: `out pins` then
//   `jmp`); when the enable falls, the samples go to the line process as one transmission.
//
// The line process is `linklab emu line --tap NAME --socket PATH` (crates/linklab, the code
// behind `linklab emu riscv32-virt --image soft-phy`): messages on the unix socket are a
// 4-byte big-endian length, then samples packed LSB first in little-endian words.
//
// Usage: node harness.mjs --elf ELF --socket PATH [--status FILE] [--seconds S]
//   --status: a file rewritten about every 50 ms of real time with one JSON line: emulated ns,
//   cycles, and the line's counts (the test reads emulated time from it).
//   --seconds: stop after S emulated seconds (default: run until killed).
// RP2040JS_TRACE=ADDR (decimal or 0x hex): see traceStep.

import { RP2040 } from 'rp2040js';
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { connect } from 'node:net';
import { loadElf } from './elf.mjs';

const RX_PIN = 2;
const TX_PIN = 3;
const TX_ENABLE_PIN = 4;
/// Idle samples between two captures played on the RX pin: an inter-frame gap at 4x.
const GAP_SAMPLES = 384;
/// Captures queued before the harness stops reading the socket (the line then waits).
const MAX_QUEUED = 8;
/// Core cycles per slice of the loop between looks at the socket.
const SLICE_CYCLES = 120_000;

function parseArgs(argv) {
  const args = { status: null, seconds: Infinity };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) fail(`${flag}: a value is required`);
    if (flag === '--elf') args.elf = value;
    else if (flag === '--socket') args.socket = value;
    else if (flag === '--status') args.status = value;
    else if (flag === '--seconds') args.seconds = Number(value);
    else fail(`unknown option ${flag} (usage: --elf ELF --socket PATH [--status FILE] [--seconds S])`);
  }
  if (!args.elf || !args.socket) fail('--elf and --socket are required');
  if (!(args.seconds > 0)) fail('--seconds: a positive number');
  return args;
}

function fail(message) {
  console.error(`harness: ${message}`);
  process.exit(2);
}

/// The RX side: captures from the line, played on the RX pin one sample per SM0 step.
class RxLine {
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
class TxLine {
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

/// Splits the socket's byte stream into messages (4-byte big-endian length, then the bytes).
function messages(onMessage) {
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

/// rp2040js's log, each distinct warning once on stderr (ROSC's random bit, read by
/// embassy-rp for the stack's seed, is one: it reads 0).
///
/// rp2040js 1.4.1's SEV only logs `SEV` at info level and sets no event register, but on
/// ARMv6-M SEV signals every core, the one executing it included: embassy's executor
/// pends itself with SEV and then sleeps in WFE, which on the chip returns at once. The
/// log line is the hook that restores it: on `SEV` the core's event register is set.
function quietLogger(mcu) {
  const seen = new Set();
  const once = (component, message) => {
    const key = `${component} ${message}`;
    if (seen.has(key) || seen.size > 100) return;
    seen.add(key);
    console.error(`harness: rp2040js: [${component}] ${message}`);
  };
  const info = (component, message) => {
    if (message === 'SEV') mcu.core.eventRegistered = true;
  };
  return { debug() {}, info, warn: once, error: once };
}

/// RP2040JS_TRACE=ADDR: keeps the last 64 PCs and stops with them if the PC leaves flash and
/// SRAM; at ADDR (the ELF's `rust_begin_unwind`) prints the panic's file and line.
function traceStep(trace, mcu) {
  const pc = mcu.core.PC >>> 0;
  trace.pcs[trace.i++ & 63] = pc;
  if (pc === trace.panic) {
    const words = [0, 4, 8, 12].map((o) => mcu.readUint32(mcu.core.registers[0] + o) >>> 0);
    console.error(`harness: panic: PanicInfo words ${words.map((w) => w.toString(16)).join(' ')}`);
    for (const w of words) {
      if (w < 0x10000000 || w >= 0x20042000) continue;
      const [ptr, len, line, col] = [0, 4, 8, 12].map((o) => mcu.readUint32(w + o) >>> 0);
      if (ptr >= 0x10000000 && ptr < 0x10200000 && len < 300) {
        let file = '';
        for (let k = 0; k < len; k++) file += String.fromCharCode(mcu.readUint8(ptr + k));
        console.error(`harness: panic at ${file}:${line}:${col}`);
      }
    }
  }
  if (!((pc >= 0x10000000 && pc < 0x10200000) || (pc >= 0x20000000 && pc < 0x20042000))) {
    const last = [];
    for (let k = 0; k < 64; k++) last.push(trace.pcs[(trace.i + k) & 63].toString(16));
    fail(`PC left flash and SRAM: 0x${pc.toString(16)}; the last PCs: ${last.join(' ')}`);
  }
}

function boot(mcu, elfPath) {
  const { vectorTable } = loadElf(readFileSync(elfPath), mcu);
  // No boot ROM and no boot2: the image's sections are already where XIP maps them.
  mcu.core.VTOR = vectorTable;
  mcu.core.SP = mcu.readUint32(vectorTable);
  mcu.core.PC = mcu.readUint32(vectorTable + 4) & ~1;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const mcu = new RP2040();
  mcu.logger = quietLogger(mcu);
  const pio = mcu.pio[0];
  for (const p of mcu.pio) p.run = () => {};
  const rx = new RxLine();
  // PIO reads the pins through gpioValues: only the RX pin is driven from outside.
  let rxLevel = 0;
  Object.defineProperty(mcu, 'gpioValues', { get: () => rxLevel << RX_PIN });
  boot(mcu, args.elf);

  const socket = connect(args.socket);
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

  const { core, clock } = mcu;
  const sms = pio.machines;
  const acc = [0, 0, 0, 0];
  // RP2040JS_TRACE=1: the last 64 PCs, printed if the PC leaves flash and SRAM.
  const trace = process.env.RP2040JS_TRACE
    ? { pcs: new Uint32Array(64), i: 0, panic: Number(process.env.RP2040JS_TRACE) }
    : null;
  const div = [256, 256, 256, 256];
  let cycles = 0;
  let lastReport = Date.now();
  const started = Date.now();

  function report(final) {
    const emuNs = clock.nanos;
    const realS = (Date.now() - started) / 1000;
    const line = {
      emulated_ns: Math.round(emuNs),
      cycles,
      clk_sys_hz: mcu.clkSys,
      real_s: realS,
      emulated_mhz_per_real_s: cycles / 1e6 / realS,
      rx_captures: rx.captures,
      tx_transmissions: tx.transmissions,
      tx_longest_samples: tx.longest,
      pc: core.PC >>> 0,
    };
    const text = JSON.stringify(line);
    if (args.status) {
      writeFileSync(args.status + '.tmp', text + '\n');
      renameSync(args.status + '.tmp', args.status);
    }
    if (final) console.log(`harness: ${text}`);
  }

  function slice() {
    const end = cycles + SLICE_CYCLES;
    // clk_sys and the dividers, read once a slice (the firmware sets them once, at boot).
    const nsPerCycle = 1e9 / mcu.clkSys;
    for (let i = 0; i < 4; i++) {
      div[i] = ((sms[i].clockDivInt || 65536) << 8) + sms[i].clockDivFrac;
    }
    const [sm0, sm1] = sms;
    while (cycles < end) {
      if (trace) traceStep(trace, mcu);
      const n = core.waiting ? 1 : core.executeInstruction();
      cycles += n;
      clock.tick(n * nsPerCycle);
      if (sm0.enabled) {
        acc[0] += n << 8;
        while (acc[0] >= div[0]) {
          acc[0] -= div[0];
          rxLevel = rx.next();
          sm0.step();
        }
      }
      if (sm1.enabled) {
        acc[1] += n << 8;
        while (acc[1] >= div[1]) {
          acc[1] -= div[1];
          sm1.step();
          tx.observe(pio.pinValues);
        }
      }
      for (let i = 2; i < 4; i++) {
        const sm = sms[i];
        if (!sm.enabled) continue;
        acc[i] += n << 8;
        while (acc[i] >= div[i]) {
          acc[i] -= div[i];
          sm.step();
        }
      }
    }
    if (core.PC >>> 0 < 0x4000) {
      report(true);
      fail(`the core jumped into the (absent) boot ROM at 0x${(core.PC >>> 0).toString(16)}`);
    }
    if (paused && rx.queue.length < MAX_QUEUED / 2) {
      paused = false;
      socket.resume();
    }
    if (Date.now() - lastReport >= 50) {
      lastReport = Date.now();
      report(false);
    }
    if (clock.nanos >= args.seconds * 1e9) {
      report(true);
      socket.end();
      process.exit(0);
    }
    setImmediate(slice);
  }
  socket.on('connect', () => slice());
  process.on('SIGTERM', () => {
    report(true);
    process.exit(0);
  });
}

main();
