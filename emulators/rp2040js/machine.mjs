// One emulated RP2040 and the one clock everything on it runs by: rp2040js's core, its
// timer and DMA alarms, and the PIO state machines at their dividers. Devices outside the
// chip (a 10BASE-T line, an SPI Ethernet chip) join this clock through hooks; they never
// keep time of their own.
//
// Clock rules (the only time there is, emulated; real time plays no part):
// - Each core executes one instruction at a time; each takes the cycles rp2040js counts
//   for it, at clk_sys as the firmware set it. The two cores (core1.mjs adds core 1) are
//   interleaved by their own cycle counts: the core that is behind executes next, so
//   neither is ever ahead of the other by more than one instruction's cycles. The chip's
//   time is the slower core's: the timer, and the DMA and any device's alarms (rp2040js
//   schedules them on `mcu.clock`), advance by its cycles' nanoseconds. A core asleep
//   (WFI, WFE, or core 1 in the boot ROM's holding pen) follows the chip's time.
// - Each enabled PIO state machine steps once per `CLKDIV` cycles of clk_sys (integer and
//   fractional parts, as the hardware), counted on the same cycles: rp2040js's own PIO
//   loop (1 000 steps per timer tick, no divider) is switched off. An instruction's delay
//   (`[n]`) holds the state machine for n more steps (rp2040js only counts it). clk_sys and the
//   dividers are read once per slice of `SLICE_NS` of the chip's time (the firmware sets them once, at
//   boot).

import { RP2040 } from 'rp2040js';
import { readFileSync, writeFileSync, renameSync } from 'node:fs';
import { functions, loadElf } from './elf.mjs';
import { addCore1, sleptInWfe, ROM_HANG } from './core1.mjs';

/// The chip's time per slice of the loop, ns: between slices the event loop runs (the
/// sockets), so this is the most a device's message waits for the chip to see it: 100 µs,
/// a twelfth of a full-size frame's time on a 10 Mbit/s line.
export const SLICE_NS = 100_000;

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
/// log line is the hook that restores it: on `SEV` a core asleep in WFE wakes, and the
/// other's event register is set (its next WFE returns at once).
function quietLogger(mcu, cores) {
  const seen = new Set();
  const once = (component, message) => {
    const key = `${component} ${message}`;
    if (seen.has(key) || seen.size > 100) return;
    seen.add(key);
    console.error(`harness: rp2040js: [${component}] ${message}`);
  };
  const info = (component, message) => {
    if (message !== 'SEV') return;
    for (const core of cores()) {
      if (core.waiting && core.waitingForEvent) core.waiting = false;
      else core.eventRegistered = true;
    }
  };
  return { debug() {}, info, warn: once, error: once };
}

/// RP2040JS_TRACE=ADDR: keeps the last 64 PCs of each core and stops with them if a PC
/// leaves flash and SRAM; at ADDR (the ELF's `rust_begin_unwind`) prints the panic's file
/// and line.
function traceStep(trace, mcu, core, k) {
  const pc = core.PC >>> 0;
  const pcs = trace.pcs[k];
  pcs[trace.i[k]++ & 63] = pc;
  if (pc === trace.panic) {
    const words = [0, 4, 8, 12].map((o) => mcu.readUint32(core.registers[0] + o) >>> 0);
    console.error(`harness: core ${k} panics: PanicInfo words ${words.map((w) => w.toString(16)).join(' ')}`);
    for (const w of words) {
      if (w < 0x10000000 || w >= 0x20042000) continue;
      const [ptr, len, line, col] = [0, 4, 8, 12].map((o) => mcu.readUint32(w + o) >>> 0);
      if (ptr >= 0x10000000 && ptr < 0x10200000 && len < 300) {
        let file = '';
        for (let j = 0; j < len; j++) file += String.fromCharCode(mcu.readUint8(ptr + j));
        console.error(`harness: panic at ${file}:${line}:${col}`);
      }
    }
  }
  if (!((pc >= 0x10000000 && pc < 0x10200000) || (pc >= 0x20000000 && pc < 0x20042000))) {
    const last = [];
    for (let j = 0; j < 64; j++) last.push(pcs[(trace.i[k] + j) & 63].toString(16));
    fail(`core ${k}'s PC left flash and SRAM: 0x${pc.toString(16)}; its last PCs: ${last.join(' ')}`);
  }
}

