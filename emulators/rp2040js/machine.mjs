// One emulated RP2040 and the one clock everything on it runs by: rp2040js's core, its
// timer and DMA alarms, and the PIO state machines at their dividers. Devices outside the
// chip (a 10BASE-T line, an SPI Ethernet chip) join this clock through hooks; they never
// keep time of their own.
//
// Clock rules (the only time there is, emulated; real time plays no part):
// - The core executes one instruction at a time; each takes the cycles rp2040js counts
//   for it, at clk_sys as the firmware set it; the timer, and the DMA and any device's
//   alarms (rp2040js schedules them on `mcu.clock`), advance by those cycles' nanoseconds.
// - Each enabled PIO state machine steps once per `CLKDIV` cycles of clk_sys (integer and
//   fractional parts, as the hardware), counted on the same cycles: rp2040js's own PIO
//   loop (1 000 steps per timer tick, no divider) is switched off. clk_sys and the
//   dividers are read once per slice of `SLICE_CYCLES` (the firmware sets them once, at
//   boot).

import { RP2040 } from 'rp2040js';
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { loadElf } from './elf.mjs';

/// Core cycles per slice of the loop; between slices the event loop runs (sockets).
export const SLICE_CYCLES = 120_000;

/// Ends the process with one line on stderr and exit code 2.
export function fail(message) {
  console.error(`harness: ${message}`);
  process.exit(2);
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

/// An RP2040 with the ELF at `elfPath` loaded and its core at the reset vector.
///
/// No boot ROM and no boot2 run: the image's sections are already where XIP maps them
/// (docs/rp2040js.md, "How it boots").
export function createMachine(elfPath) {
  const mcu = new RP2040();
  mcu.logger = quietLogger(mcu);
  for (const p of mcu.pio) p.run = () => {};
  const { vectorTable } = loadElf(readFileSync(elfPath), mcu);
  mcu.core.VTOR = vectorTable;
  mcu.core.SP = mcu.readUint32(vectorTable);
  mcu.core.PC = mcu.readUint32(vectorTable + 4) & ~1;
  return mcu;
}

/// Runs `mcu` slice by slice until `seconds` of emulated time (or forever), yielding to
/// the event loop between slices.
///
/// `devices` is a list of objects with any of:
/// - `beforePioStep[i](mcu)`: called before state machine `i` of PIO0 steps (to drive pins);
/// - `afterPioStep[i](mcu)`: called after it stepped (to sample pins);
/// - `endOfSlice()`: called after each slice (flow control of a socket);
/// - `status()`: fields merged into the status line.
/// `statusFile` (or null) is rewritten about every 50 ms of real time with one JSON line.
export function run(mcu, { devices = [], statusFile = null, seconds = Infinity, onExit = () => {} } = {}) {
  const { core, clock } = mcu;
  const pio = mcu.pio[0];
  const sms = pio.machines;
  const before = [0, 1, 2, 3].map((i) => devices.map((d) => d.beforePioStep?.[i]).filter(Boolean));
  const after = [0, 1, 2, 3].map((i) => devices.map((d) => d.afterPioStep?.[i]).filter(Boolean));
  const acc = [0, 0, 0, 0];
  const div = [256, 256, 256, 256];
  // RP2040JS_TRACE=ADDR: the last 64 PCs, printed if the PC leaves flash and SRAM.
  const trace = process.env.RP2040JS_TRACE
    ? { pcs: new Uint32Array(64), i: 0, panic: Number(process.env.RP2040JS_TRACE) }
    : null;
  let cycles = 0;
  let lastReport = Date.now();
  const started = Date.now();

  function report(final) {
    const realS = (Date.now() - started) / 1000;
    const line = {
      emulated_ns: Math.round(clock.nanos),
      cycles,
      clk_sys_hz: mcu.clkSys,
      real_s: realS,
      emulated_mhz_per_real_s: cycles / 1e6 / realS,
      pc: core.PC >>> 0,
    };
    for (const d of devices) Object.assign(line, d.status?.() ?? {});
    const text = JSON.stringify(line);
    if (statusFile) {
      writeFileSync(statusFile + '.tmp', text + '\n');
      renameSync(statusFile + '.tmp', statusFile);
    }
    if (final) console.log(`harness: ${text}`);
  }

  function stepPio(i, n) {
    const sm = sms[i];
    if (!sm.enabled) return;
    acc[i] += n << 8;
    while (acc[i] >= div[i]) {
      acc[i] -= div[i];
      for (const f of before[i]) f(mcu);
      sm.step();
      for (const f of after[i]) f(mcu);
    }
  }

  function slice() {
    const end = cycles + SLICE_CYCLES;
    const nsPerCycle = 1e9 / mcu.clkSys;
    for (let i = 0; i < 4; i++) {
      div[i] = ((sms[i].clockDivInt || 65536) << 8) + sms[i].clockDivFrac;
    }
    while (cycles < end) {
      if (trace) traceStep(trace, mcu);
      const n = core.waiting ? 1 : core.executeInstruction();
      cycles += n;
      clock.tick(n * nsPerCycle);
      stepPio(0, n);
      stepPio(1, n);
      stepPio(2, n);
      stepPio(3, n);
    }
    if (core.PC >>> 0 < 0x4000) {
      report(true);
      fail(`the core jumped into the (absent) boot ROM at 0x${(core.PC >>> 0).toString(16)}`);
    }
    for (const d of devices) d.endOfSlice?.();
    if (Date.now() - lastReport >= 50) {
      lastReport = Date.now();
      report(false);
    }
    if (clock.nanos >= seconds * 1e9) {
      report(true);
      onExit();
      process.exit(0);
    }
    setImmediate(slice);
  }
  process.on('SIGTERM', () => {
    report(true);
    process.exit(0);
  });
  slice();
}
