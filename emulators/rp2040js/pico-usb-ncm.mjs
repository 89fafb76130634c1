// A Raspberry Pi Pico running a CDC-NCM device plugged into a Linux host: the RP2040's USB
// controller (usb-controller.mjs) on a full-speed bus (usb-host.mjs) driven by Linux's USB
// core (usb-linux.mjs) and its cdc_ncm driver (cdc-ncm.mjs), all on the harness's one clock.
// The host's network interface (usb0 on a real host) is a TAP linklab makes: the frames
// cdc_ncm takes out of the device's transfer blocks go to `linklab emu line --frames` over a
// unix socket, and the TAP's frames come back to be put in blocks toward the device:
//
//   TAP ── linklab (frame line) ══ socket ══ this file ── cdc_ncm ── bus ── RP2040
//
// Each message on the socket is one Ethernet frame without FCS: a 4-byte big-endian length,
// then the bytes (the W5500 board's framing). A frame is written when the read URB that
// carried it completes; a frame read from the socket is handed to cdc_ncm at once (between
// slices of the harness's loop: within one slice of the chip's time). While cdc_ncm holds
// QUEUE_FRAMES frames beyond its 4 transmit URBs, the socket is not read: the TAP's queue in
// the kernel holds the rest (and drops, counted there).
//
// The device's counters (`GET /ncm` on the device) are read at one instant of the device and
// the host's at others: the host's are noted when that request leaves the interface and when
// the first frame of the answer arrives (`ncm_cut` in the status; the device counts before it
// answers), so a test can check the counts of both ends against each other while frames move
// (the device's fall between the two).
//
// Faults (`--usb-inject PLAN`, for the tests): a comma-separated list of `MS:KIND`, MS in
// milliseconds of the chip's clock after the harness gets SIGUSR1, KIND one of ntb16.mjs's
// MALFORMED blocks (sent by the host in turn with the frames, each carrying a 60-byte frame
// of the local experimental EtherType 0x88b5 to the device) or `reset` (usb_reset_device:
// a port reset and re-enumeration, cdc_ncm unbound and bound again).

import { connect } from 'node:net';
import { fail } from './machine.mjs';
import { messages } from './soft-phy-line.mjs';
import { Rp2040UsbDevice } from './usb-controller.mjs';
import { UsbBus } from './usb-host.mjs';
import { LinuxUsbCore } from './usb-linux.mjs';
import { CdcNcm, QUEUE_FRAMES } from './cdc-ncm.mjs';
import { MALFORMED } from './ntb16.mjs';
import { DEFAULT_TIMING } from './usb-wire.mjs';
import { Capture } from './pico-usb.mjs';
import { Pcap } from './w5500-evb-pico.mjs';

/// What `--usb-inject` may do.
export const FAULTS = [...MALFORMED, 'reset'];

/// The plan as `[{ atNs, kind }]` sorted by time; throws on a malformed one.
export function parseUsbPlan(text) {
  const plan = text
    .split(',')
    .filter(Boolean)
    .map((entry) => {
      const [ms, kind] = entry.split(':');
      const at = Number(ms);
      if (!(at >= 0) || !FAULTS.includes(kind)) {
        throw new Error(`--usb-inject: "${entry}" is not MS:KIND with KIND one of ${FAULTS.join(', ')}`);
      }
      return { atNs: at * 1e6, kind };
    });
  return plan.sort((a, b) => a.atNs - b.atNs);
}

/// The frame a malformed block carries: to the device (`mac`), from the host (`from`), of
/// the local experimental EtherType (IEEE 802 0x88b5), which the device's stack ignores.
export function probeFrame(mac, from) {
  const f = new Uint8Array(60);
  f.set(mac, 0);
  f.set(from, 6);
  f[12] = 0x88;
  f[13] = 0xb5;
  f.fill(0x5a, 14);
  return f;
}

/// The device's MAC address (linklab's default, DeviceConfig::DEFAULT).
const DEVICE_MAC = [0x02, 0x4c, 0x4c, 0, 0, 0x02];

function frameMessage(frame) {
  const msg = Buffer.alloc(4 + frame.length);
  msg.writeUInt32BE(frame.length, 0);
  msg.set(frame, 4);
  return msg;
}

