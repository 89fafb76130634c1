// Unit tests of the SPI master model (spi-master.mjs) and the Pico SPI board (pico-spi.mjs):
// the master's waveform and gaps on a fake bus, then the master against rp2040js's PIO
// running the rp2040-spi-link example's device program (its SPI shifter and CS watcher, the
// same instructions), fed by DMA as the firmware feeds it, on one clock: which SPI clocks the
// device keeps up with at 125 and 240 MHz, with and without the input synchronisers. No
// firmware needed: `node --test` in emulators/rp2040js runs them.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RP2040 } from 'rp2040js';
import { SpiMaster, Xorshift, checkOptions, PINS } from './spi-master.mjs';
import { GPIO, SpiBoard, flushFifosOnJoinChange, encode } from './pico-spi.mjs';

/// A fake bus: every pin change with its time; MISO from `misoBits` by rising edge.
function fakeBus({ ready = () => true, miso = () => 0 } = {}) {
  const log = [];
  let now = 0;
  const io = {
    set: (pin, level) => log.push([now, pin, level]),
    miso,
    ready,
    request: () => false,
  };
  return { io, log, at: (ns) => (now = ns) };
}

/// Runs `master` cycle by cycle at `clkHz` until `until()` or `maxNs`.
function spin(master, bus, clkHz, until, maxNs = 1e7, startNs = 0) {
  const step = 1e9 / clkHz;
  let ns = startNs;
  while (!until() && ns < maxNs) {
    ns += step;
    bus.at(ns);
    master.cycle(ns);
  }
  return ns;
}

test('one byte in mode 0: CS, then eight rising edges half a period apart, MOSI MSB first', () => {
  const bus = fakeBus({ miso: (() => { let i = 0; const bits = [1, 0, 1, 0, 0, 1, 0, 1]; return () => bits[i++]; })() });
  const m = new SpiMaster(bus.io, { gapNs: 0, tailPerMille: 0 });
  bus.log.length = 0;
  let result = null;
  m.start(Uint8Array.of(0xc3), { hz: 10e6 }, (r) => (result = r));
  spin(m, bus, 1e9, () => result !== null);
  assert.equal(result.rx[0], 0xa5, 'MISO sampled at each rising edge, MSB first');
  const cs = bus.log.filter(([, p]) => p === PINS.cs);
  const rises = bus.log.filter(([, p, l]) => p === PINS.sck && l === 1).map(([t]) => t);
  const mosi = bus.log.filter(([, p]) => p === PINS.mosi).map(([, , l]) => l);
  assert.deepEqual(cs.map(([, , l]) => l), [0, 1]);
  assert.equal(rises.length, 8);
  assert.equal(rises[0] - cs[0][0], 50, 'the first edge half a period after CS');
  for (let i = 1; i < 8; i++) assert.equal(rises[i] - rises[i - 1], 100);
  assert.deepEqual(mosi, [1, 1, 0, 0, 0, 0, 1, 1]);
  assert.equal(cs[1][0] - rises[7], 100, 'CS rises half a period after the last falling edge');
  assert.equal(result.endNs - result.startNs, 850);
});

test('the gap between transfers, and the tail now and then from a seeded draw', () => {
  const bus = fakeBus();
  const m = new SpiMaster(bus.io, { gapNs: 10_000, tailNs: 50_000, tailPerMille: 200, seed: 7 });
  const starts = [];
  let ns = 0;
  for (let i = 0; i < 200; i++) {
    let r = null;
    m.start(Uint8Array.of(i), { hz: 20e6 }, (x) => (r = x));
    ns = spin(m, bus, 1e9, () => r !== null, 1e9, ns);
    starts.push([r.startNs, r.endNs]);
  }
  const gaps = starts.slice(1).map(([s], i) => s - starts[i][1]);
  const tails = gaps.filter((g) => g >= 50_000).length;
  assert.ok(gaps.every((g) => (g >= 10_000 && g < 10_010) || (g >= 50_000 && g < 50_010)), `${gaps}`);
  assert.ok(tails > 20 && tails < 60, `about a fifth are tails: ${tails}`);
  assert.equal(m.stats.tails, tails + (m.nextGap === 50_000 ? 1 : 0));
  const again = new Xorshift(7);
  const first = new Xorshift(7);
  assert.equal(again.perMille(), first.perMille(), 'the same seed draws the same gaps');
});

