// CDC-NCM on the full-speed USB model: NTB16 as Linux's cdc_ncm builds and reads it
// (ntb16.mjs), and Linux's cdc_ncm (cdc-ncm.mjs) binding embassy-usb's CDC-NCM class replayed
// on embassy-rp's register sequences (usb-replica-ncm.mjs). `node --test` in
// emulators/rp2040js.

import { test } from 'node:test';
import assert from 'node:assert/strict';
import { RP2040 } from 'rp2040js';
import { DEFAULT_TIMING } from './usb-wire.mjs';
import { Rp2040UsbDevice } from './usb-controller.mjs';
import { UsbBus } from './usb-host.mjs';
import { LinuxUsbCore } from './usb-linux.mjs';
import { CdcNcm } from './cdc-ncm.mjs';
import { EmbassyNcmReplica, NTB_PARAMETERS } from './usb-replica-ncm.mjs';
import {
  buildNtb16,
  linuxNtbSizes,
  malformedNtb16,
  MALFORMED,
  NDP_LOOP_LIMIT,
  NtbReader,
  parseNtbParameters,
} from './ntb16.mjs';
import { parseUsbPlan, probeFrame } from './pico-usb-ncm.mjs';

const MS = 1e6;
const hex = (bytes) => [...bytes].map((b) => b.toString(16).padStart(2, '0')).join('');

/// An Ethernet frame of `n` bytes: broadcast, from the host, IPv4's EtherType, a counter.
function frame(n, seed = 0) {
  const f = new Uint8Array(n);
  f.fill(0xff, 0, 6);
  f.set([0x02, 0x4c, 0x4c, 0, 0, 1], 6);
  f[12] = 0x08;
  for (let i = 14; i < n; i++) f[i] = (i * 7 + seed) & 0xff;
  return f;
}

/// Linux's sizes for embassy-usb's NTB parameters on a 64-byte bulk OUT endpoint.
const EMBASSY = linuxNtbSizes(parseNtbParameters(NTB_PARAMETERS), 64);

test("Linux's sizes for embassy-usb's parameters: 2048-byte blocks, one datagram each, the IP header aligned", () => {
  assert.equal(EMBASSY.rxMax, 2048);
  assert.equal(EMBASSY.txMax, 2048);
  assert.equal(EMBASSY.maxDatagrams, 1);
  assert.equal(EMBASSY.maxNdpSize, 16);
  assert.equal(EMBASSY.remainder, 2);
  assert.equal(EMBASSY.minTxPkt, 2048 - 3 * 64);
  // A device asking for nothing in particular gets Linux's defaults and 40 datagrams.
  const open = linuxNtbSizes({ ...parseNtbParameters(NTB_PARAMETERS), dwNtbInMaxSize: 65536, dwNtbOutMaxSize: 65536, wNtbOutMaxDatagrams: 0 }, 512);
  assert.equal(open.rxMax, 16384);
  assert.equal(open.txMax, 16385);
  assert.equal(open.maxDatagrams, 40);
});

test('a block as cdc_ncm_fill_tx_frame builds it: NDP16 at 12, the datagram at 30, a short packet forced', () => {
  const f = frame(1514);
  const { bytes, datagrams } = buildNtb16([f], 7, EMBASSY);
  assert.equal(datagrams, 1);
  assert.equal(bytes.length, 30 + 1514);
  assert.equal(hex(bytes.subarray(0, 12)), '4e434d48' + '0c00' + '0700' + '0806' + '0c00');
  assert.equal(hex(bytes.subarray(12, 28)), '4e434d30' + '1000' + '0000' + '1e00' + 'ea05' + '00000000');
  assert.deepEqual(bytes.subarray(30), f);
  // 34 bytes end a block of 64: one zero byte makes the packet short.
  const short = buildNtb16([frame(34)], 0, EMBASSY).bytes;
  assert.equal(short.length, 65);
  assert.equal(short[8] | (short[9] << 8), 65);
  // A frame that cannot fit is dropped.
  assert.equal(buildNtb16([frame(2030)], 0, EMBASSY), null);
});

