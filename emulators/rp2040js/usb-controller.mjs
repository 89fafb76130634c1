// The RP2040's USB controller in device mode, answering the bus one transaction at a time as
// the chip does (RP2040 datasheet §4.1.2, "Device controller"), on top of rp2040js's register
// file (its `RPUSBController`: the registers, write-1-to-clear, the interrupt line).
//
// What rp2040js 1.4.1 does and this replaces (docs/usb.md, "What rp2040js gets wrong"): it
// treats a buffer as done the moment firmware sets AVAILABLE: an IN buffer is "sent" at once, an
// OUT buffer is filled 10 µs later with whatever its scripted host holds, or with nothing (a
// zero-length packet instead of a NAK). Here a buffer stays AVAILABLE until a transaction on the
// bus uses it:
// - IN token: the buffer the endpoint's selector points at answers if it is AVAILABLE (its LEN
//   bytes, with its PID); else NAK (or STALL when the endpoint is stalled). When the host's ACK
//   comes the controller writes the buffer's half of the control register back with AVAILABLE
//   and FULL cleared and sets the endpoint's BUFF_STATUS bit.
// - OUT token: if the buffer is AVAILABLE the data goes into it and its half is written back with
//   FULL set, LEN the bytes received, AVAILABLE cleared, BUFF_STATUS set; else NAK, and the host
//   has spent the whole packet on the bus. A DATA PID other than the buffer's is ACKed and
//   dropped (the host resending a packet whose ACK it lost, USB 2.0 §8.6.3), with
//   SIE_STATUS.DATA_SEQ_ERROR.
// - SETUP: always taken (§8.5.3): the 8 bytes at DPRAM 0, SIE_STATUS.SETUP_REC, EP_STALL_ARM
//   cleared.
// - Double buffering (EP control DOUBLE_BUFFERED): the controller alternates buffer 0 and buffer
//   1 (at +64) and never skips one that is not AVAILABLE: the next transaction NAKs until it is.
//   BUFF_CPU_SHOULD_HANDLE says which one completed; INTERRUPT_PER_DOUBLE_BUFF raises
//   BUFF_STATUS only when buffer 1 completes. A write with RESET (bit 12) points the selector
//   back at buffer 0, as a bus reset does.
// - SOF: SOF_RD holds the frame number, INTR.DEV_SOF is raised and cleared by reading SOF_RD.
//
// The controller decides at the end of the token, from the buffer control word as the firmware
// left it then, and completes at the end of the handshake: what firmware writes in between waits
// for the next transaction (the chip samples the word once per transaction too).

// USB registers (offsets in the USBCTRL_REGS block).
const ADDR_ENDP = 0x00;
const MAIN_CTRL = 0x40;
const SOF_RD = 0x48;
const SIE_CTRL = 0x4c;
const BUFF_CPU_SHOULD_HANDLE = 0x5c;
const EP_STATUS_STALL_NAK = 0x70;

// SIE_CTRL bits (device mode).
const SIE_EP0_INT_STALL = 1 << 31;
const SIE_EP0_DOUBLE_BUF = 1 << 30;
const SIE_EP0_INT_1BUF = 1 << 29;
const SIE_EP0_INT_2BUF = 1 << 28;
const SIE_EP0_INT_NAK = 1 << 27;
const SIE_PULLUP_EN = 1 << 16;

// SIE_STATUS bits.
const SIE_DATA_SEQ_ERROR = 1 << 31;
const SIE_BUS_RESET = 1 << 19;
const SIE_TRANS_COMPLETE = 1 << 18;
const SIE_SETUP_REC = 1 << 17;

// INTR bits the controller raises itself (rp2040js maps the SIE_STATUS ones).
const INTR_EP_STALL_NAK = 1 << 19;
const INTR_DEV_SOF = 1 << 17;
const INTR_TRANS_COMPLETE = 1 << 3;

// Endpoint control (DPRAM 0x08 + 8 × (n − 1), OUT at + 4).
const EPC_ENABLE = 1 << 31;
const EPC_DOUBLE_BUFFERED = 1 << 30;
const EPC_INTERRUPT_PER_BUFF = 1 << 29;
const EPC_INTERRUPT_PER_DOUBLE_BUFF = 1 << 28;
const EPC_INTERRUPT_ON_STALL = 1 << 17;
const EPC_INTERRUPT_ON_NAK = 1 << 16;

