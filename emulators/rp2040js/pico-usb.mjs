// A Raspberry Pi Pico plugged into a Linux host by its USB port: the RP2040's USB controller
// (usb-controller.mjs) on a full-speed bus (usb-host.mjs) driven by Linux's USB core
// (usb-linux.mjs) and cdc-acm (cdc-acm.mjs), all on the harness's one clock. The port the
// program opens (/dev/ttyACM0 on a real host) is a pseudo-terminal linklab makes
// (`linklab emu pico --image usb-serial`), which relays it over a unix socket:
//
//   program ── pty ── linklab (relay) ══ socket ══ this file ── cdc-acm ── bus ── RP2040
//
// Messages each way: a 4-byte big-endian length, then a type byte and its body.
// From linklab:
//   'O'                 the program opened the port (cdc-acm submits its URBs, raises DTR|RTS)
//   'X'                 it closed it (once the writes in flight are done: DTR dropped, URBs killed)
//   'W' bytes           one write() of up to 1 280 bytes: one write URB (linklab keeps at most
//                       16 in flight, as cdc-acm has 16)
//   'C' u32             bytes of 'D' messages the pseudo-terminal took (its reader has room)
//   'L' 7 bytes         the program set a new line coding (termios): SET_LINE_CODING
//   'R'                 a USB reset of the device (usb_reset_device), for fault tests (SIGUSR2
//                       to the harness does the same)
// To linklab:
//   'D' u64 ns, bytes   a read URB completed at that time of the chip's clock
//   'w' u64 ns, u32 n   a write URB ended, n bytes sent
//   'H' text            the port was hung up (a USB reset): the program must open it again
//   'S' text            the USB state changed (e.g. "configured")
//
// Backpressure both ways, nothing dropped without a counter: reads stop (cdc-acm throttled:
// no IN token once its read URBs are full) while more than the tty's buffer (n_tty's 4 096
// bytes) waits unconsumed in linklab; writes wait for a free write URB.

import { connect } from 'node:net';
import { openSync, writeSync, closeSync } from 'node:fs';
import { fail } from './machine.mjs';
import { messages } from './soft-phy-line.mjs';
import { Rp2040UsbDevice } from './usb-controller.mjs';
import { UsbBus } from './usb-host.mjs';
import { LinuxUsbCore } from './usb-linux.mjs';
import { CdcAcm, lineCoding } from './cdc-acm.mjs';
import { DEFAULT_TIMING } from './usb-wire.mjs';

/// n_tty's read buffer (N_TTY_BUF_SIZE): the reader's room before cdc-acm is throttled.
const TTY_BUFFER = 4096;
/// Throttle when less than this is left (n_tty's TTY_THRESHOLD_THROTTLE).
const TTY_THROTTLE_ROOM = 128;

function frame(type, body) {
  const msg = Buffer.alloc(5 + body.length);
  msg.writeUInt32BE(1 + body.length, 0);
  msg[4] = type.charCodeAt(0);
  msg.set(body, 5);
  return msg;
}

function u64(n) {
  const b = Buffer.alloc(8);
  b.writeBigUInt64BE(BigInt(Math.round(n)));
  return b;
}

/// A capture of the bus for `--usb-capture`: one line per transaction (`T ns frame ep kind
/// answer bytes bits`), per read URB that completed (`R ns hex`: its bytes), per write URB
/// submitted (`S ns hex`) and ended (`W ns n`), times in the chip's ns: the bus analyser
/// CBA's figures are read from (docs/usb.md).
export class Capture {
  constructor(path) {
    this.fd = openSync(path, 'w');
    this.lines = [];
  }
  push(line) {
    this.lines.push(line);
    if (this.lines.length >= 4096) this.flush();
  }
  flush() {
    if (this.lines.length === 0) return;
    writeSync(this.fd, this.lines.join('\n') + '\n');
    this.lines = [];
  }
  close() {
    this.flush();
    closeSync(this.fd);
  }
}

