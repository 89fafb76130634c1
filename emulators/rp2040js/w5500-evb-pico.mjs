// The W5500-EVB-Pico's W5500 (w5500.mjs) on the emulated RP2040's pins and clock, and its
// Ethernet port joined to `linklab emu line --frames` (whole frames over a unix socket).
//
// Wiring (the board's schematic, as examples/boards/w5500-evb-pico/src/main.rs uses it):
// SPI0 (SCK GP18, MOSI GP19, MISO GP16), SCSn on GP17 (a plain SIO output), INTn on GP21
// (an input; the board pulls it up), RSTn on GP20.
//
// Timing, all on the harness's one emulated clock:
// - SPI: the PL022 master's timing (pl022.mjs): each byte is answered 8 SCK periods after
//   it starts, at the clock the firmware set (clk_peri / (CPSDVSR x (1 + SCR))), and the
//   next starts after the gap the PL022 leaves between words (1.5 SCK periods at SPH = 0,
//   0.5 at SPH = 1; `spiGapSck` overrides it). The chip handles the byte when its last bit
//   is in (`W5500.exchange`).
// - The line, 100BASE-TX full duplex, each way on its own: a frame takes
//   `lineNs(len)` (preamble, padding to 60, FCS and the inter-packet gap at 80 ns a byte).
//   A frame from the socket starts when it is read (between slices of the harness's loop,
//   so within one slice of emulated time) or when the previous one has ended, and the
//   W5500 has it when its last bit is in. A frame SEND puts out leaves at once (command
//   latency assumed 0) and reaches the socket when its last bit is out.
// - Frames the socket brings faster than the line carries them queue here (the egress
//   queue of the switch in front of the board); past MAX_QUEUED the harness stops reading
//   the socket, so the host's own queue holds the rest (and drops, counted by the host).
//
// Figures (`status()`): the W5500's frame counts, the SPI's transactions, bytes and time by
// kind, the gaps between transactions, and each frame on the line in a pcap (nanosecond
// timestamps in emulated time, the frame's last bit on the W5500's port) for `--pcap`.

import { connect } from 'node:net';
import { openSync, writeSync, closeSync } from 'node:fs';
import { fail } from './machine.mjs';
import { messages } from './soft-phy-line.mjs';
import { W5500, lineNs } from './w5500.mjs';
import { Pl022Timing } from './pl022.mjs';

const CS_PIN = 17;
const RST_PIN = 20;
const INT_PIN = 21;
/// Frames waiting for the line before the harness stops reading the socket (assumed: the
/// egress queue of the switch port in front of the board, 256 frames; a burst shorter than
/// this reaches the W5500 back to back at line rate).
const MAX_QUEUED = 256;
/// The inter-packet gap's part of `lineNs`: 12 byte times at 80 ns.
const IPG_NS = 960;
/// Upper bounds (ns) of the buckets of the time-between-transactions histogram; the last
/// bucket takes the rest.
export const GAP_BUCKETS_NS = [250, 500, 1000, 2000, 4000, 8000, 16000, 32000, 64000, 128000, 256000, 512000, 1e6];

const COMMON_NAMES = new Map([
  [0x00, 'MR'], [0x09, 'SHAR'], [0x15, 'IR'], [0x16, 'IMR'], [0x17, 'SIR'], [0x18, 'SIMR'],
  [0x2e, 'PHYCFGR'], [0x39, 'VERSIONR'],
]);
const SOCKET_NAMES = new Map([
  [0x00, 'Sn_MR'], [0x01, 'Sn_CR'], [0x02, 'Sn_IR'], [0x03, 'Sn_SR'], [0x1e, 'Sn_RXBUF_SIZE'],
  [0x1f, 'Sn_TXBUF_SIZE'], [0x20, 'Sn_TX_FSR'], [0x22, 'Sn_TX_RD'], [0x24, 'Sn_TX_WR'],
  [0x26, 'Sn_RX_RSR'], [0x28, 'Sn_RX_RD'], [0x2a, 'Sn_RX_WR'], [0x2c, 'Sn_IMR'],
]);

