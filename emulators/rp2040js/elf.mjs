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