test('READY: the master waits for it, and gives up after its timeout', () => {
  let ready = false;
  const bus = fakeBus({ ready: () => ready });
  const m = new SpiMaster(bus.io, { gapNs: 0, readyTimeoutNs: 5_000 });
  let r = null;
  m.start(Uint8Array.of(1), { hz: 1e6 }, (x) => (r = x));
  spin(m, bus, 1e9, () => r !== null);
  assert.equal(r.notReady, true);
  assert.equal(m.stats.not_ready, 1);
  r = null;
  m.start(Uint8Array.of(1), { hz: 1e6 }, (x) => (r = x));
  spin(m, bus, 1e9, () => false, 1_000);
  ready = true;
  spin(m, bus, 1e9, () => r !== null, 1e9, 1_000);
  assert.ok(r.rx && r.startNs >= 1_000, 'started once READY rose');
});

test('bad options and transfers are refused', () => {
  assert.match(checkOptions({ gapNs: -1, tailNs: 0, tailPerMille: 0, byteGapHalfPeriods: 0, readyTimeoutNs: 1 }), /gap/);
  assert.match(checkOptions({ gapNs: 0, tailNs: 0, tailPerMille: 1001, byteGapHalfPeriods: 0, readyTimeoutNs: 1 }), /tail share/);
  const m = new SpiMaster(fakeBus().io);
  assert.throws(() => m.start(Uint8Array.of(1), { hz: 40e6 }, () => {}), /31250000/);
  assert.throws(() => m.start(new Uint8Array(0), { hz: 1e6 }, () => {}), /empty/);
});

// --- The device program in rp2040js's PIO --------------------------------------------------

const PIO0 = 0x50200000;
const DMA = 0x50000000;
const IO_BANK0 = 0x40014000;
const PADS_BANK0 = 0x4001c000;
const SRAM = 0x20000000;
const FUNC_PIO0 = 6;

/// The example's device program (examples/boards/rp2040-spi-link/src/spi.rs), assembled:
/// SM0 shifts (side-set: READY), SM1 watches CS and raises IRQ flag 0 when it rises.
export const DEVICE_PROGRAM = [
  0x90a0, // 0: pull block      side 0   the first byte
  0x7001, // 1: out pins, 1     side 0   its MSB on MISO before the transfer
  0x3811, // 2: wait 0 gpio 17  side 1   armed: READY high until CS falls
  0x3092, // 3: wait 1 gpio 18  side 0   (wrap target) a rising edge: the master samples
  0x4001, // 4: in pins, 1               MOSI (autopush at 8)
  0x6001, // 5: out pins, 1              the next bit on MISO (autopull at 8)
  0x2012, // 6: wait 0 gpio 18           (wrap) the falling edge
  0x2011, // 7: wait 0 gpio 17           SM1: CS low...
  0x2091, // 8: wait 1 gpio 17           ...then high again
  0xc000, // 9: irq nowait 0             (wrap) the transfer ended
];

