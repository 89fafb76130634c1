// The RP2040's second Cortex-M0+ over rp2040js 1.4.1 as published (which emulates core 0
// only): what the chip has twice, once per core, and what the two cores share.
//
// - Each core has its own registers, NVIC and SysTick (a `CortexM0Core` and an `RPPPB` of
//   rp2040js each). Both cores access the one RP2040 object; before a core executes, the
//   loop selects it (`pair.select`), which points the RP2040's `core`, `sio` and `ppb` at
//   that core's own, so every access rp2040js makes through them is the core's.
// - SIO per core: CPUID (0 or 1), the inter-core FIFOs (8 words each way, FIFO_ST with
//   VLD, RDY and the sticky WOF and ROE), the divider and the two interpolators. Shared: the
//   GPIO registers and the 32 spinlocks.
// - Interrupts: every IRQ line reaches both NVICs, except SIO_IRQ_PROC0 (core 0's FIFO
//   interrupt, IRQ 15: only core 0's) and SIO_IRQ_PROC1 (core 1's, IRQ 16: only core 1's),
//   and IO_IRQ_BANK0 (IRQ 13), which each core takes from its own enables in IO_BANK0
//   (PROC0_INTE/INTF/INTS at 0x100, PROC1_ at 0x130).
// - SEV sets both cores' event registers and wakes a core sleeping in WFE (rp2040js 1.4.1's
//   SEV only logs; its log line is the hook).
// - Launch: core 1 starts in the boot ROM's holding pen (rp2040js has no boot ROM; the pen
//   is modelled here): it drains its FIFO, sends 0, and takes the sequence 0, 0, 1, vector
//   table, stack pointer, entry from core 0, echoing each word (a 0 starts over; anything
//   but 1 after the 0s too); after the entry it sets VTOR and MSP and branches to the entry
//   with LR in the ROM. A core 1 reset through PSM FRCE_OFF.PROC1 puts it back in the pen.
//   This is the protocol embassy-rp's `spawn_core1` and pico-sdk's `multicore_launch_core1`
//   speak.

const SIO_CPUID = 0x000;
const SIO_FIFO_ST = 0x050;
const SIO_FIFO_WR = 0x054;
const SIO_FIFO_RD = 0x058;
const SIO_DIV_FIRST = 0x060;
const SIO_INTERP_LAST = 0x0fc;
const FIFO_VLD = 1 << 0;
const FIFO_RDY = 1 << 1;
const FIFO_WOF = 1 << 2;
const FIFO_ROE = 1 << 3;
const FIFO_DEPTH = 8;

const IRQ_IO_BANK0 = 13;
const IRQ_SIO_PROC0 = 15;

const IO_BANK0 = 0x40014;
const IO_PROC1_INTE0 = 0x130;
const IO_PROC1_INTF0 = 0x140;
const IO_PROC1_INTS0 = 0x150;
const IO_PROC1_LAST = 0x15c;
const PSM = 0x40010;
const PSM_FRCE_OFF = 0x04;
const PSM_PROC1 = 1 << 16;

/// Where core 1 returns to if its entry ever returns: the boot ROM's (here absent) low-power
/// hang; the machine stops with a line when a core's PC is in the ROM.
export const ROM_HANG = 0x000000f0;

const THUMB_WFE = 0xbf20;

/// PPB registers rp2040js 1.4.1 does not have (it reads them as 0xffffffff): SCR and the
/// M0+'s MPU (8 regions). Here they hold what is written and read it back; the MPU is not
/// enforced. embassy-rp's stack guard (`install_stack_guard`, run for core 1 by
/// `spawn_core1`) needs MPU_CTRL to read 0 after reset.
const PPB_KEPT = { 0xd10: 0, 0xd90: 0x800, 0xd94: 0, 0xd98: 0, 0xd9c: 0, 0xda0: 0 };
const PPB_READ_ONLY = new Set([0xd90]);

/// Gives `ppb` (one core's rp2040js PPB) the registers in PPB_KEPT.
function keepMissingPpbRegisters(ppb) {
  const kept = { ...PPB_KEPT };
  const read = ppb.readUint32.bind(ppb);
  const write = ppb.writeUint32.bind(ppb);
  ppb.readUint32 = (offset) => (offset in kept ? kept[offset] : read(offset));
  ppb.writeUint32 = (offset, value) => {
    if (!(offset in kept)) write(offset, value);
    else if (!PPB_READ_ONLY.has(offset)) kept[offset] = value >>> 0;
  };
}

