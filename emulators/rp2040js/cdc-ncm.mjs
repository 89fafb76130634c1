// Linux's cdc_ncm driver on usbnet (drivers/net/usb/cdc_ncm.c, usbnet.c, cdc_ether.c's
// usbnet_cdc_update_filter; Linux 6.6) as a class driver of usb-linux.mjs: what the kernel
// does on the bus between its network interface and an NCM device. Frames come from the
// interface (`transmit(frame)`) and go to it (`net.receive(frame, ns)`).
//
// Bind (cdc_ncm_bind_common, cdc_ncm_init, cdc_ncm_setup), on the communication interface
// (class 2, subclass 0x0d, alternate setting 0):
// - the functional descriptors: Union (its data interface), Ethernet Networking (iMACAddress,
//   wMaxSegmentSize), NCM (bmNetworkCapabilities); without the last two, no bind;
// - SET_INTERFACE(data, 1) then SET_INTERFACE(data, 0) (the "toggle" that resets the data
//   interface), GET_NTB_PARAMETERS (required), SET_CRC_MODE only if the NCM descriptor says
//   CRC mode (bit 4), SET_NTB_FORMAT only if NTB32 is supported, 10 ms (usleep_range(10000,
//   20000): its low end, assumed), SET_INTERFACE(data, 1);
// - the MAC address: the iMACAddress string (12 hex digits) becomes the interface's;
// - rx_max and tx_max from the parameters (ntb16.mjs linuxNtbSizes); SET_NTB_INPUT_SIZE only
//   if rx_max differs from the device's dwNtbInMaxSize; GET/SET_MAX_DATAGRAM_SIZE only if
//   the NCM descriptor says so (bit 3);
// - carrier off (usbnet_link_change(dev, 0, 0)): FLAG_LINK_INTR, the carrier comes only with
//   the device's NETWORK_CONNECTION notification.
// Open (usbnet_open, the interface brought up; taken as at once after bind, assumed: the TAP
// is up when the device appears): the status URB on the interrupt endpoint (usbnet's
// init_status: period max(bInterval, 3) frames, which the host controller rounds down to a
// power of two: 128 for 255), and the receive filter (usbnet_cdc_update_filter:
// SET_ETHERNET_PACKET_FILTER directed | broadcast | all-multicast, the last for the IPv6
// groups every Linux interface joins, assumed; a device may refuse it, usbnet ignores that).
//
// Carrier on (NETWORK_CONNECTION wValue 1): read URBs of rx_max bytes, 4 of them (usbnet's
// rx_qlen at full speed, usbnet_update_max_qlen), each resubmitted as it completes; up to 4
// transmit URBs in flight (tx_qlen), the interface's queue stopped while 4 are. Each frame is
// one block (cdc_ncm_fill_tx_frame sends at once when a block holds wNtbOutMaxDatagrams).
// Carrier off: read URBs killed, frames to send dropped (the kernel's noop qdisc; counted).
//
// A USB reset (usb_reset_device): cdc_ncm has no pre_reset/post_reset, so the core unbinds it
// before the reset (URBs killed, the interface's queue dropped and counted) and binds it
// again after, from the start. A disconnect unbinds it.

import { buildNtb16, linuxNtbSizes, NtbReader, parseNtbParameters, malformedNtb16 } from './ntb16.mjs';
import { sequence } from './usb-linux.mjs';

