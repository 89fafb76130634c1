//! linklab-memcpy: the firmware images' `memcpy`, linked in place of compiler_builtins'
//! (whose symbols are weak, so the linker takes this one).
//!
//! Every payload byte the device moves goes through `memcpy` once or twice (smoltcp's copy
//! between a socket buffer and a frame, the virtio driver's copy into a transmit buffer),
//! and the copies are between word-aligned addresses by design (the queue's grants and the
//! MAC's transmit buffer start frames at 2 mod 4, the socket buffers are aligned to match).
//! compiler_builtins' `memcpy` moves one word per loop step there: ~1.25 instructions per
//! byte on riscv32imac and the Cortex-M3 (`linklab emu cost` and a per-function
//! instruction profile). This one moves a block of words per step: eight on riscv32 (eight
//! loads, eight stores, two pointer increments and a branch per 32 bytes), eight on Arm
//! (one load-multiple and one store-multiple of eight named registers, a subtract and a
//! branch per 32 bytes: 0.125 instructions per byte).
//!
//! Between addresses that differ mod 4, words are loaded from any address on Arm
//! (ARMv7-M can), and made of two aligned source words shifted together elsewhere. The
//! crate is `no_builtins`, so the compiler never turns these loops into a call to
//! `memcpy` (itself).
#![no_std]
#![no_builtins]

use core::sync::atomic::{AtomicU32, Ordering};

/// Bytes copied between addresses that differ mod 4 (the slower paths below, from the
/// destination's first word on), since boot, wrapping: how much of the device's copying ran off its word. `/stats` reports it, so a
/// transfer's instruction count can be split into what its aligned and its misaligned copies
/// cost (the receive figure's slow mode: smoltcp's copy of each payload into a receive ring
/// whose write position is off the payload's word).
static MISALIGNED_BYTES: AtomicU32 = AtomicU32::new(0);

/// [`MISALIGNED_BYTES`]: bytes copied off their word since boot (wrapping at 32 bits).
pub fn misaligned_bytes() -> u32 {
    MISALIGNED_BYTES.load(Ordering::Relaxed)
}

/// Adds `n` to [`MISALIGNED_BYTES`]: an atomic add where the core has one, else a load and
/// a store (ARMv6-M has no atomic read-modify-write; the count is a statistic, and an
/// interrupt's copy between the two may go uncounted).
#[inline(always)]
fn count_misaligned(n: usize) {
    #[cfg(target_has_atomic = "32")]
    MISALIGNED_BYTES.fetch_add(n as u32, Ordering::Relaxed);
    #[cfg(not(target_has_atomic = "32"))]
    MISALIGNED_BYTES.store(
        MISALIGNED_BYTES
            .load(Ordering::Relaxed)
            .wrapping_add(n as u32),
        Ordering::Relaxed,
    );
}

/// Copies `n` bytes from `src` to `dst`.
///
/// # Safety
/// `src..src + n` readable, `dst..dst + n` writable, the two not overlapping.
pub unsafe fn copy(mut dst: *mut u8, mut src: *const u8, mut n: usize) {
    // SAFETY (whole body): every access is within `src..src + n` or `dst..dst + n`, which the
    // caller guarantees; word accesses are aligned where they are done as aligned.
    unsafe {
        if n >= 16 {
            while !(dst as usize).is_multiple_of(4) {
                *dst = *src;
                dst = dst.add(1);
                src = src.add(1);
                n -= 1;
            }
            if (src as usize).is_multiple_of(4) {
                let (d, s) = (dst.cast::<u32>(), src.cast::<u32>());
                #[cfg(target_arch = "arm")]
                let (d, s) = {
                    let blocks = n / arm::BLOCK_BYTES;
                    arm::copy_blocks(d, s, blocks);
                    dst = dst.add(arm::BLOCK_BYTES * blocks);
                    src = src.add(arm::BLOCK_BYTES * blocks);
                    n -= arm::BLOCK_BYTES * blocks;
                    (dst.cast::<u32>(), src.cast::<u32>())
                };
                let words = copy_words(d, s, n / 4, |p| p.read());
                dst = dst.add(4 * words);
                src = src.add(4 * words);
                n -= 4 * words;
            } else if cfg!(all(target_arch = "arm", target_has_atomic = "32")) {
                count_misaligned(n);
                // ARMv7 loads a word from any address (not as a multiple load); ARMv6-M (the
                // Cortex-M0+, no compare-and-swap either) faults, so it takes the shifted
                // path below.
                let (d, s) = (dst.cast::<u32>(), src.cast::<u32>());
                let words = copy_words(d, s, n / 4, |p| p.read_unaligned());
                dst = dst.add(4 * words);
                src = src.add(4 * words);
                n -= 4 * words;
            } else {
                count_misaligned(n);
                let done = copy_shifted(dst.cast::<u32>(), src, n);
                dst = dst.add(done);
                src = src.add(done);
                n -= done;
            }
        }
        while n > 0 {
            *dst = *src;
            dst = dst.add(1);
            src = src.add(1);
            n -= 1;
        }
    }
}

