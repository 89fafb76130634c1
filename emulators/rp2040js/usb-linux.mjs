// The host's USB core as Linux runs it for a full-speed device on a root port
// (drivers/usb/core/hub.c hub_port_connect, hub_port_init, usb_new_device; message.c), over
// the bus of usb-host.mjs: the requests in Linux's order with Linux's waits, then the class
// drivers bound to the interfaces they match. Class drivers (cdc-acm.mjs; CDC-NCM later) are
// objects with:
// - `name`, `matches(intf)`: whether it takes interface descriptor `intf`;
// - `probe(core, intf, config, done)`: binds (its requests through `core.control`), then
//   `done(error)`;
// - `disconnect()`, `preReset()`, `postReset()`: the device left, is about to be reset, was
//   reset and re-enumerated (usb_reset_device).
//
// The sequence (Linux 6.x, "new scheme" enumeration for a full-speed device):
// 1. connect: the port must stay connected 100 ms (hub_port_debounce_be_stable,
//    HUB_DEBOUNCE_STABLE);
// 2. hub_port_init: a port reset (the root port drives SE0 for 50 ms, USB 2.0 §7.1.7.5 TDRSTR;
//    Linux checks after HUB_ROOT_RESET_TIME, 60 ms, then waits 10 + 40 ms of recovery),
//    GET_DESCRIPTOR(device, 64) at address 0, a second port reset, SET_ADDRESS, 10 ms to
//    settle, GET_DESCRIPTOR(device, 18), and the BOS (5 bytes, then all) for bcdUSB ≥ 2.01;
// 3. usb_new_device: the configuration (9 bytes, then wTotalLength), the strings (language
//    ids, then product, manufacturer and serial, 255 bytes each), the device qualifier (a
//    full-speed device behind a high-speed root hub, check_highspeed), SET_CONFIGURATION(1);
// 4. each interface's driver probes.
// Between two requests Linux's own time is taken as 0 (assumed: microseconds on a PC, against
// the milliseconds of the waits above).

/// The address the core gives the device (Linux numbers devices on a bus from 1, the root hub;
/// the first device gets 2).
export const DEVICE_ADDRESS = 2;

const MS = 1e6;
const DEBOUNCE_MS = 100;
const RESET_DRIVE_MS = 50;
const RESET_WAIT_MS = 60;
const RESET_RECOVERY_MS = 50;
const SET_ADDRESS_SETTLE_MS = 10;

const GET_DESCRIPTOR = 6;
const SET_ADDRESS = 5;
const SET_CONFIGURATION = 9;
const DT_DEVICE = 1;
const DT_CONFIG = 2;
const DT_STRING = 3;
const DT_INTERFACE = 4;
const DT_ENDPOINT = 5;
const DT_DEVICE_QUALIFIER = 6;
const DT_BOS = 15;

/// A SETUP packet's 8 bytes.
export function setupPacket(bmRequestType, bRequest, wValue, wIndex, wLength) {
  return Uint8Array.of(
    bmRequestType,
    bRequest,
    wValue & 0xff,
    wValue >> 8,
    wIndex & 0xff,
    wIndex >> 8,
    wLength & 0xff,
    wLength >> 8,
  );
}

/// Runs `steps` (each `(next) => …`, calling `next(error)`) one after the other, then
/// `done(error)`; the first error stops it.
export function sequence(steps, done) {
  let i = 0;
  const next = (error) => {
    if (error) return done(error);
    if (i >= steps.length) return done(null);
    steps[i++](next);
  };
  next(null);
}

/// A configuration descriptor's interfaces: `[{ number, alt, cls, subclass, protocol,
/// endpoints: [{ address, attributes, mps, interval }], extra: [descriptor bytes] }]`.
export function parseConfiguration(bytes) {
  const interfaces = [];
  let current = null;
  for (let i = 0; i + 2 <= bytes.length; ) {
    const len = bytes[i];
    if (len < 2 || i + len > bytes.length) break;
    const type = bytes[i + 1];
    const d = bytes.subarray(i, i + len);
    if (type === DT_INTERFACE && len >= 9) {
      current = { number: d[2], alt: d[3], cls: d[5], subclass: d[6], protocol: d[7], endpoints: [], extra: [] };
      interfaces.push(current);
    } else if (type === DT_ENDPOINT && len >= 7 && current) {
      current.endpoints.push({ address: d[2], attributes: d[3], mps: d[4] | (d[5] << 8), interval: d[6] });
    } else if (current && type !== DT_CONFIG) {
      current.extra.push(d);
    }
    i += len;
  }
  return interfaces;
}

