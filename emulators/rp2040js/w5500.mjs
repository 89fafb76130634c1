// The WIZnet W5500 as its SPI host and its Ethernet line see it: a pure model, no clock of
// its own (w5500-device.mjs gives it the emulated RP2040's clock and pins).
//
// What is modelled, from the W5500 datasheet v1.0.9 ([DS]) unless marked otherwise:
// - The SPI frame [DS 2.2]: a 16-bit offset (big-endian), a control byte
//   `BSB<<3 | RWB<<2 | OM`, then data bytes, the offset incrementing by one per byte;
//   variable-length data mode (OM=00) ends the frame when SCSn rises, fixed-length mode
//   (OM=01/10/11: 1, 2, 4 bytes) after that many data bytes.
// - The common registers (block 0) and socket 0's registers (block 1) with their reset
//   values [DS 3, 4]; socket 0's 16 KB TX (block 2) and RX (block 3) buffers addressed by
//   the 16-bit offset masked to the buffer's size, so a pointer wraps as on the chip.
// - MACRAW mode on socket 0 (Sn_MR P=0100): OPEN, CLOSE, SEND, RECV [DS Sn_CR]; each
//   received frame is stored with a 2-byte big-endian length that counts itself, no FCS
//   (the format embassy-net-wiznet reads); MAC filtering with MFEN [DS Sn_MR]: unicast to
//   SHAR, broadcast unless BCASTB, multicast unless MMB (IPv4 multicast) and IPv6 unless
//   MIP6B; a frame that does not fit the free part of the RX buffer is dropped, counted
//   (Sn_RX_RSR and the buffer stay as they were).
// - Sn_RX_RSR counts what RECV has not yet released: Sn_RX_RD written by the host takes
//   effect at RECV [DS Sn_RX_RD]; Sn_TX_FSR = size - (Sn_TX_WR - Sn_TX_RD), and SEND moves
//   Sn_TX_RD up to Sn_TX_WR once the frame has left [DS Sn_TX_FSR, Sn_TX_RD].
// - Interrupts: an Sn_IR bit is set by its event only where Sn_IMR has it [DS Sn_IMR];
//   SIR bit 0 is Sn_IR != 0; INTn is low while (IR & IMR) or (SIR & SIMR) is not zero
//   [DS IR, SIMR]. INTLEVEL's assert wait (at most 65 536 x 4 / 150 MHz) is stored, not
//   applied: at its reset value 0 it is 27 ns.
// - PHYCFGR's link bit (set by `setLink`), VERSIONR 0x04, MR's software reset, and the
//   RST pin (`reset`).
//
// Assumed (no datasheet figure): commands complete at once (Sn_CR reads 0 right after the
// write); OPEN clears socket 0's pointers.
//
// A SEND while the frame of the last SEND is still on the line (before its SEND_OK): the
// datasheet says only that Sn_CR clears once a command is accepted, "even though the command
// is still being processed" [DS Sn_CR]; WIZnet's ioLibrary, Linux's w5100 driver and
// Zephyr's all wait for SEND_OK before the next SEND, so no driver we know of relies on it.
// The model counts each one (`frames.tx_send_while_busy`) and, by `sendWhileBusy`:
// 'queue' (the default, **assumed**): the frame goes after the one on the line; 'ignore':
// the command is dropped (the data stays between Sn_TX_RD and Sn_TX_WR and leaves with the
// next SEND that is taken, as one frame with it).
//
// Faults on request (`faults`, the harness's `--w5500-faults`): every Nth read of a
// stored frame's 2-byte length header comes back corrupt, as a glitching bus gives (embassy
// PR #5706 met them at 40 MHz): alternately with bit 14 set (a length over the buffer) and
// as 0x0001 (under its own two bytes), counted in `frames.rx_header_corrupted`; every Nth
// SEND is refused (ignored as above), counted in `frames.tx_send_refused`. What the model does not do is logged once per kind by name and
// counted every time (`counts`): other sockets, TCP/UDP modes, reserved blocks and
// addresses, writes to read-only registers, frames cut by SCSn. A frame from the line over
// what the chip takes is dropped and counted (`frames.rx_dropped_too_long`), logged once.

