// For the CDC-NCM tests (usb-ncm.test.mjs): embassy-usb 0.6's CDC-NCM class
// (src/class/cdc_ncm/mod.rs) on embassy-rp 0.10's driver, replayed register write by register
// write as usb-replica.mjs does for CDC-ACM (whose control pipe, bus-reset handling and CPU
// model this extends): the descriptors CdcNcmClass::new builds, its answers to
// GET_NTB_PARAMETERS and the iMACAddress string, the requests it accepts (SEND_ENCAPSULATED_
// COMMAND, SET_NTB_INPUT_SIZE; others rejected), SET_INTERFACE as embassy-usb handles it
// (the data interface's endpoints enabled or disabled, embassy-rp's endpoint_set_enabled
// rewriting their buffer control), Receiver::wait_connection (the NETWORK_CONNECTION
// notification on the interrupt endpoint once the data endpoints are enabled),
// Receiver::read_packet (packets into a 2048-byte block until a short one, then the NTH16,
// the first NDP16 and its first datagram, anything malformed skipped) and
// Sender::write_packet (a 28-byte header, the datagram in 64-byte packets, a ZLP when the
// last is whole).
//
// `renotify`: false replays the class's own runner (into_embassy_net_device: the notification
// sent once, since embassy-rp's endpoints never report being disabled); true replays the
// example's runner (examples/boards/rp2040-usb/src/ncm.rs: it waits for the host and notifies
// it again after a USB reset or the data interface set back to alternate setting 0).

import { EmbassyReplica } from './usb-replica.mjs';

const AVAILABLE = 1 << 10;
const PID = 1 << 13;
const FULL = 1 << 15;
const NTH16_SIGN = 0x484d434e;
const NDP16_SIGNS = [0x304d434e, 0x314d434e];
const NTB_MAX = 2048;
const DATA_INTERFACE = 1;

/// The descriptors of the example's CDC-NCM device (Config::new(0xc0de, 0xcafe), composite
/// with IADs, bcdUSB 2.1, EP0 64; CdcNcmClass with max packet size 64): communication
/// interface 0 (class 2, subclass 0x0d) with its header, union, Ethernet (iMACAddress 4,
/// wMaxSegmentSize 1514) and NCM functional descriptors and interrupt IN 0x81 (8 bytes,
/// interval 255); data interface 1 (class 0x0a, protocol 1), alternate setting 0 without
/// endpoints, 1 with bulk OUT 0x01 and bulk IN 0x82.
export const CDC_NCM_DESCRIPTORS = {
  device: Uint8Array.of(18, 1, 0x10, 0x02, 0xef, 0x02, 0x01, 64, 0xde, 0xc0, 0xfe, 0xca, 0x10, 0x00, 1, 2, 3, 1),
  qualifier: Uint8Array.of(10, 6, 0x10, 0x02, 0xef, 0x02, 0x01, 64, 1, 0),
  bos: Uint8Array.of(5, 15, 12, 0, 1, 7, 16, 2, 0, 0, 0, 0),
  config: Uint8Array.of(
    ...[9, 2, 94, 0, 2, 1, 0, 0x80, 50],
    ...[8, 11, 0, 2, 2, 0x0d, 0, 0],
    ...[9, 4, 0, 0, 1, 2, 0x0d, 0, 0],
    ...[5, 0x24, 0x00, 0x10, 0x01],
    ...[5, 0x24, 0x06, 0, 1],
    ...[13, 0x24, 0x0f, 4, 0, 0, 0, 0, 0xea, 0x05, 0, 0, 0],
    ...[6, 0x24, 0x1a, 0x00, 0x01, 0],
    ...[7, 5, 0x81, 3, 8, 0, 255],
    ...[9, 4, 1, 0, 0, 0x0a, 0, 1, 0],
    ...[9, 4, 1, 1, 2, 0x0a, 0, 1, 0],
    ...[7, 5, 0x01, 2, 64, 0, 0],
    ...[7, 5, 0x82, 2, 64, 0, 0],
  ),
  strings: ['linklab', 'rp2040-usb-ncm', '0001', '024C4C000001'],
};