/// An RP2040 with the ELF at `elfPath` loaded, core 0 at the reset vector and core 1 in the
/// boot ROM's holding pen (core1.mjs); `mcu.pair` is the pair of cores.
///
/// No boot ROM and no boot2 run: the image's sections are already where XIP maps them
/// (docs/rp2040js.md, "How it boots").
export function createMachine(elfPath) {
  const mcu = new RP2040();
  mcu.elfPath = elfPath;
  mcu.pair = addCore1(mcu);
  mcu.logger = quietLogger(mcu, () => mcu.pair.cores);
  for (const p of mcu.pio) p.run = () => {};
  const { vectorTable } = loadElf(readFileSync(elfPath), mcu);
  mcu.core.VTOR = vectorTable;
  mcu.core.SP = mcu.readUint32(vectorTable);
  mcu.core.PC = mcu.readUint32(vectorTable + 4) & ~1;
  return mcu;
}

/// Profile slots: one per halfword of flash (2 MB) and of SRAM (264 KB), one for the rest.
const PROFILE_FLASH = 0x10000000;
const PROFILE_SRAM = 0x20000000;
const PROFILE_SLOTS = (2 * 1024 * 1024 + 264 * 1024) / 2 + 1;

function profileSlot(pc) {
  const a = (pc & ~1) >>> 0;
  if (a >= PROFILE_FLASH && a < PROFILE_FLASH + 2 * 1024 * 1024) return (a - PROFILE_FLASH) >>> 1;
  if (a >= PROFILE_SRAM && a < PROFILE_SRAM + 264 * 1024) return (1024 * 1024) + ((a - PROFILE_SRAM) >>> 1);
  return PROFILE_SLOTS - 1;
}

function slotAddress(slot) {
  return slot < 1024 * 1024 ? PROFILE_FLASH + 2 * slot : PROFILE_SRAM + 2 * (slot - 1024 * 1024);
}

/// RP2040JS_PROFILE=FILE: each core's executed cycles by function of `functions` (elf.mjs),
/// largest first, written to FILE as JSON ({ "core0": [[name, cycles], ...], ... }).
export function writeProfile(file, histogram, functions) {
  const out = {};
  histogram.forEach((h, k) => {
    const byName = new Map();
    let f = 0;
    for (let slot = 0; slot < h.length; slot++) {
      if (h[slot] === 0) continue;
      const a = slotAddress(slot);
      while (f < functions.length && functions[f].start + functions[f].size <= a) f++;
      const fn = functions[f];
      const name = fn && fn.start <= a ? fn.name : slot === h.length - 1 ? '(outside flash and SRAM)' : `0x${a.toString(16)}`;
      byName.set(name, (byName.get(name) ?? 0) + h[slot]);
    }
    out[`core${k}`] = [...byName].sort((x, y) => y[1] - x[1]);
    // The 400 hottest instruction addresses (RP2040JS_PROFILE_ADDRESSES set): inlined code
    // has no function of its own; `addr2line -i -e ELF ADDR` names its source lines.
    if (process.env.RP2040JS_PROFILE_ADDRESSES) {
      const hot = [];
      for (let slot = 0; slot < h.length; slot++) if (h[slot] > 0) hot.push([slotAddress(slot), h[slot]]);
      hot.sort((x, y) => y[1] - x[1]);
      out[`core${k}_addresses`] = hot.slice(0, 400).map(([a, n]) => [`0x${a.toString(16)}`, n]);
    }
  });
  writeFileSync(file, JSON.stringify(out));
}

