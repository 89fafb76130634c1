// Linux's cdc-acm driver (drivers/usb/class/cdc-acm.c) as a class driver of usb-linux.mjs:
// what the kernel does on the bus between a program's /dev/ttyACM0 and the device.
//
// - probe (bind): the control interface (class 2, subclass 2) and its data interface (the
//   union descriptor's), read URBs of 2 × the bulk IN max packet size (16 of them, ACM_NR),
//   write URBs of 20 × the bulk OUT max packet size (1 280 bytes at 64; 16, ACM_NW), and
//   SET_LINE_CODING 9600 8N1 to the control interface;
// - open (acm_port_activate, then tty_port's dtr_rts): the notification URB on the interrupt
//   endpoint, every read URB submitted, then SET_CONTROL_LINE_STATE DTR|RTS (bmRequestType
//   0x21, wIndex the control interface);
// - a read URB that completes goes to the tty (`tty.receive(bytes)`) and is submitted again
//   at once unless the tty asked to throttle (`throttle()`): a throttled port issues no IN
//   tokens once its URBs are in; `unthrottle()` submits them again;
// - write (acm_tty_write): one write URB per call, up to 1 280 bytes, no zero-length packet
//   (the SEND_ZERO_PACKET quirk is off), while one of the 16 is free; `writeRoom()` is 0
//   otherwise and the writer waits (`tty.writeDone(bytes)` when a URB completes);
// - a termios change that alters the line coding (acm_tty_set_termios): SET_LINE_CODING;
// - close (tty_port_close): HUPCL drops DTR|RTS (SET_CONTROL_LINE_STATE 0), then every URB
//   is killed (acm_port_shutdown): bytes of a killed read URB are lost, and counted;
// - a USB reset (usb_reset_device): URBs killed before, and after it an open port is hung up
//   (post_reset is acm_reset_resume: tty_port_tty_hangup), which closes it.

const CDC_CLASS = 2;
const ACM_SUBCLASS = 2;
const CS_INTERFACE = 0x24;
const UNION = 6;
const USB_RT_ACM = 0x21;
const SET_LINE_CODING = 0x20;
const SET_CONTROL_LINE_STATE = 0x22;
const DTR_RTS = 3;

/// Read URBs queued on the bulk IN endpoint (ACM_NR).
export const ACM_NR = 16;
/// Write URBs (ACM_NW).
export const ACM_NW = 16;

/// A line coding's 7 bytes: rate, stop bits (0: 1), parity (0: none), data bits.
export function lineCoding(rate = 9600, stop = 0, parity = 0, bits = 8) {
  return Uint8Array.of(rate & 0xff, (rate >> 8) & 0xff, (rate >> 16) & 0xff, rate >>> 24, stop, parity, bits);
}

/// Linux's cdc-acm for one device. `tty` is the port's other side (the pseudo-terminal relay):
/// `receive(bytes)` (data for the reader), `writeDone(n, status)` (a write URB ended),
/// `hangup()` (the port was hung up), `log(line)`.
export class CdcAcm {
  constructor(tty) {
    this.name = 'cdc_acm';
    this.tty = tty;
    this.core = null;
    this.bound = false;
    this.isOpen = false;
    this.throttled = false;
    this.line = lineCoding();
    this.ctrlout = 0;
    this.readUrbs = [];
    this.writeUrbs = [];
    this.freeWrites = ACM_NW;
    /// Between pre_reset and post_reset: the device is being reset, no URB is submitted.
    this.resetting = false;
    this.counts = {
      read_urbs: 0,
      read_bytes: 0,
      read_bytes_lost: 0,
      write_urbs: 0,
      write_bytes: 0,
      write_bytes_lost: 0,
      line_codings: 0,
      control_line_states: 0,
      hangups: 0,
    };
  }

  matches(intf) {
    return intf.cls === CDC_CLASS && intf.subclass === ACM_SUBCLASS && intf.alt === 0;
  }

  /// acm_probe: the endpoints, the URBs' sizes, SET_LINE_CODING 9600 8N1.
  probe(core, intf, interfaces, done) {
    const union = intf.extra.find((d) => d[1] === CS_INTERFACE && d[2] === UNION && d.length >= 5);
    const dataNumber = union ? union[4] : intf.number + 1;
    const data = interfaces.find((i) => i.number === dataNumber && i.alt === 0);
    if (!data || intf.endpoints.length < 1 || data.endpoints.length < 2) {
      return done(new Error('no data interface with two endpoints'));
    }
    const epIn = data.endpoints.find((e) => e.address & 0x80);
    const epOut = data.endpoints.find((e) => !(e.address & 0x80));
    const epCtrl = intf.endpoints[0];
    if (!epIn || !epOut) return done(new Error('the data interface has no IN and OUT endpoint'));
    this.core = core;
    this.controlInterface = intf.number;
    const bus = core.bus;
    this.in = bus.pipe({ ep: epIn.address & 0xf, dir: 'in', type: 'bulk', mps: epIn.mps });
    this.out = bus.pipe({ ep: epOut.address & 0xf, dir: 'out', type: 'bulk', mps: epOut.mps });
    // Full-speed interrupt intervals are in frames; Linux rounds them down to a power of two.
    const interval = 2 ** Math.floor(Math.log2(Math.max(1, epCtrl.interval || 16)));
    this.notify = bus.pipe({ ep: epCtrl.address & 0xf, dir: 'in', type: 'interrupt', mps: epCtrl.mps, interval });
    this.readSize = 2 * epIn.mps;
    this.writeSize = 20 * epOut.mps;
    this.line = lineCoding(9600);
    this.counts.line_codings++;
    core.control(USB_RT_ACM, SET_LINE_CODING, 0, this.controlInterface, this.line, (e) => {
      if (e) return done(e);
      this.bound = true;
      if (this.isOpen) this.activate();
      done(null);
    });
  }