/// Copies `words` words from `src` to the aligned `dst`, [`BLOCK`] per loop step, reading
/// each with `load`; returns `words`.
///
/// # Safety
/// As [`copy`], for `4 * words` bytes; `dst` word-aligned; `load` valid for `src`'s words.
#[inline(always)]
unsafe fn copy_words(
    mut dst: *mut u32,
    mut src: *const u32,
    words: usize,
    load: impl Fn(*const u32) -> u32,
) -> usize {
    let mut left = words;
    // SAFETY: within the ranges the caller guarantees.
    unsafe {
        // Spelled out (the images are built for size, which would not unroll a loop).
        while left >= BLOCK {
            let (a, b, c, d) = (
                load(src),
                load(src.add(1)),
                load(src.add(2)),
                load(src.add(3)),
            );
            if BLOCK == 8 {
                let (e, f, g, h) = (
                    load(src.add(4)),
                    load(src.add(5)),
                    load(src.add(6)),
                    load(src.add(7)),
                );
                dst.add(4).write(e);
                dst.add(5).write(f);
                dst.add(6).write(g);
                dst.add(7).write(h);
            }
            dst.write(a);
            dst.add(1).write(b);
            dst.add(2).write(c);
            dst.add(3).write(d);
            dst = dst.add(BLOCK);
            src = src.add(BLOCK);
            left -= BLOCK;
        }
        while left > 0 {
            dst.write(load(src));
            dst = dst.add(1);
            src = src.add(1);
            left -= 1;
        }
    }
    words
}

/// Copies from `src` (not word-aligned) to the aligned `dst` a word at a time, each made of
/// two aligned source words shifted together, while the next aligned source word lies
/// wholly inside `src..src + n`; returns the bytes copied (the caller copies the rest).
///
/// # Safety
/// As [`copy`]; `dst` word-aligned, `src` not.
#[inline(always)]
unsafe fn copy_shifted(mut dst: *mut u32, src: *const u8, n: usize) -> usize {
    let off = src as usize % 4;
    let (low, high) = (8 * off as u32, 32 - 8 * off as u32);
    // SAFETY: bytes src[..4 - off] and the aligned words read below lie inside
    // `src..src + n` (the loop's bound); `dst` gets as many bytes as were read.
    unsafe {
        // The first output word's low bytes: the source bytes before its first aligned word.
        let mut carry = 0u32;
        for j in 0..4 - off {
            carry |= u32::from(*src.add(j)) << (8 * j);
        }
        let mut next = src.add(4 - off).cast::<u32>();
        // Output word k needs source bytes up to 4k + 8 - off (exclusive).
        let words = (n + off).saturating_sub(8) / 4 + 1;
        let words = if n + off >= 8 { words } else { 0 };
        let mut left = words;
        // Spelled out, four words per step (built for size, the loop would not unroll).
        while left >= 4 {
            let (a, b, c, d) = (
                next.read(),
                next.add(1).read(),
                next.add(2).read(),
                next.add(3).read(),
            );
            dst.write(carry | a << high);
            dst.add(1).write(a >> low | b << high);
            dst.add(2).write(b >> low | c << high);
            dst.add(3).write(c >> low | d << high);
            carry = d >> low;
            dst = dst.add(4);
            next = next.add(4);
            left -= 4;
        }
        while left > 0 {
            let w = next.read();
            dst.write(carry | w << high);
            carry = w >> low;
            dst = dst.add(1);
            next = next.add(1);
            left -= 1;
        }
        4 * words
    }
}

