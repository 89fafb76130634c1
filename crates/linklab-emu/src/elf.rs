//! What is read from a firmware image's ELF file, by one rule for every image (linklab's and
//! a peer's alike): its flash and RAM from the section headers, and its function symbols (to
//! name where a profile's instructions went). Read with the `object` crate.

use std::path::Path;

use anyhow::Context;
use object::elf::{SHF_ALLOC, SHF_WRITE, SHT_NOBITS, STT_FUNC};
use object::read::elf::{ElfFile32, SectionHeader, Sym};
use object::{Endianness, Object, ObjectSection, ObjectSymbol};

/// Flash and static RAM of an image, from its allocated sections.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Size {
    /// Every allocated section with contents (stored in flash): vectors, code, read-only
    /// data, the initial values of `.data`.
    pub flash: u64,
    /// Every allocated writable section (`.data`, `.bss`, buffers, ...) but a stack reserve.
    pub static_ram: u64,
    /// A stack reserve the linker script sets aside as a section of its own (`.heap` or
    /// `.stack`: lwIP's `.heap`, 4 KiB with a heap of 0); linklab's images keep none (their
    /// stack is the RAM above the statics).
    pub stack_reserve: u64,
}

/// A function symbol: its start (the Thumb bit cleared), size and name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Function {
    /// The first instruction's address.
    pub start: u64,
    /// Its size in bytes (0 where the symbol gives none).
    pub size: u64,
    /// The symbol's name, as the ELF spells it (mangled).
    pub name: String,
}

/// Reads `path` as a 32-bit ELF file (every board's images are).
fn read(path: &Path) -> anyhow::Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))
}

fn parse<'a>(path: &Path, bytes: &'a [u8]) -> anyhow::Result<ElfFile32<'a, Endianness>> {
    ElfFile32::parse(bytes).with_context(|| format!("{} is not a 32-bit ELF", path.display()))
}

/// The flash and RAM of the image at `path`.
pub fn size(path: &Path) -> anyhow::Result<Size> {
    let bytes = read(path)?;
    let elf = parse(path, &bytes)?;
    size_of(&elf)
}

fn size_of(elf: &ElfFile32<'_, Endianness>) -> anyhow::Result<Size> {
    let endian = elf.endian();
    let mut size = Size::default();
    for section in elf.sections() {
        let header = section.elf_section_header();
        let flags = header.sh_flags(endian);
        if flags & SHF_ALLOC == 0 {
            continue;
        }
        let bytes = u64::from(header.sh_size(endian));
        if header.sh_type(endian) != SHT_NOBITS {
            size.flash += bytes;
        }
        if flags & SHF_WRITE != 0 {
            match section.name() {
                Ok(".heap" | ".stack") => size.stack_reserve += bytes,
                _ => size.static_ram += bytes,
            }
        }
    }
    Ok(size)
}

/// The image's function symbols, sorted by address: one per start address, the largest
/// (aliases such as cortex-m-rt's exception names share their handler's address, with size 0
/// or its size).
pub fn functions(path: &Path) -> anyhow::Result<Vec<Function>> {
    let bytes = read(path)?;
    let elf = parse(path, &bytes)?;
    let endian = elf.endian();
    let mut out: Vec<Function> = elf
        .symbols()
        .filter(|s| s.elf_symbol().st_type() == STT_FUNC)
        .map(|s| Function {
            start: u64::from(s.elf_symbol().st_value(endian)) & !1,
            size: u64::from(s.elf_symbol().st_size(endian)),
            name: s.name().unwrap_or_default().to_string(),
        })
        .collect();
    out.sort_by(|a, b| a.start.cmp(&b.start).then(b.size.cmp(&a.size)));
    out.dedup_by_key(|f| f.start);
    Ok(out)
}

/// The function containing `addr` (a block may start anywhere in it).
pub fn function_at(functions: &[Function], addr: u64) -> Option<&Function> {
    let i = functions.partition_point(|f| f.start <= addr);
    let f = functions.get(i.checked_sub(1)?)?;
    (addr < f.start + f.size.max(1)).then_some(f)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn garbage_is_not_an_elf() {
        for bytes in [&b""[..], b"\x7fELF\x01\x01\0\0", b"not an elf at all"] {
            assert!(ElfFile32::<Endianness>::parse(bytes).is_err());
        }
        // A header whose section table lies past the file's end.
        let mut hdr = [0u8; 0x34];
        hdr[..7].copy_from_slice(b"\x7fELF\x01\x01\x01");
        hdr[0x10] = 2; // ET_EXEC
        hdr[0x12] = 40; // EM_ARM
        hdr[0x14] = 1; // EV_CURRENT
        hdr[0x20..0x24].copy_from_slice(&u32::MAX.to_le_bytes());
        hdr[0x28] = 0x34;
        hdr[0x2E..0x30].copy_from_slice(&40u16.to_le_bytes());
        hdr[0x30..0x32].copy_from_slice(&5u16.to_le_bytes());
        assert!(ElfFile32::<Endianness>::parse(&hdr[..]).is_err());
    }

    #[test]
    fn a_function_is_found_by_any_address_inside_it() {
        let f = |start, size, name: &str| Function {
            start,
            size,
            name: name.into(),
        };
        let all = [f(0x100, 0x20, "a"), f(0x120, 0, "b"), f(0x200, 0x10, "c")];
        assert_eq!(function_at(&all, 0x11f).map(|f| f.name.as_str()), Some("a"));
        assert_eq!(function_at(&all, 0x120).map(|f| f.name.as_str()), Some("b"));
        assert_eq!(function_at(&all, 0x121), None);
        assert_eq!(function_at(&all, 0xff), None);
        assert_eq!(function_at(&all, 0x20f).map(|f| f.name.as_str()), Some("c"));
    }
}
