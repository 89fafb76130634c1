//! The division and the fill agree with the host's own on edge cases and on a million
//! pseudo-random operands of every size (each path: both operands under 2^32, a divisor
//! under 2^16 of a wider dividend, a wider divisor).

use linklab_small_builtins::{div_rem, fill};

/// xorshift64*: reproducible operands without a dependency.
fn next(state: &mut u64) -> u64 {
    *state ^= *state >> 12;
    *state ^= *state << 25;
    *state ^= *state >> 27;
    state.wrapping_mul(0x2545_F491_4F6C_DD1D)
}

#[test]
fn division_agrees_with_the_hosts() {
    let edges = [
        1,
        2,
        3,
        7,
        10,
        1000,
        0xFFFF,
        0x1_0000,
        0x1_0001,
        1_000_000,
        1_000_000_000,
        u32::MAX as u64 - 1,
        u32::MAX as u64,
        1 << 32,
        (1 << 32) + 1,
        u64::MAX / 3,
        u64::MAX - 1,
        u64::MAX,
    ];
    for &n in edges.iter().chain(&[0]) {
        for &d in &edges {
            assert_eq!(div_rem(n, d), (n / d, n % d), "{n} / {d}");
        }
    }
    let mut s = 0x9E37_79B9_7F4A_7C15;
    for _ in 0..1_000_000 {
        // Random widths, so every path is taken often.
        let n = next(&mut s) >> (next(&mut s) % 64);
        let d = (next(&mut s) >> (next(&mut s) % 64)).max(1);
        assert_eq!(div_rem(n, d), (n / d, n % d), "{n} / {d}");
    }
}

#[test]
fn a_zero_divisor_gives_all_ones_and_the_dividend() {
    assert_eq!(div_rem(12345, 0), (u64::MAX, 12345));
}

#[test]
fn fill_writes_exactly_its_range() {
    for start in 0..8 {
        for len in 0..40 {
            let mut buf = [0xAAu8; 64];
            // SAFETY: start + len <= 48 < 64.
            unsafe { fill(buf.as_mut_ptr().add(start), 0x5C, len) };
            for (i, &b) in buf.iter().enumerate() {
                let inside = i >= start && i < start + len;
                assert_eq!(b, if inside { 0x5C } else { 0xAA }, "{start}+{len} at {i}");
            }
        }
    }
}