/// Socket 0's MACRAW frame limit: 1514 bytes without FCS [DS Sn_MSSR, MACRAW MTU].
export const MAX_FRAME = 1514;
/// The shortest frame on the wire without FCS (padding included).
export const MIN_FRAME = 60;

const BLOCK_COMMON = 0;
const BLOCK_S0_REG = 1;
const BLOCK_S0_TX = 2;
const BLOCK_S0_RX = 3;

const SN_MR_MACRAW = 0x04;
const SN_MR_MFEN = 0x80;
const SN_MR_BCASTB = 0x40;
const SN_MR_MMB = 0x20;
const SN_MR_MIP6B = 0x10;
const SN_SR_CLOSED = 0x00;
const SN_SR_MACRAW = 0x42;
const SN_IR_RECV = 0x04;
const SN_IR_SEND_OK = 0x10;
const CMD_OPEN = 0x01;
const CMD_CLOSE = 0x10;
const CMD_SEND = 0x20;
const CMD_RECV = 0x40;

/// Common registers: name, offset, length, reset value (big-endian), read-only.
const COMMON = [
  ['MR', 0x00, 1, 0x00],
  ['GAR', 0x01, 4, 0],
  ['SUBR', 0x05, 4, 0],
  ['SHAR', 0x09, 6, 0],
  ['SIPR', 0x0f, 4, 0],
  ['INTLEVEL', 0x13, 2, 0],
  ['IR', 0x15, 1, 0],
  ['IMR', 0x16, 1, 0],
  ['SIR', 0x17, 1, 0, true],
  ['SIMR', 0x18, 1, 0],
  ['RTR', 0x19, 2, 0x07d0],
  ['RCR', 0x1b, 1, 0x08],
  ['PTIMER', 0x1c, 1, 0x28],
  ['PMAGIC', 0x1d, 1, 0],
  ['PHAR', 0x1e, 6, 0],
  ['PSID', 0x24, 2, 0],
  ['PMRU', 0x26, 2, 0xffff],
  ['UIPR', 0x28, 4, 0, true],
  ['UPORTR', 0x2c, 2, 0, true],
  ['PHYCFGR', 0x2e, 1, 0xb8],
  ['VERSIONR', 0x39, 1, 0x04, true],
];

/// Socket 0's registers, as COMMON.
const SOCKET = [
  ['Sn_MR', 0x00, 1, 0],
  ['Sn_CR', 0x01, 1, 0],
  ['Sn_IR', 0x02, 1, 0],
  ['Sn_SR', 0x03, 1, 0, true],
  ['Sn_PORT', 0x04, 2, 0],
  ['Sn_DHAR', 0x06, 6, 0xffffffffffff],
  ['Sn_DIPR', 0x0c, 4, 0],
  ['Sn_DPORT', 0x10, 2, 0],
  ['Sn_MSSR', 0x12, 2, 0],
  ['Sn_TOS', 0x15, 1, 0],
  ['Sn_TTL', 0x16, 1, 0x80],
  ['Sn_RXBUF_SIZE', 0x1e, 1, 0x02],
  ['Sn_TXBUF_SIZE', 0x1f, 1, 0x02],
  ['Sn_TX_FSR', 0x20, 2, 0x0800, true],
  ['Sn_TX_RD', 0x22, 2, 0, true],
  ['Sn_TX_WR', 0x24, 2, 0],
  ['Sn_RX_RSR', 0x26, 2, 0, true],
  ['Sn_RX_RD', 0x28, 2, 0],
  ['Sn_RX_WR', 0x2a, 2, 0, true],
  ['Sn_IMR', 0x2c, 1, 0xff],
  ['Sn_FRAG', 0x2d, 2, 0x4000],
  ['Sn_KPALVTR', 0x2f, 1, 0],
];

