// For the USB model's tests (usb.test.mjs): embassy-rp 0.10's USB driver (src/usb.rs) and
// embassy-usb 0.6's control handling (src/lib.rs) and CDC-ACM class (src/class/cdc_acm.rs)
// replayed register write by register write on an rp2040js RP2040 without firmware, so the
// model is tested against the exact sequences the example's firmware makes. Each task is a
// generator that yields a condition to wait for (an async fn's await); the replica's "CPU"
// resumes it `stepNs` after the condition holds, checked after every interrupt (the driver's
// handler runs `isrNs` after the USBCTRL line rises) and after every step. A double-buffered
// variant of the bulk endpoints (`doubleBuffered`) arms both buffers as a double-buffered
// driver would.

const USB = 0x50110000;
const DPRAM = 0x50100000;
const SET = 0x2000;
const CLEAR = 0x3000;
const USBCTRL_IRQ = 5;

const R = {
  ADDR_ENDP: 0x00,
  MAIN_CTRL: 0x40,
  SIE_CTRL: 0x4c,
  SIE_STATUS: 0x50,
  INT_EP_CTRL: 0x54,
  BUFF_STATUS: 0x58,
  BUFF_CPU_SHOULD_HANDLE: 0x5c,
  EP_STALL_ARM: 0x68,
  USB_MUXING: 0x74,
  USB_PWR: 0x78,
  INTE: 0x90,
  INTS: 0x98,
};
const INT_BUFF_STATUS = 1 << 4;
const INT_BUS_RESET = 1 << 12;
const INT_DEV_SUSPEND = 1 << 14;
const INT_DEV_RESUME = 1 << 15;
const INT_SETUP_REQ = 1 << 16;
const SIE_SETUP_REC = 1 << 17;
const SIE_BUS_RESET = 1 << 19;

const AVAILABLE = 1 << 10;
const STALL = 1 << 11;
const PID = 1 << 13;
const FULL = 1 << 15;

/// The descriptors of an embassy-usb CDC-ACM device built as the example builds it
/// (Config::new(0xc0de, 0xcafe), composite with IADs, bcdUSB 2.1, EP0 64, manufacturer,
/// product, serial; CdcAcmClass with max packet size 64): comm interface 0 with interrupt IN
/// 0x81 (8 bytes, interval 255), data interface 1 with bulk OUT 0x01 and bulk IN 0x82.
export const CDC_ACM_DESCRIPTORS = {
  device: Uint8Array.of(18, 1, 0x10, 0x02, 0xef, 0x02, 0x01, 64, 0xde, 0xc0, 0xfe, 0xca, 0x10, 0x00, 1, 2, 3, 1),
  qualifier: Uint8Array.of(10, 6, 0x10, 0x02, 0xef, 0x02, 0x01, 64, 1, 0),
  bos: Uint8Array.of(5, 15, 12, 0, 1, 7, 16, 2, 0, 0, 0, 0),
  config: Uint8Array.of(
    ...[9, 2, 75, 0, 2, 1, 0, 0x80, 50],
    ...[8, 11, 0, 2, 2, 2, 0, 0],
    ...[9, 4, 0, 0, 1, 2, 2, 0, 0],
    ...[5, 0x24, 0x00, 0x10, 0x01],
    ...[4, 0x24, 0x02, 0x02],
    ...[5, 0x24, 0x06, 0, 1],
    ...[7, 5, 0x81, 3, 8, 0, 255],
    ...[9, 4, 1, 0, 2, 0x0a, 0, 0, 0],
    ...[7, 5, 0x01, 2, 64, 0, 0],
    ...[7, 5, 0x82, 2, 64, 0, 0],
  ),
  strings: ['linklab', 'rp2040-usb', '0001'],
};

