// The PL022 master's timing (pl022.mjs) on rp2040js's own SPI peripheral: bytes written to
// SPI0's data register as a firmware writes them, answered by a device joined to the clock
// as the W5500-EVB-Pico's is (w5500-evb-pico.mjs), and the times each byte ends read off
// the emulated clock. `node --test` in emulators/rp2040js.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RP2040 } from 'rp2040js';
import { FIFO_DEPTH, GAP_SCK, Pl022Timing, gapSck, spiMode } from './pl022.mjs';

const SPI0 = 0x4003c000;
const SSPCR0 = 0x00;
const SSPCR1 = 0x04;
const SSPDR = 0x08;
const SSPSR = 0x0c;
const SSPCPSR = 0x10;
const SPH = 1 << 7;
const SPO = 1 << 6;
const SSE = 1 << 1;
const TNF = 1 << 1;

/// An RP2040 whose SPI0 runs at clk_peri / (cpsdvsr x (1 + scr)) with SSPCR0's `modeBits`,
/// its bytes timed by `Pl022Timing` and answered with their complement; `ends` collects the
/// emulated ns each byte's last bit is in.
function master({ cpsdvsr = 2, scr = 1, modeBits = 0, gap = null } = {}) {
  const mcu = new RP2040();
  const spi = mcu.spi[0];
  const timing = new Pl022Timing(spi, gap);
  const ends = [];
  let inFlight = 0;
  const alarm = mcu.clock.createAlarm(() => {
    ends.push(mcu.clock.nanos);
    spi.completeTransmit(~inFlight & 0xff);
  });
  spi.onTransmit = (mosi) => {
    inFlight = mosi;
    alarm.schedule(timing.next(mcu.clock.nanos));
  };
  mcu.writeUint32(SPI0 + SSPCPSR, cpsdvsr);
  mcu.writeUint32(SPI0 + SSPCR0, (scr << 8) | modeBits | 7); // DSS 7: 8-bit words
  mcu.writeUint32(SPI0 + SSPCR1, SSE);
  return { mcu, spi, timing, ends };
}

/// Writes `bytes` to SSPDR while the TX FIFO has room (as a DMA channel paced by the TX
/// DREQ does), then runs the clock until every byte is back; returns the bytes read.
function transfer(m, bytes) {
  const { mcu } = m;
  const got = [];
  let i = 0;
  for (let ns = 0; got.length < bytes.length && ns < 1e6; ns += 2) {
    while (i < bytes.length && mcu.readUint32(SPI0 + SSPSR) & TNF) {
      mcu.writeUint32(SPI0 + SSPDR, bytes[i++]);
    }
    while (mcu.readUint32(SPI0 + SSPSR) & (1 << 2)) got.push(mcu.readUint32(SPI0 + SSPDR) & 0xff);
    mcu.clock.tick(2);
  }
  return got;
}

/// The spacing of consecutive byte ends, ns.
const spacing = (ends) => ends.slice(1).map((t, k) => t - ends[k]);

test('31.25 MHz in SPI mode 0 (SPH = 0): 8 SCK a byte, then 1.5 SCK of frame pulse: 304 ns a byte', () => {
  const m = master({ modeBits: 0 });
  assert.equal(m.spi.clockFrequency, 31_250_000);
  const out = transfer(m, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12]);
  assert.deepEqual(out, [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12].map((b) => ~b & 0xff));
  // The first byte ends 8 SCK periods (256 ns) after it starts; each next 9.5 periods later.
  assert.ok(Math.abs(m.ends[0] - 256) <= 2, `first byte at ${m.ends[0]} ns`);
  for (const d of spacing(m.ends)) assert.ok(Math.abs(d - 304) < 1e-6, `spacing ${d}`);
  assert.equal(m.timing.status().spi_mode, 0);
  assert.equal(m.timing.status().spi_gap_sck, 1.5);
  assert.equal(m.timing.slotNs(), 304);
});

test('mode 3 (SPO = 1, SPH = 1): 0.5 SCK between words, 272 ns a byte; mode 1 the same, mode 2 as mode 0', () => {
  for (const [bits, mode, slot] of [[SPO | SPH, 3, 272], [SPH, 1, 272], [SPO, 2, 304]]) {
    const m = master({ modeBits: bits });
    transfer(m, new Array(20).fill(0x5a));
    for (const d of spacing(m.ends)) assert.ok(Math.abs(d - slot) < 1e-6, `mode ${mode}: spacing ${d}`);
    assert.equal(m.timing.status().spi_mode, mode);
  }
});

test('62.5 MHz (CPSDVSR 2, SCR 0: clk_peri / 2, the fastest): 136 ns a byte in mode 3, 152 in mode 0', () => {
  for (const [bits, slot] of [[SPO | SPH, 136], [0, 152]]) {
    const m = master({ scr: 0, modeBits: bits });
    assert.equal(m.spi.clockFrequency, 62_500_000);
    transfer(m, new Array(16).fill(0));
    for (const d of spacing(m.ends)) assert.ok(Math.abs(d - slot) < 1e-6, `spacing ${d}`);
  }
});

test('a byte written after the shifter went idle starts at once: no gap before it', () => {
  const m = master({ modeBits: 0 });
  transfer(m, [1]);
  const first = m.ends[0];
  m.mcu.clock.tick(10_000);
  const before = m.mcu.clock.nanos;
  transfer(m, [2]);
  assert.ok(Math.abs(m.ends[1] - before - 256) <= 2, `second byte ${m.ends[1] - before} ns after its write (first at ${first})`);
});

test('the TX FIFO is 8 deep: the shifter takes the first byte, the FIFO 8 more, the tenth waits', () => {
  assert.equal(FIFO_DEPTH, 8);
  const m = master({ modeBits: 0 });
  let queued = 0;
  while (m.mcu.readUint32(SPI0 + SSPSR) & TNF) {
    m.mcu.writeUint32(SPI0 + SSPDR, queued++);
  }
  // The shifter took the first byte at once, so the FIFO holds 8 more.
  assert.equal(queued, FIFO_DEPTH + 1);
});

test('--spi-gap-sck overrides the gap (0: a master without gaps, 8 SCK a byte)', () => {
  const m = master({ modeBits: 0, gap: 0 });
  transfer(m, new Array(10).fill(1));
  for (const d of spacing(m.ends)) assert.ok(Math.abs(d - 256) < 1e-6, `spacing ${d}`);
  assert.equal(gapSck(0, 2), 2);
  assert.equal(gapSck(SPH, null), GAP_SCK.sph1);
  assert.equal(spiMode(SPO | SPH), 3);
});