/// Each byte offset of a register table: [name, byte index within it, length, reset, ro].
function byteMap(table) {
  const map = new Map();
  for (const [name, offset, len, reset, ro = false] of table) {
    for (let i = 0; i < len; i++) map.set(offset + i, { name, i, len, reset, ro, base: offset });
  }
  return map;
}
const COMMON_BYTES = byteMap(COMMON);
const SOCKET_BYTES = byteMap(SOCKET);

/// The register file of one block: bytes by offset, reset values applied.
function resetBytes(table) {
  const bytes = new Uint8Array(0x40);
  for (const [, offset, len, reset] of table) {
    for (let i = 0; i < len; i++) {
      bytes[offset + i] = Number((BigInt(reset) >> BigInt(8 * (len - 1 - i))) & 0xffn);
    }
  }
  return bytes;
}

/// Time a frame of `len` bytes (no FCS) occupies a 100BASE-TX line: preamble and SFD (8),
/// the frame padded to 60, FCS (4) and the inter-packet gap (12 byte times), 80 ns a byte.
export function lineNs(len) {
  return (8 + Math.max(len, MIN_FRAME) + 4 + 12) * 80;
}

/// The W5500. `transmit(frame)` is called for each frame SEND puts on the line (the caller
/// calls `sent()` once it has left); `onInt(low)` whenever INTn changes; `log(line)` for
/// each new kind of thing the model does not do.
export class W5500 {
  constructor({ transmit = () => {}, onInt = () => {}, log = () => {}, sendWhileBusy = 'queue', faults = {} } = {}) {
    if (!['queue', 'ignore'].includes(sendWhileBusy)) throw new Error(`sendWhileBusy: ${sendWhileBusy}`);
    this.sendWhileBusy = sendWhileBusy;
    /// Every Nth event faulted: `header` (RX length header reads), `send` (SEND commands).
    this.faults = { header: faults.header ?? 0, send: faults.send ?? 0 };
    this.faultSeen = { header: 0, send: 0 };
    this.transmit = transmit;
    this.onInt = onInt;
    this.log = log;
    this.counts = {};
    this.logged = new Set();
    this.intLow = false;
    this.linkUp = true;
    this.inReset = false;
    this.frame = null;
    this.frames = {
      rx_stored: 0,
      rx_filtered: 0,
      rx_dropped_full: 0,
      rx_dropped_too_long: 0,
      rx_dropped_closed: 0,
      tx_sent: 0,
      tx_bad: 0,
      tx_send_while_busy: 0,
      tx_send_refused: 0,
      rx_header_corrupted: 0,
      rx_backlog_max_bytes: 0,
      rx_backlog_max_frames: 0,
    };
    this.powerOn();
  }

  /// Every register and buffer at its reset value.
  powerOn() {
    this.common = resetBytes(COMMON);
    this.socket = resetBytes(SOCKET);
    this.txBuf = new Uint8Array(16384);
    this.rxBuf = new Uint8Array(16384);
    // Internal pointers: what RECV released (RSR counts from it), SEND's cursor, and the
    // lengths of the frames stored and not yet released (for the backlog figures).
    this.rxReleased = 0;
    this.txSubmitted = 0;
    this.txQueue = [];
    this.rxFrames = [];
    this.setLinkBits();
    this.updateInt();
  }

  /// Counts one thing the host did that the model does not do (kind `name`, in `counts`)
  /// and logs it the first time (that kind with that detail).
  note(name, detail = '') {
    this.counts[name] = (this.counts[name] ?? 0) + 1;
    this.logOnce(name, detail, name);
  }

  /// Logs `detail` under `name` the first time, naming the counter that counts it.
  logOnce(name, detail, counter) {
    const key = `${name} ${detail}`;
    if (!this.logged.has(key) && this.logged.size < 200) {
      this.logged.add(key);
      this.log(`w5500: ${name}${detail ? ': ' + detail : ''} (counted: ${counter})`);
    }
  }

  // ---- pins ----