/// The embassy replica on `mcu` (an RP2040 whose USB controller the model replaced).
export class EmbassyReplica {
  constructor(mcu, { stepNs = 2000, isrNs = 500, doubleBuffered = false, echo = false } = {}) {
    this.mcu = mcu;
    this.clock = mcu.clock;
    this.stepNs = stepNs;
    this.isrNs = isrNs;
    this.doubleBuffered = doubleBuffered;
    this.tasks = [];
    this.controlRequests = [];
    this.dtr = false;
    this.rts = false;
    this.lineCoding = null;
    this.configured = false;
    this.address = 0;
    this.received = [];
    this.toSend = [];
    this.echo = echo;
    this.cpuAlarm = this.clock.createAlarm(() => this.poll());
    this.isrAlarm = this.clock.createAlarm(() => this.isr());
    const setInterrupt = mcu.setInterrupt.bind(mcu);
    mcu.setInterrupt = (irq, value) => {
      setInterrupt(irq, value);
      if (irq === USBCTRL_IRQ && value && !this.isrAlarm.scheduledFor) {
        this.isrAlarm.scheduledFor = true;
        this.isrAlarm.schedule(this.isrNs);
      }
    };
  }

  read(reg) {
    return this.mcu.readUint32(USB + reg) >>> 0;
  }
  write(reg, value) {
    this.mcu.writeUint32(USB + reg, value >>> 0);
  }
  dpramRead(offset) {
    return this.mcu.readUint32(DPRAM + offset) >>> 0;
  }
  dpramWrite(offset, value) {
    this.mcu.writeUint32(DPRAM + offset, value >>> 0);
  }
  bufferControl(ep, out) {
    return 0x80 + 8 * ep + (out ? 4 : 0);
  }
  epControl(ep, out) {
    return 0x08 + 8 * (ep - 1) + (out ? 4 : 0);
  }

  /// embassy-rp's `on_interrupt`.
  isr() {
    this.isrAlarm.scheduledFor = false;
    const ints = this.read(R.INTS);
    if (ints & INT_BUS_RESET) this.write(R.INTE + CLEAR, INT_BUS_RESET);
    if (ints & INT_DEV_RESUME) this.write(R.INTE + CLEAR, INT_DEV_RESUME);
    if (ints & INT_DEV_SUSPEND) this.write(R.INTE + CLEAR, INT_DEV_SUSPEND);
    if (ints & INT_SETUP_REQ) this.write(R.INTE + CLEAR, INT_SETUP_REQ);
    if (ints & INT_BUFF_STATUS) this.write(R.BUFF_STATUS, this.read(R.BUFF_STATUS));
    this.schedule();
  }

  schedule() {
    if (!this.cpuAlarm.pending) {
      this.cpuAlarm.pending = true;
      this.cpuAlarm.schedule(this.stepNs);
    }
  }

  /// Runs every task whose condition holds, one step each; again later if any ran.
  poll() {
    this.cpuAlarm.pending = false;
    let ran = false;
    for (const t of this.tasks) {
      if (t.done || !t.wait()) continue;
      const r = t.gen.next();
      ran = true;
      if (r.done) t.done = true;
      else t.wait = r.value;
    }
    if (ran) this.schedule();
  }

  spawn(gen) {
    this.tasks.push({ gen, wait: () => true, done: false });
    this.schedule();
  }