/// The one clock of `mcu` and `devices` (see `run`): `step(cycles)` advances the chip by
/// at least that many cycles of its clock, synchronously. Its fields: `cycles` (the chip's
/// clock), `coreCycles` (each core's own count), `asleep` (cycles each core slept: WFI,
/// WFE, the holding pen or reset), `maxLead` (the most one core was ever ahead of the
/// other's count while both ran).
export function createClock(mcu, devices = []) {
  const { clock, pair } = mcu;
  const [core0] = pair.cores;
  const pio = mcu.pio[0];
  const sms = pio.machines;
  // Each state machine's hooks as one function (or null): the loop calls them per step.
  const chain = (fs) => (fs.length === 0 ? null : fs.length === 1 ? fs[0] : (m) => fs.forEach((f) => f(m)));
  const before = [0, 1, 2, 3].map((i) => chain(devices.map((d) => d.beforePioStep?.[i]).filter(Boolean)));
  const after = [0, 1, 2, 3].map((i) => chain(devices.map((d) => d.afterPioStep?.[i]).filter(Boolean)));
  // A device stepped once per cycle of the chip's clock while its `cycling` is true (the SPI
  // master: its edges land on the cycle they fall in, between the state machines' steps).
  const cycler = devices.find((d) => d.cycle) ?? null;
  const acc = [0, 0, 0, 0];
  const div = [256, 256, 256, 256];
  /// Steps each state machine still owes its last instruction's delay.
  const stall = [0, 0, 0, 0];
  // RP2040JS_TRACE=ADDR: the last 64 PCs, printed if the PC leaves flash and SRAM.
  const trace = process.env.RP2040JS_TRACE
    ? { pcs: [new Uint32Array(64), new Uint32Array(64)], i: [0, 0], panic: Number(process.env.RP2040JS_TRACE) }
    : null;
  // RP2040JS_PROFILE: cycles per instruction address of each core (see `profile`).
  const histogram = process.env.RP2040JS_PROFILE
    ? [new Float64Array(PROFILE_SLOTS), new Float64Array(PROFILE_SLOTS)]
    : null;
  const state = {
    histogram,
    cycles: 0,
    coreCycles: [0, 0],
    asleep: [0, 0],
    maxLead: 0,
    /// Set by a device to stop the chip's clock after the instruction under way (the SPI
    /// master holding the chip while the host prepares its next transfer); `run` steps no
    /// further until the device clears it.
    halt: false,
    /// Cycle of the chip's clock until which each core is held (`stall`).
    heldUntil: [0, 0],
    step,
    /// Holds core `k` for `cycles` of the chip's clock, as if it were busy elsewhere (the
    /// hostile line's `stall`: the PHY's core falling behind its ring).
    stall(k, cycles) {
      state.heldUntil[k] = state.cycles + cycles;
    },
  };

  function stepPio(i, n) {
    const sm = sms[i];
    if (!sm.enabled) return;
    const b = before[i];
    const a = after[i];
    const d = div[i];
    let left = acc[i] + (n << 8);
    while (left >= d) {
      left -= d;
      if (b !== null) b(mcu);
      if (stall[i] > 0) {
        stall[i]--;
      } else {
        const was = sm.cycles;
        sm.step();
        // rp2040js counts an instruction's delay in `cycles` but does not wait it out.
        stall[i] = sm.cycles - was - 1;
      }
      if (a !== null) a(mcu);
    }
    acc[i] = left;
  }

  /// The chip's clock moves on by `n` cycles: the alarms, then the state machines.
  function advance(n, nsPerCycle) {
    state.cycles += n;
    clock.tick(n * nsPerCycle);
    if (cycler !== null && cycler.cycling) {
      // Cycle by cycle: the device at each cycle's time, then the state machines' step.
      const end = clock.nanos;
      for (let c = n - 1; c >= 0; c--) {
        cycler.cycle(end - c * nsPerCycle);
        stepPio(0, 1);
        stepPio(1, 1);
        stepPio(2, 1);
        stepPio(3, 1);
      }
      return;
    }
    stepPio(0, n);
    stepPio(1, n);
    stepPio(2, n);
    stepPio(3, n);
  }

  /// Executes one instruction of `core`, or none if it sleeps; returns its cycles (1 asleep).
  function execute(core, k) {
    if (core.waiting) return 1;
    if (pair.current !== k) pair.select(k);
    if (trace) traceStep(trace, mcu, core, k);
    const pc = core.PC;
    const n = core.executeInstruction();
    if (core.waiting) core.waitingForEvent = sleptInWfe(core);
    if (histogram) histogram[k][profileSlot(pc)] += n;
    return n;
  }

  /// Core 0 alone while core 1 is in the pen or in reset: as the single-core harness was.
  function stepCore0(end, nsPerCycle) {
    while (state.cycles < end && !pair.running && !state.halt) {
      const asleep = core0.waiting;
      const n = execute(core0, 0);
      if (asleep) state.asleep[0] += n;
      state.asleep[1] += n;
      advance(n, nsPerCycle);
      if (pair.fifoChanged) pair.stepPen();
    }
    state.coreCycles[0] = state.coreCycles[1] = state.cycles;
  }

  /// Both cores, the one behind first; a sleeping core follows the chip's clock.
  function stepBoth(end, nsPerCycle) {
    const core1 = pair.cores[1];
    const c = state.coreCycles;
    const held = state.heldUntil;
    while (state.cycles < end && pair.running && !state.halt) {
      const run0 = !core0.waiting && state.cycles >= held[0];
      const run1 = !core1.waiting && state.cycles >= held[1];
      if (run0 && (!run1 || c[0] <= c[1])) c[0] += execute(core0, 0);
      else if (run1) c[1] += execute(core1, 1);
      const awake0 = !core0.waiting && state.cycles >= held[0];
      const awake1 = !core1.waiting && state.cycles >= held[1];
      let now;
      if (awake0 && awake1) {
        now = c[0] < c[1] ? c[0] : c[1];
        const lead = c[0] > c[1] ? c[0] - c[1] : c[1] - c[0];
        if (lead > state.maxLead) state.maxLead = lead;
      } else if (awake0) now = c[0];
      else if (awake1) now = c[1];
      else now = state.cycles + 1;
      if (now <= state.cycles) continue;
      const n = now - state.cycles;
      if (!awake0) {
        if (core0.waiting) state.asleep[0] += n;
        if (c[0] < now) c[0] = now;
      }
      if (!awake1) {
        if (core1.waiting) state.asleep[1] += n;
        if (c[1] < now) c[1] = now;
      }
      advance(n, nsPerCycle);
    }
  }

  function step(cycles) {
    const end = state.cycles + cycles;
    const nsPerCycle = 1e9 / mcu.clkSys;
    for (let i = 0; i < 4; i++) {
      div[i] = ((sms[i].clockDivInt || 65536) << 8) + sms[i].clockDivFrac;
    }
    while (state.cycles < end && !state.halt) {
      if (pair.running) stepBoth(end, nsPerCycle);
      else stepCore0(end, nsPerCycle);
    }
    for (const [k, core] of pair.cores.entries()) {
      if (k === 1 && !pair.running) continue;
      const pc = core.PC >>> 0;
      if (pc < 0x4000) {
        const what = pc === (ROM_HANG & ~1) ? 'returned from its entry into' : 'jumped into';
        throw new Error(`core ${k} ${what} the (absent) boot ROM at 0x${pc.toString(16)}`);
      }
    }
  }

  return state;
}