  /// The RST pin: while low the chip is held in reset (SPI ignored, INTn high); on the
  /// rising edge every register returns to its reset value.
  reset(low) {
    if (low === this.inReset) return;
    this.inReset = low;
    this.frame = null;
    if (!low) this.powerOn();
    this.updateInt();
  }

  /// The PHY's link (PHYCFGR.LNK), 100 Mbit/s full duplex when up.
  setLink(up) {
    this.linkUp = up;
    this.setLinkBits();
  }

  setLinkBits() {
    const cfg = this.common[0x2e] & 0xf8;
    this.common[0x2e] = cfg | (this.linkUp ? 0x07 : 0);
  }

  // ---- SPI ----

  /// SCSn falls: a frame begins.
  select() {
    if (this.inReset) return;
    this.frame = { n: 0, addr: 0, ctrl: 0, data: 0 };
  }

  /// SCSn rises: the frame ends; returns what it was ({ block, write, offset, data, header }
  /// or null: `header` says a read of the RX buffer began at a stored frame's length
  /// header), for the caller's figures. `midByte` says a byte was being clocked.
  deselect(midByte = false) {
    const f = this.frame;
    this.frame = null;
    if (!f) return null;
    if (midByte) this.note('spi_cut_mid_byte', 'SCSn rose while a byte was being clocked');
    if (f.n > 0 && f.n < 3) {
      this.note('spi_cut_header', `SCSn rose after ${f.n} of the 3 address/control bytes`);
      return null;
    }
    if (f.n === 0) return null;
    return { block: f.ctrl >> 3, write: !!(f.ctrl & 4), offset: f.start, data: f.data, header: !!f.header };
  }

  /// One byte clocked while SCSn is low: `mosi` in, the byte the chip shifts out returned.
  /// During the address and control phase the chip drives 0 (assumed; the host ignores it).
  exchange(mosi) {
    const f = this.frame;
    if (!f || this.inReset) return 0;
    if (f.n < 2) {
      f.addr = ((f.addr << 8) | mosi) & 0xffff;
      f.n++;
      return 0;
    }
    if (f.n === 2) {
      f.ctrl = mosi;
      f.start = f.addr;
      f.n++;
      const om = mosi & 3;
      f.fixed = om === 0 ? 0 : om === 3 ? 4 : om;
      f.header = (mosi >> 3) === BLOCK_S0_RX && !(mosi & 4) && this.isHeader(f.start);
      f.corrupt = f.header && this.faults.header ? this.headerFault() : null;
      return 0;
    }
    f.n++;
    f.data++;
    const block = f.ctrl >> 3;
    const write = (f.ctrl & 4) !== 0;
    let miso = 0;
    if (write) this.writeByte(block, f.addr, mosi);
    else miso = this.readByte(block, f.addr);
    if (f.corrupt && f.data <= 2) miso = f.corrupt[f.data - 1];
    f.addr = (f.addr + 1) & 0xffff;
    if (f.fixed && f.data === f.fixed) {
      // Fixed-length data mode: the next byte starts a new frame (SCSn stays low).
      this.frame = { n: 0, addr: 0, ctrl: 0, data: 0 };
    }
    return miso;
  }

  /// Whether RX buffer offset `offset` holds the length header of a frame stored and not
  /// yet released by RECV.
  isHeader(offset) {
    let at = this.rxReleased;
    for (const need of this.rxFrames) {
      if (((offset - at) & 0xffff) === 0) return true;
      at = (at + need) & 0xffff;
    }
    return false;
  }

  /// A header read begins: every `faults.header`th comes back corrupt (the two bytes the
  /// host reads instead), or null.
  headerFault() {
    if (++this.faultSeen.header % this.faults.header !== 0) return null;
    const k = ++this.frames.rx_header_corrupted;
    return k % 2 === 1 ? [0x40 | 0x05, 0xea] : [0x00, 0x01];
  }

