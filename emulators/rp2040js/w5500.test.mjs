// The W5500 model against embassy-net-wiznet 0.3.0's exact SPI transactions (its
// src/chip/w5500.rs bus_read/bus_write: the 16-bit offset, the control byte, the data; its
// src/device.rs init, read_frame and write_frame in their order), and the bad input a
// firmware could send. `node --test` in emulators/rp2040js.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { W5500, MAX_FRAME, lineNs } from './w5500.mjs';
import { SpiFigures, transactionKind } from './w5500-evb-pico.mjs';

const COMMON = 0;
const S0 = 1;
const TXBUF = 2;
const RXBUF = 3;
const MAC = [0x02, 0x4c, 0x4c, 0x00, 0x00, 0x02];

/// One transaction as the driver makes it: CS low, offset, control, data, CS high.
function transfer(chip, block, offset, data, write) {
  chip.select();
  chip.exchange(offset >> 8);
  chip.exchange(offset & 0xff);
  chip.exchange((block << 3) | (write ? 4 : 0));
  const out = data.map((b) => chip.exchange(b));
  const t = chip.deselect();
  return { out, t };
}
const busWrite = (chip, block, offset, data) => transfer(chip, block, offset, [...data], true).t;
const busRead = (chip, block, offset, n) => transfer(chip, block, offset, new Array(n).fill(0), false).out;
const read16 = (chip, block, offset) => {
  const [h, l] = busRead(chip, block, offset, 2);
  return (h << 8) | l;
};

/// embassy-net-wiznet 0.3.0's WiznetDevice::new for the W5500.
function driverInit(chip) {
  busWrite(chip, COMMON, 0x0000, [0x80]);
  assert.deepEqual(busRead(chip, COMMON, 0x0039, 1), [0x04], 'VERSIONR');
  busWrite(chip, COMMON, 0x0018, [0x01]);
  busWrite(chip, S0, 0x002c, [0x04]);
  busWrite(chip, COMMON, 0x0009, MAC);
  busWrite(chip, S0, 0x001f, [16]);
  busWrite(chip, S0, 0x001e, [16]);
  busWrite(chip, S0, 0x0000, [0x84]);
  busWrite(chip, S0, 0x0001, [0x01]);
}

/// embassy-net-wiznet 0.3.0's read_frame: the frame, or 0 when RSR is 0.
function driverReadFrame(chip) {
  let rsr;
  for (;;) {
    const a = read16(chip, S0, 0x0026);
    const b = read16(chip, S0, 0x0026);
    if (a === b) {
      rsr = a;
      break;
    }
  }
  if (rsr === 0) return 0;
  busWrite(chip, S0, 0x0002, [0x04]);
  let rd = read16(chip, S0, 0x0028);
  const [h, l] = busRead(chip, RXBUF, rd, 2);
  rd = (rd + 2) & 0xffff;
  const n = ((h << 8) | l) - 2;
  const frame = busRead(chip, RXBUF, rd, n);
  rd = (rd + n) & 0xffff;
  busWrite(chip, S0, 0x0028, [rd >> 8, rd & 0xff]);
  busWrite(chip, S0, 0x0001, [0x40]);
  return frame;
}

/// embassy-net-wiznet 0.3.0's write_frame (the FSR spin bounded here).
function driverWriteFrame(chip, frame) {
  let spins = 0;
  while (read16(chip, S0, 0x0020) < frame.length) {
    if (++spins > 3) return false;
  }
  const wr = read16(chip, S0, 0x0024);
  busWrite(chip, TXBUF, wr, frame);
  const next = (wr + frame.length) & 0xffff;
  busWrite(chip, S0, 0x0024, [next >> 8, next & 0xff]);
  busWrite(chip, S0, 0x0001, [0x20]);
  return true;
}

function frameTo(dst, len, fill = 0xab, type = 0x0800) {
  const f = new Uint8Array(len).fill(fill);
  f.set(dst, 0);
  f.set([0x02, 0, 0, 0, 0, 1], 6);
  f[12] = type >> 8;
  f[13] = type & 0xff;
  return f;
}

