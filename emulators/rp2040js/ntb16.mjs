// NCM transfer blocks, 16-bit format (NTB16; USB CDC NCM 1.0 §3), as Linux's cdc_ncm driver
// (drivers/net/usb/cdc_ncm.c) builds them toward a device and reads them from one, and the
// malformed blocks the fault tests send.
//
// A block: the NTH16 header (12 bytes: "NCMH", wHeaderLength 12, wSequence, wBlockLength,
// wNdpIndex), then one or more NDP16 datagram pointer tables ("NCM0" without CRC, wLength,
// wNextNdpIndex, then (wDatagramIndex, wDatagramLength) pairs ending with a null pair), and
// the datagrams (Ethernet frames without FCS) where the pointers say.
//
// Building (cdc_ncm_fill_tx_frame with cdc_ncm_ndp and cdc_ncm_align_tail): the NTH16; the
// NDP16 at the next multiple of wNdpOutAlignment, `maxNdpSize` bytes reserved for it (8 + 4 ×
// (wNtbOutMaxDatagrams + 1)); each datagram at the next offset that is `remainder` past a
// multiple of wNdpOutDivisor, where Linux's remainder is (wNdpOutPayloadRemainder − 14) mod
// the divisor (cdc_ncm_fix_modulus: the IP header after the Ethernet one lands aligned);
// then, unless the driver sends ZLPs, a block longer than `minTxPkt` is padded with zeros to
// `txMax`, and a shorter one whose length is a whole number of packets gets one zero byte
// (a short packet ends the transfer: no ZLP needed).
//
// Reading (cdc_ncm_rx_verify_nth16, cdc_ncm_rx_verify_ndp16, cdc_ncm_rx_fixup): every field
// checked as Linux checks it, and what Linux drops is counted here by reason:
// - the whole block: shorter than NTH16 + NDP16, a wrong NTH16 signature, wBlockLength over
//   the host's rx_max, an NDP16 that does not fit the block or is shorter than 16 bytes, or
//   whose entries do not: nothing delivered (usbnet counts an rx error);
// - an NDP16 with a wrong signature, or whose first entry is null ("empty NTB"): its
//   datagrams skipped, the next NDP16 read;
// - a datagram past the end of the block, longer than rx_max or shorter than an Ethernet
//   header: it and the rest of its table skipped;
// - NDP16 chains: at most 50 more tables followed (Linux's loop guard), so a table pointing
//   back at itself ends there.
// wSequence is checked against the last block's + 1 and a glitch counted (Linux only logs it).

export const NTH16_SIGN = 0x484d434e; // "NCMH"
export const NDP16_NOCRC_SIGN = 0x304d434e; // "NCM0"
export const NDP16_CRC_SIGN = 0x314d434e; // "NCM1"
export const NTH16_LEN = 12;
export const NDP16_LEN = 8;
export const DPE16_LEN = 4;
/// USB_CDC_NCM_NDP16_LENGTH_MIN: a table with one entry and its null entry.
export const NDP16_LENGTH_MIN = 16;
/// An Ethernet header: a datagram shorter than this is dropped.
export const ETH_HLEN = 14;
/// cdc_ncm_rx_fixup's guard on NDP chains.
export const NDP_LOOP_LIMIT = 50;
/// CDC_NCM_DPT_DATAGRAMS_MAX: datagrams in one table, at most.
const DPT_DATAGRAMS_MAX = 40;
/// CDC_NCM_NTB_DEF_SIZE_RX and _TX, CDC_NCM_NTB_MAX_SIZE_RX and _TX.
const NTB_DEF_SIZE = 16384;
const NTB_MAX_SIZE = 32768;
/// USB_CDC_NCM_NTB_MIN_IN_SIZE (include/uapi/linux/usb/cdc.h).
const NTB_MIN_IN_SIZE = 2048;
/// CDC_NCM_MIN_DATAGRAM_SIZE, CDC_NCM_MIN_TX_PKT.
const MIN_DATAGRAM_SIZE = 1514;
const MIN_TX_PKT = 512;