  readByte(block, offset) {
    switch (block) {
      case BLOCK_COMMON:
        return this.readRegister(this.common, COMMON_BYTES, offset, 'common');
      case BLOCK_S0_REG:
        return this.readRegister(this.socket, SOCKET_BYTES, offset, 'socket 0');
      case BLOCK_S0_TX:
        return this.txBuf[offset & (this.txSize() - 1)];
      case BLOCK_S0_RX:
        return this.rxBuf[offset & (this.rxSize() - 1)];
      default:
        this.unmodelledBlock(block);
        return 0;
    }
  }

  writeByte(block, offset, value) {
    switch (block) {
      case BLOCK_COMMON:
        this.writeCommon(offset, value);
        return;
      case BLOCK_S0_REG:
        this.writeSocket(offset, value);
        return;
      case BLOCK_S0_TX:
        this.txBuf[offset & (this.txSize() - 1)] = value;
        return;
      case BLOCK_S0_RX:
        this.rxBuf[offset & (this.rxSize() - 1)] = value;
        return;
      default:
        this.unmodelledBlock(block);
    }
  }

  unmodelledBlock(block) {
    if ((block & 3) === 0 && block !== 0) this.note('spi_reserved_block', `BSB ${block}`);
    else this.note('spi_other_socket', `socket ${block >> 2} (BSB ${block}): only socket 0 is modelled`);
  }

  readRegister(bytes, map, offset, where) {
    const r = map.get(offset);
    if (!r) {
      this.note('reg_unknown_read', `${where} 0x${offset.toString(16).padStart(4, '0')}`);
      return 0;
    }
    if (where === 'socket 0') this.refreshSocket(r.name);
    if (where === 'common' && r.name === 'SIR') this.common[0x17] = this.socket[0x02] ? 1 : 0;
    return bytes[offset];
  }

  /// The derived socket registers, up to date before a read.
  refreshSocket(name) {
    const s = this.socket;
    if (name === 'Sn_TX_FSR') put16(s, 0x20, this.txFree());
    else if (name === 'Sn_RX_RSR') put16(s, 0x26, this.rxReceived());
  }

  writeCommon(offset, value) {
    const r = COMMON_BYTES.get(offset);
    if (!r) {
      this.note('reg_unknown_write', `common 0x${offset.toString(16).padStart(4, '0')}`);
      return;
    }
    if (r.ro) {
      this.note('reg_read_only_write', r.name);
      return;
    }
    switch (r.name) {
      case 'MR':
        if (value & 0x80) {
          this.powerOn();
          return;
        }
        if (value & 0x3a) this.note('mode_unmodelled', `MR 0x${value.toString(16)} (WOL, ping block, PPPoE, force ARP)`);
        this.common[0] = value;
        return;
      case 'IR':
        this.common[0x15] &= ~value;
        this.updateInt();
        return;
      case 'PHYCFGR':
        this.common[0x2e] = (value & 0xf8) | (this.common[0x2e] & 0x07);
        return;
      case 'INTLEVEL':
        if (value) this.note('intlevel_unmodelled', 'INTLEVEL set: the assert wait is not applied');
        break;
      default:
        break;
    }
    this.common[offset] = value;
    if (r.name === 'IMR' || r.name === 'SIMR') this.updateInt();
  }

  writeSocket(offset, value) {
    const r = SOCKET_BYTES.get(offset);
    if (!r) {
      this.note('reg_unknown_write', `socket 0 0x${offset.toString(16).padStart(4, '0')}`);
      return;
    }
    if (r.ro) {
      this.note('reg_read_only_write', r.name);
      return;
    }
    switch (r.name) {
      case 'Sn_CR':
        this.command(value);
        return;
      case 'Sn_IR':
        this.socket[0x02] &= ~value;
        this.updateInt();
        return;
      case 'Sn_RXBUF_SIZE':
      case 'Sn_TXBUF_SIZE':
        if (![0, 1, 2, 4, 8, 16].includes(value)) {
          this.note('buffer_size_invalid', `${r.name} ${value} (1, 2, 4, 8 or 16 KB)`);
          return;
        }
        break;
      default:
        break;
    }
    this.socket[offset] = value;
    if (r.name === 'Sn_IMR') this.updateInt();
  }

  // ---- socket 0 ----

