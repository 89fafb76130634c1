// linklab's pin-level RP2040 harness: an embassy-rp ELF in rp2040js (machine.mjs: the core,
// PIO, DMA and timer on one clock), with the device outside the chip that the board has:
// - `--board rp2040-soft-phy` (the default; examples/boards/rp2040-soft-phy): the 10BASE-T
//   line on its pins (soft-phy-line.mjs), joined by `linklab emu line` to a TAP;
// - `--board w5500-evb-pico` (examples/boards/w5500-evb-pico): a WIZnet W5500 on SPI0
//   (w5500.mjs, w5500-evb-pico.mjs), its port joined by `linklab emu line --frames` to a TAP;
// - `--board pico-spi` (examples/boards/rp2040-spi-link): the Pico as an SPI device, an SPI
//   master model standing in for the host on its pins (spi-master.mjs, pico-spi.mjs), the
//   host's transfers from `linklab serial` over the socket.
// - `--board pico-usb` (examples/boards/rp2040-usb): the Pico's USB port on a full-speed bus
//   to a modelled Linux host and its cdc-acm (pico-usb.mjs), the port relayed to the
//   pseudo-terminal linklab makes for it;
// - `--board pico-usb-ncm` (examples/boards/rp2040-usb, feature `ncm`): the same port and bus
//   with Linux's cdc_ncm bound to the device (pico-usb-ncm.mjs), its network interface
//   joined by `linklab emu line --frames` to a TAP.
//
// Usage: node harness.mjs [--board B] --elf ELF --socket PATH [--status FILE] [--seconds S]
//          [--oversample N] [--inject PLAN] [--pcap FILE] [--spi-gap-sck N]
//          [--w5500-send-busy queue|ignore] [--w5500-faults PLAN]
//          [--master-gap-ns N] [--master-tail-ns N] [--master-tail-per-mille N]
//          [--master-byte-gap N] [--master-seed N]
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
//   --spi-gap-sck (w5500-evb-pico): SCK periods the SPI clock stops between words, instead
//   of the PL022's (pl022.mjs: 1.5 at SPH = 0, 0.5 at SPH = 1); 0 is a master without gaps.
//   --w5500-send-busy (w5500-evb-pico): what the W5500 does with a SEND while its last frame
//   is still on the line: `queue` (the default, assumed) or `ignore` (w5500.mjs).
//   --w5500-faults (w5500-evb-pico): `header:N,send:M`: every Nth read of a frame's length
//   header comes back corrupt, every Mth SEND is refused (w5500.mjs); counted in the status.
//   --master-* (pico-spi): the SPI master's gap between transfers (10 000 ns), its tail gap
//   (50 000 ns) and how often it comes (50 per mille), idle half periods after each byte (0),
//   the seed of its draws (spi-master.mjs).
//   --usb-host-delay-bits (pico-usb, pico-usb-ncm): the host controller's delay between transactions in
//   bit times (usb-wire.mjs DEFAULT_TIMING; 0 gives the spec's 19 packets a frame).
//   --usb-capture FILE (pico-usb, pico-usb-ncm): every transaction and URB, timestamped in
//   emulated ns.
//   --usb-inject PLAN (pico-usb-ncm): malformed transfer blocks and USB resets at times of the
//   chip's clock counted from when the harness gets SIGUSR1 (pico-usb-ncm.mjs).
// RP2040JS_TRACE=ADDR (decimal or 0x hex): see machine.mjs's traceStep.
// RP2040JS_PROFILE=FILE: each core's cycles by function, written to FILE at the end (see
// machine.mjs's writeProfile; names as the ELF has them: `llvm-cxxfilt` demangles them);
// with RP2040JS_PROFILE_ADDRESSES=1 also the hottest instruction addresses.

import { createMachine, fail, run } from './machine.mjs';
import { attachSoftPhyLine } from './soft-phy-line.mjs';
import { attachW5500 } from './w5500-evb-pico.mjs';
import { attachPicoSpi } from './pico-spi.mjs';
import { checkOptions } from './spi-master.mjs';
import { attachUsbHost } from './pico-usb.mjs';
import { attachUsbNcmHost, parseUsbPlan } from './pico-usb-ncm.mjs';
import { HOLD_MS, lineItems, parsePlan } from './hostile.mjs';

