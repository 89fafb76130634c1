// A full-speed USB host controller and its root port, on the harness's one clock: 1 ms frames
// that start with a SOF, one transaction on the bus at a time, each as long as its bits
// (usb-wire.mjs), and no transaction started that would not end before the frame's end guard.
//
// What it schedules (an OHCI-style controller, USB 2.0 §5.11 and the OHCI 1.0a schedule):
// - periodic first: each interrupt pipe whose interval has come gets one attempt at the start
//   of the frame;
// - then the control and bulk pipes with work, one transaction each in turn (round robin), for
//   as long as the frame has room. A NAKed pipe is tried again on its next turn: an OUT NAK has
//   cost the whole data packet, an IN NAK the token and the handshake (no PING at full speed).
//
// Pipes carry URBs as Linux's USB core hands them to a host controller driver:
// - bulk and interrupt IN: `length` bytes; done at `length` or at a short packet;
// - bulk OUT: `data`, in packets of the pipe's max packet size; a zero-length packet after a
//   whole number of packets only with `zeroPacket` (URB_ZERO_PACKET);
// - control: SETUP (DATA0, 8 bytes), the data stage from DATA1, the status stage (DATA1, the
//   other way), as one URB (`control(...)`), with Linux's 5 s timeout.
// A URB ends with `status`: 'ok', 'stall' (the pipe is halted until cleared, as -EPIPE),
// 'timeout' (no answer: the device is not there), 'cancelled'.
//
// Data toggles are the host's: a DATA PID that is not the one expected is acknowledged and
// dropped (§8.6.4), and counted.

import {
  BIT_NS,
  dataBitsWorst,
  DEFAULT_TIMING,
  FRAME_BITS,
  FRAME_NS,
  PID,
  dataBits,
  handshakeBits,
  sofBits,
  tokenBits,
} from './usb-wire.mjs';

/// Linux's timeout of a control message (`USB_CTRL_GET_TIMEOUT`, 5 s).
export const CONTROL_TIMEOUT_NS = 5e9;
/// How long a host waits for an answer before it calls it a timeout: 18 bit times after the
/// end of the packet (USB 2.0 §7.1.19.1, full speed).
const TIMEOUT_BITS = 18;
const EMPTY = new Uint8Array(0);

/// One endpoint's pipe: its URBs, its data toggle, whether it is halted.
export class Pipe {
  constructor(bus, { ep, dir, type, mps, interval = 1 }) {
    this.bus = bus;
    this.ep = ep;
    this.dir = dir; // 'in' | 'out' | 'control'
    this.type = type; // 'control' | 'bulk' | 'interrupt'
    this.mps = mps;
    this.interval = interval;
    this.toggle = 0;
    this.halted = false;
    this.urbs = [];
    /// Transactions on this pipe, by answer.
    this.counts = { data: 0, naks: 0, stalls: 0, timeouts: 0 };
  }

  /// Its name in the counters: `ep2-in-bulk`.
  get name() {
    return `ep${this.ep}-${this.dir}-${this.type}`;
  }

  /// Queues `urb` (see the file's comment for its fields); `urb.onDone(urb)` when it ends.
  submit(urb) {
    urb.actual = 0;
    urb.status = null;
    urb.pipe = this;
    urb.submittedNs = this.bus.clock.nanos;
    if (this.dir === 'in' && !urb.data) urb.data = new Uint8Array(urb.length);
    this.urbs.push(urb);
    this.bus.kick();
    return urb;
  }

  /// Ends every queued URB as 'cancelled' (usb_kill_urb), the one on the bus included.
  cancelAll() {
    const urbs = this.urbs;
    this.urbs = [];
    for (const u of urbs) this.bus.end(u, 'cancelled');
  }

  /// Whether the pipe has a transaction to make.
  get ready() {
    return !this.halted && this.urbs.length > 0;
  }
}

/// The host controller and its root port, with `device` (a Rp2040UsbDevice) on the port, on
/// `clock` (rp2040js's: alarms in the chip's nanoseconds).
export class UsbBus {
  constructor(clock, device, { timing = DEFAULT_TIMING, onTransaction = null } = {}) {
    this.clock = clock;
    this.device = device;
    this.timing = timing;
    this.onTransaction = onTransaction;
    this.deviceAddress = 0;
    this.portEnabled = false;
    this.frame = 0;
    this.frameStart = 0;
    this.pipes = [];
    this.turn = 0;
    this.periodicDue = [];
    this.busy = false;
    this.waitingForFrame = false;
    this.current = null;
    this.stats = {
      frames: 0,
      transactions: 0,
      busy_bits: 0,
      in_data: 0,
      in_naks: 0,
      out_data: 0,
      out_naks: 0,
      setups: 0,
      stalls: 0,
      timeouts: 0,
      toggle_errors: 0,
      cancelled_bytes: 0,
      babble_bytes: 0,
      /// Frames by how many 64-byte (full) data packets they carried: [0, 1, ... 20].
      full_packets_per_frame: new Array(21).fill(0),
    };
    this.fullThisFrame = 0;
    this.sofAlarm = clock.createAlarm(() => this.startFrame());
    this.decideAlarm = clock.createAlarm(() => this.decide());
    this.finishAlarm = clock.createAlarm(() => this.finish());
    this.nextAlarm = clock.createAlarm(() => {
      this.busy = false;
      this.kick();
    });
  }