  rxSize() {
    return Math.max(1, this.socket[0x1e]) * 1024;
  }

  txSize() {
    return Math.max(1, this.socket[0x1f]) * 1024;
  }

  /// Bytes stored and not yet released by RECV.
  rxReceived() {
    return (get16(this.socket, 0x2a) - this.rxReleased) & 0xffff;
  }

  /// Free bytes of the TX buffer: its size less what is written and not yet sent.
  txFree() {
    const used = (get16(this.socket, 0x24) - get16(this.socket, 0x22)) & 0xffff;
    return Math.max(0, this.txSize() - used);
  }

  isMacraw() {
    return this.socket[0x03] === SN_SR_MACRAW;
  }

  command(cmd) {
    const s = this.socket;
    switch (cmd) {
      case CMD_OPEN:
        if ((s[0] & 0x0f) !== SN_MR_MACRAW) {
          this.note('socket_mode_unmodelled', `Sn_MR 0x${s[0].toString(16)}: only MACRAW is modelled`);
          return;
        }
        s[0x03] = SN_SR_MACRAW;
        for (const o of [0x22, 0x24, 0x28, 0x2a]) put16(s, o, 0);
        this.rxReleased = 0;
        this.txSubmitted = 0;
        this.txQueue = [];
        this.rxFrames = [];
        return;
      case CMD_CLOSE:
        s[0x03] = SN_SR_CLOSED;
        return;
      case CMD_SEND:
        this.send();
        return;
      case CMD_RECV:
        this.recv();
        return;
      default:
        this.note('command_unmodelled', `Sn_CR 0x${cmd.toString(16)}`);
    }
  }

  /// SEND: the bytes from SEND's cursor to Sn_TX_WR leave as one frame (see the file's
  /// notes for a SEND while the last frame is still on the line, and refused ones).
  send() {
    if (!this.isMacraw()) {
      this.note('send_closed', 'SEND on a socket that is not open in MACRAW');
      return;
    }
    if (this.faults.send && ++this.faultSeen.send % this.faults.send === 0) {
      this.frames.tx_send_refused++;
      return;
    }
    if (this.txQueue.length > 0) {
      this.frames.tx_send_while_busy++;
      if (this.sendWhileBusy === 'ignore') return;
    }
    const wr = get16(this.socket, 0x24);
    const len = (wr - this.txSubmitted) & 0xffff;
    const start = this.txSubmitted;
    this.txSubmitted = wr;
    if (len === 0) return;
    if (len > this.txSize() || len > MAX_FRAME) {
      this.frames.tx_bad++;
      this.note('tx_frame_too_long', `${len} bytes between Sn_TX_RD and Sn_TX_WR (at most ${MAX_FRAME}, the buffer ${this.txSize()})`);
      this.txQueue.push({ wr, frame: null });
      if (this.txQueue.length === 1) this.sent();
      return;
    }
    const frame = new Uint8Array(len);
    const mask = this.txSize() - 1;
    for (let i = 0; i < len; i++) frame[i] = this.txBuf[(start + i) & mask];
    this.txQueue.push({ wr, frame });
    if (this.txQueue.length === 1) this.transmit(frame);
  }

  /// The frame on the line has left: Sn_TX_RD moves up to where its SEND ended, SEND_OK is
  /// raised, and the next queued frame goes.
  sent() {
    const done = this.txQueue.shift();
    if (!done) return;
    put16(this.socket, 0x22, done.wr);
    if (done.frame) {
      this.frames.tx_sent++;
      this.raise(SN_IR_SEND_OK);
    }
    const next = this.txQueue[0];
    if (next) {
      if (next.frame) this.transmit(next.frame);
      else this.sent();
    }
  }

  /// RECV: the host's Sn_RX_RD is what it has read; RSR counts from it.
  recv() {
    const rd = get16(this.socket, 0x28);
    const released = (rd - this.rxReleased) & 0xffff;
    if (released > this.rxReceived()) {
      this.note('rx_rd_past_wr', `Sn_RX_RD 0x${rd.toString(16)} is past Sn_RX_WR 0x${get16(this.socket, 0x2a).toString(16)}`);
    }
    this.rxReleased = rd;
    // The frames wholly released leave the backlog.
    let left = released;
    while (this.rxFrames.length && left >= this.rxFrames[0]) left -= this.rxFrames.shift();
  }