const CDC_CLASS = 2;
const NCM_SUBCLASS = 0x0d;
const CS_INTERFACE = 0x24;
const UNION = 0x06;
const ETHERNET = 0x0f;
const NCM = 0x1a;
const USB_RT_CLASS_INTERFACE_IN = 0xa1;
const USB_RT_CLASS_INTERFACE_OUT = 0x21;
const GET_NTB_PARAMETERS = 0x80;
const SET_NTB_FORMAT = 0x84;
const SET_NTB_INPUT_SIZE = 0x86;
const GET_MAX_DATAGRAM_SIZE = 0x87;
const SET_MAX_DATAGRAM_SIZE = 0x88;
const SET_CRC_MODE = 0x8a;
const SET_ETHERNET_PACKET_FILTER = 0x43;
const SET_INTERFACE = 0x0b;
const CLEAR_FEATURE = 0x01;
const NETWORK_CONNECTION = 0x00;
const NCAP_MAX_DATAGRAM_SIZE = 1 << 3;
const NCAP_CRC_MODE = 1 << 4;
const NTB32_SUPPORTED = 1 << 1;
const DT_STRING = 3;
/// DIRECTED | BROADCAST | ALL_MULTICAST (USB_CDC_PACKET_TYPE_*).
const PACKET_FILTER = 0x04 | 0x08 | 0x02;

/// usbnet's URBs each way at full speed (usbnet_update_max_qlen).
export const USBNET_QLEN = 4;
/// Frames the interface holds beyond the URBs before the harness stops taking more from the
/// TAP (the TAP's own queue, in the real kernel, holds the rest).
export const QUEUE_FRAMES = 64;
/// The wait between GET_NTB_PARAMETERS and SET_INTERFACE(data, 1) (usleep_range's low end).
const SETTLE_NS = 10e6;

/// Linux's cdc_ncm for one device. `net`: `receive(frame, ns)` (a frame for the host's
/// interface), `carrier(on)` (the link changed), `log(line)`.
export class CdcNcm {
  constructor(net) {
    this.name = 'cdc_ncm';
    this.net = net;
    this.core = null;
    this.bound = false;
    this.carrier = false;
    this.mac = null;
    this.sizes = null;
    this.parameters = null;
    this.queue = [];
    this.txInFlight = 0;
    this.readUrbs = [];
    this.seq = 0;
    this.reader = null;
    this.generation = 0;
    this.counts = {
      binds: 0,
      bind_failures: 0,
      notifications: 0,
      carrier_on: 0,
      carrier_off: 0,
      tx_frames: 0,
      tx_ntbs: 0,
      tx_ntb_bytes: 0,
      tx_dropped_no_carrier: 0,
      tx_dropped_too_long: 0,
      tx_dropped_unbound: 0,
      tx_ntbs_failed: 0,
      tx_frames_lost: 0,
      rx_urbs: 0,
      rx_bytes: 0,
      rx_frames: 0,
      rx_errors: 0,
      rx_bytes_lost: 0,
      rx_halts: 0,
      injected: 0,
      injected_sent: 0,
    };
    /// Malformed blocks sent by kind, and how many the device took (the OUT transfer ended).
    this.injected = {};
  }

  matches(intf) {
    return intf.cls === CDC_CLASS && intf.subclass === NCM_SUBCLASS && intf.alt === 0;
  }