/// Linux's USB core for the one device on the root port of `bus` (a UsbBus), binding
/// `drivers`. `log(line)` gets what the kernel would log.
export class LinuxUsbCore {
  constructor(bus, { drivers = [], log = () => {} } = {}) {
    this.bus = bus;
    this.drivers = drivers;
    this.log = log;
    this.state = 'detached';
    this.ep0 = null;
    this.deviceDescriptor = null;
    this.configDescriptor = null;
    this.interfaces = [];
    this.bound = [];
    this.requests = [];
    this.counts = { enumerations: 0, enumeration_failures: 0, resets: 0, control_errors: 0 };
    this.generation = 0;
  }

  /// The device's pull-up came on (true) or went off (false).
  pullup(on) {
    if (on) this.connect();
    else this.disconnect('the device left the bus');
  }

  connect() {
    const generation = ++this.generation;
    this.state = 'debouncing';
    this.bus.after(DEBOUNCE_MS * MS, () => {
      if (generation !== this.generation) return;
      this.enumerate(generation);
    });
  }

  disconnect(why) {
    this.generation++;
    if (this.state === 'detached') return;
    this.log(`usb: disconnect (${why})`);
    for (const d of this.bound) d.disconnect();
    this.bound = [];
    for (const p of [...this.bus.pipes]) this.bus.removePipe(p);
    this.bus.disablePort();
    this.bus.deviceAddress = 0;
    this.ep0 = null;
    this.state = 'detached';
  }

  /// One control request on endpoint 0, as usb_control_msg: `data` (OUT) or `length` (IN);
  /// `done(error, bytes)` with the IN data. Requests queue on the pipe in order.
  control(bmRequestType, bRequest, wValue, wIndex, dataOrLength, done) {
    const dirIn = (bmRequestType & 0x80) !== 0;
    const length = dirIn ? dataOrLength : dataOrLength?.length ?? 0;
    const setup = setupPacket(bmRequestType, bRequest, wValue, wIndex, length);
    this.requests.push({ ns: this.bus.clock.nanos, setup: [...setup] });
    this.bus.control(this.ep0, setup, dirIn ? null : dataOrLength, (urb) => {
      if (urb.status !== 'ok') {
        this.counts.control_errors++;
        done(new Error(`control request ${bRequest} (0x${bmRequestType.toString(16)}): ${urb.status}`));
        return;
      }
      done(null, dirIn ? urb.data.subarray(0, urb.actual) : null);
    });
  }

  getDescriptor(type, index, length, langid, done) {
    this.control(0x80, GET_DESCRIPTOR, (type << 8) | index, langid, length, done);
  }

  wait(ms) {
    return (next) => this.bus.after(ms * MS, () => next(null));
  }

  /// A port reset as hub_port_reset drives it, then its recovery.
  portReset(next) {
    this.bus.resetPort(RESET_DRIVE_MS, () => {});
    this.bus.after((RESET_WAIT_MS + RESET_RECOVERY_MS) * MS, () => next(null));
  }

  /// hub_port_init: reset, the first 64 bytes of the device descriptor at address 0, reset,
  /// SET_ADDRESS, the whole device descriptor, the BOS.
  portInit(next) {
    const bus = this.bus;
    sequence(
      [
        (n) => {
          bus.deviceAddress = 0;
          if (this.ep0) bus.removePipe(this.ep0);
          this.ep0 = bus.pipe({ ep: 0, dir: 'control', type: 'control', mps: 64 });
          n(null);
        },
        (n) => this.portReset(n),
        (n) =>
          this.getDescriptor(DT_DEVICE, 0, 64, 0, (e, d) => {
            if (!e && (d.length < 8 || d[1] !== DT_DEVICE)) e = new Error('device descriptor read/64: not a device descriptor');
            if (!e) this.ep0.mps = d[7];
            n(e);
          }),
        (n) => this.portReset(n),
        (n) =>
          this.control(0x00, SET_ADDRESS, DEVICE_ADDRESS, 0, null, (e) => {
            if (!e) bus.deviceAddress = DEVICE_ADDRESS;
            n(e);
          }),
        this.wait(SET_ADDRESS_SETTLE_MS),
        (n) =>
          this.getDescriptor(DT_DEVICE, 0, 18, 0, (e, d) => {
            if (!e && d.length !== 18) e = new Error(`device descriptor read/all: ${d.length} bytes`);
            if (!e) this.deviceDescriptor = d.slice();
            n(e);
          }),
        (n) => {
          const bcd = this.deviceDescriptor[2] | (this.deviceDescriptor[3] << 8);
          if (bcd < 0x0201) return n(null);
          this.getDescriptor(DT_BOS, 0, 5, 0, (e, d) => {
            if (e || d.length < 5) return n(null);
            this.getDescriptor(DT_BOS, 0, d[2] | (d[3] << 8), 0, () => n(null));
          });
        },
      ],
      next,
    );
  }

