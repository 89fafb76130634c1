// Unit tests of core1.mjs (the RP2040's second core over rp2040js) on a bare RP2040: the
// boot ROM's holding pen, the FIFOs' status and interrupts, and each core's interrupt
// routing. `node --test emulators/rp2040js/test` runs them (no image needed).

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RP2040 } from 'rp2040js';
import { addCore1, HoldingPen } from '../core1.mjs';

const SIO = 0xd0000000;
const FIFO_ST = SIO + 0x50;
const FIFO_WR = SIO + 0x54;
const FIFO_RD = SIO + 0x58;
const IRQ_TIMER_1 = 1;
const IRQ_IO_BANK0 = 13;
const IRQ_SIO_PROC0 = 15;
const IRQ_SIO_PROC1 = 16;

/// A bare RP2040 with core 1, and a way to access the bus as core `k` does.
function machine() {
  const mcu = new RP2040();
  mcu.logger = { debug() {}, info() {}, warn() {}, error() {} };
  const pair = addCore1(mcu);
  const as = (k) => {
    pair.select(k);
    return mcu;
  };
  return { mcu, pair, as };
}

const pending = (core, irq) => (core.pendingInterrupts & (1 << irq)) !== 0;

test('CPUID reads 0 on core 0 and 1 on core 1', () => {
  const { as } = machine();
  assert.equal(as(0).readUint32(SIO), 0);
  assert.equal(as(1).readUint32(SIO), 1);
});

test('the FIFOs: 8 words each way in order, RDY/VLD, sticky WOF and ROE, each core its own interrupt', () => {
  const { pair, as } = machine();
  // The pen sent its 0 at reset: core 0 drains it.
  pair.stepPen();
  assert.equal(as(0).readUint32(FIFO_ST) & 1, 1);
  assert.equal(as(0).readUint32(FIFO_RD), 0);
  // Put core 1 in reset (PSM FRCE_OFF.PROC1) so the pen leaves the FIFOs alone.
  as(0).writeUint32(0x40010004, 1 << 16);
  assert.equal(as(0).readUint32(FIFO_ST), 0b0010, 'core 0: RDY only');
  for (let i = 0; i < 8; i++) as(0).writeUint32(FIFO_WR, 100 + i);
  assert.equal(as(0).readUint32(FIFO_ST), 0b0000, 'core 0: full, RDY falls');
  assert.ok(pending(pair.cores[1], IRQ_SIO_PROC1), "core 1's FIFO interrupt: VLD");
  assert.ok(!pending(pair.cores[0], IRQ_SIO_PROC1), 'not on core 0');
  as(0).writeUint32(FIFO_WR, 999);
  assert.equal(as(0).readUint32(FIFO_ST), 0b0100, 'a write to a full FIFO sets WOF');
  assert.ok(pending(pair.cores[0], IRQ_SIO_PROC0), "WOF raises core 0's FIFO interrupt");
  assert.ok(!pending(pair.cores[1], IRQ_SIO_PROC0));
  as(0).writeUint32(FIFO_ST, 0b0100);
  assert.equal(as(0).readUint32(FIFO_ST), 0, 'WOF is write-1-to-clear');
  assert.ok(!pending(pair.cores[0], IRQ_SIO_PROC0));
  assert.equal(as(1).readUint32(FIFO_ST), 0b0011, 'core 1: VLD and RDY');
  for (let i = 0; i < 8; i++) assert.equal(as(1).readUint32(FIFO_RD), 100 + i);
  assert.ok(!pending(pair.cores[1], IRQ_SIO_PROC1), 'drained: the interrupt falls');
  assert.equal(as(1).readUint32(FIFO_RD), 0, 'an empty FIFO reads 0');
  assert.equal(as(1).readUint32(FIFO_ST), 0b1010, '... and sets ROE');
  assert.ok(pending(pair.cores[1], IRQ_SIO_PROC1));
  as(1).writeUint32(FIFO_ST, 0xff);
  assert.equal(as(1).readUint32(FIFO_ST), 0b0010);
});

test('the divider and the interpolators are per core; GPIO output and spinlocks are shared', () => {
  const { as } = machine();
  as(0).writeUint32(SIO + 0x60, 100); // DIV_UDIVIDEND
  as(0).writeUint32(SIO + 0x64, 7);
  as(1).writeUint32(SIO + 0x60, 1000);
  as(1).writeUint32(SIO + 0x64, 10);
  // (rp2040js keeps the quotient unrounded; a core's register truncates it, as `>>> 0`.)
  assert.equal(as(0).readUint32(SIO + 0x70) >>> 0, 14);
  assert.equal(as(0).readUint32(SIO + 0x74) >>> 0, 2);
  assert.equal(as(1).readUint32(SIO + 0x70) >>> 0, 100);
  as(0).writeUint32(SIO + 0x80, 5); // INTERP0_ACCUM0
  as(1).writeUint32(SIO + 0x80, 6);
  assert.equal(as(0).readUint32(SIO + 0x80), 5);
  assert.equal(as(1).readUint32(SIO + 0x80), 6);
  as(0).writeUint32(SIO + 0x14, 1 << 5); // GPIO_OUT_SET
  assert.equal(as(1).readUint32(SIO + 0x10), 1 << 5);
  const lock = SIO + 0x100 + 4 * 3;
  assert.equal(as(0).readUint32(lock), 1 << 3, 'core 0 claims spinlock 3');
  assert.equal(as(1).readUint32(lock), 0, 'core 1 finds it taken');
  assert.equal(as(1).readUint32(SIO + 0x5c), 1 << 3, 'SPINLOCK_ST');
  as(0).writeUint32(lock, 1);
  assert.equal(as(1).readUint32(lock), 1 << 3, 'released: core 1 claims it');
});