  /// cdc_ncm_bind: see the file's comment.
  probe(core, intf, interfaces, done) {
    const find = (subtype, min) => intf.extra.find((d) => d[1] === CS_INTERFACE && d[2] === subtype && d.length >= min);
    const union = find(UNION, 5);
    const ether = find(ETHERNET, 13);
    const func = find(NCM, 6);
    if (!union || union[3] !== intf.number) return this.failed(done, 'no CDC Union naming this interface');
    if (!ether || !func) return this.failed(done, 'NCM or ECM functional descriptors missing');
    const dataNumber = union[4];
    const data = interfaces.find((i) => i.number === dataNumber && i.alt === 1);
    const epIn = data?.endpoints.find((e) => (e.address & 0x80) !== 0 && (e.attributes & 3) === 2);
    const epOut = data?.endpoints.find((e) => (e.address & 0x80) === 0 && (e.attributes & 3) === 2);
    const epStatus = intf.endpoints.find((e) => (e.address & 0x80) !== 0 && (e.attributes & 3) === 3);
    if (!epIn || !epOut || !epStatus) return this.failed(done, 'failed to collect endpoints');
    this.core = core;
    this.controlInterface = intf.number;
    this.dataInterface = dataNumber;
    this.capabilities = func[5];
    this.maxSegment = ether[8] | (ether[9] << 8);
    this.endpoints = { epIn, epOut, epStatus };
    const generation = ++this.generation;
    const step = (fn) => (next) => (generation === this.generation ? fn(next) : undefined);
    const control = (type, request, value, dataOrLength) => (next) =>
      core.control(type, request, value, this.controlInterface, dataOrLength, next);
    const steps = [
      step((next) => core.control(0x01, SET_INTERFACE, 1, dataNumber, null, () => next(null))),
      step((next) => core.control(0x01, SET_INTERFACE, 0, dataNumber, null, next)),
      step((next) =>
        control(USB_RT_CLASS_INTERFACE_IN, GET_NTB_PARAMETERS, 0, 28)((e, b) => {
          this.parameters = e ? null : parseNtbParameters(b);
          next(e ?? (this.parameters ? null : new Error('GET_NTB_PARAMETERS: short answer')));
        }),
      ),
      step((next) => {
        if (!(this.capabilities & NCAP_CRC_MODE)) return next(null);
        control(USB_RT_CLASS_INTERFACE_OUT, SET_CRC_MODE, 0, null)(() => next(null));
      }),
      step((next) => {
        if (!(this.parameters.bmNtbFormatsSupported & NTB32_SUPPORTED)) return next(null);
        control(USB_RT_CLASS_INTERFACE_OUT, SET_NTB_FORMAT, 0, null)(() => next(null));
      }),
      step((next) => core.bus.after(SETTLE_NS, () => next(null))),
      step((next) => core.control(0x01, SET_INTERFACE, 1, dataNumber, null, next)),
      step((next) => this.readMac(core, ether[3], next)),
      step((next) => this.setup(next)),
    ];
    sequence(steps, (e) => {
      if (generation !== this.generation) return;
      if (e) return this.failed(done, e.message);
      this.counts.binds++;
      this.bound = true;
      this.open();
      done(null);
    });
  }

  failed(done, why) {
    this.counts.bind_failures++;
    done(new Error(why));
  }

  /// usbnet_get_ethernet_addr: the iMACAddress string, 12 hex digits.
  readMac(core, index, next) {
    core.control(0x80, 6, (DT_STRING << 8) | index, 0x0409, 255, (e, b) => {
      if (e) return next(e);
      let s = '';
      for (let i = 2; i + 1 < b.length; i += 2) s += String.fromCharCode(b[i] | (b[i + 1] << 8));
      if (!/^[0-9a-fA-F]{12}$/.test(s)) return next(new Error(`bad MAC string "${s}"`));
      this.mac = s.match(/../g).join(':').toLowerCase();
      next(null);
    });
  }

  /// cdc_ncm_setup: the block sizes, SET_NTB_INPUT_SIZE and the datagram size if needed.
  setup(next) {
    const p = this.parameters;
    this.sizes = linuxNtbSizes(p, this.endpoints.epOut.mps);
    // The reader's counts outlive a rebind (Linux's are per bind; these are the model's).
    if (!this.reader) this.reader = new NtbReader(this.sizes.rxMax);
    this.reader.rxMax = this.sizes.rxMax;
    this.reader.seq = 0;
    const control = (type, request, dataOrLength, then) =>
      this.core.control(type, request, 0, this.controlInterface, dataOrLength, then);
    const datagram = () => {
      if (!(this.capabilities & NCAP_MAX_DATAGRAM_SIZE)) return next(null);
      control(USB_RT_CLASS_INTERFACE_IN, GET_MAX_DATAGRAM_SIZE, 2, (e, b) => {
        const want = Math.min(Math.max(this.maxSegment, 1514), 8192);
        if (e || (b[0] | (b[1] << 8)) === want) return next(null);
        control(USB_RT_CLASS_INTERFACE_OUT, SET_MAX_DATAGRAM_SIZE, Uint8Array.of(want & 0xff, want >> 8), () => next(null));
      });
    };
    if (this.sizes.rxMax === p.dwNtbInMaxSize) return datagram();
    const size = new Uint8Array(4);
    new DataView(size.buffer).setUint32(0, this.sizes.rxMax, true);
    control(USB_RT_CLASS_INTERFACE_OUT, SET_NTB_INPUT_SIZE, size, () => datagram());
  }

