// Full-speed USB on the wire: how long each packet and each transaction takes, from the bits
// really sent (USB 2.0 chapter 8). Pure functions and constants; the bus (usb-host.mjs) adds
// them up on the harness's clock.
//
// A packet is SYNC (8 bits), PID (8), its fields, CRC, then EOP (SE0 two bit times and J one:
// 3). Everything from SYNC to the CRC is NRZI-coded with a 0 stuffed after six 1s in a row
// (USB 2.0 §7.1.9): the stuffing depends on the bytes, so a packet of 0xFF costs a sixth more
// than one of zeros. Bits go LSB first; the CRC fields are sent as CRC-5/USB and CRC-16/USB
// compute them (reflected, inverted), low bit first.
//
// A transaction (§8.5) is token, a turnaround, data, a turnaround, handshake, then the host's
// own delay before it sends the next token. The turnarounds are the time a full-speed agent
// takes to answer (§7.1.18.1: at most 6.5 bit times for a device, the host likewise); the host
// delay is the host controller's, which the spec leaves open (§5.11.3 "Host_Delay"): see
// DEFAULT_TIMING and docs/usb.md for the value taken and what it moves.

/// One full-speed bit time, ns (12 Mbit/s).
export const BIT_NS = 1000 / 12;
/// One frame, ns (§8.4.3.1: a SOF every 1.000 ms).
export const FRAME_NS = 1_000_000;
/// Bit times in one frame.
export const FRAME_BITS = 12_000;

/// The PIDs (§8.3.1), as the byte on the wire (check nibble included).
export const PID = Object.freeze({
  OUT: 0xe1,
  IN: 0x69,
  SOF: 0xa5,
  SETUP: 0x2d,
  DATA0: 0xc3,
  DATA1: 0x4b,
  ACK: 0xd2,
  NAK: 0x5a,
  STALL: 0x1e,
});

/// The timing choices of the bus, in bit times:
/// - `turnaroundBits`: between a packet's EOP and the answer (§7.1.18.1: ≤ 6.5 for a full-speed
///   device); taken at the spec's bound.
/// - `hostDelayBits`: after a transaction's last packet before the host's next token (the
///   spec's Host_Delay, §5.11.3, left to the controller). Calibrated: 60 bit times (5 µs) puts
///   17 bulk transactions of 64 bytes in a frame (any value from 43 to 79 does), the 1 088
///   kB/s the fastest double-buffered full-speed devices measure on Linux hosts (docs/usb.md,
///   "The host's delay"); 0 to 9 gives the 19 the spec allows.
/// - `eofGuardBits`: no transaction may still be on the bus this close to the next SOF (the
///   hubs' EOF1 point, §11.2.5.1: 32 bit times).
export const DEFAULT_TIMING = Object.freeze({
  turnaroundBits: 6.5,
  hostDelayBits: 60,
  eofGuardBits: 32,
});

/// CRC-5/USB of `nbits` bits of `value`, LSB first (a token's 7-bit address and 4-bit
/// endpoint, or a SOF's 11-bit frame number).
export function crc5(value, nbits) {
  let crc = 0x1f;
  for (let i = 0; i < nbits; i++) {
    const bit = (value >> i) & 1;
    crc = (crc & 1) ^ bit ? (crc >> 1) ^ 0x14 : crc >> 1;
  }
  return crc ^ 0x1f;
}

/// CRC-16/USB of `bytes` (a data packet's payload).
export function crc16(bytes) {
  let crc = 0xffff;
  for (let i = 0; i < bytes.length; i++) {
    crc ^= bytes[i];
    for (let b = 0; b < 8; b++) crc = crc & 1 ? (crc >>> 1) ^ 0xa001 : crc >>> 1;
  }
  return crc ^ 0xffff;
}

/// Counts the stuffed bits of a packet while its bits are fed LSB first: the run of 1s starts
/// with SYNC's last bit (SYNC is 0000 0001 on the wire before NRZI).
class Stuffer {
  constructor() {
    this.run = 1;
    this.stuffed = 0;
  }
  bits(value, n) {
    for (let i = 0; i < n; i++) {
      if ((value >> i) & 1) {
        if (++this.run === 6) {
          this.stuffed++;
          this.run = 0;
        }
      } else {
        this.run = 0;
      }
    }
  }
}

/// SYNC, PID and EOP: what every packet carries besides its fields.
const FRAMING_BITS = 8 + 8 + 3;

/// Bits of a token packet (IN, OUT, SETUP) to `addr`/`ep`: 35 plus its stuffing.
export function tokenBits(pid, addr, ep) {
  const s = new Stuffer();
  s.bits(pid, 8);
  const field = (addr & 0x7f) | ((ep & 0xf) << 7);
  s.bits(field, 11);
  s.bits(crc5(field, 11), 5);
  return FRAMING_BITS + 16 + s.stuffed;
}

/// Bits of a SOF packet for frame `frame` (11 bits).
export function sofBits(frame) {
  const s = new Stuffer();
  s.bits(PID.SOF, 8);
  s.bits(frame & 0x7ff, 11);
  s.bits(crc5(frame & 0x7ff, 11), 5);
  return FRAMING_BITS + 16 + s.stuffed;
}

/// Bits of a data packet carrying `bytes`: 35 + 8n plus their stuffing.
export function dataBits(pid, bytes) {
  const s = new Stuffer();
  s.bits(pid, 8);
  for (let i = 0; i < bytes.length; i++) s.bits(bytes[i], 8);
  s.bits(crc16(bytes), 16);
  return FRAMING_BITS + 8 * bytes.length + 16 + s.stuffed;
}

/// Bits of a handshake packet (ACK, NAK, STALL): 19, none of them stuffed.
export function handshakeBits(pid) {
  const s = new Stuffer();
  s.bits(pid, 8);
  return FRAMING_BITS + s.stuffed;
}

/// The most bits a data packet of `n` bytes can take (a stuffed bit after every six from the
/// PID to the CRC): what the frame-end guard reserves for an answer whose bytes the host cannot
/// know yet (an IN's).
export function dataBitsWorst(n) {
  return FRAMING_BITS + Math.ceil(((8 + 8 * n + 16) * 7) / 6) - 8;
}

/// Bit times of one transaction:
/// - `token`: the token packet's bits;
/// - `data`: the data packet's bits, or null when there is none (an IN answered by NAK or
///   STALL, or no answer at all);
/// - `handshake`: the handshake's bits, or null (an IN's data whose toggle the host rejects
///   is still ACKed; a timeout has none);
/// and the timing's turnarounds and host delay.
export function transactionBits({ token, data, handshake }, timing = DEFAULT_TIMING) {
  let bits = token + timing.turnaroundBits;
  if (data !== null) bits += data;
  if (handshake !== null) {
    if (data !== null) bits += timing.turnaroundBits;
    bits += handshake;
  }
  return bits + timing.hostDelayBits;
}

/// The same in ns.
export function transactionNs(parts, timing = DEFAULT_TIMING) {
  return transactionBits(parts, timing) * BIT_NS;
}

/// The USB 2.0 §5.11.3 budget of one full-speed non-isochronous transaction with `n` data
/// bytes and worst-case stuffing, without Host_Delay, in ns: 9107 + 83.54 × floor(3.167 +
/// 1.1667 × 8 × n). The figure the timing is checked against (59.2 µs for 64 bytes).
export function specBudgetNs(n) {
  return 9107 + 83.54 * Math.floor(3.167 + 1.1667 * 8 * n);
}