/// The name a transaction is counted under: the register (or buffer) and the direction.
export function transactionKind(t) {
  const dir = t.write ? 'write' : 'read';
  switch (t.block) {
    case 0:
      return `${COMMON_NAMES.get(t.offset) ?? 'common 0x' + t.offset.toString(16)} ${dir}`;
    case 1:
      return `${SOCKET_NAMES.get(t.offset) ?? 'Sn 0x' + t.offset.toString(16)} ${dir}`;
    case 2:
      return `TX buffer ${dir}`;
    case 3:
      // embassy-net-wiznet reads each frame's 2-byte length header on its own, then the
      // frame; linklab-w5500 reads both under one SCSn.
      if (t.header && !t.write) return t.data === 2 ? 'RX length read' : 'RX length and frame read';
      return `RX buffer ${dir}`;
    default:
      return `block ${t.block} ${dir}`;
  }
}

/// How many of a transaction's data bytes are frame bytes (to or from the socket's buffers,
/// less a length header read with them).
function frameBytes(t) {
  if (t.block === 2 && t.write) return t.data;
  if (t.block === 3 && !t.write) return t.header ? Math.max(0, t.data - 2) : t.data;
  return 0;
}

/// A pcap file with nanosecond timestamps (Ethernet link type), written as frames pass.
export class Pcap {
  constructor(path) {
    this.fd = openSync(path, 'w');
    const h = Buffer.alloc(24);
    h.writeUInt32LE(0xa1b23c4d, 0);
    h.writeUInt16LE(2, 4);
    h.writeUInt16LE(4, 6);
    h.writeUInt32LE(65535, 16);
    h.writeUInt32LE(1, 20);
    writeSync(this.fd, h);
  }
  write(ns, frame) {
    const r = Buffer.alloc(16);
    const sec = Math.floor(ns / 1e9);
    r.writeUInt32LE(sec, 0);
    r.writeUInt32LE(Math.round(ns - sec * 1e9), 4);
    r.writeUInt32LE(frame.length, 8);
    r.writeUInt32LE(frame.length, 12);
    writeSync(this.fd, Buffer.concat([r, Buffer.from(frame)]));
  }
  close() {
    closeSync(this.fd);
  }
}

/// The SPI side's figures: transactions by kind, bytes, selected time, gaps.
export class SpiFigures {
  constructor() {
    this.transactions = 0;
    this.bytes = 0;
    this.frameBytes = 0;
    this.selectedNs = 0;
    this.clockedNs = 0;
    this.frameClockedNs = 0;
    this.gaps = 0;
    this.gapNs = 0;
    this.gapHist = new Array(GAP_BUCKETS_NS.length + 1).fill(0);
    this.kinds = {};
    this.lastDeselect = null;
    this.selectedAt = null;
  }
  select(now) {
    if (this.lastDeselect !== null) {
      const gap = now - this.lastDeselect;
      this.gaps++;
      this.gapNs += gap;
      let b = GAP_BUCKETS_NS.findIndex((limit) => gap < limit);
      if (b < 0) b = GAP_BUCKETS_NS.length;
      this.gapHist[b]++;
    }
    this.selectedAt = now;
  }
  deselect(now, t, byteNs) {
    if (this.selectedAt === null) return;
    const selected = now - this.selectedAt;
    this.selectedAt = null;
    this.lastDeselect = now;
    this.selectedNs += selected;
    if (!t) return;
    const bytes = 3 + t.data;
    this.transactions++;
    this.bytes += bytes;
    this.clockedNs += bytes * byteNs;
    const frame = frameBytes(t);
    this.frameBytes += frame;
    this.frameClockedNs += frame * byteNs;
    const kind = transactionKind(t);
    const k = (this.kinds[kind] ??= { count: 0, bytes: 0, selected_ns: 0 });
    k.count++;
    k.bytes += bytes;
    k.selected_ns += selected;
  }
  status() {
    return {
      spi_transactions: this.transactions,
      spi_bytes: this.bytes,
      spi_frame_bytes: this.frameBytes,
      spi_selected_ns: Math.round(this.selectedNs),
      spi_clocked_ns: Math.round(this.clockedNs),
      spi_frame_clocked_ns: Math.round(this.frameClockedNs),
      spi_gaps: this.gaps,
      spi_gap_ns: Math.round(this.gapNs),
      spi_gap_hist: this.gapHist,
      spi_gap_buckets_ns: GAP_BUCKETS_NS,
      spi_kinds: this.kinds,
    };
  }
}