  /// usbnet_open: the status URB and the receive filter; the carrier waits for the device.
  open() {
    const bus = this.core.bus;
    const { epIn, epOut, epStatus } = this.endpoints;
    this.in = bus.pipe({ ep: epIn.address & 0xf, dir: 'in', type: 'bulk', mps: epIn.mps });
    this.out = bus.pipe({ ep: epOut.address & 0xf, dir: 'out', type: 'bulk', mps: epOut.mps });
    const period = Math.max(epStatus.interval, 3);
    const interval = 2 ** Math.floor(Math.log2(Math.min(period, 255)));
    this.status = bus.pipe({ ep: epStatus.address & 0xf, dir: 'in', type: 'interrupt', mps: epStatus.mps, interval });
    this.submitStatus();
    this.core.control(USB_RT_CLASS_INTERFACE_OUT, SET_ETHERNET_PACKET_FILTER, PACKET_FILTER, this.controlInterface, null, () => {});
  }

  submitStatus() {
    this.status.submit({ length: this.status.mps, onDone: (u) => this.statusDone(u) });
  }

  /// cdc_ncm_status: NETWORK_CONNECTION sets the carrier; the URB goes back at once.
  statusDone(urb) {
    if (urb.status === 'cancelled' || !this.bound) return;
    if (urb.status === 'ok' && urb.actual >= 8) {
      const d = urb.data;
      this.counts.notifications++;
      if (d[0] === 0xa1 && d[1] === NETWORK_CONNECTION) this.setCarrier((d[2] | (d[3] << 8)) !== 0);
    }
    this.submitStatus();
  }

  /// usbnet_link_change: carrier on submits the read URBs, off kills them and drops what
  /// waits to be sent.
  setCarrier(on) {
    if (on === this.carrier) return;
    this.carrier = on;
    this.net.carrier?.(on);
    if (on) {
      this.counts.carrier_on++;
      while (this.readUrbs.length < USBNET_QLEN) this.submitRead();
      this.pump();
      return;
    }
    this.counts.carrier_off++;
    this.in?.cancelAll();
    this.dropQueue('tx_dropped_no_carrier');
  }

  submitRead() {
    const urb = this.in.submit({ length: this.sizes.rxMax, onDone: (u) => this.readDone(u) });
    this.readUrbs.push(urb);
  }

  /// rx_complete, then rx_process: the block's datagrams to the interface; the URB again.
  readDone(urb) {
    this.readUrbs = this.readUrbs.filter((u) => u !== urb);
    if (urb.status === 'cancelled') {
      this.counts.rx_bytes_lost += urb.actual;
      return;
    }
    if (urb.status === 'stall') {
      // EVENT_RX_HALT: usb_clear_halt, then the reads again.
      this.counts.rx_halts++;
      this.counts.rx_errors++;
      this.clearHalt(this.in, this.endpoints.epIn.address);
      return;
    }
    if (urb.status === 'ok') {
      this.counts.rx_urbs++;
      this.counts.rx_bytes += urb.actual;
      const frames = this.reader.read(urb.data.subarray(0, urb.actual));
      if (frames === null) this.counts.rx_errors++;
      else {
        for (const f of frames) {
          this.counts.rx_frames++;
          this.net.receive(f, urb.doneNs);
        }
      }
    }
    if (this.bound && this.carrier) this.submitRead();
  }

  clearHalt(pipe, address) {
    this.core.control(0x02, CLEAR_FEATURE, 0, address, null, () => {
      pipe.halted = false;
      pipe.toggle = 0;
      if (this.bound && this.carrier) while (this.readUrbs.length < USBNET_QLEN) this.submitRead();
    });
  }

