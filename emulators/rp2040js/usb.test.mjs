// The full-speed USB model (usb-wire.mjs, usb-controller.mjs, usb-host.mjs, usb-linux.mjs,
// cdc-acm.mjs) against the bits of USB 2.0, the RP2040's buffer rules, and embassy-rp's and
// embassy-usb's exact register sequences (usb-replica.mjs) under Linux's enumeration and
// cdc-acm. `node --test` in emulators/rp2040js.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RP2040 } from 'rp2040js';
import {
  BIT_NS,
  DEFAULT_TIMING,
  PID,
  crc16,
  crc5,
  dataBits,
  handshakeBits,
  specBudgetNs,
  tokenBits,
  transactionBits,
} from './usb-wire.mjs';
import { Rp2040UsbDevice } from './usb-controller.mjs';
import { UsbBus } from './usb-host.mjs';
import { LinuxUsbCore, DEVICE_ADDRESS } from './usb-linux.mjs';
import { CdcAcm } from './cdc-acm.mjs';
import { EmbassyReplica } from './usb-replica.mjs';

const MS = 1e6;

test('CRCs match the USB CRC white paper and CRC-16/USB', () => {
  assert.equal(crc5(0, 11), 0x02);
  assert.equal(crc5(92, 11), 0x1c);
  assert.equal(crc5(3, 11), 0x0a);
  assert.equal(crc5(56 | (4 << 7), 11), 0x0b);
  assert.equal(crc16(new TextEncoder().encode('123456789')), 0xb4c8);
});

test('a 64-byte transaction is ~615 bit times on the wire, within the spec budget; stuffing costs 0xFF a sixth', () => {
  const zeros = new Uint8Array(64);
  const ones = new Uint8Array(64).fill(0xff);
  assert.equal(tokenBits(PID.IN, 1, 1), 35);
  assert.equal(handshakeBits(PID.ACK), 19);
  assert.equal(dataBits(PID.DATA0, zeros), 35 + 512 + 1);
  assert.equal(dataBits(PID.DATA0, ones), 35 + 512 + 86);
  const timing = { ...DEFAULT_TIMING, hostDelayBits: 0 };
  const t = { token: 35, data: dataBits(PID.DATA0, zeros), handshake: 19 };
  assert.equal(transactionBits(t, timing), 35 + 6.5 + 548 + 6.5 + 19);
  const worst = { token: 35, data: dataBits(PID.DATA0, ones), handshake: 19 };
  assert.ok(transactionBits(worst, timing) * BIT_NS < specBudgetNs(64));
  assert.ok(Math.abs(specBudgetNs(64) - 59_231) < 1);
});

/// A chip without firmware, the model on its USB controller, Linux and cdc-acm on the bus, and
/// embassy's driver replayed on the registers.
function rig({ hostDelayBits = DEFAULT_TIMING.hostDelayBits, stepNs = 2000, doubleBuffered = false, echo = false } = {}) {
  const mcu = new RP2040();
  mcu.logger = { debug() {}, info() {}, warn() {}, error() {} };
  const log = [];
  const tty = {
    bytes: [],
    written: 0,
    hangups: [],
    receive(b) {
      this.bytes.push(...b);
    },
    writeDone(n) {
      this.written += n;
    },
    hangup(why) {
      this.hangups.push(why);
    },
  };
  const transactions = [];
  let core = null;
  const device = new Rp2040UsbDevice(mcu, { onPullup: (on) => core.pullup(on) });
  const bus = new UsbBus(mcu.clock, device, {
    timing: { ...DEFAULT_TIMING, hostDelayBits },
    onTransaction: (t) => transactions.push(t),
  });
  const acm = new CdcAcm(tty);
  core = new LinuxUsbCore(bus, { drivers: [acm], log: (l) => log.push(l) });
  const replica = new EmbassyReplica(mcu, { stepNs, doubleBuffered, echo });
  replica.start();
  const run = (ns) => mcu.clock.tick(ns);
  return { mcu, device, bus, core, acm, tty, replica, log, transactions, run };
}

const hex = (bytes) => bytes.map((b) => b.toString(16).padStart(2, '0')).join('');