/// Copies `n` bytes from `src` to `dst`, which may overlap: forward when the destination
/// is below the source (or the two do not overlap), else backward, a byte at a time.
/// Nothing hot moves overlapping bytes (smoltcp shifts a few assembler entries), so this is
/// small rather than fast: compiler_builtins' is 1.6 KB of unrolled paths on the Cortex-M3.
///
/// # Safety
/// `src..src + n` readable, `dst..dst + n` writable.
pub unsafe fn copy_overlapping(dst: *mut u8, src: *const u8, n: usize) {
    // SAFETY (whole body): every access is within the two ranges the caller guarantees.
    unsafe {
        if (dst as usize) <= (src as usize) || (dst as usize) >= (src as usize).wrapping_add(n) {
            if (dst as usize).wrapping_add(n) <= (src as usize)
                || (dst as usize) >= (src as usize).wrapping_add(n)
            {
                copy(dst, src, n);
            } else {
                for i in 0..n {
                    *dst.add(i) = *src.add(i);
                }
            }
        } else {
            let mut i = n;
            while i > 0 {
                i -= 1;
                *dst.add(i) = *src.add(i);
            }
        }
    }
}

/// Words per loop step: as many as the registers hold without spilling (the Cortex-M3
/// then loads and stores them as one multiple each).
const BLOCK: usize = if cfg!(target_arch = "arm") { 4 } else { 8 };

/// The Arm loop between word-aligned addresses: one `ldm` and one `stm` per step with the
/// registers named (the compiler's own loop, which must leave registers to its frame, moved
/// four words a step: five instructions per 16 bytes, here four per 32). ARMv7-M: eight
/// words a step. ARMv6-M (the Cortex-M0+, whose `ldm`/`stm` take only r0-r7, of which r6 and
/// r7 are the compiler's): three, 11 cycles per 12 bytes against about 9 per 4 in
/// compiler_builtins' word loop (the W5500-EVB-Pico's `linklab` image, whose profile had
/// `memcpy` at 9 % of the CPU sending at 62.5 MHz). rustc names no Arm architecture version
/// in `cfg`; ARMv6-M is the one Arm core linklab builds for without compare-and-swap, so
/// `target_has_atomic = "32"` tells the two apart.
#[cfg(target_arch = "arm")]
mod arm {
    use core::arch::asm;

    /// Bytes a step of [`copy_blocks`] moves.
    pub(super) const BLOCK_BYTES: usize = if cfg!(target_has_atomic = "32") {
        32
    } else {
        12
    };

    /// Copies `blocks` blocks of [`BLOCK_BYTES`] from `src` to `dst`.
    ///
    /// # Safety
    /// As [`super::copy`] for `BLOCK_BYTES * blocks` bytes; both word-aligned.
    #[cfg(not(target_has_atomic = "32"))]
    #[inline(always)]
    pub(super) unsafe fn copy_blocks(dst: *mut u32, src: *const u32, blocks: usize) {
        if blocks == 0 {
            return;
        }
        // SAFETY: `12 * blocks` bytes from each pointer, which the caller guarantees. Every
        // register is named, all low (Thumb-1's `ldm`/`stm` take no other): the data in
        // r0-r2, the pointers in r3 and r4, the count in r5.
        unsafe {
            asm!(
                "2:",
                "ldm r3!, {{r0, r1, r2}}",
                "stm r4!, {{r0, r1, r2}}",
                "subs r5, r5, #1",
                "bne 2b",
                inout("r3") src => _,
                inout("r4") dst => _,
                inout("r5") blocks => _,
                out("r0") _, out("r1") _, out("r2") _,
                options(nostack),
            );
        }
    }