/// Runs `mcu` slice by slice until `seconds` of emulated time (or forever), yielding to
/// the event loop between slices.
///
/// `devices` is a list of objects with any of:
/// - `beforePioStep[i](mcu)`: called before state machine `i` of PIO0 steps (to drive pins);
/// - `afterPioStep[i](mcu)`: called after it stepped (to sample pins);
/// - `endOfSlice(chip)`: called after each slice with the clock (`createClock`'s state: its
///   `cycles`, `stall(k, cycles)`), for flow control of a socket or timed injections;
/// - `status()`: fields merged into the status line;
/// - `attach(chip)`: called once with the clock before the first slice (a device that halts
///   it: `chip.halt`);
/// - `cycle(ns)` and `cycling`: stepped once per cycle of the chip's clock, at that cycle's
///   time and before the state machines' steps, while `cycling` is true (one such device).
/// While `chip.halt` is set no slice steps the chip; the event loop runs (the device's socket)
/// until the device clears it.
/// `statusFile` (or null) is rewritten about every 50 ms of real time with one JSON line.
export function run(mcu, { devices = [], statusFile = null, seconds = Infinity, onExit = () => {} } = {}) {
  const { clock, pair } = mcu;
  const chip = createClock(mcu, devices);
  let lastReport = Date.now();
  const started = Date.now();
  for (const d of devices) d.attach?.(chip);

  function report(final) {
    const realS = (Date.now() - started) / 1000;
    const line = {
      emulated_ns: Math.round(clock.nanos),
      cycles: chip.cycles,
      clk_sys_hz: mcu.clkSys,
      real_s: realS,
      emulated_mhz_per_real_s: chip.cycles / 1e6 / realS,
      pc: pair.cores[0].PC >>> 0,
      core1_launched: pair.launches > 0,
      core1_pc: pair.running ? pair.cores[1].PC >>> 0 : null,
      core_asleep_cycles: chip.asleep,
      core_max_lead_cycles: chip.maxLead,
    };
    for (const d of devices) Object.assign(line, d.status?.() ?? {});
    const text = JSON.stringify(line);
    if (statusFile) {
      writeFileSync(statusFile + '.tmp', text + '\n');
      renameSync(statusFile + '.tmp', statusFile);
    }
    if (final) console.log(`harness: ${text}`);
    if (final && chip.histogram) {
      writeProfile(process.env.RP2040JS_PROFILE, chip.histogram, functions(readFileSync(mcu.elfPath)));
    }
  }

  function slice() {
    try {
      if (!chip.halt) chip.step(Math.max(1, Math.round((mcu.clkSys * SLICE_NS) / 1e9)));
    } catch (e) {
      report(true);
      fail(e.message);
    }
    for (const d of devices) d.endOfSlice?.(chip);
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