  /// Frames and malformed blocks waiting for a transmit URB.
  get queued() {
    return this.queue.length;
  }

  /// The interface's frames not yet sent nor dropped: queued, or in a URB on the bus. With
  /// the counts, every frame handed to `transmit` is accounted for: tx_frames +
  /// tx_frames_lost + tx_dropped_* + pending.
  pendingFrames() {
    const inUrbs = this.out ? this.out.urbs.filter((u) => !u.item.kind).length : 0;
    return this.queue.filter((i) => !i.kind).length + inUrbs;
  }

  /// A frame from the interface (usbnet_start_xmit through cdc_ncm_tx_fixup).
  transmit(frame) {
    if (!this.bound) {
      this.counts.tx_dropped_unbound++;
      return;
    }
    if (!this.carrier) {
      this.counts.tx_dropped_no_carrier++;
      return;
    }
    this.queue.push({ frame });
    this.pump();
  }

  /// Sends a malformed block of `kind` (ntb16.mjs MALFORMED) carrying `frame`, in turn with
  /// the frames: a faulty host, for the fault tests.
  inject(kind, frame) {
    this.counts.injected++;
    if (!this.bound || !this.carrier) return false;
    this.queue.push({ kind, frame });
    this.pump();
    return true;
  }

  /// The queued frames to transmit URBs while fewer than 4 are in flight.
  pump() {
    while (this.bound && this.carrier && this.txInFlight < USBNET_QLEN && this.queue.length > 0) {
      const item = this.queue.shift();
      const seq = this.seq;
      let bytes;
      if (item.kind) bytes = malformedNtb16(item.kind, item.frame, seq, this.sizes);
      else {
        const built = buildNtb16([item.frame], seq, this.sizes);
        if (!built) {
          this.counts.tx_dropped_too_long++;
          continue;
        }
        bytes = built.bytes;
      }
      this.seq = (seq + 1) & 0xffff;
      this.txInFlight++;
      this.out.submit({ data: bytes, zeroPacket: false, item, onDone: (u) => this.writeDone(u) });
    }
  }

  /// tx_complete: the URB is counted and the queue moves on.
  writeDone(urb) {
    this.txInFlight--;
    const { item } = urb;
    this.net.sent?.(urb.actual, urb.status, item.kind ?? null, urb.doneNs ?? this.core.bus.clock.nanos);
    if (urb.status === 'ok') {
      this.counts.tx_ntbs++;
      this.counts.tx_ntb_bytes += urb.actual;
      if (item.kind) {
        this.counts.injected_sent++;
        this.injected[item.kind] = (this.injected[item.kind] ?? 0) + 1;
      } else this.counts.tx_frames++;
    } else {
      this.counts.tx_ntbs_failed++;
      if (!item.kind) this.counts.tx_frames_lost++;
      if (urb.status === 'stall') {
        this.clearHalt(this.out, this.endpoints.epOut.address);
      }
    }
    this.pump();
  }

  dropQueue(counter) {
    for (const item of this.queue) if (!item.kind) this.counts[counter]++;
    this.queue = [];
  }

  /// cdc_ncm_unbind (with usbnet_disconnect): every URB killed, the queue dropped.
  unbind() {
    this.generation++;
    this.bound = false;
    this.carrier = false;
    this.net.carrier?.(false);
    for (const p of [this.status, this.in, this.out]) if (p) this.core.bus.removePipe(p);
    this.status = this.in = this.out = null;
    this.readUrbs = [];
    this.txInFlight = 0;
    this.dropQueue('tx_dropped_unbound');
  }

  disconnect() {
    this.unbind();
  }

  preReset() {
    this.unbind();
  }

  /// The core rebinds the driver after the reset: bind from the start.
  postReset() {
    const core = this.core;
    this.probe(core, core.interfaces.find((i) => this.matches(i)), core.interfaces, (e) => {
      if (e) this.net.log?.(`cdc_ncm: bind after reset failed: ${e.message}`);
    });
  }
}