  /// A pipe to `ep` (see Pipe).
  pipe(options) {
    const p = new Pipe(this, options);
    this.pipes.push(p);
    return p;
  }

  /// Each pipe's transactions by answer, by pipe name.
  pipeCounts() {
    return Object.fromEntries(this.pipes.map((p) => [p.name, p.counts]));
  }

  /// Forgets `pipe` (its URBs cancelled).
  removePipe(pipe) {
    pipe.cancelAll();
    this.pipes = this.pipes.filter((p) => p !== pipe);
  }

  /// Calls `fn` after `ns` of the chip's time.
  after(ns, fn) {
    this.clock.createAlarm(fn).schedule(ns);
  }

  /// Enables the port: SOFs start, transactions may run.
  enablePort() {
    if (this.portEnabled) return;
    this.portEnabled = true;
    this.startFrame();
  }

  /// Disables the port (a reset or a disconnect): no SOF, no transaction. A transaction on the
  /// bus is cut: its URB stays queued.
  disablePort() {
    this.portEnabled = false;
    this.sofAlarm.cancel();
    this.decideAlarm.cancel();
    this.finishAlarm.cancel();
    this.nextAlarm.cancel();
    this.current = null;
    this.busy = false;
    this.waitingForFrame = false;
  }

  /// Drives a bus reset for `ms` (SE0 on the port; the device sees it at once), then enables
  /// the port and calls `done`.
  resetPort(ms, done) {
    this.disablePort();
    this.device.busReset();
    this.after(ms * 1e6, () => {
      this.enablePort();
      done();
    });
  }

  startFrame() {
    if (!this.portEnabled) return;
    const now = this.clock.nanos;
    if (this.stats.frames > 0) {
      this.stats.full_packets_per_frame[Math.min(this.fullThisFrame, 20)]++;
    }
    this.fullThisFrame = 0;
    this.frame = (this.frame + 1) & 0x7ff;
    this.frameStart = now;
    this.stats.frames++;
    this.sofAlarm.schedule(FRAME_NS);
    // The SOF itself, then the host's delay.
    const bits = sofBits(this.frame);
    this.stats.busy_bits += bits;
    const frame = this.frame;
    this.busy = true;
    this.waitingForFrame = false;
    this.nextAlarm.cancel();
    this.decideAlarm.cancel();
    this.finishAlarm.cancel();
    this.current = null;
    this.after(bits * BIT_NS, () => this.device.sof(frame));
    for (const p of this.pipes) {
      if (p.type === 'interrupt' && this.frame % p.interval === 0 && p.ready) this.periodicDue.push(p);
    }
    this.nextAlarm.schedule((bits + this.timing.hostDelayBits) * BIT_NS);
  }

  /// The next pipe to serve: a periodic one due this frame, else the next ready control or bulk
  /// pipe after the last one served.
  nextPipe() {
    while (this.periodicDue.length > 0) {
      const p = this.periodicDue.shift();
      if (p.ready) return p;
    }
    const n = this.pipes.length;
    for (let k = 0; k < n; k++) {
      const i = (this.turn + k) % n;
      const p = this.pipes[i];
      if (p.type !== 'interrupt' && p.ready) {
        this.turn = (i + 1) % n;
        return p;
      }
    }
    return null;
  }

  /// Starts the next transaction if the bus is free and something waits.
  kick() {
    if (this.busy || !this.portEnabled || this.waitingForFrame) return;
    const pipe = this.nextPipe();
    if (!pipe) return;
    const t = this.plan(pipe);
    const end = this.frameStart + (FRAME_BITS - this.timing.eofGuardBits) * BIT_NS;
    if (this.clock.nanos + t.worstBits * BIT_NS > end) {
      // Not before the frame's end guard: this pipe goes first in the next frame.
      if (pipe.type === 'interrupt') this.periodicDue.unshift(pipe);
      else this.turn = this.pipes.indexOf(pipe);
      this.waitingForFrame = true;
      return;
    }
    this.busy = true;
    this.current = t;
    t.startNs = this.clock.nanos;
    this.decideAlarm.schedule(t.token * BIT_NS);
  }