test('Linux enumerates embassy-usb CDC-ACM in its order, and cdc-acm binds with SET_LINE_CODING', () => {
  const r = rig();
  r.run(600 * MS);
  assert.equal(r.core.state, 'configured', r.log.join('\n'));
  assert.equal(r.device.address, DEVICE_ADDRESS);
  assert.deepEqual(r.replica.controlRequests.map(hex), [
    '8006000100004000', // GET_DESCRIPTOR(device, 64) at address 0
    '0005020000000000', // SET_ADDRESS(2)
    '8006000100001200', // GET_DESCRIPTOR(device, 18)
    '8006000f00000500', // BOS, 5 bytes
    '8006000f00000c00', // BOS, all of it
    '8006000200000900', // configuration, 9 bytes
    '8006000200004b00', // configuration, 75 bytes
    '800600030000ff00', // string 0: languages
    '800602030904ff00', // product
    '800601030904ff00', // manufacturer
    '800603030904ff00', // serial
    '8006000600000a00', // device qualifier
    '0009010000000000', // SET_CONFIGURATION(1)
    '2120000000000700', // SET_LINE_CODING to the control interface
  ]);
  assert.deepEqual([...r.replica.lineCoding], [0x80, 0x25, 0, 0, 0, 0, 8]);
  assert.equal(r.core.counts.control_errors, 0);
  // Two port resets (new scheme), each seen by the device.
  assert.equal(r.device.counts.bus_resets, 2);
});

test('opening the port raises DTR|RTS on the interface (0x21), closing drops it; device recipient would be refused', () => {
  const r = rig();
  r.run(600 * MS);
  r.acm.open();
  r.run(5 * MS);
  assert.equal(r.replica.dtr, true);
  assert.equal(r.replica.rts, true);
  assert.equal(hex(r.replica.controlRequests.at(-1)), '2122030000000000');
  r.acm.close();
  r.run(5 * MS);
  assert.equal(r.replica.dtr, false);
  // rp2040js's scripted host sends it to the device (0x20): embassy-usb's CDC-ACM stalls it.
  let status = null;
  r.core.control(0x20, 0x22, 3, 0, null, (e) => (status = e ? e.message : 'ok'));
  r.run(5 * MS);
  assert.match(status, /stall/);
  assert.equal(r.replica.dtr, false);
});

/// Bytes moved per ms over `ms` once the stream runs.
function rate(r, bytesNow, ms) {
  const before = bytesNow();
  r.run(ms * MS);
  return (bytesNow() - before) / ms;
}

test('IN at the bus limit: 17 packets of 64 bytes a frame with the calibrated host delay, 19 with none', () => {
  for (const [hostDelayBits, perFrame] of [
    [DEFAULT_TIMING.hostDelayBits, 17],
    [0, 19],
  ]) {
    const r = rig({ hostDelayBits, doubleBuffered: true, stepNs: 1000 });
    r.run(600 * MS);
    r.acm.open();
    const packet = new Uint8Array(64).fill(0x5a);
    const refill = () => {
      while (r.replica.toSend.length < 8) r.replica.toSend.push(packet);
    };
    const timer = r.mcu.clock.createAlarm(() => {
      refill();
      timer.schedule(20_000);
    });
    timer.schedule(0);
    r.run(10 * MS);
    const got = rate(r, () => r.tty.bytes.length, 20);
    assert.ok(Math.abs(got - 64 * perFrame) <= 64, `host delay ${hostDelayBits}: ${got} B/ms`);
    const hist = r.bus.stats.full_packets_per_frame;
    assert.ok(hist[perFrame] > 10, `frames with ${perFrame} packets: ${hist}`);
    assert.equal(hist.slice(perFrame + 1).reduce((a, b) => a + b, 0), 0, `no frame over ${perFrame}: ${hist}`);
  }
});

/// Host → device at full tilt through cdc-acm's writes; returns B/ms and the OUT NAKs per packet.
function outRate({ stepNs, doubleBuffered }) {
  const r = rig({ stepNs, doubleBuffered });
  r.run(600 * MS);
  r.acm.open();
  const chunk = new Uint8Array(1280).map((_, i) => i & 0xff);
  const pump = r.mcu.clock.createAlarm(() => {
    while (r.acm.writeRoom() > 0) r.acm.write(chunk);
    pump.schedule(50_000);
  });
  pump.schedule(0);
  r.run(10 * MS);
  const naks = r.bus.stats.out_naks;
  const packets = r.bus.stats.out_data;
  const got = rate(r, () => r.replica.received.reduce((a, b) => a + b.length, 0), 20);
  const nakPerPacket = (r.bus.stats.out_naks - naks) / (r.bus.stats.out_data - packets);
  return { got, nakPerPacket, r };
}