function newChip() {
  const ints = [];
  const sent = [];
  const logs = [];
  const chip = new W5500({
    onInt: (low) => ints.push(low),
    transmit: (f) => sent.push(f),
    log: (l) => logs.push(l),
  });
  return { chip, ints, sent, logs };
}

test('the driver initialises it: VERSIONR 0x04, MACRAW open, INT high, link up', () => {
  const { chip } = newChip();
  driverInit(chip);
  assert.deepEqual(busRead(chip, S0, 0x0003, 1), [0x42], 'Sn_SR is SOCK_MACRAW');
  assert.deepEqual(busRead(chip, COMMON, 0x0009, 6), MAC, 'SHAR');
  assert.equal(read16(chip, S0, 0x0020), 16384, 'Sn_TX_FSR: the 16 KB buffer free');
  assert.equal(busRead(chip, COMMON, 0x002e, 1)[0] & 1, 1, 'PHYCFGR.LNK');
  assert.equal(chip.intLow, false);
  assert.deepEqual(chip.counts, {}, 'nothing unmodelled');
});

test('a frame to its MAC: INT falls, the driver reads it whole, RECV releases it', () => {
  const { chip, ints } = newChip();
  driverInit(chip);
  const frame = frameTo(MAC, 100);
  assert.equal(chip.receive(frame), 'stored');
  assert.equal(chip.intLow, true);
  assert.equal(read16(chip, S0, 0x0026), 102, 'Sn_RX_RSR: the frame and its 2-byte length');
  const got = driverReadFrame(chip);
  assert.deepEqual(got, [...frame]);
  assert.equal(chip.intLow, false, 'clearing Sn_IR.RECV raises INT');
  assert.deepEqual(ints, [true, false]);
  assert.equal(read16(chip, S0, 0x0026), 0, 'RECV released it');
  assert.equal(driverReadFrame(chip), 0, 'an empty buffer reads 0');
});