  /// embassy-rp's Driver::new and Driver::start (the endpoints allocated as CdcAcmClass::new
  /// does), then embassy-usb's run loop, and the class's read/echo tasks.
  start() {
    // Driver::new: zero the registers and the first 0x100 of DPRAM, mux, VBUS override, enable.
    for (let i = 0; i < 0x9c; i += 4) this.write(i, 0);
    for (let i = 0; i < 0x100; i += 4) this.dpramWrite(i, 0);
    this.write(R.USB_MUXING, 0b1001);
    this.write(R.USB_PWR, 0b1100);
    this.write(R.MAIN_CTRL, 1);
    // alloc_endpoint: interrupt IN 1 at 0x180, bulk OUT 1 at 0x1c0, bulk IN 2 at 0x200.
    const INTERRUPT_PER_BUFF = 1 << 29;
    const type = (t) => t << 26;
    const db = this.doubleBuffered ? 1 << 30 : 0;
    this.dpramWrite(this.epControl(1, false), INTERRUPT_PER_BUFF | type(3) | 0x180);
    this.dpramWrite(this.epControl(1, true), INTERRUPT_PER_BUFF | type(2) | db | 0x1c0);
    this.dpramWrite(this.epControl(2, false), INTERRUPT_PER_BUFF | type(2) | db | 0x200);
    // start(): interrupts, every endpoint's, EP0 one interrupt per buffer, the pull-up.
    this.write(R.INTE, INT_BUS_RESET | INT_BUFF_STATUS | INT_DEV_RESUME | INT_DEV_SUSPEND | INT_SETUP_REQ);
    this.write(R.INT_EP_CTRL, 0xfffe);
    this.write(R.SIE_CTRL, (1 << 29) | (1 << 16));
    this.spawn(this.busTask());
    this.spawn(this.controlTask());
    this.spawn(this.readTask());
    this.spawn(this.writeTask());
  }

  /// embassy-rp's Bus::poll loop: a bus reset clears the state and disables the endpoints.
  *busTask() {
    for (;;) {
      yield () => (this.read(R.SIE_STATUS) & SIE_BUS_RESET) !== 0;
      this.write(R.SIE_STATUS, SIE_BUS_RESET | SIE_SETUP_REC);
      this.write(R.BUFF_STATUS, 0xffffffff);
      this.write(R.ADDR_ENDP, 0);
      for (let i = 1; i < 16; i++) {
        for (const out of [false, true]) {
          const off = this.epControl(i, out);
          this.dpramWrite(off, this.dpramRead(off) & ~(1 << 31));
        }
      }
      this.configured = false;
      this.address = 0;
      this.dtr = this.rts = false;
      this.write(R.INTE + SET, INT_BUS_RESET | INT_DEV_RESUME | INT_DEV_SUSPEND);
    }
  }

  /// ControlPipe::setup, then embassy-usb's handle_control.
  *controlTask() {
    for (;;) {
      this.write(R.INTE + SET, INT_SETUP_REQ);
      yield () => (this.read(R.SIE_STATUS) & SIE_SETUP_REC) !== 0;
      const setup = new Uint8Array(8);
      for (let i = 0; i < 8; i += 4) {
        const w = this.dpramRead(i);
        for (let k = 0; k < 4; k++) setup[i + k] = (w >>> (8 * k)) & 0xff;
      }
      this.write(R.SIE_STATUS, SIE_SETUP_REC);
      this.dpramWrite(this.bufferControl(0, false), 0);
      this.dpramWrite(this.bufferControl(0, true), 0);
      this.controlRequests.push([...setup]);
      if (setup[0] & 0x80) yield* this.controlIn(setup);
      else yield* this.controlOut(setup);
    }
  }

  /// handle_control_in: the answer in 64-byte chunks (a ZLP when it ends short of wLength on
  /// a packet boundary), each by data_in; or reject.
  *controlIn(setup) {
    const wLength = setup[6] | (setup[7] << 8);
    const data = this.answer(setup);
    if (data === null) return yield* this.reject();
    const len = Math.min(data.length, wLength);
    const chunks = [];
    for (let i = 0; i < len; i += 64) chunks.push(data.subarray(i, Math.min(i + 64, len)));
    if (chunks.length === 0 || (len !== wLength && len % 64 === 0)) chunks.push(new Uint8Array(0));
    for (let i = 0; i < chunks.length; i++) yield* this.dataIn(chunks[i], i === chunks.length - 1);
  }

  /// ControlPipe::data_in.
  *dataIn(chunk, last) {
    for (let i = 0; i < chunk.length; i += 4) {
      let w = 0;
      for (let k = 0; k < 4 && i + k < chunk.length; k++) w |= chunk[i + k] << (8 * k);
      this.dpramWrite(0x100 + i, w);
    }
    const bc = this.bufferControl(0, false);
    const pid = this.dpramRead(bc) & PID ? 0 : PID;
    this.dpramWrite(bc, chunk.length | pid | FULL);
    this.dpramWrite(bc, chunk.length | pid | FULL | AVAILABLE);
    yield () => !(this.dpramRead(bc) & AVAILABLE);
    if (last) {
      const out = this.bufferControl(0, true);
      this.dpramWrite(out, PID);
      this.dpramWrite(out, PID | AVAILABLE);
    }
  }