// Buffer control (DPRAM 0x80 + 8 × n, OUT at + 4); buffer 1 in the upper half.
const BC_LEN = 0x3ff;
const BC_AVAILABLE = 1 << 10;
const BC_STALL = 1 << 11;
const BC_RESET = 1 << 12;
const BC_PID = 1 << 13;
const BC_LAST = 1 << 14;
const BC_FULL = 1 << 15;

const EP0_BUFFER = 0x100;
const BUFFER_CONTROL_FIRST = 0x80;
const BUFFER_CONTROL_LAST = 0xfc;

/// An endpoint's direction index: IN 0, OUT 1 (BUFF_STATUS bit 2n + index).
export const IN = 0;
export const OUT = 1;

/// The RP2040's device controller on `mcu` (an rp2040js RP2040): replaces rp2040js's instant
/// buffer handling and answers the bus (usb-host.mjs) transaction by transaction.
/// `onPullup(on)` is called when firmware switches the D+ pull-up (the device appears on or
/// leaves the bus).
export class Rp2040UsbDevice {
  constructor(mcu, { onPullup = () => {} } = {}) {
    this.mcu = mcu;
    this.regs = mcu.usbCtrl;
    this.view = mcu.usbDPRAMView;
    this.dpram = mcu.usbDPRAM;
    this.onPullup = onPullup;
    this.pullup = false;
    /// Which buffer (0 or 1) each endpoint uses next: [ep][dir].
    this.select = Array.from({ length: 16 }, () => [0, 0]);
    this.cpuShouldHandle = 0;
    this.frame = 0;
    this.counts = {
      setups: 0,
      in_packets: 0,
      in_bytes: 0,
      out_packets: 0,
      out_bytes: 0,
      in_naks: 0,
      out_naks: 0,
      stalls: 0,
      data_seq_errors: 0,
      ignored_tokens: 0,
      bus_resets: 0,
    };
    const regs = this.regs;
    // Nothing happens when firmware arms a buffer: only the bus moves data.
    regs.DPRAMUpdated = (offset, value) => this.dpramWritten(offset, value);
    regs.onUSBEnabled = undefined;
    regs.onResetReceived = undefined;
    const read = regs.readUint32.bind(regs);
    const write = regs.writeUint32.bind(regs);
    regs.readUint32 = (offset) => {
      if (offset === SOF_RD) {
        regs.intRaw &= ~INTR_DEV_SOF;
        regs.checkInterrupts();
        return this.frame;
      }
      if (offset === BUFF_CPU_SHOULD_HANDLE) return this.cpuShouldHandle;
      return read(offset);
    };
    regs.writeUint32 = (offset, value) => {
      write(offset, value);
      if (offset === SIE_CTRL) this.pullupChanged();
      if (offset === EP_STATUS_STALL_NAK) this.stallNakChanged();
    };
  }

  /// The device's bus address (ADDR_ENDP).
  get address() {
    return this.regs.addrEndp & 0x7f;
  }

  /// True while the controller is on and its pull-up tells the host a device is there.
  get attached() {
    return this.pullup && (this.regs.mainCtrl & 1) !== 0;
  }

  pullupChanged() {
    const on = (this.regs.sieCtrl & SIE_PULLUP_EN) !== 0;
    if (on === this.pullup) return;
    this.pullup = on;
    this.onPullup(on);
  }

  stallNakChanged() {
    const regs = this.regs;
    if (regs.epStatusStallNak === 0) regs.intRaw &= ~INTR_EP_STALL_NAK;
    regs.checkInterrupts();
  }

  /// Firmware wrote the DPRAM word at `offset`: a buffer control word with RESET points its
  /// endpoint's selector back at buffer 0 (the bit does not stay set).
  dpramWritten(offset, value) {
    if (offset < BUFFER_CONTROL_FIRST || offset > BUFFER_CONTROL_LAST) return;
    if (value & BC_RESET) {
      const ep = (offset - BUFFER_CONTROL_FIRST) >> 3;
      this.select[ep][offset & 4 ? OUT : IN] = 0;
      this.view.setUint32(offset, value & ~BC_RESET, true);
    }
  }

  bufferControlOffset(ep, dir) {
    return BUFFER_CONTROL_FIRST + 8 * ep + (dir === OUT ? 4 : 0);
  }

  /// The endpoint control word (EP0 has none: its bits come from SIE_CTRL).
  endpointControl(ep, dir) {
    if (ep === 0) return EPC_ENABLE | EPC_INTERRUPT_PER_BUFF;
    return this.view.getUint32(0x08 + 8 * (ep - 1) + (dir === OUT ? 4 : 0), true);
  }

