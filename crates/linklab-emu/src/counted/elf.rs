//! What the bench reads from an ELF image: flash and RAM by the same rule for every image,
//! and the function symbols (to name where a profile's instructions went).

use std::path::Path;

use anyhow::Context;

/// Flash and static RAM of an image, from its allocated sections.
#[derive(Clone, Copy, Debug, Default)]
pub struct Size {
    /// Every allocated section with contents (stored in flash): vectors, code, read-only
    /// data, the initial values of `.data`.
    pub flash: u64,
    /// Every allocated writable section (`.data`, `.bss`, ...) but a stack reserve.
    pub static_ram: u64,
    /// A stack reserve the linker script sets aside as a section (lwIP's `.heap`, 4 KiB with
    /// a heap of 0); linklab's images keep none (their stack is the RAM above the statics).
    pub stack_reserve: u64,
}

/// A function symbol: its start (Thumb bit cleared), size and name.
#[derive(Clone, Debug)]
pub struct Function {
    /// Its first byte's address (Thumb bit cleared).
    pub start: u64,
    /// Its length in bytes.
    pub size: u64,
    /// Its symbol name, as the ELF has it.
    pub name: String,
}

/// Section headers of a 32-bit little-endian ELF.
struct Section {
    name: u32,
    kind: u32,
    flags: u32,
    offset: usize,
    size: usize,
    link: u32,
}

fn sections(elf: &[u8]) -> Option<Vec<Section>> {
    if elf.get(..6)? != b"\x7fELF\x01\x01" {
        return None;
    }
    let u16_at = |o: usize| elf.get(o..o + 2).map(|b| u16::from_le_bytes([b[0], b[1]]));
    let u32_at = |o: usize| {
        elf.get(o..o + 4)
            .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    };
    let shoff = u32_at(0x20)? as usize;
    let entsize = u16_at(0x2E)? as usize;
    let count = u16_at(0x30)? as usize;
    if entsize < 40 {
        return None;
    }
    (0..count)
        .map(|i| {
            let h = shoff.checked_add(i.checked_mul(entsize)?)?;
            Some(Section {
                name: u32_at(h)?,
                kind: u32_at(h + 4)?,
                flags: u32_at(h + 8)?,
                offset: u32_at(h + 16)? as usize,
                size: u32_at(h + 20)? as usize,
                link: u32_at(h + 24)?,
            })
        })
        .collect()
}

/// The NUL-terminated string at `at` of a string table.
fn string(table: &[u8], at: usize) -> String {
    let s = table.get(at..).unwrap_or(&[]);
    let end = s.iter().position(|&b| b == 0).unwrap_or(s.len());
    String::from_utf8_lossy(&s[..end]).into_owned()
}

/// The flash and RAM of the image at `path`.
pub fn size(path: &Path) -> anyhow::Result<Size> {
    const SHF_WRITE: u32 = 1;
    const SHF_ALLOC: u32 = 2;
    const SHT_NOBITS: u32 = 8;
    let elf = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let all = sections(&elf).with_context(|| format!("{} is not a 32-bit ELF", path.display()))?;
    let names = usize::from(u16::from_le_bytes([elf[0x32], elf[0x33]]));
    let strtab = all
        .get(names)
        .and_then(|s| elf.get(s.offset..s.offset + s.size))
        .unwrap_or(&[]);
    let mut size = Size::default();
    for s in &all {
        if s.flags & SHF_ALLOC == 0 {
            continue;
        }
        let name = string(strtab, s.name as usize);
        if s.kind != SHT_NOBITS {
            size.flash += s.size as u64;
        }
        if s.flags & SHF_WRITE != 0 {
            if name == ".heap" || name == ".stack" {
                size.stack_reserve += s.size as u64;
            } else {
                size.static_ram += s.size as u64;
            }
        }
    }
    Ok(size)
}

/// The image's function symbols, sorted by address.
pub fn functions(path: &Path) -> anyhow::Result<Vec<Function>> {
    const SHT_SYMTAB: u32 = 2;
    const STT_FUNC: u8 = 2;
    let elf = std::fs::read(path).with_context(|| format!("cannot read {}", path.display()))?;
    let all = sections(&elf).with_context(|| format!("{} is not a 32-bit ELF", path.display()))?;
    let mut out = Vec::new();
    for s in all.iter().filter(|s| s.kind == SHT_SYMTAB) {
        let strings = all
            .get(s.link as usize)
            .and_then(|t| elf.get(t.offset..t.offset + t.size))
            .unwrap_or(&[]);
        let table = elf.get(s.offset..s.offset + s.size).unwrap_or(&[]);
        for sym in table.chunks_exact(16) {
            let word = |o: usize| u32::from_le_bytes([sym[o], sym[o + 1], sym[o + 2], sym[o + 3]]);
            if sym[12] & 0xf != STT_FUNC {
                continue;
            }
            out.push(Function {
                start: u64::from(word(4) & !1),
                size: u64::from(word(8)),
                name: string(strings, word(0) as usize),
            });
        }
    }
    // One entry per start address, the largest (aliases such as cortex-m-rt's exception
    // names share their handler's address with size 0 or its size).
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