/// Linux's block sizes and transmit layout for a device's GET_NTB_PARAMETERS answer `p` (see
/// `parseNtbParameters`) and its bulk OUT max packet size (cdc_ncm_init, cdc_ncm_setup,
/// cdc_ncm_update_rxtx_max with its cdc_ncm_check_rx_max and cdc_ncm_check_tx_max,
/// cdc_ncm_fix_modulus; NCM, not MBIM; no FLAG_SEND_ZLP; include/linux/usb/cdc_ncm.h's
/// limits). `rxMax` is also the size of each read URB (usbnet's rx_urb_size).
export function linuxNtbSizes(p, maxpacket) {
  let maxDatagrams = p.wNtbOutMaxDatagrams;
  if (maxDatagrams === 0 || maxDatagrams > DPT_DATAGRAMS_MAX) maxDatagrams = DPT_DATAGRAMS_MAX;
  const maxNdpSize = NDP16_LEN + (maxDatagrams + 1) * DPE16_LEN;
  // rx_max: the default (16 384) or the device's largest, at least USB_CDC_NCM_NTB_MIN_IN_SIZE.
  const rxCeiling = Math.max(Math.min(NTB_MAX_SIZE, p.dwNtbInMaxSize), NTB_MIN_IN_SIZE);
  const rxMax = Math.min(Math.max(Math.min(NTB_DEF_SIZE, p.dwNtbInMaxSize), NTB_MIN_IN_SIZE), rxCeiling);
  // tx_max: the default or the device's largest, room for one datagram at least.
  const txCeiling = Math.min(NTB_MAX_SIZE, p.dwNtbOutMaxSize);
  const txFloor = Math.min(MIN_DATAGRAM_SIZE + maxNdpSize + NTH16_LEN, txCeiling);
  let txMax = Math.min(Math.max(Math.min(NTB_DEF_SIZE, p.dwNtbOutMaxSize), txFloor), txCeiling);
  if (txMax !== p.dwNtbOutMaxSize && txMax % maxpacket === 0) txMax++;
  const pow2 = (v) => v >= 4 && (v & (v - 1)) === 0 && v < txMax;
  const ndpModulus = pow2(p.wNdpOutAlignment) ? p.wNdpOutAlignment : 4;
  const modulus = pow2(p.wNdpOutDivisor) ? p.wNdpOutDivisor : 4;
  const given = p.wNdpOutPayloadRemainder < modulus ? p.wNdpOutPayloadRemainder : 0;
  const remainder = (((given - ETH_HLEN) % modulus) + modulus) % modulus;
  // min_tx_pkt: never pad more than 3 full packets (CDC_NCM_MIN_TX_PKT at least).
  const minTxPkt = Math.min(Math.max(txMax - 3 * maxpacket, MIN_TX_PKT), txMax);
  return { rxMax, txMax, maxDatagrams, maxNdpSize, ndpModulus, modulus, remainder, minTxPkt, maxpacket };
}

/// The 28-byte answer to GET_NTB_PARAMETERS (CDC NCM 1.0 §6.2.1, Table 6-3).
export function parseNtbParameters(b) {
  if (b.length < 28) return null;
  const v = new DataView(b.buffer, b.byteOffset, b.length);
  return {
    wLength: v.getUint16(0, true),
    bmNtbFormatsSupported: v.getUint16(2, true),
    dwNtbInMaxSize: v.getUint32(4, true),
    wNdpInDivisor: v.getUint16(8, true),
    wNdpInPayloadRemainder: v.getUint16(10, true),
    wNdpInAlignment: v.getUint16(12, true),
    dwNtbOutMaxSize: v.getUint32(16, true),
    wNdpOutDivisor: v.getUint16(20, true),
    wNdpOutPayloadRemainder: v.getUint16(22, true),
    wNdpOutAlignment: v.getUint16(24, true),
    wNtbOutMaxDatagrams: v.getUint16(26, true),
  };
}

