// The two-core test image (examples/boards/rp2040-two-cores-test) on the harness's machine:
// core 1 launched by embassy-rp's spawn_core1, FIFO ping-pong, a contended spinlock, each
// core's divider and interpolator, an interrupt taken on each core, pause and resume; the
// image's results are read from its statics by symbol. The ELF is
// $RP2040JS_TWO_CORES_ELF, or the workspace's release build (cargo build --release in
// examples/boards/rp2040-two-cores-test).

import { test, before } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createMachine, createClock } from '../machine.mjs';
import { symbols } from '../elf.mjs';

const ELF =
  process.env.RP2040JS_TWO_CORES_ELF ??
  fileURLToPath(
    new URL('../../../examples/boards/target/thumbv6m-none-eabi/release/rp2040-two-cores-test', import.meta.url),
  );
/// The image's whole run, in cycles of its 125 MHz clock: it needs about 1.5 M.
const LIMIT_CYCLES = 20_000_000;
const GPIO_PIN = 10;
const IRQ_IO_BANK0 = 13;

let run;

before(() => {
  assert.ok(existsSync(ELF), `no test image at ${ELF} (cargo build --release in examples/boards/rp2040-two-cores-test)`);
  const mcu = createMachine(ELF);
  const syms = symbols(readFileSync(ELF));
  const result = (name, i = 0) => {
    assert.ok(syms.has(name), `the image has no symbol ${name}`);
    return mcu.readUint32(syms.get(name) + 4 * i) >>> 0;
  };
  const chip = createClock(mcu);
  let raisedAt = null;
  let core0SawGpio = false;
  while (result('DONE') === 0 && result('PANICKED') === 0 && chip.cycles < LIMIT_CYCLES) {
    chip.step(2000);
    if (raisedAt === null && result('GPIO_READY') === 1) {
      mcu.gpio[GPIO_PIN].setInputValue(true);
      raisedAt = chip.cycles;
    }
    if (raisedAt !== null && mcu.pair.cores[0].pendingInterrupts & (1 << IRQ_IO_BANK0)) core0SawGpio = true;
  }
  run = { mcu, chip, result, raisedAt, core0SawGpio };
});

test('the image ran to its end on both cores', () => {
  const { result, chip, mcu } = run;
  assert.equal(result('PANICKED'), 0, 'no panic');
  assert.equal(result('DONE'), 1, `DONE within ${LIMIT_CYCLES} cycles (ran ${chip.cycles})`);
  assert.equal(mcu.pair.launches, 1, 'core 1 launched once (embassy-rp spawn_core1)');
  assert.equal(result('CPUID', 0), 0);
  assert.equal(result('CPUID', 1), 1);
});

test('FIFO ping-pong, and FIFO_ST as the datasheet has it', () => {
  const { result } = run;
  assert.equal(result('FIFO_ROUND_TRIPS'), 200);
  assert.equal(result('FIFO_ERRORS'), 0);
  // Bits 0-7: RDY before each of 8 writes; 8: full (RDY low, no WOF); 9: WOF after a ninth;
  // 10: ROE after a read of the empty RX FIFO; 11: both cleared by writing 1s.
  assert.equal(result('FIFO_FLAGS').toString(2), '1'.repeat(12));
  assert.equal(result('FIFO_DRAINED'), 8, 'core 1 drained the 8 words, the ninth was dropped');
});

test('a spinlock contended from both cores keeps the count; without it updates are lost', () => {
  const { result } = run;
  assert.equal(result('LOCKED_COUNT'), 4000);
  const racy = result('RACY_COUNT');
  assert.ok(racy < 4000, `the unlocked counter lost updates (${racy}): the cores interleave`);
  assert.ok(result('LOCK_SPINS', 0) > 0 && result('LOCK_SPINS', 1) > 0, 'each core found the lock taken');
});

test("each core's divider and interpolator", () => {
  const { result } = run;
  assert.equal(result('DIV_ERRORS', 0), 0);
  assert.equal(result('DIV_ERRORS', 1), 0);
  assert.equal(result('INTERP_ACCUM', 0), 0x1000);
  assert.equal(result('INTERP_ACCUM', 1), 0x1001);
});

test('an interrupt on each core: timer alarms, SIO FIFO both ways, GPIO on core 1', () => {
  const { result, raisedAt, core0SawGpio } = run;
  assert.equal(result('TIMER_IRQ_CPU', 0), 1, 'TIMER_IRQ_1 taken on core 0');
  assert.equal(result('TIMER_IRQ_CPU', 1), 2, 'TIMER_IRQ_2 taken on core 1');
  assert.equal(result('TIMER_IRQ_COUNT', 0), 1);
  assert.equal(result('TIMER_IRQ_COUNT', 1), 1);
  assert.equal(result('SIO_IRQ0_WORD', 0), 0xc0de0001, "core 0's SIO_IRQ_PROC0 read core 1's word");
  assert.equal(result('SIO_IRQ0_WORD', 1), 1, '... on core 0');
  assert.notEqual(raisedAt, null, 'core 1 enabled its GPIO interrupt');
  assert.equal(result('GPIO_IRQ_CORE1'), 1, "core 1's IO_IRQ_BANK0 handler took GP10");
  assert.equal(core0SawGpio, false, 'core 0 (no PROC0 enable) never had IO_IRQ_BANK0 pending');
  assert.equal(result('PAUSE_HELD'), 1, 'pause_core1: core 1 stood still (its SIO_IRQ_PROC1)');
  assert.equal(result('PAUSE_RESUMED'), 1, 'resume_core1: it ran again');
});

test('the cores keep step: neither ran ahead of the other by more than an instruction', () => {
  const { chip } = run;
  // The longest M0+ instruction rp2040js counts (LDM/STM/PUSH/POP of 8 registers and PC).
  assert.ok(chip.maxLead <= 10, `max lead ${chip.maxLead} cycles`);
  assert.ok(chip.maxLead >= 1);
});