test('shared IRQ lines reach both NVICs; IO_IRQ_BANK0 follows each core own enables', () => {
  const { mcu, pair, as } = machine();
  const [c0, c1] = pair.cores;
  mcu.setInterrupt(IRQ_TIMER_1, true);
  assert.ok(pending(c0, IRQ_TIMER_1) && pending(c1, IRQ_TIMER_1));
  mcu.setInterrupt(IRQ_TIMER_1, false);
  assert.ok(!pending(c0, IRQ_TIMER_1) && !pending(c1, IRQ_TIMER_1));

  const pin = mcu.gpio[10];
  pin.padValue |= 0x40; // input enable
  // PROC1_INTE1 (GPIO 8-15): GPIO 10's LEVEL_HIGH (bit 1 of its nibble).
  as(1).writeUint32(0x40014000 + 0x134, 0x2 << 8);
  assert.equal(as(0).readUint32(0x40014000 + 0x134), 0x2 << 8, 'PROC1_INTE1 reads back');
  assert.equal(as(0).readUint32(0x40014000 + 0x104), 0, 'PROC0_INTE1 untouched');
  pin.setInputValue(true);
  assert.ok(pending(c1, IRQ_IO_BANK0), 'core 1 takes GPIO 10');
  assert.ok(!pending(c0, IRQ_IO_BANK0), 'core 0 does not');
  assert.equal(as(1).readUint32(0x40014000 + 0x154), 0x2 << 8, 'PROC1_INTS1');
  pin.setInputValue(false);
  assert.ok(!pending(c1, IRQ_IO_BANK0));
  // PROC0_INTE1 for core 0 alone.
  as(0).writeUint32(0x40014000 + 0x104, 0x2 << 8);
  as(1).writeUint32(0x40014000 + 0x134, 0);
  pin.setInputValue(true);
  assert.ok(pending(c0, IRQ_IO_BANK0) && !pending(c1, IRQ_IO_BANK0));
  // PROC1_INTF1 forces core 1's.
  as(1).writeUint32(0x40014000 + 0x144, 0x1 << 8);
  assert.ok(pending(c1, IRQ_IO_BANK0));
});

test("the holding pen answers the boot ROM's sequence and starts over on a 0 or a wrong word", () => {
  const { pair, as } = machine();
  const send = (w) => {
    as(0).writeUint32(FIFO_WR, w);
    pair.stepPen();
    return as(0).readUint32(FIFO_ST) & 1 ? as(0).readUint32(FIFO_RD) : null;
  };
  pair.stepPen();
  assert.equal(as(0).readUint32(FIFO_RD), 0, 'the pen sends 0 after reset');
  assert.equal(send(0), 0);
  assert.equal(send(7), 0, 'anything but 1 after the 0s: back to the start');
  assert.equal(send(1), 1);
  assert.equal(send(0x10000100), 0x10000100);
  assert.equal(send(0), 0, 'a 0 anywhere: back to the start');
  for (const w of [0, 1, 0x10000100, 0x20041000]) assert.equal(send(w), w);
  assert.equal(pair.running, false);
  assert.equal(send(0x10001235), 0x10001235);
  assert.equal(pair.running, true, 'launched after the entry');
  const core1 = pair.cores[1];
  assert.equal(core1.VTOR, 0x10000100);
  assert.equal(core1.SP, 0x20041000);
  assert.equal(core1.PC, 0x10001234);
  assert.equal(pair.launches, 1);
  // A core 1 reset (PSM FRCE_OFF.PROC1 set, then cleared) puts it back in the pen.
  as(0).writeUint32(0x40010004, 1 << 16);
  assert.equal(pair.running, false);
  as(0).writeUint32(0x40010004, 0);
  pair.stepPen();
  assert.equal(as(0).readUint32(FIFO_RD), 0, 'the pen sends 0 again');
  assert.notEqual(pair.cores[1], core1, 'a fresh core');
});

test('the pen waits for room when its TX FIFO is full', () => {
  const sio = { rx: { words: [] }, tx: { words: [] } };
  for (const f of [sio.rx, sio.tx]) {
    Object.defineProperty(f, 'empty', { get: () => f.words.length === 0 });
    Object.defineProperty(f, 'full', { get: () => f.words.length >= 8 });
  }
  sio.push = (w) => sio.tx.words.push(w);
  sio.pop = () => sio.rx.words.shift();
  sio.tx.words.push(...[1, 2, 3, 4, 5, 6, 7, 8]);
  const pen = new HoldingPen(sio);
  assert.equal(pen.step(), null);
  assert.equal(sio.tx.words.length, 8);
  sio.tx.words.shift();
  assert.equal(pen.step(), null);
  assert.deepEqual(sio.tx.words.slice(-1), [0]);
});
