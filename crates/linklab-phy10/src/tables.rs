//! Lookup tables built at compile time: byte -> samples for the encoder's 2x and 4x paths.
//!
//! Manchester as 802.3 clause 7/14 defines it: a `1` bit is low in the first half and high in
//! the second (a rising mid-bit edge), a `0` bit is high then low. Samples are LSB first.

/// One byte (LSB first) at 2x: 16 samples, two per bit.
pub(crate) static ENCODE_X2: [u16; 256] = build_encode_x2();
/// One byte (LSB first) at 4x: 32 samples, four per bit.
pub(crate) static ENCODE_X4: [u32; 256] = build_encode_x4();

const fn build_encode_x2() -> [u16; 256] {
    let mut table = [0u16; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut samples = 0u16;
        let mut bit = 0;
        while bit < 8 {
            // bit 1: first half low, second half high -> sample pair 0b10.
            let cell = if (byte >> bit) & 1 == 1 { 0b10 } else { 0b01 };
            samples |= cell << (2 * bit);
            bit += 1;
        }
        table[byte] = samples;
        byte += 1;
    }
    table
}

const fn build_encode_x4() -> [u32; 256] {
    let mut table = [0u32; 256];
    let mut byte = 0;
    while byte < 256 {
        let mut samples = 0u32;
        let mut bit = 0;
        while bit < 8 {
            let cell = if (byte >> bit) & 1 == 1 {
                0b1100
            } else {
                0b0011
            };
            samples |= cell << (4 * bit);
            bit += 1;
        }
        table[byte] = samples;
        byte += 1;
    }
    table
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encode_tables_agree() {
        // 0x01 at 4x: bit 0 is a one (0b1100), the other seven are zeros (0b0011).
        assert_eq!(ENCODE_X4[0x01], 0x3333_333C);
        assert_eq!(ENCODE_X2[0x01], 0x5556);
    }
}