/// Plugs `mcu`'s USB port into the modelled Linux host and relays its port over the socket at
/// `socketPath`; calls `ready(device)` once connected, with the device for `machine.run`.
/// `options`: `hostDelayBits` (the host controller's delay between transactions),
/// `capture` (a path or null).
export function attachUsbHost(mcu, socketPath, options, ready) {
  const { clock } = mcu;
  // RP2040JS_USB_CAPTURE=FILE does what --usb-capture does, for a harness linklab started.
  const capturePath = options.capture ?? process.env.RP2040JS_USB_CAPTURE ?? null;
  const capture = capturePath ? new Capture(capturePath) : null;
  // RP2040JS_USB_HOST_DELAY_BITS=N does what --usb-host-delay-bits does (a harness linklab started).
  const envDelay = process.env.RP2040JS_USB_HOST_DELAY_BITS;
  const hostDelayBits = options.hostDelayBits ?? (envDelay !== undefined ? Number(envDelay) : DEFAULT_TIMING.hostDelayBits);
  if (!(hostDelayBits >= 0 && hostDelayBits <= 1000)) fail('the host delay: a number of bit times, 0..1000');
  const timing = { ...DEFAULT_TIMING, hostDelayBits };
  const socket = connect(socketPath);
  const send = (type, body = Buffer.alloc(0)) => socket.write(frame(type, body));
  const tty = {
    delivered: 0,
    consumed: 0,
    writes: [],
    inFlight: 0,
    closing: false,
    /// Opened again while a close waited for its writes.
    reopen: false,
    counts: { opens: 0, closes: 0, hangups: 0, writes_refused: 0, write_bytes_dropped_hangup: 0 },
    receive(bytes, ns) {
      this.delivered += bytes.length;
      capture?.push(`R ${Math.round(ns)} ${Buffer.from(bytes).toString('hex')}`);
      send('D', Buffer.concat([u64(ns), Buffer.from(bytes)]));
      if (TTY_BUFFER - (this.delivered - this.consumed) < TTY_THROTTLE_ROOM) acm.throttle();
    },
    /// Tells linklab a write ended (`n` bytes sent): it may hand over another.
    ended(n) {
      const body = Buffer.alloc(12);
      u64(clock.nanos).copy(body, 0);
      body.writeUInt32BE(n, 8);
      send('w', body);
    },
    writeDone(n, status) {
      this.inFlight--;
      capture?.push(`W ${Math.round(clock.nanos)} ${n}`);
      this.ended(n);
      if (status !== 'ok') this.counts.writes_refused++;
      this.pump();
      if (this.closing && this.inFlight === 0 && this.writes.length === 0) {
        this.closing = false;
        acm.close();
        if (this.reopen) {
          this.reopen = false;
          acm.open();
          this.pump();
        }
      }
    },
    hangup(why) {
      this.counts.hangups++;
      this.closing = this.reopen = false;
      // Writes not yet on a URB die with the port (each still ends, for linklab's count).
      for (const w of this.writes) {
        this.counts.write_bytes_dropped_hangup += w.length;
        this.ended(0);
      }
      this.writes = [];
      send('H', Buffer.from(why));
    },
    /// Hands queued writes to cdc-acm while it has a free URB.
    pump() {
      while (this.writes.length > 0 && acm.writeRoom() > 0) {
        const bytes = this.writes.shift();
        const n = acm.write(bytes);
        capture?.push(`S ${Math.round(clock.nanos)} ${Buffer.from(bytes.subarray(0, n)).toString('hex')}`);
        this.inFlight++;
        if (n < bytes.length) this.writes.unshift(bytes.subarray(n));
      }
    },
  };
  const acm = new CdcAcm(tty);
  let core = null;
  const device = new Rp2040UsbDevice(mcu, { onPullup: (on) => core.pullup(on) });
  const bus = new UsbBus(clock, device, {
    timing,
    onTransaction: capture
      ? (t) => capture.push(`T ${Math.round(t.ns)} ${t.frame} ${t.ep} ${t.kind} ${t.answer} ${t.bytes} ${t.bits}`)
      : null,
  });
  let lastState = null;
  let resetAsked = false;
  process.on('SIGUSR2', () => {
    resetAsked = true;
  });
  core = new LinuxUsbCore(bus, {
    drivers: [acm],
    log: (line) => console.error(`harness: ${line}`),
  });

  function fromSocket(msg) {
    const type = String.fromCharCode(msg[0]);
    const body = msg.subarray(1);
    switch (type) {
      case 'O':
        tty.counts.opens++;
        if (tty.closing) tty.reopen = true;
        else {
          acm.open();
          tty.pump();
        }
        break;
      case 'X':
        tty.counts.closes++;
        if (tty.inFlight === 0 && tty.writes.length === 0) acm.close();
        else tty.closing = true;
        break;
      case 'W':
        tty.writes.push(Uint8Array.from(body));
        tty.pump();
        break;
      case 'C':
        tty.consumed += Buffer.from(body).readUInt32BE(0);
        if (TTY_BUFFER - (tty.delivered - tty.consumed) >= TTY_THROTTLE_ROOM) acm.unthrottle();
        break;
      case 'L':
        acm.setLineCoding(body.length === 7 ? body : lineCoding());
        break;
      case 'R':
        core.resetDevice();
        break;
      default:
        console.error(`harness: the relay sent an unknown message type 0x${msg[0]?.toString(16)}`);
    }
  }
  socket.on('data', messages(fromSocket));
  socket.on('error', (e) => fail(`the relay's socket: ${e.message}`));
  socket.on('close', () => {
    console.log('harness: the relay closed the socket');
    capture?.close();
    // As a stop by signal: the final status line (and a profile, if one is asked for).
    process.emit('SIGTERM');
  });
  const result = {
    endOfSlice() {
      // Writes that came before the device was bound (a port opened early) go once it is.
      if (tty.writes.length > 0) tty.pump();
      if (resetAsked) {
        resetAsked = false;
        core.resetDevice();
      }
      if (core.state !== lastState) {
        lastState = core.state;
        send('S', Buffer.from(core.state));
      }
    },
    status: () => ({
      board: 'pico-usb',
      harness_pid: process.pid,
      usb_state: core.state,
      usb_host_delay_bits: timing.hostDelayBits,
      usb_bus: bus.stats,
      usb_pipes: bus.pipeCounts(),
      usb_device: device.counts,
      usb_core: core.counts,
      usb_acm: acm.counts,
      usb_acm_open: acm.isOpen,
      usb_acm_throttled: acm.throttled,
      usb_tty: { delivered: tty.delivered, consumed: tty.consumed, writes_queued: tty.writes.length, ...tty.counts },
    }),
    close: () => {
      capture?.close();
      socket.end();
    },
  };
  socket.on('connect', () => ready(result));
}
