// linklab's pin-level RP2040 harness: an embassy-rp ELF in rp2040js (machine.mjs: the core,
// PIO, DMA and timer on one clock), with the device outside the chip that the board has:
// for the soft-PHY examples (examples/boards/rp2040-soft-phy) the 10BASE-T line on its pins
// (soft-phy-line.mjs), joined by `linklab emu line` to a TAP.
//
// Usage: node harness.mjs --elf ELF --socket PATH [--oversample N] [--status FILE] [--seconds S]
//   --oversample: the line's samples per bit (`linklab emu line --oversample`, 2..8; 4 by
//   default): the RX pin shows them at their rate in the chip's time.
//   --status: a file rewritten about every 50 ms of real time with one JSON line: emulated ns,
//   cycles, and the devices' counts (the tests read emulated time from it).
//   --seconds: stop after S emulated seconds (default: run until killed).
// RP2040JS_TRACE=ADDR (decimal or 0x hex): see machine.mjs's traceStep.
// RP2040JS_PROFILE=FILE: each core's cycles by function, written to FILE at the end (see
// machine.mjs's writeProfile; names as the ELF has them: `llvm-cxxfilt` demangles them).

import { createMachine, fail, run } from './machine.mjs';
import { attachSoftPhyLine } from './soft-phy-line.mjs';

function parseArgs(argv) {
  const args = { status: null, seconds: Infinity, oversample: 4 };
  for (let i = 0; i < argv.length; i += 2) {
    const [flag, value] = [argv[i], argv[i + 1]];
    if (value === undefined) fail(`${flag}: a value is required`);
    if (flag === '--elf') args.elf = value;
    else if (flag === '--socket') args.socket = value;
    else if (flag === '--status') args.status = value;
    else if (flag === '--seconds') args.seconds = Number(value);
    else if (flag === '--oversample') args.oversample = Number(value);
    else fail(`unknown option ${flag} (usage: --elf ELF --socket PATH [--oversample N] [--status FILE] [--seconds S])`);
  }
  if (!args.elf || !args.socket) fail('--elf and --socket are required');
  if (!(args.seconds > 0)) fail('--seconds: a positive number');
  if (!Number.isInteger(args.oversample) || args.oversample < 2 || args.oversample > 8) {
    fail('--oversample: an integer from 2 to 8 (the line\'s --oversample)');
  }
  return args;
}

function main() {
  const args = parseArgs(process.argv.slice(2));
  const mcu = createMachine(args.elf);
  attachSoftPhyLine(
    mcu,
    args.socket,
    (line) => {
      run(mcu, {
        devices: [line],
        statusFile: args.status,
        seconds: args.seconds,
        onExit: () => line.close(),
      });
    },
    { oversample: args.oversample },
  );
}

main();