/// embassy-usb's NtbParameters (NTB16 only, 2048 bytes each way, divisor and alignment 4, one
/// datagram per block toward the device).
export const NTB_PARAMETERS = Uint8Array.of(
  ...[28, 0, 1, 0],
  ...[0, 8, 0, 0, 4, 0, 0, 0, 4, 0, 0, 0],
  ...[0, 8, 0, 0, 4, 0, 0, 0, 4, 0, 1, 0],
);

/// The replica (see the file's comment) on `mcu`.
export class EmbassyNcmReplica extends EmbassyReplica {
  constructor(mcu, { renotify = true, ...options } = {}) {
    super(mcu, options);
    this.renotify = renotify;
    this.dataAlt = 0;
    this.hostLeft = false;
    this.notifications = 0;
    this.blocksSkipped = 0;
    this.seq = 0;
  }

  /// embassy-usb's answers: GET_NTB_PARAMETERS to the communication interface, the
  /// descriptors; anything else rejected.
  answer(setup) {
    const [type, request, valueLo, valueHi, indexLo] = setup;
    if (type === 0xa1 && request === 0x80 && indexLo === 0) return NTB_PARAMETERS;
    if (type !== 0x80 || request !== 6) return null;
    const d = CDC_NCM_DESCRIPTORS;
    if (valueHi === 1) return d.device;
    if (valueHi === 2) return d.config;
    if (valueHi === 15) return d.bos;
    if (valueHi === 6) return d.qualifier;
    if (valueHi !== 3) return null;
    if (valueLo === 0) return Uint8Array.of(4, 3, 0x09, 0x04);
    const s = d.strings[valueLo - 1];
    if (!s) return null;
    const out = [2 + 2 * s.length, 3];
    for (const c of s) out.push(c.charCodeAt(0), 0);
    return Uint8Array.from(out);
  }

  /// embassy-usb's handle_control_out with CdcNcmClass's control_out.
  handleOut(setup) {
    const [type, request, valueLo, valueHi, indexLo] = setup;
    const value = valueLo | (valueHi << 8);
    if (type === 0x00 && request === 5 && value >= 1 && value <= 127) {
      this.address = value;
      return true;
    }
    if (type === 0x00 && request === 9 && value === 1) {
      // SET_CONFIGURATION: each endpoint enabled if its alternate setting is the current one.
      this.dataAlt = 0;
      this.setEnabled(1, false, true);
      this.setEnabled(1, true, false);
      this.setEnabled(2, false, false);
      this.configured = true;
      return true;
    }
    if (type === 0x01 && request === 11 && indexLo === DATA_INTERFACE && value <= 1) {
      this.dataAlt = value;
      this.setEnabled(1, true, value === 1);
      this.setEnabled(2, false, value === 1);
      if (value === 0) this.hostLeft = true;
      return true;
    }
    if (type === 0x21 && indexLo === 0) return request === 0x00 || request === 0x86;
    return false;
  }

  /// Bus::endpoint_set_enabled: the enable bit, and the buffer control rewritten (an IN
  /// endpoint's to its PID only, an OUT endpoint's armed for DATA0).
  setEnabled(ep, out, on) {
    const off = this.epControl(ep, out);
    const v = this.dpramRead(off);
    this.dpramWrite(off, on ? v | (1 << 31) : v & ~(1 << 31));
    const bc = this.bufferControl(ep, out);
    if (!out) this.dpramWrite(bc, PID);
    else {
      this.dpramWrite(bc, 64);
      this.dpramWrite(bc, 64 | AVAILABLE);
    }
  }

  enabled(ep, out) {
    return (this.dpramRead(this.epControl(ep, out)) & (1 << 31)) !== 0;
  }

  /// The host left: a bus reset (the replica's bus task clears `configured`) or alternate
  /// setting 0.
  left() {
    return this.hostLeft || !this.configured;
  }