const align = (len, modulus, remainder) => Math.ceil(len / modulus) * modulus - len + remainder;

/// One block carrying `frames` (at most `tx.maxDatagrams`, all fitting), sequence number
/// `seq`, as cdc_ncm_fill_tx_frame builds it with the parameters `tx` (linuxNtbSizes).
/// Returns null if the first frame does not fit (Linux drops it: tx_dropped).
export function buildNtb16(frames, seq, tx) {
  const out = new Uint8Array(tx.txMax);
  const v = new DataView(out.buffer);
  v.setUint32(0, NTH16_SIGN, true);
  v.setUint16(4, NTH16_LEN, true);
  v.setUint16(6, seq & 0xffff, true);
  let len = NTH16_LEN;
  len += Math.min(align(len, tx.ndpModulus, 0), tx.txMax - len);
  const ndp = len;
  const first = frames[0];
  if (!first || tx.txMax - len - (first.length + tx.modulus + tx.remainder) < tx.maxNdpSize) return null;
  v.setUint16(10, ndp, true);
  v.setUint32(ndp, NDP16_NOCRC_SIGN, true);
  v.setUint16(ndp + 4, NDP16_LEN + DPE16_LEN, true);
  len += tx.maxNdpSize;
  let n = 0;
  for (const frame of frames.slice(0, tx.maxDatagrams)) {
    const at = len + Math.min(align(len, tx.modulus, tx.remainder), tx.txMax - len);
    if (at + frame.length > tx.txMax) break;
    const ndpLen = v.getUint16(ndp + 4, true);
    const index = (ndpLen - NDP16_LEN) / DPE16_LEN - 1;
    v.setUint16(ndp + NDP16_LEN + 4 * index, at, true);
    v.setUint16(ndp + NDP16_LEN + 4 * index + 2, frame.length, true);
    v.setUint16(ndp + 4, ndpLen + DPE16_LEN, true);
    out.set(frame, at);
    len = at + frame.length;
    n++;
  }
  if (n === 0) return null;
  if (len > tx.minTxPkt) len = tx.txMax;
  else if (len < tx.txMax && len % tx.maxpacket === 0) len += 1;
  v.setUint16(8, len, true);
  return { bytes: out.subarray(0, len), datagrams: n };
}

/// What reading a block gave: its datagrams, and why anything in it was dropped.
export class NtbReader {
  /// `rxMax`: the host's largest block (rx_max).
  constructor(rxMax) {
    this.rxMax = rxMax;
    this.seq = 0;
    this.counts = {
      blocks: 0,
      blocks_bad: 0,
      datagrams: 0,
      too_short: 0,
      bad_nth_signature: 0,
      block_length_over_rx_max: 0,
      bad_ndp_offset: 0,
      bad_ndp_length: 0,
      bad_ndp_entries: 0,
      bad_ndp_signature: 0,
      empty_ndp: 0,
      bad_datagrams: 0,
      ndp_loops_cut: 0,
      sequence_glitches: 0,
    };
  }