test("blocks read as cdc_ncm_rx_fixup reads them: every refusal counted, an NDP16 loop cut after Linux's 50", () => {
  const r = new NtbReader(2048);
  const f = frame(100);
  const good = buildNtb16([f], 1, EMBASSY).bytes;
  assert.deepEqual(r.read(good), [f]);
  const cases = {
    'bad-signature': ['bad_nth_signature', null],
    'past-block': ['bad_datagrams', []],
    'ndp-past-block': ['bad_ndp_offset', null],
    'ndp-loop': ['ndp_loops_cut', null],
    'too-long': [null, null],
  };
  for (const kind of MALFORMED) {
    const before = { ...r.counts };
    const got = r.read(malformedNtb16(kind, f, 2, EMBASSY));
    const [counter] = cases[kind];
    if (kind === 'ndp-loop') {
      // The table is read again each time round: its datagram delivered 51 times, as Linux does.
      assert.equal(got.length, NDP_LOOP_LIMIT + 1);
      assert.equal(r.counts.ndp_loops_cut, before.ndp_loops_cut + 1);
    } else if (kind === 'too-long') {
      assert.equal(got.length, 1);
      assert.equal(got[0].length, 1600);
    } else {
      assert.deepEqual(got, cases[kind][1], kind);
      assert.equal(r.counts[counter], before[counter] + 1, kind);
    }
  }
  // Shorter than NTH16 + NDP16; over rx_max; an NDP16 too short; an empty table.
  assert.equal(r.read(good.subarray(0, 19)), null);
  assert.equal(r.counts.too_short, 1);
  const over = Uint8Array.from(good);
  over[8] = 0x01;
  over[9] = 0x08;
  assert.equal(r.read(over), null);
  assert.equal(r.counts.block_length_over_rx_max, 1);
  const shortNdp = Uint8Array.from(good);
  shortNdp[16] = 12;
  assert.equal(r.read(shortNdp), null);
  assert.equal(r.counts.bad_ndp_length, 1);
  const empty = Uint8Array.from(good);
  empty.fill(0, 20, 24);
  assert.deepEqual(r.read(empty), []);
  assert.equal(r.counts.empty_ndp, 1);
  // embassy-usb's own blocks (a 28-byte header) read whole.
  const device = Uint8Array.of(
    ...[0x4e, 0x43, 0x4d, 0x48, 12, 0, 0, 0, 28 + 60, 0, 12, 0],
    ...[0x4e, 0x43, 0x4d, 0x30, 16, 0, 0, 0, 28, 0, 60, 0, 0, 0, 0, 0],
    ...frame(60),
  );
  assert.deepEqual(new NtbReader(2048).read(device), [frame(60)]);
});

/// A chip without firmware, the model on its USB controller, Linux and cdc_ncm on the bus,
/// embassy-usb's CDC-NCM class replayed on the registers.
function rig({ renotify = true, echo = true, hostDelayBits = DEFAULT_TIMING.hostDelayBits } = {}) {
  const mcu = new RP2040();
  mcu.logger = { debug() {}, info() {}, warn() {}, error() {} };
  const log = [];
  const net = {
    frames: [],
    carrierChanges: [],
    receive(f) {
      this.frames.push(f);
    },
    carrier(on) {
      this.carrierChanges.push(on);
    },
    log: (l) => log.push(l),
  };
  let core = null;
  const device = new Rp2040UsbDevice(mcu, { onPullup: (on) => core.pullup(on) });
  const bus = new UsbBus(mcu.clock, device, { timing: { ...DEFAULT_TIMING, hostDelayBits } });
  const ncm = new CdcNcm(net);
  core = new LinuxUsbCore(bus, { drivers: [ncm], log: (l) => log.push(l) });
  const replica = new EmbassyNcmReplica(mcu, { renotify, echo, stepNs: 1000 });
  replica.start();
  const run = (ns) => mcu.clock.tick(ns);
  return { mcu, device, bus, core, ncm, net, replica, log, run };
}