  /// Receiver::wait_connection then read_packet in a loop (the runner's receive side).
  *readTask() {
    for (;;) {
      yield () => this.configured && this.enabled(1, true) && this.enabled(1, false);
      const comm = this.bufferControl(1, false);
      yield () => !(this.dpramRead(comm) & AVAILABLE);
      this.dpramWrite(0x180, 0x000100a1);
      this.dpramWrite(0x184, DATA_INTERFACE);
      const pid = this.dpramRead(comm) & PID ? 0 : PID;
      this.dpramWrite(comm, 8 | pid | FULL);
      this.dpramWrite(comm, 8 | pid | FULL | AVAILABLE);
      this.notifications++;
      this.hostLeft = false;
      yield* this.readBlocks();
    }
  }

  /// read_packet until the host leaves (renotify) or forever (the class's own runner).
  *readBlocks() {
    const bc = this.bufferControl(1, true);
    let block = [];
    for (;;) {
      yield () => (this.renotify && this.left()) || !(this.dpramRead(bc) & AVAILABLE);
      if (this.renotify && this.left()) return;
      const half = this.dpramRead(bc);
      const n = half & 0x3ff;
      for (let i = 0; i < n; i++) block.push((this.dpramRead(0x1c0 + (i & ~3)) >>> (8 * (i & 3))) & 0xff);
      const pid = half & PID ? 0 : PID;
      this.dpramWrite(bc, 64 | pid);
      this.dpramWrite(bc, 64 | pid | AVAILABLE);
      if (n < 64 || block.length >= NTB_MAX) {
        const datagram = this.parse(Uint8Array.from(block.slice(0, NTB_MAX)));
        block = [];
        if (!datagram) continue;
        this.received.push(datagram);
        if (this.echo) this.toSend.push(datagram);
      }
    }
  }

  /// read_packet's parsing: the first datagram of the first NDP16, or null (skipped).
  parse(b) {
    const v = new DataView(b.buffer);
    const skip = () => {
      this.blocksSkipped++;
      return null;
    };
    if (b.length < 12 || v.getUint32(0, true) !== NTH16_SIGN) return skip();
    const ndp = v.getUint16(10, true);
    if (ndp + 12 > b.length || !NDP16_SIGNS.includes(v.getUint32(ndp, true))) return skip();
    const index = v.getUint16(ndp + 8, true);
    const len = v.getUint16(ndp + 10, true);
    if (index === 0 || len === 0) return null;
    if (index + len > b.length) return skip();
    return b.slice(index, index + len);
  }

  /// Sender::write_packet for each queued datagram, packet by packet on embassy-rp's
  /// single-buffered IN endpoint.
  *writeTask() {
    const bc = this.bufferControl(2, false);
    for (;;) {
      yield () => this.configured && this.toSend.length > 0;
      const data = this.toSend.shift();
      const block = new Uint8Array(28 + data.length);
      const v = new DataView(block.buffer);
      v.setUint32(0, NTH16_SIGN, true);
      v.setUint16(4, 12, true);
      v.setUint16(6, this.seq, true);
      v.setUint16(8, block.length, true);
      v.setUint16(10, 12, true);
      v.setUint32(12, NDP16_SIGNS[0], true);
      v.setUint16(16, 16, true);
      v.setUint16(20, 28, true);
      v.setUint16(22, data.length, true);
      block.set(data, 28);
      this.seq = (this.seq + 1) & 0xffff;
      const packets = [];
      for (let i = 0; i < block.length; i += 64) packets.push(block.subarray(i, Math.min(i + 64, block.length)));
      if (block.length >= 64 && (block.length - 64) % 64 === 0) packets.push(new Uint8Array(0));
      for (const p of packets) {
        yield () => !(this.dpramRead(bc) & AVAILABLE);
        for (let i = 0; i < p.length; i += 4) {
          let w = 0;
          for (let k = 0; k < 4 && i + k < p.length; k++) w |= p[i + k] << (8 * k);
          this.dpramWrite(0x200 + i, w);
        }
        const pid = this.dpramRead(bc) & PID ? 0 : PID;
        this.dpramWrite(bc, p.length | pid | FULL);
        this.dpramWrite(bc, p.length | pid | FULL | AVAILABLE);
      }
    }
  }
}