/// Joins a W5500 to `mcu`'s SPI0 and GP17/GP20/GP21 and its port to the frame socket at
/// `socketPath`; calls `ready(device)` once connected, with the device for `machine.run`.
/// `options`: `pcap` (a path or null), `spiGapSck` (SCK periods between SPI words instead of
/// the PL022's, or null), `sendWhileBusy` and `faults` (w5500.mjs's `W5500` options).
export function attachW5500(mcu, socketPath, options, ready) {
  const { clock } = mcu;
  const spi = mcu.spi[0];
  const pcap = options.pcap ? new Pcap(options.pcap) : null;
  const timing = new Pl022Timing(spi, options.spiGapSck ?? null);
  const figures = new SpiFigures();
  const line = { rxQueued: 0, rxFrames: 0, txFrames: 0, rxFree: 0, txFree: 0 };
  const socket = connect(socketPath);
  let paused = false;

  const intPin = mcu.gpio[INT_PIN];
  const chip = new W5500({
    sendWhileBusy: options.sendWhileBusy,
    faults: options.faults,
    onInt: (low) => intPin.setInputValue(!low),
    log: (l) => console.error(`harness: ${l}`),
    transmit: (frame) => {
      // The frame leaves now, or after the one before it and its gap.
      const start = Math.max(clock.nanos, line.txFree);
      const end = start + lineNs(frame.length) - IPG_NS;
      line.txFree = end + IPG_NS;
      clock.createAlarm(() => {
        const msg = Buffer.alloc(4 + frame.length);
        msg.writeUInt32BE(frame.length, 0);
        msg.set(frame, 4);
        socket.write(msg);
        pcap?.write(clock.nanos, frame);
        line.txFrames++;
        chip.sent();
      }).schedule(end - clock.nanos);
    },
  });
  // The board's pull-up holds INTn high until the chip drives it.
  intPin.setInputValue(true);

  // SPI: one byte in flight at a time (the PL022 calls onTransmit when its shifter is free).
  let selected = false;
  let inFlight = null;
  let byteNs = 0;
  const spiAlarm = clock.createAlarm(() => {
    const { mosi, cs } = inFlight;
    inFlight = null;
    const miso = cs && selected ? chip.exchange(mosi) : 0;
    spi.completeTransmit(miso);
  });
  spi.onTransmit = (mosi) => {
    const inNs = timing.next(clock.nanos);
    byteNs = timing.slotNs() || 1;
    inFlight = { mosi, cs: selected };
    spiAlarm.schedule(inNs);
  };
  const csPin = mcu.gpio[CS_PIN];
  csPin.addListener((value) => {
    const low = value === 0; // GPIOPinState.Low
    if (low === selected) return;
    selected = low;
    if (low) {
      figures.select(clock.nanos);
      chip.select();
    } else {
      const t = chip.deselect(inFlight !== null);
      figures.deselect(clock.nanos, t, byteNs);
    }
  });
  mcu.gpio[RST_PIN].addListener((value) => chip.reset(value === 0));

  // Frames from the socket onto the line toward the chip.
  function fromSocket(frame) {
    const start = Math.max(clock.nanos, line.rxFree);
    const end = start + lineNs(frame.length) - IPG_NS;
    line.rxFree = end + IPG_NS;
    line.rxQueued++;
    clock.createAlarm(() => {
      line.rxQueued--;
      line.rxFrames++;
      pcap?.write(clock.nanos, frame);
      chip.receive(frame);
    }).schedule(end - clock.nanos);
    if (line.rxQueued >= MAX_QUEUED && !paused) {
      paused = true;
      socket.pause();
    }
  }
  socket.on('data', messages(fromSocket));
  socket.on('error', (e) => fail(`the line's socket: ${e.message}`));
  socket.on('close', () => {
    console.log('harness: the line closed the socket');
    pcap?.close();
    process.exit(0);
  });
  const device = {
    endOfSlice() {
      if (paused && line.rxQueued < MAX_QUEUED / 2) {
        paused = false;
        socket.resume();
      }
    },
    status: () => ({
      board: 'w5500-evb-pico',
      spi_hz: spi.clockFrequency,
      ...timing.status(),
      line_rx_frames: line.rxFrames,
      line_tx_frames: line.txFrames,
      line_rx_queued: line.rxQueued,
      w5500_int_low: chip.intLow,
      w5500_rx_backlog_frames: chip.rxBacklog().frames,
      w5500_rx_backlog_bytes: chip.rxBacklog().bytes,
      ...Object.fromEntries(Object.entries(chip.frames).map(([k, v]) => [`w5500_${k}`, v])),
      w5500_unmodelled: chip.counts,
      ...figures.status(),
    }),
    close: () => {
      pcap?.close();
      socket.end();
    },
  };
  socket.on('connect', () => ready(device));
}