  doubleBuffered(ep, dir) {
    if (ep === 0) return (this.regs.sieCtrl & SIE_EP0_DOUBLE_BUF) !== 0;
    return (this.endpointControl(ep, dir) & EPC_DOUBLE_BUFFERED) !== 0;
  }

  /// DPRAM offset of buffer `buf` of the endpoint.
  bufferAddress(ep, dir, buf) {
    const base = ep === 0 ? EP0_BUFFER : this.endpointControl(ep, dir) & 0xffc0;
    return base + 64 * buf;
  }

  /// Whether the device hears a token to `addr`/`ep` at all: attached, its address, and (not
  /// EP0) the endpoint enabled. Otherwise the host times out.
  hears(addr, ep, dir) {
    if (!this.attached || addr !== this.address) return false;
    return ep === 0 || (this.endpointControl(ep, dir) & EPC_ENABLE) !== 0;
  }

  stalled(ep, dir, word) {
    if (!(word & BC_STALL)) return false;
    if (ep !== 0) return true;
    // EP0 stalls only while EP_STALL_ARM holds its direction too.
    return (this.regs.epStallArm & (dir === OUT ? 2 : 1)) !== 0;
  }

  /// A NAK or STALL sent: EP_STATUS_STALL_NAK and INTR.EP_STALL_NAK when the endpoint asks.
  flagStallNak(ep, dir, stall) {
    const regs = this.regs;
    let wanted;
    if (ep === 0) wanted = regs.sieCtrl & (stall ? SIE_EP0_INT_STALL : SIE_EP0_INT_NAK);
    else wanted = this.endpointControl(ep, dir) & (stall ? EPC_INTERRUPT_ON_STALL : EPC_INTERRUPT_ON_NAK);
    if (!wanted) return;
    regs.epStatusStallNak |= 1 << (2 * ep + dir);
    regs.intRaw |= INTR_EP_STALL_NAK;
    regs.checkInterrupts();
  }

  /// The answer to an IN token on `ep`: `{ answer: 'DATA', bytes, data1, complete() }`,
  /// `{ answer: 'NAK' }`, `{ answer: 'STALL' }` or `{ answer: null }` (not heard).
  /// `complete()` is what the host's ACK does (called at the end of the handshake).
  inToken(addr, ep) {
    if (!this.hears(addr, ep, IN)) {
      this.counts.ignored_tokens++;
      return { answer: null };
    }
    const offset = this.bufferControlOffset(ep, IN);
    const word = this.view.getUint32(offset, true);
    if (this.stalled(ep, IN, word)) {
      this.counts.stalls++;
      this.flagStallNak(ep, IN, true);
      return { answer: 'STALL' };
    }
    const buf = this.doubleBuffered(ep, IN) ? this.select[ep][IN] : 0;
    const half = buf ? word >>> 16 : word & 0xffff;
    if (!(half & BC_AVAILABLE)) {
      this.counts.in_naks++;
      this.flagStallNak(ep, IN, false);
      return { answer: 'NAK' };
    }
    const len = Math.min(half & BC_LEN, 64);
    const at = this.bufferAddress(ep, IN, buf);
    const bytes = this.dpram.slice(at, at + len);
    return {
      answer: 'DATA',
      bytes,
      data1: (half & BC_PID) !== 0,
      complete: () => {
        this.counts.in_packets++;
        this.counts.in_bytes += len;
        this.finishBuffer(ep, IN, buf, (h) => h & ~(BC_AVAILABLE | BC_FULL));
      },
    };
  }

  /// The answer to an OUT token and its data packet on `ep` (`data1`: its PID):
  /// `{ answer: 'ACK', complete() }`, `'NAK'`, `'STALL'` or null (not heard).
  outToken(addr, ep, data1, bytes) {
    if (!this.hears(addr, ep, OUT)) {
      this.counts.ignored_tokens++;
      return { answer: null };
    }
    const offset = this.bufferControlOffset(ep, OUT);
    const word = this.view.getUint32(offset, true);
    if (this.stalled(ep, OUT, word)) {
      this.counts.stalls++;
      this.flagStallNak(ep, OUT, true);
      return { answer: 'STALL' };
    }
    const buf = this.doubleBuffered(ep, OUT) ? this.select[ep][OUT] : 0;
    const half = buf ? word >>> 16 : word & 0xffff;
    if (!(half & BC_AVAILABLE)) {
      this.counts.out_naks++;
      this.flagStallNak(ep, OUT, false);
      return { answer: 'NAK' };
    }
    if (((half & BC_PID) !== 0) !== data1) {
      // A packet sent again: acknowledged, not taken; the buffer stays armed.
      return {
        answer: 'ACK',
        complete: () => {
          this.counts.data_seq_errors++;
          this.regs.sieStatus |= SIE_DATA_SEQ_ERROR;
          this.regs.sieStatusUpdated();
        },
      };
    }
    const room = half & BC_LEN;
    return {
      answer: 'ACK',
      complete: () => {
        const n = Math.min(bytes.length, room, 64);
        this.dpram.set(bytes.subarray(0, n), this.bufferAddress(ep, OUT, buf));
        this.counts.out_packets++;
        this.counts.out_bytes += n;
        this.finishBuffer(ep, OUT, buf, (h) => (h & ~(BC_AVAILABLE | BC_LEN)) | BC_FULL | n);
      },
    };
  }