/// An RP2040 with the device program on PIO0 and DMA channels 0 (RX FIFO -> `rxAt`) and 1
/// (`tx` bytes at `txAt` -> TX FIFO), `n` bytes each; no CPU runs.
function device({ clkHz, tx, bypass = 0 }) {
  const mcu = new RP2040();
  mcu.logger = { debug() {}, info() {}, warn() {}, error() {} };
  mcu.clkSys = clkHz;
  for (const p of mcu.pio) p.run = () => {};
  const w = (a, v) => mcu.writeUint32(a, v >>> 0);
  DEVICE_PROGRAM.forEach((ins, i) => w(PIO0 + 0x48 + 4 * i, ins));
  for (const pin of [GPIO.miso, GPIO.ready]) w(IO_BANK0 + 8 * pin + 4, FUNC_PIO0);
  // The inputs' pads: input enabled (as embassy-rp's make_pio_pin sets them).
  for (const pin of [GPIO.mosi, GPIO.cs, GPIO.sck]) w(PADS_BANK0 + 4 + 4 * pin, 0x56);
  mcu.pio[0].pinDirectionsChanged(1, GPIO.miso, 1);
  mcu.pio[0].pinDirectionsChanged(1, GPIO.ready, 1);
  w(PIO0 + 0x38, bypass);
  // SM0: side-set 1 + enable on READY, OUT on MISO, IN from MOSI; wrap 3..6; autopush and
  // autopull at 8 bits, both shifting left (MSB first).
  w(PIO0 + 0xc8, 1 << 16);
  w(PIO0 + 0xcc, (1 << 30) | (6 << 12) | (3 << 7));
  w(PIO0 + 0xd0, (1 << 16) | (1 << 17) | (8 << 20) | (8 << 25));
  w(PIO0 + 0xdc, (2 << 29) | (GPIO.ready << 10) | (1 << 20) | (GPIO.mosi << 15) | GPIO.miso);
  // SM1: wrap 7..9, starting at 7.
  w(PIO0 + 0xe0, 1 << 16);
  w(PIO0 + 0xe4, (9 << 12) | (7 << 7));
  w(PIO0 + 0xf0, 7); // SM1_INSTR: jmp 7
  const rxAt = SRAM + 0x1000;
  const txAt = SRAM + 0x2000;
  tx.forEach((b, i) => mcu.writeUint8(txAt + i, b));
  const n = tx.length;
  // DMA: 8-bit transfers paced by PIO0 SM0's DREQs (TX 0, RX 4).
  const ch = (i, read, write, count, ctrl) => {
    w(DMA + 0x40 * i + 0x0, read);
    w(DMA + 0x40 * i + 0x4, write);
    w(DMA + 0x40 * i + 0x8, count);
    w(DMA + 0x40 * i + 0xc, ctrl);
  };
  const ctrl = (treq, incRead, incWrite, self) =>
    1 | (0 << 2) | (incRead << 4) | (incWrite << 5) | (self << 11) | (treq << 15) | (1 << 21);
  ch(0, PIO0 + 0x20, rxAt, n, ctrl(4, 0, 1, 0));
  ch(1, txAt, PIO0 + 0x10, n, ctrl(0, 1, 0, 1));
  w(PIO0 + 0x0, 0b11); // SM0 and SM1 on
  const read = () => Array.from({ length: n }, (_, i) => mcu.readUint8(rxAt + i));
  return { mcu, read };
}

/// Steps `mcu`'s clock, its PIO0 state machines and `board` cycle by cycle until `until()`.
function run(mcu, board, until, maxCycles = 5e6) {
  const ns = 1e9 / mcu.clkSys;
  let after = 16; // cycles after `until()`: the master's last levels reach the chip
  for (let i = 0; i < maxCycles && after > 0; i++) {
    if (until()) after--;
    mcu.clock.tick(ns);
    board.cycle(mcu.clock.nanos);
    for (const sm of mcu.pio[0].machines) if (sm.enabled) sm.step();
  }
}

/// One transfer of `n` bytes each way through the board at `hz`; what each end received.
function exchange({ clkHz, hz, n = 64, bypass = 0 }) {
  const toHost = Uint8Array.from({ length: n }, (_, i) => (i * 37 + 11) & 0xff);
  const toDevice = Uint8Array.from({ length: n }, (_, i) => (i * 91 + 5) & 0xff);
  const { mcu, read } = device({ clkHz, tx: toHost, bypass });
  const sent = [];
  const board = new SpiBoard(mcu, (m) => sent.push(m), { gapNs: 0, tailPerMille: 0 });
  const msg = Buffer.alloc(6 + n);
  msg[0] = 'X'.charCodeAt(0);
  msg.writeUInt32BE(hz, 1);
  msg[5] = 1;
  msg.set(toDevice, 6);
  board.message(new Uint8Array(msg));
  run(mcu, board, () => sent.length > 0);
  assert.equal(sent.length, 1, 'the transfer ended');
  const d = sent[0];
  assert.equal(String.fromCharCode(d[4]), 'D');
  const host = [...d.subarray(4 + 18)];
  const irqFlag = mcu.pio[0].irq & 1;
  return { host, device: read(), toHost: [...toHost], toDevice: [...toDevice], irqFlag };
}