  /// A whole frame (no FCS) has arrived from the line. Returns what the chip did with it:
  /// 'stored', 'filtered', 'full', 'too_long' or 'closed'.
  receive(bytes) {
    const f = this.frames;
    if (this.inReset || !this.isMacraw()) {
      f.rx_dropped_closed++;
      return 'closed';
    }
    if (bytes.length > MAX_FRAME) {
      f.rx_dropped_too_long++;
      this.logOnce('rx_frame_too_long', `a ${bytes.length}-byte frame from the line, dropped (at most ${MAX_FRAME})`, 'rx_dropped_too_long');
      return 'too_long';
    }
    if (!this.accepts(bytes)) {
      f.rx_filtered++;
      return 'filtered';
    }
    const len = Math.max(bytes.length, MIN_FRAME);
    const need = len + 2;
    const size = this.rxSize();
    if (this.rxReceived() + need > size) {
      f.rx_dropped_full++;
      return 'full';
    }
    const mask = size - 1;
    let wr = get16(this.socket, 0x2a);
    const put = (b) => {
      this.rxBuf[wr & mask] = b;
      wr = (wr + 1) & 0xffff;
    };
    put(need >> 8);
    put(need & 0xff);
    for (let i = 0; i < len; i++) put(i < bytes.length ? bytes[i] : 0);
    put16(this.socket, 0x2a, wr);
    f.rx_stored++;
    this.rxFrames.push(need);
    f.rx_backlog_max_bytes = Math.max(f.rx_backlog_max_bytes, this.rxReceived());
    f.rx_backlog_max_frames = Math.max(f.rx_backlog_max_frames, this.rxFrames.length);
    this.raise(SN_IR_RECV);
    return 'stored';
  }

  /// Frames stored in the RX buffer and not yet released by RECV.
  rxBacklog() {
    return { frames: this.rxFrames.length, bytes: this.rxReceived() };
  }

  /// Socket 0's MAC filter [DS Sn_MR]: with MFEN, unicast to SHAR, broadcast and multicast;
  /// BCASTB, MMB (IPv4 multicast) and MIP6B (IPv6) block their kinds.
  accepts(frame) {
    if (frame.length < 14) return false;
    const mr = this.socket[0];
    const broadcast = frame.subarray(0, 6).every((b) => b === 0xff);
    const multicast = !broadcast && (frame[0] & 1) === 1;
    const type = (frame[12] << 8) | frame[13];
    if (broadcast && mr & SN_MR_BCASTB) return false;
    if (multicast && type === 0x0800 && mr & SN_MR_MMB) return false;
    if (type === 0x86dd && mr & SN_MR_MIP6B) return false;
    if (!(mr & SN_MR_MFEN) || broadcast || multicast) return true;
    for (let i = 0; i < 6; i++) if (frame[i] !== this.common[0x09 + i]) return false;
    return true;
  }

  /// An Sn_IR event: set where Sn_IMR has it [DS Sn_IMR].
  raise(bit) {
    if (this.socket[0x2c] & bit) {
      this.socket[0x02] |= bit;
      this.updateInt();
    }
  }

  updateInt() {
    const c = this.common;
    const sir = this.socket[0x02] ? 1 : 0;
    c[0x17] = sir;
    const low = !this.inReset && ((c[0x15] & c[0x16]) !== 0 || (sir & c[0x18]) !== 0);
    if (low !== this.intLow) {
      this.intLow = low;
      this.onInt(low);
    }
  }
}

function get16(bytes, offset) {
  return (bytes[offset] << 8) | bytes[offset + 1];
}

function put16(bytes, offset, value) {
  bytes[offset] = (value >> 8) & 0xff;
  bytes[offset + 1] = value & 0xff;
}