  /// What the pipe's next transaction is: its kind, token bits, the data it would send, and
  /// the bits it may take at most (for the frame-end guard: an OUT's own bits, an IN's answer
  /// budgeted at the pipe's max packet size with worst-case stuffing, as the host cannot know).
  plan(pipe) {
    const urb = pipe.urbs[0];
    const ta = this.timing.turnaroundBits;
    const addr = this.address;
    let kind;
    let out = null;
    if (pipe.type === 'control') {
      kind = urb.stage === 'setup' ? 'setup' : urb.stageDir;
      if (urb.stage === 'setup') out = urb.setup;
      else if (kind === 'out') out = urb.stage === 'status' ? EMPTY : this.outChunk(pipe, urb, urb.outData);
    } else {
      kind = pipe.dir;
      if (kind === 'out') out = this.outChunk(pipe, urb, urb.data);
    }
    const tokenPid = kind === 'setup' ? PID.SETUP : kind === 'in' ? PID.IN : PID.OUT;
    const token = tokenBits(tokenPid, addr, pipe.ep);
    const data1 = kind !== 'setup' && pipe.toggle === 1;
    const outBits = out ? dataBits(data1 ? PID.DATA1 : PID.DATA0, out) : 0;
    const dataMax = out ? outBits : dataBitsWorst(pipe.mps);
    const worstBits = token + ta + dataMax + ta + handshakeBits(PID.ACK);
    return { pipe, urb, kind, addr, token, out, data1, outBits, worstBits };
  }

  /// The next OUT packet of `data` (a bulk URB's, or a control transfer's data stage).
  outChunk(pipe, urb, data) {
    const from = urb.actual;
    return data.subarray(from, Math.min(from + pipe.mps, data.length));
  }

  /// At the end of the token: the device answers; how long the rest takes.
  decide() {
    const t = this.current;
    if (!t) return;
    const { pipe, kind } = t;
    const dev = this.device;
    const ta = this.timing.turnaroundBits;
    const ack = handshakeBits(PID.ACK);
    let rest;
    if (kind === 'in') {
      const r = dev.inToken(t.addr, pipe.ep);
      t.result = r;
      if (r.answer === 'DATA') {
        t.dataBits = dataBits(r.data1 ? PID.DATA1 : PID.DATA0, r.bytes);
        rest = ta + t.dataBits + ta + ack;
      } else if (r.answer === null) rest = TIMEOUT_BITS;
      else rest = ta + handshakeBits(PID.NAK);
    } else {
      t.dataBits = t.outBits;
      const r = kind === 'setup' ? dev.setupToken(t.addr, t.out) : dev.outToken(t.addr, pipe.ep, t.data1, t.out);
      t.result = r;
      rest = t.dataBits + ta + (r.answer === null ? TIMEOUT_BITS : ack);
    }
    t.restBits = rest;
    this.finishAlarm.schedule(rest * BIT_NS);
  }

  /// At the end of the handshake: the transaction's effects, then the host's delay.
  finish() {
    const t = this.current;
    if (!t) return;
    this.current = null;
    const bits = t.token + t.restBits;
    this.stats.transactions++;
    this.stats.busy_bits += bits + this.timing.hostDelayBits;
    const answer = t.result.answer;
    if (answer === 'DATA' || answer === 'ACK') t.result.complete?.();
    const c = t.pipe.counts;
    if (answer === 'NAK') c.naks++;
    else if (answer === 'STALL') c.stalls++;
    else if (answer === null) c.timeouts++;
    else c.data++;
    this.onTransaction?.({
      ns: t.startNs,
      bits,
      frame: this.frame,
      ep: t.pipe.ep,
      kind: t.kind,
      answer: answer ?? 'TIMEOUT',
      bytes: answer === 'DATA' ? t.result.bytes.length : t.out ? t.out.length : 0,
    });
    this.account(t);
    this.nextAlarm.schedule(this.timing.hostDelayBits * BIT_NS);
  }