for (const [clkHz, hz] of [[125e6, 10e6], [125e6, 20e6], [240e6, 31.25e6]]) {
  test(`PIO keeps up at ${hz / 1e6} MHz SPI on a ${clkHz / 1e6} MHz chip: every byte both ways`, () => {
    const r = exchange({ clkHz, hz });
    assert.deepEqual(r.host, r.toHost, 'the host got the device bytes');
    assert.deepEqual(r.device, r.toDevice, 'the device got the host bytes');
    assert.equal(r.irqFlag, 1, 'the CS watcher raised its flag at the end');
  });
}

test('at 31.25 MHz on a 125 MHz chip the synchronisers make MISO late; bypassed, it holds', () => {
  const late = exchange({ clkHz: 125e6, hz: 31.25e6 });
  assert.deepEqual(late.device, late.toDevice, 'MOSI is still sampled right');
  assert.notDeepEqual(late.host, late.toHost, 'MISO changes as the master samples it');
  const bypass = (1 << GPIO.sck) | (1 << GPIO.cs) | (1 << GPIO.mosi);
  const fast = exchange({ clkHz: 125e6, hz: 31.25e6, bypass });
  assert.deepEqual(fast.host, fast.toHost);
  assert.deepEqual(fast.device, fast.toDevice);
});

test('a FJOIN change flushes both FIFOs, as on the chip', () => {
  const mcu = new RP2040();
  mcu.logger = { debug() {}, info() {}, warn() {}, error() {} };
  flushFifosOnJoinChange(mcu.pio[0]);
  const sm = mcu.pio[0].machines[0];
  mcu.writeUint32(PIO0 + 0x10, 1);
  mcu.writeUint32(PIO0 + 0x10, 2);
  assert.equal(sm.txFIFO.itemCount, 2);
  mcu.writeUint32(PIO0 + 0xd0, (1 << 31) >>> 0);
  assert.equal(sm.txFIFO.itemCount, 0, 'flushed');
  mcu.writeUint32(PIO0 + 0x10, 3);
  mcu.writeUint32(PIO0 + 0xd0, (1 << 31) >>> 0);
  assert.equal(sm.txFIFO.itemCount, 1, 'the same FJOIN again flushes nothing');
});

test("the board's protocol: a wait ends on REQUEST or at its time, and holds the clock", () => {
  const mcu = new RP2040();
  mcu.logger = { debug() {}, info() {}, warn() {}, error() {} };
  const sent = [];
  const board = new SpiBoard(mcu, (m) => sent.push(m));
  const chip = { halt: false };
  board.attach(chip);
  const wait = Buffer.alloc(9);
  wait[0] = 'W'.charCodeAt(0);
  wait.writeBigUInt64BE(5_000n, 1);
  board.message(new Uint8Array(wait));
  assert.equal(chip.halt, false, 'the chip runs while the host waits');
  mcu.clock.tick(6_000);
  assert.equal(sent.length, 1);
  assert.equal(String.fromCharCode(sent[0][4]), 'E');
  assert.equal(Number(sent[0].readBigUInt64BE(5)), 5_000, 'at the wait time, in the chip clock');
  assert.equal(chip.halt, true, 'held until the next message');
  wait.writeBigUInt64BE(0n, 1);
  board.message(new Uint8Array(wait));
  // REQUEST (GP21) driven high by SIO.
  mcu.writeUint32(IO_BANK0 + 8 * GPIO.request + 4, 5);
  mcu.writeUint32(0xd0000000 + 0x24, 1 << GPIO.request); // GPIO_OE_SET
  mcu.writeUint32(0xd0000000 + 0x14, 1 << GPIO.request); // GPIO_OUT_SET
  assert.equal(sent.length, 2, 'REQUEST ended the wait');
  assert.equal(sent[1][4 + 1 + 8] & 2, 2, 'pins: REQUEST');
  assert.equal(board.counts.waits_by_request, 1);
  assert.equal(board.counts.waits_by_time, 1);
  const e = encode('D', [1, 2], Uint8Array.of(9));
  assert.equal(e.msg.readUInt32BE(0), 1 + 16 + 1 + 1);
});