  /// The datagrams of block `b` (each a copy), or null if the whole block is refused.
  read(b) {
    const c = this.counts;
    c.blocks++;
    const v = new DataView(b.buffer, b.byteOffset, b.length);
    const refuse = (reason) => {
      c[reason]++;
      c.blocks_bad++;
      return null;
    };
    if (b.length < NTH16_LEN + NDP16_LEN) return refuse('too_short');
    if (v.getUint32(0, true) !== NTH16_SIGN) return refuse('bad_nth_signature');
    if (v.getUint16(8, true) > this.rxMax) return refuse('block_length_over_rx_max');
    const seq = v.getUint16(6, true);
    if ((this.seq + 1) % 0x10000 !== seq && (this.seq !== 0 || seq !== 0)) c.sequence_glitches++;
    this.seq = seq;
    const datagrams = [];
    let ndp = v.getUint16(10, true);
    let loops = NDP_LOOP_LIMIT;
    for (;;) {
      if (ndp + NDP16_LEN > b.length) return refuse('bad_ndp_offset');
      const ndpLen = v.getUint16(ndp + 4, true);
      if (ndpLen < NDP16_LENGTH_MIN) return refuse('bad_ndp_length');
      const entries = Math.floor((ndpLen - NDP16_LEN) / DPE16_LEN) - 1;
      // Linux's check (sizeof(ndp16) + n × sizeof(dpe16) against the block's length).
      if (NDP16_LEN + entries * DPE16_LEN > b.length) return refuse('bad_ndp_entries');
      if (v.getUint32(ndp, true) !== NDP16_NOCRC_SIGN) c.bad_ndp_signature++;
      else this.entries(b, v, ndp, entries, datagrams);
      const next = v.getUint16(ndp + 6, true);
      if (next === 0) break;
      if (loops-- === 0) {
        c.ndp_loops_cut++;
        break;
      }
      ndp = next;
    }
    c.datagrams += datagrams.length;
    return datagrams;
  }

  /// The datagrams of one table (its entries up to the first null one).
  entries(b, v, ndp, entries, datagrams) {
    const c = this.counts;
    for (let x = 0; x < entries; x++) {
      const at = ndp + NDP16_LEN + x * DPE16_LEN;
      // An entry past the block ends the table (Linux reads it from the URB's buffer).
      if (at + DPE16_LEN > b.length) {
        c.bad_datagrams++;
        return;
      }
      const offset = v.getUint16(at, true);
      const len = v.getUint16(at + 2, true);
      if (offset === 0 || len === 0) {
        if (x === 0) c.empty_ndp++;
        return;
      }
      if (offset + len > b.length || len > this.rxMax || len < ETH_HLEN) {
        c.bad_datagrams++;
        return;
      }
      datagrams.push(b.slice(offset, offset + len));
    }
  }
}

/// The malformed blocks a faulty host can send, each carrying `frame`:
/// - `bad-signature`: the NTH16's signature wrong;
/// - `past-block`: the datagram's length runs past the end of the block;
/// - `ndp-past-block`: wNdpIndex points past the end of the block;
/// - `ndp-loop`: the NDP16's wNextNdpIndex points at itself (its datagram is valid);
/// - `too-long`: a valid block whose datagram is longer than an Ethernet frame (1600 bytes).
export const MALFORMED = ['bad-signature', 'past-block', 'ndp-past-block', 'ndp-loop', 'too-long'];

/// Block `kind` (see MALFORMED) carrying `frame`, built as Linux would with `tx` and then
/// broken.
export function malformedNtb16(kind, frame, seq, tx) {
  const body = kind === 'too-long' ? padTo(frame, 1600) : frame;
  const built = buildNtb16([body], seq, { ...tx, txMax: Math.max(tx.txMax, 2048), minTxPkt: Infinity });
  const b = Uint8Array.from(built.bytes);
  const v = new DataView(b.buffer);
  const ndp = v.getUint16(10, true);
  switch (kind) {
    case 'bad-signature':
      v.setUint32(0, 0x484d434f, true);
      break;
    case 'past-block':
      v.setUint16(ndp + NDP16_LEN + 2, b.length, true);
      break;
    case 'ndp-past-block':
      v.setUint16(10, b.length + 4, true);
      break;
    case 'ndp-loop':
      v.setUint16(ndp + 6, ndp, true);
      break;
    case 'too-long':
      break;
    default:
      throw new Error(`unknown malformed block ${kind}`);
  }
  return b;
}

function padTo(frame, n) {
  const out = new Uint8Array(n);
  out.set(frame.subarray(0, n));
  return out;
}