test('Linux enumerates embassy-usb CDC-NCM and binds cdc_ncm in its order; the carrier comes with the notification', () => {
  const r = rig();
  r.run(700 * MS);
  assert.equal(r.core.state, 'configured', r.log.join('\n'));
  const requests = r.replica.controlRequests.map(hex);
  assert.deepEqual(requests.slice(5), [
    '8006000200000900', // configuration, 9 bytes
    '8006000200005e00', // configuration, 94 bytes
    '800600030000ff00', // string 0: languages
    '800602030904ff00', // product
    '800601030904ff00', // manufacturer
    '800603030904ff00', // serial
    '8006000600000a00', // device qualifier
    '0009010000000000', // SET_CONFIGURATION(1)
    '010b010001000000', // SET_INTERFACE(data, 1): the toggle
    '010b000001000000', // SET_INTERFACE(data, 0)
    'a180000000001c00', // GET_NTB_PARAMETERS to the communication interface
    '010b010001000000', // SET_INTERFACE(data, 1), 10 ms later
    '800604030904ff00', // the iMACAddress string
    '21430e0000000000', // SET_ETHERNET_PACKET_FILTER (refused: embassy-usb stalls it)
  ]);
  assert.equal(r.core.counts.control_errors, 1);
  assert.equal(r.ncm.mac, '02:4c:4c:00:00:01');
  // No SET_NTB_INPUT_SIZE: Linux's rx_max is the device's 2048.
  assert.ok(!requests.some((s) => s.startsWith('2186')));
  assert.equal(r.ncm.carrier, true);
  assert.deepEqual(r.net.carrierChanges, [true]);
  assert.equal(r.ncm.counts.rx_frames, 0);
});

test('frames both ways: a block each, every byte back, packets of 64 and the ZLP after a whole last one', () => {
  const r = rig({ echo: true });
  r.run(700 * MS);
  const sizes = [60, 98, 1514, 36, 100, 1000];
  sizes.forEach((n, i) => r.ncm.transmit(frame(n, i)));
  r.run(30 * MS);
  assert.deepEqual(r.replica.received.map((f) => f.length), sizes);
  assert.deepEqual(r.net.frames, sizes.map((n, i) => frame(n, i)));
  assert.equal(r.ncm.counts.tx_frames, sizes.length);
  assert.equal(r.ncm.counts.rx_frames, sizes.length);
  assert.equal(r.ncm.reader.counts.blocks_bad, 0);
  assert.equal(r.ncm.reader.counts.sequence_glitches, 0);
  assert.equal(r.bus.stats.toggle_errors, 0);
});

test('malformed blocks from the host: embassy-usb skips them and goes on; the good frames after arrive', () => {
  const r = rig({ echo: false });
  r.run(700 * MS);
  const probe = probeFrame([0x02, 0x4c, 0x4c, 0, 0, 2], [0x02, 0x4c, 0x4c, 0, 0, 1]);
  for (const kind of MALFORMED) assert.equal(r.ncm.inject(kind, probe), true);
  r.ncm.transmit(frame(200));
  r.run(20 * MS);
  assert.equal(r.ncm.counts.injected_sent, MALFORMED.length);
  // bad-signature, past-block and ndp-past-block skipped; ndp-loop's and too-long's datagram
  // read (the class reads only the first table; the example's runner drops the long one).
  assert.equal(r.replica.blocksSkipped, 3);
  assert.deepEqual(r.replica.received.map((f) => f.length), [60, 1600, 200]);
});

test("a USB reset mid-stream: cdc_ncm bound again; the class's own runner never notifies again, the example's does", () => {
  for (const renotify of [false, true]) {
    const r = rig({ renotify, echo: true });
    r.run(700 * MS);
    for (let i = 0; i < 4; i++) r.ncm.transmit(frame(1514, i));
    r.run(1 * MS);
    let result = null;
    r.core.resetDevice((e) => (result = e ? e.message : 'ok'));
    r.run(800 * MS);
    assert.equal(result, 'ok');
    assert.equal(r.ncm.counts.binds, 2);
    assert.equal(r.ncm.bound, true);
    if (!renotify) {
      assert.equal(r.ncm.carrier, false, 'the class sends NETWORK_CONNECTION once');
      assert.equal(r.replica.notifications, 1);
      continue;
    }
    assert.equal(r.ncm.carrier, true);
    // Every frame sent was echoed, or lost with a count (its URB killed by the reset).
    const c = r.ncm.counts;
    assert.equal(c.tx_frames + c.tx_frames_lost + c.tx_dropped_unbound, 4);
    r.ncm.transmit(frame(300, 9));
    r.run(20 * MS);
    assert.deepEqual(r.net.frames.at(-1), frame(300, 9));
  }
});

test('the fault plan parses MS:KIND and refuses anything else', () => {
  assert.deepEqual(parseUsbPlan('5:reset,0:bad-signature'), [
    { atNs: 0, kind: 'bad-signature' },
    { atNs: 5e6, kind: 'reset' },
  ]);
  assert.throws(() => parseUsbPlan('1:noise'), /MS:KIND/);
  assert.throws(() => parseUsbPlan('x:reset'), /MS:KIND/);
});