test('single-buffered OUT re-armed late NAKs, and a NAKed OUT costs its whole packet (pico-sdk #949)', () => {
  const slow = outRate({ stepNs: 25_000, doubleBuffered: false });
  assert.ok(slow.nakPerPacket > 0.5, `NAKs per packet ${slow.nakPerPacket}`);
  assert.ok(slow.got < 700, `single-buffered, 25 µs to re-arm: ${slow.got} B/ms`);
  // Re-armed within the host's delay: no NAK. The IN pipe's NAKs (cdc-acm's read URBs, polled
  // in turn) leave room for 15 OUT packets a frame.
  const fast = outRate({ stepNs: 1000, doubleBuffered: false });
  assert.equal(fast.nakPerPacket, 0);
  assert.ok(Math.abs(fast.got - 15 * 64) <= 64, `single-buffered, 1 µs steps: ${fast.got} B/ms`);
  const double = outRate({ stepNs: 25_000, doubleBuffered: true });
  assert.equal(double.nakPerPacket, 0);
  assert.ok(Math.abs(double.got - 15 * 64) <= 64, `double-buffered, 25 µs to re-arm: ${double.got} B/ms`);
  // Every byte arrived once, in order.
  const seq = double.r.replica.received.flatMap((b) => [...b]);
  for (let i = 0; i < seq.length; i++) assert.equal(seq[i], (i % 1280) & 0xff);
});

test('echo through cdc-acm: what the program writes comes back intact', () => {
  const r = rig({ echo: true });
  r.run(600 * MS);
  r.acm.open();
  r.run(2 * MS);
  const message = new Uint8Array(300).map((_, i) => (i * 7) & 0xff);
  assert.equal(r.acm.write(message), 300);
  r.run(10 * MS);
  assert.deepEqual(r.tty.bytes, [...message]);
  assert.equal(r.bus.stats.toggle_errors, 0);
});

test('a throttled port stops IN tokens once its 16 read URBs are full; unthrottle resumes', () => {
  const r = rig();
  r.run(600 * MS);
  r.acm.open();
  r.acm.throttle();
  const packet = new Uint8Array(64).fill(1);
  for (let i = 0; i < 100; i++) r.replica.toSend.push(packet);
  r.run(20 * MS);
  // 16 URBs of 128 bytes completed, none resubmitted.
  assert.equal(r.tty.bytes.length, 16 * 128);
  const ins = r.transactions.length;
  r.run(5 * MS);
  assert.equal(r.transactions.filter((t) => t.kind === 'in' && t.ep === 2).length > 0, true);
  assert.equal(r.transactions.slice(ins).filter((t) => t.kind === 'in' && t.ep === 2).length, 0);
  r.acm.unthrottle();
  r.run(20 * MS);
  assert.equal(r.tty.bytes.length, 100 * 64);
});

test('a USB reset re-enumerates and hangs the open port up; the device sees the bus reset', () => {
  const r = rig({ echo: true });
  r.run(600 * MS);
  r.acm.open();
  r.run(2 * MS);
  // Traffic before the reset moves the toggles on: after it both ends start at DATA0 again.
  r.acm.write(Uint8Array.of(9, 9, 9, 9, 9));
  r.run(5 * MS);
  assert.deepEqual(r.tty.bytes, [9, 9, 9, 9, 9]);
  r.tty.bytes = [];
  let result = null;
  r.core.resetDevice((e) => (result = e ? e.message : 'ok'));
  r.run(400 * MS);
  assert.equal(result, 'ok');
  assert.deepEqual(r.tty.hangups, ['USB reset']);
  assert.equal(r.device.counts.bus_resets, 4);
  assert.equal(r.replica.dtr, false);
  r.acm.open();
  r.run(5 * MS);
  assert.equal(r.replica.dtr, true);
  r.acm.write(Uint8Array.of(1, 2, 3));
  r.run(5 * MS);
  assert.deepEqual(r.tty.bytes, [1, 2, 3]);
  assert.equal(r.bus.stats.toggle_errors, 0);
  assert.equal(r.device.counts.data_seq_errors, 0);
});