  /// A SETUP packet to `addr` with its 8 bytes: `{ answer: 'ACK', complete() }` or null.
  setupToken(addr, bytes) {
    if (!this.attached || addr !== this.address) {
      this.counts.ignored_tokens++;
      return { answer: null };
    }
    return {
      answer: 'ACK',
      complete: () => {
        this.counts.setups++;
        this.dpram.set(bytes.subarray(0, 8), 0);
        this.regs.epStallArm = 0;
        this.select[0][IN] = 0;
        this.select[0][OUT] = 0;
        this.regs.sieStatus |= SIE_SETUP_REC;
        this.regs.sieStatusUpdated();
      },
    };
  }

  /// Writes back buffer `buf`'s half of the control word (`update` maps the old half to the
  /// new), moves the selector on, and raises BUFF_STATUS (and TRANS_COMPLETE for a LAST buffer)
  /// as the endpoint's interrupt settings ask.
  finishBuffer(ep, dir, buf, update) {
    const offset = this.bufferControlOffset(ep, dir);
    const word = this.view.getUint32(offset, true);
    const half = buf ? word >>> 16 : word & 0xffff;
    const next = update(half) & 0xffff;
    const written = buf ? ((word & 0xffff) | (next << 16)) >>> 0 : ((word & 0xffff0000) | next) >>> 0;
    this.view.setUint32(offset, written, true);
    const double = this.doubleBuffered(ep, dir);
    if (double) this.select[ep][dir] = buf ^ 1;
    const bit = 1 << (2 * ep + dir);
    if (buf) this.cpuShouldHandle |= bit;
    else this.cpuShouldHandle &= ~bit;
    let raise;
    if (ep === 0) {
      const sie = this.regs.sieCtrl;
      raise = (sie & SIE_EP0_INT_1BUF) !== 0 || ((sie & SIE_EP0_INT_2BUF) !== 0 && (!double || buf === 1));
    } else {
      const control = this.endpointControl(ep, dir);
      raise =
        (control & EPC_INTERRUPT_PER_BUFF) !== 0 ||
        ((control & EPC_INTERRUPT_PER_DOUBLE_BUFF) !== 0 && (!double || buf === 1));
    }
    if (raise) {
      this.regs.buffStatus |= bit;
      this.regs.buffStatusUpdated();
    }
    if (half & BC_LAST) {
      this.regs.sieStatus |= SIE_TRANS_COMPLETE;
      this.regs.intRaw |= INTR_TRANS_COMPLETE;
      this.regs.sieStatusUpdated();
    }
  }

  /// A SOF for frame `frame` ended.
  sof(frame) {
    this.frame = frame & 0x7ff;
    if (!this.attached) return;
    this.regs.intRaw |= INTR_DEV_SOF;
    this.regs.checkInterrupts();
  }

  /// The host started driving a bus reset (SE0): SIE_STATUS.BUS_RESET, the address back to 0,
  /// every selector to buffer 0.
  busReset() {
    if (!this.attached) return;
    this.counts.bus_resets++;
    this.regs.addrEndp &= ~0x7f;
    for (const s of this.select) s[0] = s[1] = 0;
    this.cpuShouldHandle = 0;
    this.regs.sieStatus |= SIE_BUS_RESET;
    this.regs.sieStatusUpdated();
  }
}

export const REGISTERS = Object.freeze({ ADDR_ENDP, MAIN_CTRL, SIE_CTRL, SOF_RD, BUFF_CPU_SHOULD_HANDLE });
export const BUFFER_CONTROL = Object.freeze({
  LEN: BC_LEN,
  AVAILABLE: BC_AVAILABLE,
  STALL: BC_STALL,
  RESET: BC_RESET,
  PID: BC_PID,
  LAST: BC_LAST,
  FULL: BC_FULL,
});