    /// Copies `blocks` blocks of 32 bytes from `src` to `dst`.
    ///
    /// # Safety
    /// As [`super::copy`] for `32 * blocks` bytes; both word-aligned.
    #[cfg(target_has_atomic = "32")]
    #[inline(always)]
    pub(super) unsafe fn copy_blocks(dst: *mut u32, src: *const u32, blocks: usize) {
        if blocks == 0 {
            return;
        }
        // SAFETY: `32 * blocks` bytes from each pointer, which the caller guarantees. The
        // eight data registers are named, outside what the compiler keeps (r6, and the frame
        // pointer: r7 in Thumb, r11 in A32); it picks the rest.
        unsafe {
            asm!(
                "2:",
                "ldm {src}!, {{r2, r3, r4, r5, r8, r9, r10, r12}}",
                "stm {dst}!, {{r2, r3, r4, r5, r8, r9, r10, r12}}",
                "subs {n}, {n}, #1",
                "bne 2b",
                src = inout(reg) src => _,
                dst = inout(reg) dst => _,
                n = inout(reg) blocks => _,
                out("r2") _, out("r3") _, out("r4") _, out("r5") _,
                out("r8") _, out("r9") _, out("r10") _, out("r12") _,
                options(nostack),
            );
        }
    }
}

/// The C library's `memcpy`, for the compiler's calls and compiler_builtins' wrappers.
///
/// # Safety
/// As [`copy`].
#[cfg(target_os = "none")]
#[no_mangle]
pub unsafe extern "C" fn memcpy(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the caller's contract is copy's.
    unsafe { copy(dst, src, n) };
    dst
}

/// The C library's `memmove`, for the compiler's calls and compiler_builtins' wrappers.
///
/// # Safety
/// As [`copy_overlapping`].
#[cfg(target_os = "none")]
#[no_mangle]
pub unsafe extern "C" fn memmove(dst: *mut u8, src: *const u8, n: usize) -> *mut u8 {
    // SAFETY: the caller's contract is copy_overlapping's.
    unsafe { copy_overlapping(dst, src, n) };
    dst
}

/// The Arm EABI's `memcpy` entry points (the compiler calls these on Arm).
#[cfg(all(target_os = "none", target_arch = "arm"))]
mod aeabi {
    use super::copy;

    /// `__aeabi_memcpy`: any alignment.
    ///
    /// # Safety
    /// As [`copy`].
    #[no_mangle]
    pub unsafe extern "C" fn __aeabi_memcpy(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: forwarded.
        unsafe { copy(dst, src, n) }
    }

    /// `__aeabi_memmove`, `__aeabi_memmove4`, `__aeabi_memmove8`: any overlap.
    ///
    /// # Safety
    /// As [`copy_overlapping`](super::copy_overlapping).
    #[no_mangle]
    pub unsafe extern "C" fn __aeabi_memmove(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: forwarded.
        unsafe { super::copy_overlapping(dst, src, n) }
    }

    /// See [`__aeabi_memmove`].
    ///
    /// # Safety
    /// As [`copy_overlapping`](super::copy_overlapping).
    #[no_mangle]
    pub unsafe extern "C" fn __aeabi_memmove4(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: forwarded.
        unsafe { super::copy_overlapping(dst, src, n) }
    }

    /// See [`__aeabi_memmove`].
    ///
    /// # Safety
    /// As [`copy_overlapping`](super::copy_overlapping).
    #[no_mangle]
    pub unsafe extern "C" fn __aeabi_memmove8(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: forwarded.
        unsafe { super::copy_overlapping(dst, src, n) }
    }