  /// Moves the URB on after transaction `t`. A URB cancelled while its transaction was on the
  /// bus only keeps the toggle right: what that transaction carried is the canceller's loss
  /// (usb_kill_urb drops a completed packet too), counted in `stats.cancelled_bytes`.
  account(t) {
    const { pipe, urb, kind, result } = t;
    const answer = result.answer;
    if (answer === null) {
      this.stats.timeouts++;
      this.end(urb, 'timeout');
      return;
    }
    if (answer === 'STALL') {
      this.stats.stalls++;
      if (pipe.type !== 'control') pipe.halted = true;
      this.end(urb, 'stall');
      return;
    }
    if (answer === 'NAK') {
      if (kind === 'in') this.stats.in_naks++;
      else this.stats.out_naks++;
      return;
    }
    if (urb.status) {
      if (kind === 'setup') pipe.toggle = 1;
      else if (kind === 'out' || result.data1 === (pipe.toggle === 1)) {
        pipe.toggle ^= 1;
        this.stats.cancelled_bytes += kind === 'out' ? t.out.length : result.bytes.length;
      }
      return;
    }
    if (kind === 'setup') {
      this.stats.setups++;
      pipe.toggle = 1;
      if (urb.wLength > 0) {
        urb.stage = 'data';
        urb.stageDir = urb.dirIn ? 'in' : 'out';
      } else {
        urb.stage = 'status';
        urb.stageDir = 'in';
      }
      urb.actual = 0;
      return;
    }
    if (kind === 'in') this.inDone(t);
    else this.outDone(t);
  }

  inDone(t) {
    const { pipe, urb, result } = t;
    if (result.data1 !== (pipe.toggle === 1)) {
      // A packet already taken, sent again: acknowledged and dropped.
      this.stats.toggle_errors++;
      return;
    }
    pipe.toggle ^= 1;
    const bytes = result.bytes;
    this.stats.in_data++;
    if (bytes.length === pipe.mps) this.fullThisFrame++;
    if (pipe.type === 'control' && urb.stage === 'status') {
      this.end(urb, 'ok');
      return;
    }
    const n = Math.min(bytes.length, urb.data.length - urb.actual);
    urb.data.set(bytes.subarray(0, n), urb.actual);
    urb.actual += n;
    // A device sending more than asked for: the rest is babble, dropped and counted.
    this.stats.babble_bytes += bytes.length - n;
    if (bytes.length === pipe.mps && urb.actual < urb.data.length) return;
    if (pipe.type === 'control') {
      urb.stage = 'status';
      urb.stageDir = 'out';
      pipe.toggle = 1;
      return;
    }
    this.end(urb, 'ok');
  }

  outDone(t) {
    const { pipe, urb } = t;
    pipe.toggle ^= 1;
    this.stats.out_data++;
    const sent = t.out.length;
    if (sent === pipe.mps) this.fullThisFrame++;
    if (pipe.type === 'control') {
      if (urb.stage === 'status') {
        this.end(urb, 'ok');
        return;
      }
      urb.actual += sent;
      if (sent === pipe.mps && urb.actual < urb.outData.length) return;
      urb.stage = 'status';
      urb.stageDir = 'in';
      pipe.toggle = 1;
      return;
    }
    urb.actual += sent;
    if (urb.actual < urb.data.length) return;
    // A whole last packet is followed by a zero-length one only if the URB asks.
    if (sent === pipe.mps && urb.zeroPacket) return;
    this.end(urb, 'ok');
  }

  /// Ends `urb` with `status` and tells its owner.
  end(urb, status) {
    if (urb.status) return;
    urb.status = status;
    urb.doneNs = this.clock.nanos;
    urb.timer?.cancel();
    const pipe = urb.pipe;
    const i = pipe.urbs.indexOf(urb);
    if (i >= 0) pipe.urbs.splice(i, 1);
    urb.onDone?.(urb);
  }

  /// The device's address for tokens (0 until the USB core's SET_ADDRESS has settled).
  get address() {
    return this.deviceAddress;
  }

  /// A control transfer on `pipe` (endpoint 0): `setup` (8 bytes), for an OUT request its
  /// `data`; `onDone(urb)` with `urb.status` and, for an IN request, `urb.data.subarray(0,
  /// urb.actual)`. Ends 'timeout' after CONTROL_TIMEOUT_NS.
  control(pipe, setup, data, onDone) {
    const wLength = setup[6] | (setup[7] << 8);
    const dirIn = (setup[0] & 0x80) !== 0;
    const urb = {
      setup,
      stage: 'setup',
      stageDir: 'setup',
      wLength,
      dirIn,
      outData: dirIn ? null : data ?? new Uint8Array(0),
      onDone,
    };
    if (dirIn) urb.data = new Uint8Array(wLength);
    pipe.submit(urb);
    urb.timer = this.clock.createAlarm(() => {
      pipe.urbs = pipe.urbs.filter((u) => u !== urb);
      this.end(urb, 'timeout');
    });
    urb.timer.schedule(CONTROL_TIMEOUT_NS);
    return urb;
  }
}