  /// handle_control_out: the data stage by data_out, then accept (or accept_set_address) or
  /// reject.
  *controlOut(setup) {
    const wLength = setup[6] | (setup[7] << 8);
    let data = new Uint8Array(0);
    if (wLength > 0) {
      const bc = this.bufferControl(0, true);
      const pid = this.dpramRead(bc) & PID ? 0 : PID;
      this.dpramWrite(bc, 64 | pid);
      this.dpramWrite(bc, 64 | pid | AVAILABLE);
      yield () => !(this.dpramRead(bc) & AVAILABLE);
      const n = this.dpramRead(bc) & 0x3ff;
      data = new Uint8Array(n);
      for (let i = 0; i < n; i++) data[i] = (this.dpramRead(0x100 + (i & ~3)) >>> (8 * (i & 3))) & 0xff;
    }
    if (!this.handleOut(setup, data)) return yield* this.reject();
    const bc = this.bufferControl(0, false);
    this.dpramWrite(bc, PID | FULL);
    this.dpramWrite(bc, PID | FULL | AVAILABLE);
    yield () => !(this.dpramRead(bc) & AVAILABLE);
    if (setup[1] === 5 && setup[0] === 0) this.write(R.ADDR_ENDP, this.address);
  }

  /// ControlPipe::reject.
  *reject() {
    this.write(R.EP_STALL_ARM + SET, 3);
    this.dpramWrite(this.bufferControl(0, true), STALL);
    this.dpramWrite(this.bufferControl(0, false), STALL);
  }

  /// What embassy-usb answers an IN request with, or null (rejected).
  answer(setup) {
    const [type, request, valueLo, valueHi, indexLo] = setup;
    const d = CDC_ACM_DESCRIPTORS;
    if (type === 0x80 && request === 6) {
      if (valueHi === 1) return d.device;
      if (valueHi === 2) return d.config;
      if (valueHi === 15) return d.bos;
      if (valueHi === 6) return d.qualifier;
      if (valueHi === 3) {
        if (valueLo === 0) return Uint8Array.of(4, 3, 0x09, 0x04);
        const s = d.strings[valueLo - 1];
        if (!s) return null;
        const out = [2 + 2 * s.length, 3];
        for (const c of s) out.push(c.charCodeAt(0), 0);
        return Uint8Array.from(out);
      }
      return null;
    }
    if (type === 0xa1 && request === 0x21 && indexLo === 0) return this.lineCoding ?? Uint8Array.of(0x40, 0x1f, 0, 0, 0, 0, 8);
    return null;
  }

  /// embassy-usb's handle_control_out and CdcAcm's control_out: true if accepted.
  handleOut(setup, data) {
    const [type, request, valueLo, valueHi, indexLo] = setup;
    const value = valueLo | (valueHi << 8);
    if (type === 0x00 && request === 5 && value >= 1 && value <= 127) {
      this.address = value;
      return true;
    }
    if (type === 0x00 && request === 9 && value === 1) {
      this.enableEndpoints();
      this.configured = true;
      return true;
    }
    // CdcAcm accepts (Class, Interface, comm_if) only: a device-recipient request is rejected.
    if (type !== 0x21 || indexLo !== 0) return false;
    if (request === 0x20 && data.length >= 7) {
      this.lineCoding = data.slice(0, 7);
      return true;
    }
    if (request === 0x22) {
      this.dtr = (value & 1) !== 0;
      this.rts = (value & 2) !== 0;
      return true;
    }
    return false;
  }