const BOARDS = ['rp2040-soft-phy', 'w5500-evb-pico', 'pico-spi', 'pico-usb', 'pico-usb-ncm'];
const USB_BOARDS = ['pico-usb', 'pico-usb-ncm'];
const USAGE =
  'usage: [--board rp2040-soft-phy|w5500-evb-pico|pico-spi|pico-usb|pico-usb-ncm] --elf ELF --socket PATH [--status FILE] [--seconds S] [--oversample N] [--inject PLAN] [--pcap FILE] [--spi-gap-sck N] [--w5500-send-busy queue|ignore] [--w5500-faults PLAN] [--master-gap-ns N] [--master-tail-ns N] [--master-tail-per-mille N] [--master-byte-gap N] [--master-seed N] [--usb-host-delay-bits N] [--usb-capture FILE] [--usb-inject PLAN]';
/// The pico-spi master's options by flag.
const MASTER_FLAGS = {
  '--master-gap-ns': 'gapNs',
  '--master-tail-ns': 'tailNs',
  '--master-tail-per-mille': 'tailPerMille',
  '--master-byte-gap': 'byteGapHalfPeriods',
  '--master-seed': 'seed',
};


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

/// `--w5500-faults header:N,send:M` (either or both; N, M whole numbers from 1).
function parseFaults(plan) {
  const faults = {};
  for (const item of plan.split(',')) {
    const [kind, n] = item.split(':');
    const every = Number(n);
    if (!['header', 'send'].includes(kind) || !Number.isInteger(every) || every < 1) {
      fail(`--w5500-faults ${plan}: header:N and/or send:N, N a whole number from 1`);
    }
    faults[kind] = every;
  }
  return faults;
}

function parseArgs(argv) {
  const args = {
    board: 'rp2040-soft-phy',
    status: null,
    seconds: Infinity,
    oversample: 4,
    inject: [],
    pcap: null,
    spiGapSck: null,
    sendWhileBusy: 'queue',
    faults: {},
    w5500Options: false,
    master: { gapNs: 10_000, tailNs: 50_000, tailPerMille: 50, byteGapHalfPeriods: 0, seed: 0x5eed, readyTimeoutNs: 20e6 },
    masterSet: false,
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
    else if (flag === '--spi-gap-sck') {
      args.spiGapSck = Number(value);
      args.w5500Options = true;
    } else if (flag === '--w5500-send-busy') {
      args.sendWhileBusy = value;
      args.w5500Options = true;
    } else if (flag === '--w5500-faults') {
      args.faults = parseFaults(value);
      args.w5500Options = true;
    }
    else if (flag === '--oversample') args.oversample = Number(value);
    else if (MASTER_FLAGS[flag]) {
      args.master[MASTER_FLAGS[flag]] = Number(value);
      args.masterSet = true;
    }
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
  if (args.spiGapSck !== null && !(args.spiGapSck >= 0 && args.spiGapSck <= 16)) {
    fail('--spi-gap-sck: a number of SCK periods, 0..16');
  }
  if (!['queue', 'ignore'].includes(args.sendWhileBusy)) fail('--w5500-send-busy: queue or ignore');
  if (args.board !== 'w5500-evb-pico' && args.w5500Options) {
    fail('--spi-gap-sck and --w5500-*: only with --board w5500-evb-pico');
  }
  if (!['w5500-evb-pico', 'pico-usb-ncm'].includes(args.board) && args.pcap) {
    fail('--pcap: only with --board w5500-evb-pico or pico-usb-ncm');
  }
  const bad = checkOptions(args.master);
  if (bad) fail(`--master-*: ${bad}`);
  if (!(Number.isInteger(args.master.seed) && args.master.seed >= 0)) fail('--master-seed: a non-negative integer');
  if (args.board !== 'pico-spi' && args.masterSet) fail('--master-*: only with --board pico-spi');
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
  if (args.board === 'pico-spi') {
    attachPicoSpi(mcu, args.socket, args.master, (device) => {
      run(mcu, {
        devices: [device],
        statusFile: args.status,
        seconds: args.seconds,
        onExit: () => device.close(),
      });
    });
    return;
  }
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
    const options = { pcap: args.pcap, spiGapSck: args.spiGapSck, sendWhileBusy: args.sendWhileBusy, faults: args.faults };
    attachW5500(mcu, args.socket, options, (device) => {
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