/// Plugs `mcu`'s USB port into the modelled Linux host and its cdc_ncm interface into the
/// frame socket at `socketPath`; calls `ready(device)` once connected, with the device for
/// `machine.run`. `options`: `hostDelayBits`, `capture` (a path or null), `pcap` (every frame
/// the host's interface sends or receives, stamped in the chip's clock), `plan` (faults).
export function attachUsbNcmHost(mcu, socketPath, options, ready) {
  const { clock } = mcu;
  const capture = options.capture ? new Capture(options.capture) : null;
  const pcap = options.pcap ? new Pcap(options.pcap) : null;
  const timing = { ...DEFAULT_TIMING, hostDelayBits: options.hostDelayBits ?? DEFAULT_TIMING.hostDelayBits };
  const socket = connect(socketPath);
  let paused = false;
  /// The host's counts when the last `GET /ncm` left and when its answer came.
  const cut = { request: null, answer: null };
  const hostCounts = () => ({
    tx_frames: ncm.counts.tx_frames,
    rx_frames: ncm.counts.rx_frames,
    rx_blocks_bad: ncm.reader?.counts.blocks_bad ?? 0,
    injected: { ...ncm.injected },
  });
  const net = {
    framesToTap: 0,
    framesFromTap: 0,
    receive(frame, ns) {
      this.framesToTap++;
      if (cut.request && !cut.answer && Buffer.from(frame).includes('HTTP/1.')) {
        // The answer's first frame (the device counted before it sent any of it), already
        // counted received here: the device's count of sent frames stops before it.
        cut.answer = hostCounts();
        cut.answer.rx_frames--;
      }
      pcap?.write(ns, frame);
      capture?.push(`R ${Math.round(ns)} ${frame.length}`);
      socket.write(frameMessage(frame));
    },
    /// A transmit URB ended (for the capture: `W ns bytes status [malformed kind]`).
    sent(bytes, status, kind, ns) {
      capture?.push(`W ${Math.round(ns)} ${bytes} ${status}${kind ? ' ' + kind : ''}`);
    },
    log: (line) => console.error(`harness: ${line}`),
  };
  const ncm = new CdcNcm(net);
  let core = null;
  const device = new Rp2040UsbDevice(mcu, { onPullup: (on) => core.pullup(on) });
  const bus = new UsbBus(clock, device, {
    timing,
    onTransaction: capture
      ? (t) => capture.push(`T ${Math.round(t.ns)} ${t.frame} ${t.ep} ${t.kind} ${t.answer} ${t.bytes} ${t.bits}`)
      : null,
  });
  core = new LinuxUsbCore(bus, { drivers: [ncm], log: net.log });

  const faults = { todo: [...(options.plan ?? [])], done: [], startNs: null, signalled: false };
  if (faults.todo.length > 0) process.on('SIGUSR1', () => (faults.signalled = true));
  const probe = probeFrame(DEVICE_MAC, [0x02, 0x4c, 0x4c, 0, 0, 0x01]);
  function playFaults() {
    if (faults.signalled && faults.startNs === null) faults.startNs = clock.nanos;
    while (faults.startNs !== null && faults.todo.length > 0 && clock.nanos >= faults.startNs + faults.todo[0].atNs) {
      const { kind } = faults.todo.shift();
      capture?.push(`F ${Math.round(clock.nanos)} ${kind}`);
      if (kind === 'reset') core.resetDevice((e) => e && net.log(`usb: reset failed: ${e.message}`));
      else if (!ncm.inject(kind, probe)) net.log(`usb: ${kind} not sent: no carrier`);
      faults.done.push(kind);
    }
  }

  function fromSocket(frame) {
    net.framesFromTap++;
    if (Buffer.from(frame).includes('GET /ncm ')) {
      cut.request = hostCounts();
      cut.answer = null;
    }
    pcap?.write(clock.nanos, frame);
    ncm.transmit(frame);
    if (ncm.queued >= QUEUE_FRAMES && !paused) {
      paused = true;
      socket.pause();
    }
  }
  socket.on('data', messages(fromSocket));
  socket.on('error', (e) => fail(`the line's socket: ${e.message}`));
  socket.on('close', () => {
    console.log('harness: the line closed the socket');
    capture?.close();
    pcap?.close();
    process.exit(0);
  });
  const result = {
    endOfSlice() {
      playFaults();
      if (paused && ncm.queued < QUEUE_FRAMES / 2) {
        paused = false;
        socket.resume();
      }
    },
    status: () => ({
      board: 'pico-usb-ncm',
      usb_state: core.state,
      usb_host_delay_bits: timing.hostDelayBits,
      usb_bus: bus.stats,
      usb_device: device.counts,
      usb_core: core.counts,
      ncm_bound: ncm.bound,
      ncm_carrier: ncm.carrier,
      ncm_mac: ncm.mac,
      ncm_rx_max: ncm.sizes?.rxMax ?? null,
      ncm_tx_max: ncm.sizes?.txMax ?? null,
      ncm_queued: ncm.queued,
      ncm_frames_pending: ncm.pendingFrames(),
      ncm: ncm.counts,
      ncm_rx_blocks: ncm.reader?.counts ?? null,
      ncm_injected: ncm.injected,
      ncm_cut: cut,
      tap_frames_in: net.framesFromTap,
      tap_frames_out: net.framesToTap,
      faults_done: faults.done,
      faults_started_ns: faults.startNs,
    }),
    close: () => {
      capture?.close();
      pcap?.close();
      socket.end();
    },
  };
  socket.on('connect', () => ready(result));
}