/// One direction of the inter-core mailbox: 8 words, first in, first out.
class Fifo {
  constructor() {
    this.words = [];
  }
  get full() {
    return this.words.length >= FIFO_DEPTH;
  }
  get empty() {
    return this.words.length === 0;
  }
}

/// What the SIO block has per core: CPUID, the core's ends of the two FIFOs and its sticky
/// flags, its divider and interpolators (`local`, an rp2040js SIO of its own). Everything
/// else goes to `shared` (GPIO, spinlocks).
export class CoreSio {
  constructor(id, shared, local, rx, tx, onFifoChange) {
    this.id = id;
    this.shared = shared;
    this.local = local;
    this.rx = rx;
    this.tx = tx;
    this.wof = false;
    this.roe = false;
    this.onFifoChange = onFifoChange;
  }
  /// The shared GPIO outputs (rp2040js's pins read them from the RP2040's `sio`).
  get gpioValue() {
    return this.shared.gpioValue;
  }
  get gpioOutputEnable() {
    return this.shared.gpioOutputEnable;
  }
  /// FIFO_ST as this core reads it.
  get fifoStatus() {
    return (
      (this.rx.empty ? 0 : FIFO_VLD) |
      (this.tx.full ? 0 : FIFO_RDY) |
      (this.wof ? FIFO_WOF : 0) |
      (this.roe ? FIFO_ROE : 0)
    );
  }
  /// This core's SIO interrupt: VLD, WOF or ROE.
  get irq() {
    return !this.rx.empty || this.wof || this.roe;
  }
  /// Pushes `value` into this core's TX FIFO (a write to FIFO_WR); a full FIFO drops it and
  /// sets WOF.
  push(value) {
    if (this.tx.full) this.wof = true;
    else this.tx.words.push(value >>> 0);
    this.onFifoChange();
  }
  /// Pops this core's RX FIFO (a read of FIFO_RD); empty reads 0 and sets ROE.
  pop() {
    let value = 0;
    if (this.rx.empty) this.roe = true;
    else value = this.rx.words.shift();
    this.onFifoChange();
    return value;
  }
  readUint32(offset) {
    if (offset === SIO_CPUID) return this.id;
    if (offset === SIO_FIFO_ST) return this.fifoStatus;
    if (offset === SIO_FIFO_RD) return this.pop();
    if (offset === SIO_FIFO_WR) return 0;
    if (offset >= SIO_DIV_FIRST && offset <= SIO_INTERP_LAST) return this.local.readUint32(offset);
    return this.shared.readUint32(offset);
  }
  writeUint32(offset, value) {
    if (offset === SIO_FIFO_ST) {
      // WOF and ROE are write-1-to-clear.
      if (value & FIFO_WOF) this.wof = false;
      if (value & FIFO_ROE) this.roe = false;
      this.onFifoChange();
    } else if (offset === SIO_FIFO_WR) {
      this.push(value);
    } else if (offset === SIO_CPUID || offset === SIO_FIFO_RD) {
      // read-only
    } else if (offset >= SIO_DIV_FIRST && offset <= SIO_INTERP_LAST) {
      this.local.writeUint32(offset, value);
    } else {
      this.shared.writeUint32(offset, value);
    }
  }
}

/// The boot ROM's holding pen for core 1, as a state machine on core 1's end of the FIFOs.
/// `step()` does what the ROM's code would do with what is in the FIFOs now and returns
/// null while it waits (for a word, or for room to send one); once the whole sequence has
/// been received and the entry echoed it returns the launch `{ vtor, sp, entry }`.
export class HoldingPen {
  constructor(sio) {
    this.sio = sio;
    this.startOver();
  }
  /// Back to the start: drain the RX FIFO, then send 0.
  startOver() {
    this.drain = true;
    this.reply = 0;
    this.expect = 'one';
    this.vtor = 0;
    this.sp = 0;
  }
  step() {
    const sio = this.sio;
    for (;;) {
      if (this.drain) {
        while (!sio.rx.empty) sio.pop();
        this.drain = false;
      }
      if (this.reply !== null) {
        if (sio.tx.full) return null;
        sio.push(this.reply);
        const sent = this.reply;
        this.reply = null;
        if (this.expect === 'launched') return { vtor: this.vtor, sp: this.sp, entry: sent };
      }
      if (sio.rx.empty) return null;
      const word = sio.pop();
      if (word === 0 || (this.expect === 'one' && word !== 1)) {
        this.startOver();
        continue;
      }
      if (this.expect === 'one') this.expect = 'vtor';
      else if (this.expect === 'vtor') [this.vtor, this.expect] = [word, 'sp'];
      else if (this.expect === 'sp') [this.sp, this.expect] = [word, 'entry'];
      else this.expect = 'launched';
      this.reply = word;
    }
  }
}

