// linklab's pin-level RP2040 harness: an embassy-rp ELF in rp2040js (machine.mjs: the core,
// PIO, DMA and timer on one clock), with the device outside the chip that the board has:
// - `--board rp2040-soft-phy` (the default; examples/boards/rp2040-soft-phy): the 10BASE-T
//   line on its pins (soft-phy-line.mjs), joined by `linklab emu line` to a TAP;
// - `--board w5500-evb-pico` (examples/boards/w5500-evb-pico): a WIZnet W5500 on SPI0
//   (w5500.mjs, w5500-evb-pico.mjs), its port joined by `linklab emu line --frames` to a TAP;
// - `--board pico-usb` (examples/boards/rp2040-usb): the Pico's USB port on a full-speed bus
//   to a modelled Linux host and its cdc-acm (pico-usb.mjs), the port relayed to the
//   pseudo-terminal linklab makes for it;
// - `--board pico-usb-ncm` (examples/boards/rp2040-usb, feature `ncm`): the same port and bus
//   with Linux's cdc_ncm bound to the device (pico-usb-ncm.mjs), its network interface
//   joined by `linklab emu line --frames` to a TAP.
//
// Usage: node harness.mjs [--board B] --elf ELF --socket PATH [--status FILE] [--seconds S]
//          [--oversample N] [--inject PLAN] [--pcap FILE] [--spi-gap-ns N]
//   --oversample (rp2040-soft-phy): the line's samples per bit (`linklab emu line
//   --oversample`, 2..8; 4 by default): the RX pin shows them at their rate in the chip's time.
//   --inject (rp2040-soft-phy): the hostile line's cases (hostile.mjs) at times of the chip's
//   clock counted from when the harness gets SIGUSR1, e.g. `0:noise,10:cut,20:pulses,
//   30:stuck-high,60:stuck-low,90:stall`; the status file's `injected` lists the cases done.
//   --status: a file rewritten about every 50 ms of real time with one JSON line: emulated ns,
//   cycles, and the devices' counts (the tests read emulated time from it).
//   --seconds: stop after S emulated seconds (default: run until killed).
//   --pcap (w5500-evb-pico, pico-usb-ncm): every frame on the W5500's port (the host's
//   interface), timestamped in emulated ns.
//   --spi-gap-ns (w5500-evb-pico): idle time added after each SPI byte (default 0).
//   --usb-host-delay-bits (pico-usb, pico-usb-ncm): the host controller's delay between transactions in
//   bit times (usb-wire.mjs DEFAULT_TIMING; 0 gives the spec's 19 packets a frame).
//   --usb-capture FILE (pico-usb, pico-usb-ncm): every transaction and URB, timestamped in
//   emulated ns.
//   --usb-inject PLAN (pico-usb-ncm): malformed transfer blocks and USB resets at times of the
//   chip's clock counted from when the harness gets SIGUSR1 (pico-usb-ncm.mjs).
// RP2040JS_TRACE=ADDR (decimal or 0x hex): see machine.mjs's traceStep.
// RP2040JS_PROFILE=FILE: each core's cycles by function, written to FILE at the end (see
// machine.mjs's writeProfile; names as the ELF has them: `llvm-cxxfilt` demangles them).

import { createMachine, fail, run } from './machine.mjs';
import { attachSoftPhyLine } from './soft-phy-line.mjs';
import { attachW5500 } from './w5500-evb-pico.mjs';
import { attachUsbHost } from './pico-usb.mjs';
import { attachUsbNcmHost, parseUsbPlan } from './pico-usb-ncm.mjs';
import { HOLD_MS, lineItems, parsePlan } from './hostile.mjs';

const BOARDS = ['rp2040-soft-phy', 'w5500-evb-pico', 'pico-usb', 'pico-usb-ncm'];
const USB_BOARDS = ['pico-usb', 'pico-usb-ncm'];
const USAGE =
  'usage: [--board rp2040-soft-phy|w5500-evb-pico|pico-usb|pico-usb-ncm] --elf ELF --socket PATH [--status FILE] [--seconds S] [--oversample N] [--inject PLAN] [--pcap FILE] [--spi-gap-ns N] [--usb-host-delay-bits N] [--usb-capture FILE] [--usb-inject PLAN]';


/// The hostile line's plan as a device: started by SIGUSR1, each case once the chip's clock
/// has passed its time from then (at the end of a slice: within 100 µs), on `line`'s RX pin
/// or, for a stall, on core 1.
function hostileDevice(plan, mcu, line, oversample) {
  const todo = [...plan];
  const done = [];
  let startNs = null;
  let signalled = false;
  process.on('SIGUSR1', () => {
    signalled = true;
  });
  return {
    endOfSlice(chip) {
      if (signalled && startNs === null) startNs = mcu.clock.nanos;
      while (startNs !== null && todo.length > 0 && mcu.clock.nanos >= startNs + todo[0].atNs) {
        const { kind } = todo.shift();
        const items = lineItems(kind, oversample);
        if (items) line.rx.inject(items);
        else chip.stall(1, Math.round((HOLD_MS / 1e3) * mcu.clkSys));
        done.push(kind);
      }
    },
    status: () => ({ injected: done, inject_started_ns: startNs }),
  };
}