    /// `__aeabi_memcpy4`: both word-aligned.
    ///
    /// # Safety
    /// As [`copy`].
    #[no_mangle]
    pub unsafe extern "C" fn __aeabi_memcpy4(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: forwarded.
        unsafe { copy(dst, src, n) }
    }

    /// `__aeabi_memcpy8`: both 8-byte aligned.
    ///
    /// # Safety
    /// As [`copy`].
    #[no_mangle]
    pub unsafe extern "C" fn __aeabi_memcpy8(dst: *mut u8, src: *const u8, n: usize) {
        // SAFETY: forwarded.
        unsafe { copy(dst, src, n) }
    }
}

#[cfg(test)]
mod tests {
    extern crate std;
    use super::{copy, copy_overlapping, misaligned_bytes};

    /// Both tests copy, and the counter is shared: one at a time.
    static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

    /// Overlapping moves both ways, every shift and length to 40, against `copy_within`.
    #[test]
    fn moves_overlapping_bytes() {
        let _one = ONE_AT_A_TIME.lock();
        for len in 0..40 {
            for from in 0..8 {
                for to in 0..8 {
                    let mut want: std::vec::Vec<u8> = (0..64u8).collect();
                    let mut got = want.clone();
                    want.copy_within(from..from + len, to);
                    let p = got.as_mut_ptr();
                    // SAFETY: both ranges inside `got`.
                    unsafe { copy_overlapping(p.add(to), p.add(from), len) };
                    assert_eq!(got, want, "{len} {from} {to}");
                }
            }
        }
    }

    /// Every length to 100 at every pair of alignments, and long copies, against
    /// `copy_from_slice`; the bytes around the destination untouched.
    #[test]
    fn copies_exactly_at_every_alignment_and_length() {
        let _one = ONE_AT_A_TIME.lock();
        let src: std::vec::Vec<u8> = (0..2000u32).map(|i| (i * 7 + 3) as u8).collect();
        for len in (0..100).chain([255, 256, 257, 1460, 1514]) {
            for s in 0..4 {
                for d in 0..4 {
                    let mut dst = [0xEEu8; 1600];
                    // SAFETY: in bounds of both buffers; they do not overlap.
                    unsafe { copy(dst.as_mut_ptr().add(8 + d), src.as_ptr().add(s), len) };
                    assert_eq!(&dst[8 + d..8 + d + len], &src[s..s + len], "{len} {s} {d}");
                    assert!(dst[..8 + d].iter().all(|&b| b == 0xEE));
                    assert!(dst[8 + d + len..].iter().all(|&b| b == 0xEE));
                }
            }
        }
    }

    /// Only copies between addresses that differ mod 4 are counted, with all their bytes.
    #[test]
    fn counts_the_bytes_copied_off_their_word() {
        let _one = ONE_AT_A_TIME.lock();
        #[repr(align(4))]
        struct Words([u8; 64]);
        let src = Words([7; 64]);
        let mut dst = Words([0; 64]);
        let counted = |f: &mut dyn FnMut()| {
            let before = misaligned_bytes();
            f();
            misaligned_bytes().wrapping_sub(before)
        };
        // SAFETY (each copy): in bounds of both buffers; they do not overlap.
        let (s, d) = (src.0.as_ptr(), dst.0.as_mut_ptr());
        assert_eq!(counted(&mut || unsafe { copy(d.add(4), s.add(4), 40) }), 0);
        assert_eq!(counted(&mut || unsafe { copy(d.add(5), s.add(5), 40) }), 0);
        assert_eq!(counted(&mut || unsafe { copy(d.add(4), s.add(5), 40) }), 40);
        // From the destination's first word on (one byte before it, copied alone).
        assert_eq!(counted(&mut || unsafe { copy(d.add(7), s.add(4), 50) }), 49);
        // Short copies take the byte loop whatever their alignment: not counted.
        assert_eq!(counted(&mut || unsafe { copy(d.add(4), s.add(5), 15) }), 0);
    }
}