function applyOverride(value, override) {
  return [value, !value, false, true][override];
}

/// Adds core 1 to `mcu` (an rp2040js RP2040 whose `core` is core 0) and returns the pair:
/// `cores[i]` is core i's `CortexM0Core`; `running` is true once core 1 left the pen (and
/// is not in reset); `stepPen()` runs the pen on what the FIFOs hold (the loop calls it
/// while core 1 is not running, when `fifoChanged`); `launches` counts core 1's launches.
export function addCore1(mcu) {
  const CortexM0Core = mcu.core.constructor;
  const RPSIO = mcu.sio.constructor;
  const RPPPB = mcu.ppb.constructor;
  const RPIO = mcu.peripherals[IO_BANK0].constructor;
  const to1 = new Fifo();
  const to0 = new Fifo();
  const sharedSio = mcu.sio;
  /// IRQ lines as the peripherals last set them (a core reset reloads its pending bits).
  let lines = 0;

  const pair = {
    cores: [mcu.core, null],
    /// The core whose accesses the RP2040 now serves (`select`).
    current: 0,
    running: false,
    inReset: false,
    pen: null,
    fifoChanged: false,
    launches: 0,
  };
  const updateFifoIrqs = () => {
    pair.fifoChanged = true;
    setCoreIrq(0, IRQ_SIO_PROC0, sios[0].irq);
    setCoreIrq(1, IRQ_SIO_PROC0 + 1, sios[1].irq);
  };
  const sios = [
    new CoreSio(0, sharedSio, sharedSio, to0, to1, updateFifoIrqs),
    new CoreSio(1, sharedSio, new RPSIO(mcu), to1, to0, updateFifoIrqs),
  ];
  // Each core's PPB sees its own core (its SysTick pends that core's exception).
  const ppbs = [mcu.ppb, null];
  mcu.ppb.rp2040 = Object.create(mcu, { core: { get: () => pair.cores[0] } });
  ppbs[1] = new RPPPB(Object.create(mcu, { core: { get: () => pair.cores[1] } }), 'PPB1');
  for (const ppb of ppbs) keepMissingPpbRegisters(ppb);
  mcu.addClockListener((hz) => {
    ppbs[1].systickTimer.frequency = hz;
  });

  /// Makes the RP2040 serve core `k`'s accesses (its SIO and PPB; `mcu.core`).
  pair.select = (k) => {
    pair.current = k;
    mcu.core = pair.cores[k];
    mcu.sio = sios[k];
    mcu.ppb = ppbs[k];
  };
  pair.select(0);

  function setCoreIrq(k, irq, value) {
    const core = pair.cores[k];
    if (core) core.setInterrupt(irq, value);
  }

  function resetCore1() {
    const core = new CortexM0Core(mcu);
    pair.cores[1] = core;
    if (pair.current === 1) pair.select(1);
    // The NVIC sees the shared lines as they are now (rp2040js pends on a line's rise).
    core.pendingInterrupts = lines & ~((1 << IRQ_IO_BANK0) | (1 << IRQ_SIO_PROC0));
    pair.running = false;
    pair.pen = new HoldingPen(sios[1]);
    pair.fifoChanged = true;
  }
  resetCore1();

  /// Runs the pen while core 1 is in it; launches core 1 when the sequence is complete.
  pair.stepPen = () => {
    if (pair.inReset || !pair.fifoChanged) return;
    pair.fifoChanged = false;
    const launch = pair.pen.step();
    if (!launch) return;
    const core = pair.cores[1];
    core.VTOR = launch.vtor;
    core.SP = launch.sp;
    core.PC = launch.entry & ~1;
    core.LR = ROM_HANG | 1;
    pair.running = true;
    pair.launches++;
  };

  // Every IRQ line to both NVICs but the per-core ones.
  mcu.setInterrupt = (irq, value) => {
    lines = value ? lines | (1 << irq) : lines & ~(1 << irq);
    pair.cores[0].setInterrupt(irq, value);
    pair.cores[1].setInterrupt(irq, value);
  };

  // IO_BANK0: PROC1_INTE/INTF/INTS, and each core's IO_IRQ_BANK0 from its own enables.
  const proc1Enable = new Uint8Array(mcu.gpio.length);
  const proc1Force = new Uint8Array(mcu.gpio.length);
  const proc1Irq = (pin, i) =>
    applyOverride(!!((pin.irqStatus & proc1Enable[i]) | proc1Force[i]), pin.irqOverride);
  mcu.updateIOInterrupt = () => {
    let irq0 = false;
    let irq1 = false;
    mcu.gpio.forEach((pin, i) => {
      irq0 ||= pin.irqValue;
      irq1 ||= proc1Irq(pin, i);
    });
    setCoreIrq(0, IRQ_IO_BANK0, irq0);
    setCoreIrq(1, IRQ_IO_BANK0, irq1);
  };
  class DualCoreIO extends RPIO {
    readUint32(offset) {
      if (offset < IO_PROC1_INTE0 || offset > IO_PROC1_LAST) return super.readUint32(offset);
      const reg = offset & ~0xf;
      const first = (offset & 0xf) * 2;
      let value = 0;
      for (let k = 7; k >= 0; k--) {
        const i = first + k;
        const pin = mcu.gpio[i];
        value <<= 4;
        if (!pin) continue;
        if (reg === IO_PROC1_INTE0) value |= proc1Enable[i];
        else if (reg === IO_PROC1_INTF0) value |= proc1Force[i];
        else value |= (pin.irqStatus & proc1Enable[i]) | proc1Force[i];
      }
      return value >>> 0;
    }
    writeUint32(offset, value) {
      if (offset < IO_PROC1_INTE0 || offset > IO_PROC1_LAST) {
        super.writeUint32(offset, value);
        return;
      }
      const reg = offset & ~0xf;
      const first = (offset & 0xf) * 2;
      if (reg === IO_PROC1_INTS0) return;
      for (let k = 0; k < 8; k++) {
        const i = first + k;
        if (!mcu.gpio[i]) continue;
        const bits = (value >>> (4 * k)) & 0xf;
        if (reg === IO_PROC1_INTE0) proc1Enable[i] = bits;
        else proc1Force[i] = bits;
      }
      mcu.updateIOInterrupt();
    }
  }
  mcu.peripherals[IO_BANK0] = new DualCoreIO(mcu, 'IO_BANK0_BASE');
  // rp2040js re-evaluates IO_IRQ_BANK0 when a pin's input changes core 0's view of it only.
  mcu.gpio.forEach((pin, i) => {
    const setInputValue = pin.setInputValue.bind(pin);
    pin.setInputValue = (value) => {
      const before = proc1Irq(pin, i);
      setInputValue(value);
      if (proc1Irq(pin, i) !== before) mcu.updateIOInterrupt();
    };
  });

  // PSM FRCE_OFF.PROC1: core 1 held in reset while set, back in the pen when cleared.
  const psm = mcu.peripherals[PSM];
  const psmWrite = psm.writeUint32.bind(psm);
  psm.writeUint32 = (offset, value) => {
    const before = psm.frceOff & PSM_PROC1;
    psmWrite(offset, value);
    if (offset !== PSM_FRCE_OFF) return;
    const after = psm.frceOff & PSM_PROC1;
    if (after && !before) {
      pair.inReset = true;
      pair.running = false;
    } else if (before && !after) {
      pair.inReset = false;
      resetCore1();
    }
  };

  return pair;
}

/// True if `core` just went to sleep in WFE (not WFI): an event wakes it. (rp2040js keeps
/// the Thumb bit of an exception vector in the PC; it fetches from the PC without it.)
export function sleptInWfe(core) {
  return core.rp2040.readUint16(((core.PC & ~1) - 2) >>> 0) === THUMB_WFE;
}