test('a short frame is stored padded to 60 bytes, as it came off the wire', () => {
  const { chip } = newChip();
  driverInit(chip);
  const arp = frameTo([0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 42, 0x11, 0x0806);
  chip.receive(arp);
  const got = driverReadFrame(chip);
  assert.equal(got.length, 60);
  assert.deepEqual(got.slice(0, 42), [...arp]);
  assert.deepEqual(got.slice(42), new Array(18).fill(0));
});

test('MAC filtering (MFEN): other unicast dropped; broadcast and multicast kept; MFEN off keeps all', () => {
  const { chip } = newChip();
  driverInit(chip);
  assert.equal(chip.receive(frameTo([0x02, 0, 0, 0, 0, 9], 64)), 'filtered');
  assert.equal(chip.receive(frameTo([0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 64)), 'stored');
  assert.equal(chip.receive(frameTo([0x01, 0x00, 0x5e, 0, 0, 1], 64)), 'stored');
  assert.equal(chip.frames.rx_filtered, 1);
  busWrite(chip, S0, 0x0000, [0x84 | 0x40 | 0x20 | 0x10]);
  assert.equal(chip.receive(frameTo([0xff, 0xff, 0xff, 0xff, 0xff, 0xff], 64)), 'filtered', 'BCASTB');
  assert.equal(chip.receive(frameTo([0x01, 0x00, 0x5e, 0, 0, 1], 64)), 'filtered', 'MMB');
  assert.equal(chip.receive(frameTo(MAC, 64, 0, 0x86dd)), 'filtered', 'MIP6B');
  busWrite(chip, S0, 0x0000, [0x04]);
  assert.equal(chip.receive(frameTo([0x02, 0, 0, 0, 0, 9], 64)), 'stored', 'MFEN off');
});

test('the RX buffer full: the frame that does not fit is dropped and counted, nothing moves', () => {
  const { chip } = newChip();
  driverInit(chip);
  let stored = 0;
  while (chip.receive(frameTo(MAC, 1514)) === 'stored') stored++;
  assert.equal(stored, 10, '16 KB holds ten 1516-byte records');
  assert.equal(chip.frames.rx_dropped_full, 1);
  const rsr = read16(chip, S0, 0x0026);
  assert.equal(rsr, 10 * 1516);
  assert.equal(chip.receive(frameTo(MAC, 900)), 'stored', '1 224 bytes were still free');
  // 322 bytes left: five 62-byte records (60-byte frames and their lengths) fit, not six.
  for (let i = 0; i < 5; i++) assert.equal(chip.receive(frameTo(MAC, 60)), 'stored');
  assert.equal(chip.receive(frameTo(MAC, 60)), 'full');
  assert.equal(chip.frames.rx_dropped_full, 2);
  assert.equal(chip.frames.rx_backlog_max_frames, 16);
});

test('16-bit pointers wrap the 16 KB rings: frames across the end read back whole both ways', () => {
  const { chip, sent } = newChip();
  driverInit(chip);
  for (let i = 0; i < 40; i++) {
    const f = frameTo(MAC, 1000 + i, i);
    chip.receive(f);
    assert.deepEqual(driverReadFrame(chip), [...f], `rx frame ${i}`);
    const out = Array.from({ length: 1200 + i }, (_, k) => (k * 7 + i) & 0xff);
    assert.ok(driverWriteFrame(chip, out));
    assert.deepEqual([...sent.at(-1)], out, `tx frame ${i}`);
    chip.sent();
  }
  assert.ok(read16(chip, S0, 0x0028) > 16384, 'Sn_RX_RD went past the buffer size');
  assert.equal(read16(chip, S0, 0x0020), 16384);
});

test('TX: Sn_TX_FSR shrinks by the frame until it has left; SEND_OK is masked off INT', () => {
  const { chip, sent } = newChip();
  driverInit(chip);
  const frame = Array.from({ length: 300 }, (_, i) => i & 0xff);
  assert.ok(driverWriteFrame(chip, frame));
  assert.equal(sent.length, 1);
  assert.equal(read16(chip, S0, 0x0020), 16384 - 300);
  assert.ok(driverWriteFrame(chip, frame), 'a second frame queues behind the first');
  assert.equal(sent.length, 1, 'not on the line before the first has left');
  chip.sent();
  assert.equal(sent.length, 2);
  chip.sent();
  assert.equal(read16(chip, S0, 0x0020), 16384);
  assert.equal(read16(chip, S0, 0x0022), 600, 'Sn_TX_RD');
  assert.equal(chip.intLow, false);
  assert.deepEqual(busRead(chip, S0, 0x0002, 1), [0], 'Sn_IR: SEND_OK not set (Sn_IMR has RECV only)');
});

test('one frame per INT fall (0.3.0): frames that arrive together leave INT high with a backlog', () => {
  const { chip } = newChip();
  driverInit(chip);
  chip.receive(frameTo(MAC, 200, 1));
  chip.receive(frameTo(MAC, 200, 2));
  chip.receive(frameTo(MAC, 200, 3));
  assert.equal(chip.intLow, true);
  assert.equal(driverReadFrame(chip)[20], 1);
  assert.equal(chip.intLow, false, 'RECV was cleared once for three frames');
  assert.deepEqual(chip.rxBacklog(), { frames: 2, bytes: 404 });
  // Draining while frames remain (the upstream fix) empties it without another INT.
  assert.equal(driverReadFrame(chip)[20], 2);
  assert.equal(driverReadFrame(chip)[20], 3);
  assert.equal(driverReadFrame(chip), 0);
  assert.deepEqual(chip.rxBacklog(), { frames: 0, bytes: 0 });
});

test('RST held low: SPI ignored, INT high; released: every register at its reset value', () => {
  const { chip } = newChip();
  driverInit(chip);
  chip.receive(frameTo(MAC, 64));
  assert.equal(chip.intLow, true);
  chip.reset(true);
  assert.equal(chip.intLow, false);
  assert.deepEqual(busRead(chip, COMMON, 0x0039, 1), [0], 'no answer in reset');
  chip.reset(false);
  assert.deepEqual(busRead(chip, COMMON, 0x0039, 1), [0x04]);
  assert.deepEqual(busRead(chip, S0, 0x0003, 1), [0], 'socket closed');
  assert.deepEqual(busRead(chip, COMMON, 0x0009, 6), [0, 0, 0, 0, 0, 0]);
  assert.equal(chip.receive(frameTo(MAC, 64)), 'closed');
  assert.equal(chip.frames.rx_dropped_closed, 1);
});

test('MR software reset clears the registers as RST does', () => {
  const { chip } = newChip();
  driverInit(chip);
  busWrite(chip, COMMON, 0x0000, [0x80]);
  assert.deepEqual(busRead(chip, COMMON, 0x0000, 1), [0], 'MR.RST clears itself');
  assert.deepEqual(busRead(chip, S0, 0x0003, 1), [0]);
  assert.deepEqual(busRead(chip, S0, 0x001e, 1), [2], 'Sn_RXBUF_SIZE back to 2 KB');
});

test('fixed-length data mode (OM=01): one byte, then the next frame starts under the same SCSn', () => {
  const { chip } = newChip();
  driverInit(chip);
  chip.select();
  for (const b of [0x00, 0x18, (COMMON << 3) | 4 | 1, 0x00]) chip.exchange(b);
  for (const b of [0x00, 0x39, (COMMON << 3) | 1]) chip.exchange(b);
  assert.equal(chip.exchange(0), 0x04, 'VERSIONR through the second frame');
  chip.deselect();
  assert.deepEqual(busRead(chip, COMMON, 0x0018, 1), [0], 'SIMR written by the first frame');
});

test('bad input: each kind answered, counted and logged once by name; the chip goes on', () => {
  const { chip, logs } = newChip();
  driverInit(chip);
  assert.deepEqual(busRead(chip, COMMON, 0x0030, 1), [0], 'a reserved common address reads 0');
  busWrite(chip, COMMON, 0x0030, [1]);
  busWrite(chip, COMMON, 0x0039, [7]);
  busWrite(chip, S0, 0x0026, [0, 0]);
  busRead(chip, 5, 0x0000, 1);
  busRead(chip, 4, 0x0000, 1);
  busWrite(chip, S0, 0x0001, [0x08]);
  busWrite(chip, S0, 0x001e, [3]);
  chip.select();
  chip.exchange(0);
  assert.equal(chip.deselect(), null);
  chip.select();
  chip.exchange(0);
  chip.exchange(0x39);
  chip.exchange(0);
  chip.deselect(true);
  assert.deepEqual(busRead(chip, COMMON, 0x0039, 1), [0x04], 'VERSIONR unchanged');
  assert.equal(chip.receive(frameTo(MAC, MAX_FRAME + 4)), 'too_long');
  assert.equal(chip.receive(new Uint8Array(5)), 'filtered', 'a runt has no header to match');
  // A frame past the TX buffer: Sn_TX_WR moved 20 000 bytes on.
  busWrite(chip, S0, 0x0024, [0x4e, 0x20]);
  busWrite(chip, S0, 0x0001, [0x20]);
  assert.deepEqual(chip.counts, {
    reg_unknown_read: 1,
    reg_unknown_write: 1,
    reg_read_only_write: 3,
    spi_other_socket: 1,
    spi_reserved_block: 1,
    command_unmodelled: 1,
    buffer_size_invalid: 1,
    spi_cut_header: 1,
    spi_cut_mid_byte: 1,
    tx_frame_too_long: 1,
  });
  assert.equal(chip.frames.rx_dropped_too_long, 1);
  assert.equal(chip.frames.tx_bad, 1);
  assert.equal(read16(chip, S0, 0x0020), 16384, 'the bad frame is released, not sent');
  assert.ok(logs.every((l) => /^w5500: [a-z_]+(: .*)? \(counted: [a-z_]+\)$/.test(l)), logs.join('\n'));
  assert.ok(logs.some((l) => l.includes('(counted: rx_dropped_too_long)')), logs.join('\n'));
  // The chip still works.
  const f = frameTo(MAC, 80);
  chip.receive(f);
  assert.deepEqual(driverReadFrame(chip), [...f]);
});

test('line time at 100 Mbit/s and the figures the harness keeps per transaction', () => {
  assert.equal(lineNs(1514), (8 + 1514 + 4 + 12) * 80);
  assert.equal(lineNs(42), lineNs(60), 'padded to 60');
  const fig = new SpiFigures();
  fig.select(0);
  fig.deselect(10_000, { block: 3, write: false, offset: 0, data: 2, header: true }, 256);
  fig.select(12_000);
  fig.deselect(20_000, { block: 3, write: false, offset: 2, data: 100, header: false }, 256);
  const s = fig.status();
  assert.equal(s.spi_transactions, 2);
  assert.equal(s.spi_bytes, 5 + 103);
  assert.equal(s.spi_frame_bytes, 100, 'the length header is not frame bytes');
  assert.equal(s.spi_gap_ns, 2000);
  assert.equal(s.spi_selected_ns, 18_000);
  assert.deepEqual(Object.keys(s.spi_kinds), ['RX length read', 'RX buffer read']);
  assert.equal(transactionKind({ block: 1, write: false, offset: 0x26, data: 2 }), 'Sn_RX_RSR read');
});

test('a SEND while the last frame is on the line: counted; queued behind it, or (ignore) dropped and sent with the next', () => {
  for (const mode of ['queue', 'ignore']) {
    const sent = [];
    const chip = new W5500({ transmit: (f) => sent.push(f), sendWhileBusy: mode });
    driverInit(chip);
    assert.ok(driverWriteFrame(chip, frameTo(MAC, 100, 1)));
    assert.ok(driverWriteFrame(chip, frameTo(MAC, 60, 2)), 'written while the first is on the line');
    assert.equal(chip.frames.tx_send_while_busy, 1, mode);
    chip.sent();
    if (mode === 'queue') {
      assert.deepEqual(sent.map((f) => f.length), [100, 60]);
      chip.sent();
      assert.equal(read16(chip, S0, 0x0022), 160, 'Sn_TX_RD reached Sn_TX_WR');
    } else {
      assert.deepEqual(sent.map((f) => f.length), [100], 'the second SEND was dropped');
      assert.equal(read16(chip, S0, 0x0022), 100, 'its bytes wait between Sn_TX_RD and Sn_TX_WR');
      assert.ok(driverWriteFrame(chip, frameTo(MAC, 60, 3)));
      assert.deepEqual(sent.map((f) => f.length), [100, 120], 'and leave as one frame with the next');
    }
  }
});

test('faults: every Nth length header read comes back corrupt, every Mth SEND is refused; counted', () => {
  const sent = [];
  const chip = new W5500({ transmit: (f) => sent.push(f), faults: { header: 2, send: 3 } });
  driverInit(chip);
  for (let k = 0; k < 4; k++) chip.receive(frameTo(MAC, 64 + k));
  // The driver's header reads: the 2nd and 4th are corrupt, over the buffer and then 0x0001.
  const header = () => {
    const rd = read16(chip, S0, 0x0028);
    return read16(chip, RXBUF, rd);
  };
  assert.equal(header(), 66);
  assert.ok(header() > 16384, 'the 2nd read: a length over the buffer');
  assert.equal(header(), 66, 'read again: right');
  assert.equal(header(), 1, 'the 4th: under its own two bytes');
  assert.equal(chip.frames.rx_header_corrupted, 2);
  // A read that does not start at a header is never touched.
  const rd = read16(chip, S0, 0x0028);
  assert.deepEqual(busRead(chip, RXBUF, rd + 2, 6), MAC);
  // SENDs: the 3rd is refused; Sn_TX_RD stays; a SEND again takes it.
  for (let k = 0; k < 3; k++) {
    assert.ok(driverWriteFrame(chip, frameTo(MAC, 60, k)));
    chip.sent();
  }
  assert.equal(sent.length, 2);
  assert.equal(chip.frames.tx_send_refused, 1);
  assert.equal(read16(chip, S0, 0x0022), 120);
  busWrite(chip, S0, 0x0001, [0x20]);
  chip.sent();
  assert.equal(sent.length, 3);
  assert.equal(read16(chip, S0, 0x0022), 180);
});
