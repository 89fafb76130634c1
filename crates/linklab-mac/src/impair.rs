//! What a sampling PHY may deliver: a wire image shifted by some bits and/or inverted.
//!
//! Used by tests, the fuzz target, the `impaired_link` example and simulators to turn
//! clean wire bytes into a raw capture for [`crate::RxFormat::Raw`].

/// Writes `wire` into `out` as a bit stream (LSB first) that starts `offset_bits` late,
/// preceded by `offset_bits` idle bits (0, or 1 when inverted), inverting every bit if
/// `invert`. Returns the number of bytes of `out` written (including a last partial byte);
/// stops early if `out` is too small.
pub fn shift_into(out: &mut [u8], wire: &[u8], offset_bits: usize, invert: bool) -> usize {
    let k = offset_bits % 8;
    let skip = offset_bits / 8;
    let mask = if invert { 0xFF } else { 0 };
    let mut n = 0;
    for slot in out.iter_mut().take(skip) {
        *slot = mask;
        n += 1;
    }
    let mut carry: u16 = 0;
    for &b in wire {
        let v = carry | ((b as u16) << k);
        match out.get_mut(n) {
            Some(o) => *o = (v as u8) ^ mask,
            None => return n,
        }
        n += 1;
        carry = v >> 8;
    }
    if k != 0 {
        // The last k bits, padded with idle bits.
        if let Some(o) = out.get_mut(n) {
            *o = (carry as u8) ^ mask;
            n += 1;
        }
    }
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_by_zero_is_a_copy_and_three_bits_moves_bits() {
        let mut out = [0u8; 4];
        assert_eq!(shift_into(&mut out, &[0xAB, 0xCD], 0, false), 2);
        assert_eq!(&out[..2], &[0xAB, 0xCD]);
        assert_eq!(shift_into(&mut out, &[0xFF], 3, false), 2);
        assert_eq!(&out[..2], &[0xF8, 0x07]);
        assert_eq!(shift_into(&mut out, &[0xFF], 3, true), 2);
        assert_eq!(&out[..2], &[0x07, 0xF8]);
        assert_eq!(shift_into(&mut out, &[1, 2, 3, 4], 8, false), 4);
        assert_eq!(&out[..4], &[0, 1, 2, 3]);
    }
}
