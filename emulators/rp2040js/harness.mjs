// linklab's pin-level RP2040 harness: an embassy-rp ELF in rp2040js (machine.mjs: the core,
// PIO, DMA and timer on one clock), with the device outside the chip that the board has:
// - `--board rp2040-soft-phy` (the default; examples/boards/rp2040-soft-phy): the 10BASE-T
//   line on its pins (soft-phy-line.mjs), joined by `linklab emu line` to a TAP;
// - `--board w5500-evb-pico` (examples/boards/w5500-evb-pico): a WIZnet W5500 on SPI0
//   (w5500.mjs, w5500-evb-pico.mjs), its port joined by `linklab emu line --frames` to a TAP.
//
// Usage: node harness.mjs [--board B] --elf ELF --socket PATH [--status FILE] [--seconds S]
//          [--pcap FILE] [--spi-gap-ns N]
//   --status: a file rewritten about every 50 ms of real time with one JSON line: emulated ns,
//   cycles, and the devices' counts (the tests read emulated time from it).
//   --seconds: stop after S emulated seconds (default: run until killed).
//   --pcap (w5500-evb-pico): every frame on the W5500's port, timestamped in emulated ns.
//   --spi-gap-ns (w5500-evb-pico): idle time added after each SPI byte (default 0).
// RP2040JS_TRACE=ADDR (decimal or 0x hex): see machine.mjs's traceStep.

import { createMachine, fail, run } from './machine.mjs';
import { attachSoftPhyLine } from './soft-phy-line.mjs';
import { attachW5500 } from './w5500-evb-pico.mjs';

const BOARDS = ['rp2040-soft-phy', 'w5500-evb-pico'];
const USAGE =
  'usage: [--board rp2040-soft-phy|w5500-evb-pico] --elf ELF --socket PATH [--status FILE] [--seconds S] [--pcap FILE] [--spi-gap-ns N]';

function parseArgs(argv) {
  const args = { board: 'rp2040-soft-phy', status: null, seconds: Infinity, pcap: null, spiGapNs: 0 };
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
    else fail(`unknown option ${flag} (${USAGE})`);
  }
  if (!args.elf || !args.socket) fail('--elf and --socket are required');
  if (!BOARDS.includes(args.board)) fail(`--board ${args.board}: one of ${BOARDS.join(', ')}`);
  if (!(args.seconds > 0)) fail('--seconds: a positive number');
  if (!(args.spiGapNs >= 0 && args.spiGapNs <= 1e6)) fail('--spi-gap-ns: a number of ns, 0..1000000');
  if (args.board !== 'w5500-evb-pico' && (args.pcap || args.spiGapNs)) {
    fail('--pcap and --spi-gap-ns: only with --board w5500-evb-pico');
  }
  return args;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const mcu = createMachine(args.elf);
  const start = (device) => {
    run(mcu, {
      devices: [device],
      statusFile: args.status,
      seconds: args.seconds,
      onExit: () => device.close(),
    });
  };
  if (args.board === 'w5500-evb-pico') {
    attachW5500(mcu, args.socket, { pcap: args.pcap, spiGapNs: args.spiGapNs }, start);
  } else {
    attachSoftPhyLine(mcu, args.socket, start);
  }
}

main();
