//! linklab-small-builtins: the minimal images' 64-bit division and `memset`, linked in place
//! of compiler_builtins' (whose symbols are weak, so the linker takes these).
//!
//! compiler_builtins' are built for speed: its 64-bit division is 866 bytes on the Cortex-M3
//! and 954 on riscv32imac, its `memset` family (`memset`, Arm's `__aeabi_memset*` and
//! `__aeabi_memclr*`) 750 bytes. Neither runs per byte of a transfer: the images divide
//! 64-bit times and counts a few times per main-loop pass (nanoseconds to microseconds, the
//! results' seconds) and clear buffers when they are built. A minimal image, sized for
//! flash, takes these instead: a word-at-a-time `memset`, and one division of 308 bytes on
//! the Cortex-M3 (684 on riscv32imac, which counts leading zeros in software): the 32-bit
//! division where both operands fit (the hardware's on the Cortex-M3 and riscv32imac, a
//! library routine on the Cortex-A9, which has none), then 16-bit digits while the divisor
//! fits 16 bits, else a bit at a time.
//!
//! The crate is `no_builtins`, so the compiler never turns these loops into calls to the
//! routines they replace.
#![no_std]
#![no_builtins]

/// `n / d` and `n % d` for `d != 0` (a zero divisor gives `(u64::MAX, n)`: Rust checks for it
/// before it ever calls a division routine).
pub fn div_rem(n: u64, d: u64) -> (u64, u64) {
    if d == 0 {
        return (u64::MAX, n);
    }
    if n >> 32 == 0 {
        // Both fit 32 bits (d <= n, or the quotient is 0): one hardware division.
        if d > n {
            return (0, n);
        }
        let (q, r) = div_rem32(n as u32, d as u32);
        return (u64::from(q), u64::from(r));
    }
    if d >> 16 == 0 {
        // Long division in 32-, 16- and 16-bit digits: each partial dividend (the remainder
        // so far, below d < 2^16, and the next digit) fits 32 bits.
        let d = d as u32;
        let high = (n >> 32) as u32;
        let low = n as u32;
        let (q1, r) = div_rem32(high, d);
        let (q2, r) = div_rem32(r << 16 | low >> 16, d);
        let (q3, r) = div_rem32(r << 16 | (low & 0xffff), d);
        return (
            u64::from(q1) << 32 | u64::from(q2) << 16 | u64::from(q3),
            u64::from(r),
        );
    }
    if d > n {
        return (0, n);
    }
    // A bit at a time, from the divisor shifted under the dividend's top bit.
    let shift = d.leading_zeros() - n.leading_zeros();
    let mut d = d << shift;
    let (mut q, mut r) = (0u64, n);
    for _ in 0..=shift {
        q <<= 1;
        if r >= d {
            r -= d;
            q |= 1;
        }
        d >>= 1;
    }
    (q, r)
}

/// `n / d` and `n % d` in 32 bits (the hardware's division where there is one), `d != 0`.
/// Without a panic path (`checked_div`, `checked_rem`), so this `no_builtins` crate needs
/// nothing of core's panic machinery.
fn div_rem32(n: u32, d: u32) -> (u32, u32) {
    match (n.checked_div(d), n.checked_rem(d)) {
        (Some(q), Some(r)) => (q, r),
        _ => (u32::MAX, n),
    }
}

/// Fills `n` bytes at `s` with `c`: bytes up to a word, then words, then bytes.
///
/// # Safety
/// `s..s + n` writable.
pub unsafe fn fill(mut s: *mut u8, c: u8, mut n: usize) {
    // SAFETY (whole body): every write is within `s..s + n`, which the caller guarantees;
    // word writes are to word-aligned addresses.
    unsafe {
        while n > 0 && !(s as usize).is_multiple_of(4) {
            *s = c;
            s = s.add(1);
            n -= 1;
        }
        let word = u32::from(c) * 0x0101_0101;
        while n >= 4 {
            s.cast::<u32>().write(word);
            s = s.add(4);
            n -= 4;
        }
        while n > 0 {
            *s = c;
            s = s.add(1);
            n -= 1;
        }
    }
}