  /// Bus::endpoint_set_enabled for the configuration's endpoints (the OUT one armed).
  enableEndpoints() {
    for (const [ep, out] of [
      [1, false],
      [1, true],
      [2, false],
    ]) {
      const off = this.epControl(ep, out);
      this.dpramWrite(off, this.dpramRead(off) | (1 << 31));
      const bc = this.bufferControl(ep, out);
      if (!out) this.dpramWrite(bc, PID);
      else {
        this.dpramWrite(bc, 64);
        this.dpramWrite(bc, 64 | AVAILABLE | (this.doubleBuffered ? (64 | AVAILABLE | PID) << 16 : 0));
      }
    }
  }

  /// EndpointOut::read in a loop (CdcAcmClass::read_packet): the bytes received, echoed if
  /// `echo`; single-buffered, each packet re-armed after it is read, as embassy-rp does; with
  /// `doubleBuffered`, the buffer BUFF_CPU_SHOULD_HANDLE names, re-armed with the PID two on.
  *readTask() {
    const bc = this.bufferControl(1, true);
    let buf = 0;
    for (;;) {
      // embassy-rp's read returns once AVAILABLE is clear; a double-buffered driver also
      // checks FULL (the other buffer may be the one that completed).
      yield () =>
        this.configured &&
        !(this.buffer(bc, buf) & AVAILABLE) &&
        (!this.doubleBuffered || (this.buffer(bc, buf) & FULL) !== 0);
      const half = this.buffer(bc, buf);
      const n = half & 0x3ff;
      const bytes = new Uint8Array(n);
      const base = 0x1c0 + 64 * buf;
      for (let i = 0; i < n; i++) bytes[i] = (this.dpramRead(base + (i & ~3)) >>> (8 * (i & 3))) & 0xff;
      this.received.push(bytes);
      if (this.echo) this.toSend.push(bytes);
      const word = this.dpramRead(bc);
      if (!this.doubleBuffered) {
        const pid = half & PID ? 0 : PID;
        this.dpramWrite(bc, 64 | pid);
        this.dpramWrite(bc, 64 | pid | AVAILABLE);
      } else {
        const pid = half & PID; // two packets on: the same PID
        const mine = 64 | pid | AVAILABLE;
        this.dpramWrite(bc, buf ? ((word & 0xffff) | (mine << 16)) >>> 0 : ((word & 0xffff0000) | mine) >>> 0);
        buf ^= 1;
      }
    }
  }

  buffer(bc, buf) {
    const w = this.dpramRead(bc);
    return buf ? w >>> 16 : w & 0xffff;
  }

  /// EndpointIn::write for each queued packet: wait until the buffer is free, fill it, arm
  /// it with the next PID. Single-buffered as embassy-rp; with `doubleBuffered`, the two
  /// buffers in turn (at 0x200 and 0x240), each armed as soon as it is free.
  *writeTask() {
    const bc = this.bufferControl(2, false);
    let buf = 0;
    let pid = 0; // DATA0 first after SET_CONFIGURATION
    for (;;) {
      yield () => this.configured && this.toSend.length > 0 && !(this.buffer(bc, buf) & AVAILABLE);
      const bytes = this.toSend.shift();
      const base = 0x200 + 64 * buf;
      for (let i = 0; i < bytes.length; i += 4) {
        let w = 0;
        for (let k = 0; k < 4 && i + k < bytes.length; k++) w |= bytes[i + k] << (8 * k);
        this.dpramWrite(base + i, w);
      }
      if (!this.doubleBuffered) {
        pid = this.dpramRead(bc) & PID ? 0 : PID;
        this.dpramWrite(bc, bytes.length | pid | FULL);
        this.dpramWrite(bc, bytes.length | pid | FULL | AVAILABLE);
        continue;
      }
      const word = this.dpramRead(bc);
      const mine = bytes.length | pid | FULL | AVAILABLE;
      this.dpramWrite(bc, buf ? ((word & 0xffff) | (mine << 16)) >>> 0 : ((word & 0xffff0000) | mine) >>> 0);
      pid ^= PID;
      buf ^= 1;
    }
  }
}
