// Loads an ELF32 little-endian image into rp2040js's flash and SRAM by its load segments'
// physical addresses (the flash image cortex-m-rt copies .data from included), as a
// programmed Pico's flash would hold it. Returns the vector table's address (the start of
// the FLASH region after embassy-rp's 256-byte boot2, where cortex-m-rt puts it).

const FLASH = 0x10000000;
const SRAM = 0x20000000;
const PT_LOAD = 1;

/// Copies every PT_LOAD segment of `elf` (a Buffer) into `mcu`; throws on what is not an
/// ELF32 little-endian ARM image or lands outside flash and SRAM.
export function loadElf(elf, mcu) {
  if (elf.readUInt32BE(0) !== 0x7f454c46 || elf[4] !== 1 || elf[5] !== 1) {
    throw new Error('not an ELF32 little-endian file');
  }
  if (elf.readUInt16LE(18) !== 40) throw new Error('not an ARM ELF');
  const phoff = elf.readUInt32LE(28);
  const phentsize = elf.readUInt16LE(42);
  const phnum = elf.readUInt16LE(44);
  for (let i = 0; i < phnum; i++) {
    const h = phoff + i * phentsize;
    if (elf.readUInt32LE(h) !== PT_LOAD) continue;
    const offset = elf.readUInt32LE(h + 4);
    const paddr = elf.readUInt32LE(h + 12);
    const filesz = elf.readUInt32LE(h + 16);
    if (filesz === 0) continue;
    const bytes = elf.subarray(offset, offset + filesz);
    if (paddr >= FLASH && paddr + filesz <= FLASH + mcu.flash.length) {
      mcu.flash.set(bytes, paddr - FLASH);
    } else if (paddr >= SRAM && paddr + filesz <= SRAM + mcu.sram.length) {
      mcu.sram.set(bytes, paddr - SRAM);
    } else {
      throw new Error(`segment at 0x${paddr.toString(16)} (${filesz} bytes) is outside flash and SRAM`);
    }
  }
  return { vectorTable: FLASH + 0x100 };
}

const SHT_SYMTAB = 2;

/// The addresses of `elf`'s symbols by name (its .symtab; a stripped image has none).
export function symbols(elf) {
  const found = new Map();
  for (const s of symbolTable(elf)) if (s.name) found.set(s.name, s.value);
  return found;
}

const STT_FUNC = 2;

/// `elf`'s functions (name, start without the Thumb bit, size), by start address.
export function functions(elf) {
  return symbolTable(elf)
    .filter((s) => (s.info & 0xf) === STT_FUNC && s.size > 0)
    .map((s) => ({ name: s.name, start: s.value & ~1, size: s.size }))
    .sort((a, b) => a.start - b.start);
}

/// Every entry of `elf`'s .symtab: name, value, size, info.
function symbolTable(elf) {
  const shoff = elf.readUInt32LE(32);
  const shentsize = elf.readUInt16LE(46);
  const shnum = elf.readUInt16LE(48);
  const section = (i) => {
    const h = shoff + i * shentsize;
    return {
      type: elf.readUInt32LE(h + 4),
      offset: elf.readUInt32LE(h + 16),
      size: elf.readUInt32LE(h + 20),
      link: elf.readUInt32LE(h + 24),
    };
  };
  const found = [];
  for (let i = 0; i < shnum; i++) {
    const symtab = section(i);
    if (symtab.type !== SHT_SYMTAB) continue;
    const strtab = section(symtab.link);
    for (let s = symtab.offset; s + 16 <= symtab.offset + symtab.size; s += 16) {
      const nameAt = strtab.offset + elf.readUInt32LE(s);
      const end = elf.indexOf(0, nameAt);
      found.push({
        name: elf.toString('latin1', nameAt, end),
        value: elf.readUInt32LE(s + 4),
        size: elf.readUInt32LE(s + 8),
        info: elf[s + 12],
      });
    }
  }
  return found;
}