  /// A program opened the port.
  open() {
    if (this.isOpen) return;
    this.isOpen = true;
    if (this.bound) this.activate();
  }

  /// acm_port_activate and the dtr_rts that follows it.
  activate() {
    this.submitNotify();
    this.throttled = false;
    for (let i = 0; i < ACM_NR; i++) this.submitRead();
    this.setControl(DTR_RTS);
  }

  /// The program closed the port (its last descriptor).
  close() {
    if (!this.isOpen) return;
    this.isOpen = false;
    if (!this.bound) return;
    this.setControl(0);
    this.killUrbs();
  }

  setControl(value) {
    this.ctrlout = value;
    this.counts.control_line_states++;
    this.core.control(USB_RT_ACM, SET_CONTROL_LINE_STATE, value, this.controlInterface, null, () => {});
  }

  /// A termios change: SET_LINE_CODING when the 7 bytes differ.
  setLineCoding(bytes) {
    if (bytes.length !== 7 || bytes.every((b, i) => b === this.line[i])) return;
    this.line = Uint8Array.from(bytes);
    if (!this.bound) return;
    this.counts.line_codings++;
    this.core.control(USB_RT_ACM, SET_LINE_CODING, 0, this.controlInterface, this.line, () => {});
  }

  submitNotify() {
    this.notify.submit({ length: this.notify.mps, onDone: (u) => this.notified(u) });
  }

  notified(urb) {
    if (urb.status === 'ok' && this.isOpen) this.submitNotify();
  }

  submitRead() {
    const urb = this.in.submit({ length: this.readSize, onDone: (u) => this.readDone(u) });
    this.readUrbs.push(urb);
  }

  readDone(urb) {
    this.readUrbs = this.readUrbs.filter((u) => u !== urb);
    if (urb.status === 'cancelled') {
      this.counts.read_bytes_lost += urb.actual;
      return;
    }
    if (urb.status === 'ok' && urb.actual > 0) {
      this.counts.read_urbs++;
      this.counts.read_bytes += urb.actual;
      this.tty.receive(urb.data.subarray(0, urb.actual), urb.doneNs);
    }
    if (urb.status === 'stall') return;
    if (this.isOpen && !this.throttled && !this.resetting) this.submitRead();
  }

  /// The reader's buffer is full: read URBs are not submitted again.
  throttle() {
    this.throttled = true;
  }

  /// There is room again: every read URB back on the bus.
  unthrottle() {
    if (!this.throttled) return;
    this.throttled = false;
    if (!this.isOpen || !this.bound || this.resetting) return;
    while (this.readUrbs.length < ACM_NR) this.submitRead();
  }

  /// Bytes one write() may hand over now: a write URB's size while one is free, else 0.
  writeRoom() {
    return this.bound && this.isOpen && !this.resetting && this.freeWrites > 0 ? this.writeSize : 0;
  }

  /// acm_tty_write: one URB of up to writeRoom() bytes; returns the bytes taken.
  write(bytes) {
    const n = Math.min(bytes.length, this.writeRoom());
    if (n === 0) return 0;
    this.freeWrites--;
    const urb = this.out.submit({
      data: Uint8Array.from(bytes.subarray(0, n)),
      zeroPacket: false,
      onDone: (u) => this.writeDone(u),
    });
    this.writeUrbs.push(urb);
    return n;
  }

  writeDone(urb) {
    this.writeUrbs = this.writeUrbs.filter((u) => u !== urb);
    this.freeWrites++;
    if (urb.status === 'ok') {
      this.counts.write_urbs++;
      this.counts.write_bytes += urb.actual;
    } else {
      this.counts.write_bytes_lost += urb.data.length - urb.actual;
    }
    this.tty.writeDone(urb.actual, urb.status);
  }

  killUrbs() {
    this.notify?.cancelAll();
    this.in?.cancelAll();
    this.out?.cancelAll();
  }

  disconnect() {
    this.killUrbs();
    this.bound = false;
    if (this.isOpen) {
      this.counts.hangups++;
      this.tty.hangup('the device left the bus');
    }
  }

  preReset() {
    this.resetting = true;
    this.killUrbs();
  }

  /// acm_reset_resume: an open port is hung up, which shuts it down as a close does (HUPCL
  /// drops DTR, the URBs resubmitted by acm_resume are killed); the program must open it again.
  postReset() {
    this.resetting = false;
    if (!this.isOpen) return;
    this.counts.hangups++;
    this.isOpen = false;
    this.tty.hangup('USB reset');
    this.setControl(0);
  }
}