  /// usb_new_device: configuration, strings, device qualifier, SET_CONFIGURATION, drivers.
  newDevice(next) {
    const dd = this.deviceDescriptor;
    let langid = 0;
    const strings = [dd[15], dd[14], dd[16]].filter((i) => i !== 0);
    sequence(
      [
        (n) =>
          this.getDescriptor(DT_CONFIG, 0, 9, 0, (e, d) => {
            if (e) return n(e);
            this.getDescriptor(DT_CONFIG, 0, d[2] | (d[3] << 8), 0, (e2, all) => {
              if (!e2) {
                this.configDescriptor = all.slice();
                this.interfaces = parseConfiguration(this.configDescriptor);
              }
              n(e2);
            });
          }),
        (n) => {
          if (strings.length === 0) return n(null);
          this.getDescriptor(DT_STRING, 0, 255, 0, (e, d) => {
            if (!e && d.length >= 4) langid = d[2] | (d[3] << 8);
            n(null);
          });
        },
        ...strings.map((index) => (n) => this.getDescriptor(DT_STRING, index, 255, langid, () => n(null))),
        (n) => this.getDescriptor(DT_DEVICE_QUALIFIER, 0, 10, 0, () => n(null)),
        (n) => this.setConfiguration(n),
        (n) => this.bindDrivers(n),
      ],
      next,
    );
  }

  /// SET_CONFIGURATION; every endpoint's data toggle back to DATA0 and its halt cleared, as
  /// usb_set_configuration (through usb_enable_endpoint) does on the host's side.
  setConfiguration(next) {
    this.control(0x00, SET_CONFIGURATION, this.configDescriptor[5], 0, null, (e) => {
      if (!e) {
        for (const p of this.bus.pipes) {
          if (p.type === 'control') continue;
          p.toggle = 0;
          p.halted = false;
        }
      }
      next(e);
    });
  }

  bindDrivers(next) {
    const steps = [];
    for (const intf of this.interfaces) {
      const driver = this.drivers.find((d) => d.matches(intf));
      if (!driver) continue;
      steps.push((n) =>
        driver.probe(this, intf, this.interfaces, (e) => {
          if (e) this.log(`usb: ${driver.name}: probe failed: ${e.message}`);
          else this.bound.push(driver);
          n(null);
        }),
      );
    }
    sequence(steps, next);
  }

  enumerate(generation) {
    this.state = 'enumerating';
    sequence([(n) => this.portInit(n), (n) => this.newDevice(n)], (e) => {
      if (generation !== this.generation) return;
      if (e) {
        this.counts.enumeration_failures++;
        this.state = 'failed';
        this.log(`usb: unable to enumerate: ${e.message}`);
        return;
      }
      this.counts.enumerations++;
      this.state = 'configured';
      this.log(`usb: configured at address ${DEVICE_ADDRESS}, ${this.bound.map((d) => d.name).join(', ') || 'no driver'}`);
    });
  }

  /// usb_reset_device: the drivers' pre_reset, hub_port_init again, the configuration read and
  /// compared, SET_CONFIGURATION again, the drivers' post_reset. `done(error)`.
  resetDevice(done = () => {}) {
    if (this.state !== 'configured') return done(new Error('no configured device'));
    const generation = this.generation;
    this.counts.resets++;
    this.state = 'resetting';
    for (const d of this.bound) d.preReset();
    sequence(
      [
        (n) => this.portInit(n),
        (n) => this.getDescriptor(DT_CONFIG, 0, this.configDescriptor.length, 0, (e) => n(e)),
        (n) => this.setConfiguration(n),
      ],
      (e) => {
        if (generation !== this.generation) return;
        if (e) {
          this.state = 'failed';
          this.log(`usb: reset failed: ${e.message}`);
          return done(e);
        }
        this.state = 'configured';
        for (const d of this.bound) d.postReset();
        done(null);
      },
    );
  }
}