function parseArgs(argv) {
  const args = {
    board: 'rp2040-soft-phy',
    status: null,
    seconds: Infinity,
    oversample: 4,
    inject: [],
    pcap: null,
    spiGapNs: 0,
    usbHostDelayBits: null,
    usbCapture: null,
    usbInject: [],
  };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) fail(`${flag}: a value is required`);
    if (flag === '--elf') args.elf = value;
    else if (flag === '--board') args.board = value;
    else if (flag === '--socket') args.socket = value;
    else if (flag === '--status') args.status = value;
    else if (flag === '--seconds') args.seconds = Number(value);
    else if (flag === '--pcap') args.pcap = value;
    else if (flag === '--spi-gap-ns') args.spiGapNs = Number(value);
    else if (flag === '--oversample') args.oversample = Number(value);
    else if (flag === '--usb-host-delay-bits') args.usbHostDelayBits = Number(value);
    else if (flag === '--usb-capture') args.usbCapture = value;
    else if (flag === '--usb-inject') {
      try {
        args.usbInject = parseUsbPlan(value);
      } catch (e) {
        fail(e.message);
      }
    }
    else if (flag === '--inject') {
      try {
        args.inject = parsePlan(value);
      } catch (e) {
        fail(e.message);
      }
    } else fail(`unknown option ${flag} (${USAGE})`);
  }
  if (!args.elf || !args.socket) fail('--elf and --socket are required');
  if (!BOARDS.includes(args.board)) fail(`--board ${args.board}: one of ${BOARDS.join(', ')}`);
  if (!(args.seconds > 0)) fail('--seconds: a positive number');
  if (!(args.spiGapNs >= 0 && args.spiGapNs <= 1e6)) fail('--spi-gap-ns: a number of ns, 0..1000000');
  if (args.board !== 'w5500-evb-pico' && args.spiGapNs) fail('--spi-gap-ns: only with --board w5500-evb-pico');
  if (!['w5500-evb-pico', 'pico-usb-ncm'].includes(args.board) && args.pcap) {
    fail('--pcap: only with --board w5500-evb-pico or pico-usb-ncm');
  }
  if (!USB_BOARDS.includes(args.board) && (args.usbHostDelayBits !== null || args.usbCapture)) {
    fail('--usb-host-delay-bits and --usb-capture: only with --board pico-usb or pico-usb-ncm');
  }
  if (args.board !== 'pico-usb-ncm' && args.usbInject.length > 0) fail('--usb-inject: only with --board pico-usb-ncm');
  if (args.usbHostDelayBits !== null && !(args.usbHostDelayBits >= 0 && args.usbHostDelayBits <= 1000)) {
    fail('--usb-host-delay-bits: a number of bit times, 0..1000');
  }
  if (args.board !== 'rp2040-soft-phy' && args.inject.length > 0) {
    fail('--inject: only with --board rp2040-soft-phy (the hostile cases are on its line)');
  }
  if (!Number.isInteger(args.oversample) || args.oversample < 2 || args.oversample > 8) {
    fail('--oversample: an integer from 2 to 8 (the line\'s --oversample)');
  }
  return args;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const mcu = createMachine(args.elf);
  if (args.board === 'pico-usb') {
    const options = { hostDelayBits: args.usbHostDelayBits ?? undefined, capture: args.usbCapture };
    attachUsbHost(mcu, args.socket, options, (device) => {
      run(mcu, {
        devices: [device],
        statusFile: args.status,
        seconds: args.seconds,
        onExit: () => device.close(),
      });
    });
    return;
  }
  if (args.board === 'pico-usb-ncm') {
    const options = {
      hostDelayBits: args.usbHostDelayBits ?? undefined,
      capture: args.usbCapture,
      pcap: args.pcap,
      plan: args.usbInject,
    };
    attachUsbNcmHost(mcu, args.socket, options, (device) => {
      run(mcu, {
        devices: [device],
        statusFile: args.status,
        seconds: args.seconds,
        onExit: () => device.close(),
      });
    });
    return;
  }
  if (args.board === 'w5500-evb-pico') {
    attachW5500(mcu, args.socket, { pcap: args.pcap, spiGapNs: args.spiGapNs }, (device) => {
      run(mcu, {
        devices: [device],
        statusFile: args.status,
        seconds: args.seconds,
        onExit: () => device.close(),
      });
    });
    return;
  }
  attachSoftPhyLine(
    mcu,
    args.socket,
    (line) => {
      const devices = [line];
      if (args.inject.length > 0) devices.push(hostileDevice(args.inject, mcu, line, args.oversample));
      run(mcu, {
        devices,
        statusFile: args.status,
        seconds: args.seconds,
        onExit: () => line.close(),
      });
    },
    { oversample: args.oversample },
  );
}

main();