/// The entry points the compiler calls, on the images only (a host build keeps its own).
#[cfg(target_os = "none")]
mod entry {
    use super::{div_rem, fill};

    /// The C library's `memset`.
    ///
    /// # Safety
    /// As [`fill`].
    #[no_mangle]
    pub unsafe extern "C" fn memset(s: *mut u8, c: i32, n: usize) -> *mut u8 {
        // SAFETY: the caller's contract is fill's.
        unsafe { fill(s, c as u8, n) };
        s
    }

    /// `n / d` (riscv32's and the generic unsigned 64-bit division).
    #[no_mangle]
    pub extern "C" fn __udivdi3(n: u64, d: u64) -> u64 {
        div_rem(n, d).0
    }

    /// `n % d`.
    #[no_mangle]
    pub extern "C" fn __umoddi3(n: u64, d: u64) -> u64 {
        div_rem(n, d).1
    }

    /// `n / d`, and `n % d` through `rem` (what Arm's `__aeabi_uldivmod` calls).
    ///
    /// # Safety
    /// `rem` null or writable.
    #[no_mangle]
    pub unsafe extern "C" fn __udivmoddi4(n: u64, d: u64, rem: *mut u64) -> u64 {
        let (q, r) = div_rem(n, d);
        if !rem.is_null() {
            // SAFETY: the caller's contract.
            unsafe { rem.write(r) };
        }
        q
    }

    /// The Arm EABI's `memset` and `memclr` entry points (note the EABI's argument order).
    #[cfg(target_arch = "arm")]
    mod aeabi {
        use super::fill;

        /// `__aeabi_memset`: any alignment.
        ///
        /// # Safety
        /// As [`fill`].
        #[no_mangle]
        pub unsafe extern "C" fn __aeabi_memset(s: *mut u8, n: usize, c: i32) {
            // SAFETY: forwarded.
            unsafe { fill(s, c as u8, n) }
        }

        /// `__aeabi_memset4`: `s` word-aligned.
        ///
        /// # Safety
        /// As [`fill`].
        #[no_mangle]
        pub unsafe extern "C" fn __aeabi_memset4(s: *mut u8, n: usize, c: i32) {
            // SAFETY: forwarded.
            unsafe { fill(s, c as u8, n) }
        }

        /// `__aeabi_memset8`: `s` 8-byte aligned.
        ///
        /// # Safety
        /// As [`fill`].
        #[no_mangle]
        pub unsafe extern "C" fn __aeabi_memset8(s: *mut u8, n: usize, c: i32) {
            // SAFETY: forwarded.
            unsafe { fill(s, c as u8, n) }
        }

        /// `__aeabi_memclr`: zeroes, any alignment.
        ///
        /// # Safety
        /// As [`fill`].
        #[no_mangle]
        pub unsafe extern "C" fn __aeabi_memclr(s: *mut u8, n: usize) {
            // SAFETY: forwarded.
            unsafe { fill(s, 0, n) }
        }

        /// `__aeabi_memclr4`: `s` word-aligned.
        ///
        /// # Safety
        /// As [`fill`].
        #[no_mangle]
        pub unsafe extern "C" fn __aeabi_memclr4(s: *mut u8, n: usize) {
            // SAFETY: forwarded.
            unsafe { fill(s, 0, n) }
        }

        /// `__aeabi_memclr8`: `s` 8-byte aligned.
        ///
        /// # Safety
        /// As [`fill`].
        #[no_mangle]
        pub unsafe extern "C" fn __aeabi_memclr8(s: *mut u8, n: usize) {
            // SAFETY: forwarded.
            unsafe { fill(s, 0, n) }
        }
    }
}
