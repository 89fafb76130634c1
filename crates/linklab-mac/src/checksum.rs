//! Internet checksums (RFC 1071) of IPv4, TCP and UDP, computed by the MAC instead of the
//! stack ("checksum offload", [`crate::Mac::set_checksum_offload`]): verified on receive
//! (frames with a wrong one are dropped and counted in `rx_checksum_errors`) and filled in
//! on transmit, a 32-bit word at a time.
//!
//! smoltcp sums 16-bit words: on riscv32imac that measured ~3.5 instructions per payload byte
//! of TCP receive (`linklab emu cost` with its verification off: 10.4 → 6.8). Here the sum
//! reads aligned 32-bit words into a 64-bit accumulator (RFC 1071's byte-order independence
//! and deferred carries): ~1 instruction per byte on rv32; on Arm eight words per
//! load-multiple with the carries chained, 0.34.

/// What [`verify`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Not an IPv4 frame, or a fragment or protocol whose checksum the stack checks: the
    /// stack decides.
    Unchecked,
    /// IPv4 header and (TCP or UDP) checksum right.
    Good,
    /// A wrong IPv4 header, TCP or UDP checksum, or an IPv4 header that lies about its
    /// lengths: drop.
    Bad,
}

const ETHERTYPE_IPV4: [u8; 2] = [0x08, 0x00];
const ETH_HEADER: usize = 14;
const TCP: u8 = 6;
const UDP: u8 = 17;
/// Offset of the checksum field in a TCP header.
const TCP_CHECKSUM_AT: usize = 16;
/// Offset of the checksum field in a UDP header.
const UDP_CHECKSUM_AT: usize = 6;

/// Folds a 64-bit sum of 16-bit quantities into 16 bits (end-around carries).
fn fold(mut sum: u64) -> u16 {
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    sum as u16
}

/// The one's complement sum of `data` as big-endian 16-bit words (a trailing odd byte is
/// padded with zero), folded to 16 bits.
pub fn sum(data: &[u8]) -> u16 {
    // SAFETY: every bit pattern is a valid u32; align_to only splits the slice.
    let (head, words, tail) = unsafe { data.align_to::<u32>() };
    // Bytes are summed by their position from the start of `data`: an even position is
    // the high byte of a big-endian word.
    let byte_at = |pos: usize, b: u8| -> u64 {
        if pos.is_multiple_of(2) {
            u64::from(b) << 8
        } else {
            u64::from(b)
        }
    };
    let mut edge = 0u64;
    for (i, &b) in head.iter().enumerate() {
        edge += byte_at(i, b);
    }
    let tail_at = head.len() + 4 * words.len();
    for (i, &b) in tail.iter().enumerate() {
        edge += byte_at(tail_at + i, b);
    }
    // Native (little-endian) words: their 16-bit halves summed are the byte-swapped sum of
    // the big-endian words when the words start at an even position, the sum itself when
    // they start at an odd one (RFC 1071 2(B)).
    let mut middle = fold(sum_words(words));
    if cfg!(target_endian = "little") == (head.len() % 2 == 0) {
        middle = middle.swap_bytes();
    }
    fold(edge + u64::from(middle))
}

/// The sum of `words` as integers (a 64-bit accumulator defers every carry; RFC 1071's
/// byte-order independence lets the caller fold and swap it). On Arm, eight words per
/// load-multiple with the carries chained through `adcs` ([`arm`]); not on ARMv6-M (the
/// RP2040's Cortex-M0+: no Thumb-2), which `target_has_atomic` tells apart (every Arm core
/// with Thumb-2 or A32 has compare-and-swap, ARMv6-M has none).
fn sum_words(words: &[u32]) -> u64 {
    #[cfg(all(target_arch = "arm", target_has_atomic = "32"))]
    let (mut acc, words) = arm::sum_blocks(words);
    #[cfg(not(all(target_arch = "arm", target_has_atomic = "32")))]
    let mut acc = 0u64;
    let mut quads = words.chunks_exact(4);
    for q in &mut quads {
        acc += u64::from(q[0]) + u64::from(q[1]) + u64::from(q[2]) + u64::from(q[3]);
    }
    for &w in quads.remainder() {
        acc += u64::from(w);
    }
    acc
}

/// The Arm loop (ARMv7-M and ARMv7-A: Thumb-2 or A32): per 32 bytes one `ldm` of eight
/// words and eight `adcs`, the carry chained from block to block (`teq` and `bne` leave it
/// alone), 11 instructions; the compiler's loop over a 64-bit accumulator took ~0.9
/// instructions per byte on the Cortex-M3 (per-function profile of `linklab emu
/// cost mps2-an385`'s send).
#[cfg(all(target_arch = "arm", target_has_atomic = "32"))]
mod arm {
    use core::arch::asm;

    /// Sums the leading whole blocks of eight words of `words` (a 32-bit one's complement
    /// sum: carries wrapped around, which folds to the same 16 bits) and returns it with
    /// the words left over.
    pub(super) fn sum_blocks(words: &[u32]) -> (u64, &[u32]) {
        let blocks = words.len() / 8;
        let (head, rest) = words.split_at(blocks * 8);
        if blocks == 0 {
            return (0, rest);
        }
        let mut sum = 0u32;
        // SAFETY: reads the `blocks * 8` words of `head`. The eight data registers are
        // named, outside what the compiler keeps (r6, and the frame pointer: r7 in Thumb,
        // r11 in A32); it picks the rest.
        unsafe {
            asm!(
                "adds {sum}, {sum}, #0",
                "2:",
                "ldm {at}!, {{r2, r3, r4, r5, r8, r9, r10, r12}}",
                "adcs {sum}, {sum}, r2",
                "adcs {sum}, {sum}, r3",
                "adcs {sum}, {sum}, r4",
                "adcs {sum}, {sum}, r5",
                "adcs {sum}, {sum}, r8",
                "adcs {sum}, {sum}, r9",
                "adcs {sum}, {sum}, r10",
                "adcs {sum}, {sum}, r12",
                "teq {at}, {end}",
                "bne 2b",
                "adc {sum}, {sum}, #0",
                at = inout(reg) head.as_ptr() => _,
                end = in(reg) head.as_ptr_range().end,
                sum = inout(reg) sum,
                out("r2") _, out("r3") _, out("r4") _, out("r5") _,
                out("r8") _, out("r9") _, out("r10") _, out("r12") _,
                options(nostack, readonly),
            );
        }
        (u64::from(sum), rest)
    }
}

/// The pseudo-header sum of an IPv4 TCP/UDP segment of `len` bytes.
fn pseudo_header(ip: &[u8], proto: u8, len: usize) -> u64 {
    let be = |i: usize| u64::from(u16::from_be_bytes([ip[i], ip[i + 1]]));
    be(12) + be(14) + be(16) + be(18) + u64::from(proto) + len as u64
}

/// The IPv4 packet of an Ethernet frame: (IP header length, packet) if the frame carries
/// one whose lengths are consistent, else None; Err(()) if they are not.
fn ipv4(frame: &[u8]) -> Option<Result<(usize, &[u8]), ()>> {
    if frame.get(12..14)? != ETHERTYPE_IPV4 {
        return None;
    }
    let ip = &frame[ETH_HEADER..];
    let (&vihl, _) = ip.split_first()?;
    let ihl = usize::from(vihl & 0x0f) * 4;
    if vihl >> 4 != 4 {
        return None;
    }
    let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
    if ihl < 20 || total < ihl || total > ip.len() {
        return Some(Err(()));
    }
    Some(Ok((ihl, &ip[..total])))
}

/// True if the IPv4 packet is a fragment (its transport header is not checkable alone).
fn is_fragment(ip: &[u8]) -> bool {
    let flags_offset = u16::from_be_bytes([ip[6], ip[7]]);
    flags_offset & 0x3fff != 0
}

/// Checks the IPv4 header checksum and the TCP or UDP checksum of an Ethernet `frame`
/// (destination address first, no FCS).
pub fn verify(frame: &[u8]) -> Verdict {
    let (ihl, ip) = match ipv4(frame) {
        None => return Verdict::Unchecked,
        Some(Err(())) => return Verdict::Bad,
        Some(Ok(x)) => x,
    };
    if sum(&ip[..ihl]) != 0xffff {
        return Verdict::Bad;
    }
    if is_fragment(ip) {
        return Verdict::Unchecked;
    }
    let proto = ip[9];
    let l4 = &ip[ihl..];
    let at = match proto {
        TCP => TCP_CHECKSUM_AT,
        UDP => UDP_CHECKSUM_AT,
        _ => return Verdict::Unchecked,
    };
    if l4.len() < at + 2 {
        return Verdict::Bad;
    }
    if proto == UDP && l4[at..at + 2] == [0, 0] {
        // No checksum (IPv4 allows it for UDP).
        return Verdict::Good;
    }
    let total = pseudo_header(ip, proto, l4.len()) + u64::from(sum(l4));
    if fold(total) == 0xffff {
        Verdict::Good
    } else {
        Verdict::Bad
    }
}

/// Fills in the IPv4 header checksum and the TCP or UDP checksum of an Ethernet `frame`
/// that the stack built with those fields zero (smoltcp does, with checksum capabilities
/// off). Frames that are not IPv4, fragments and other protocols are left as they are.
pub fn fill(frame: &mut [u8]) {
    let (ihl, len) = match ipv4(frame) {
        Some(Ok((ihl, ip))) => (ihl, ip.len()),
        _ => return,
    };
    let ip = &mut frame[ETH_HEADER..ETH_HEADER + len];
    ip[10..12].fill(0);
    let c = !sum(&ip[..ihl]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    if is_fragment(ip) {
        return;
    }
    let proto = ip[9];
    let at = match proto {
        TCP => TCP_CHECKSUM_AT,
        UDP => UDP_CHECKSUM_AT,
        _ => return,
    };
    let l4_len = len - ihl;
    if l4_len < at + 2 {
        return;
    }
    let pseudo = pseudo_header(ip, proto, l4_len);
    let l4 = &mut ip[ihl..];
    l4[at..at + 2].fill(0);
    let mut c = !fold(pseudo + u64::from(sum(l4)));
    if proto == UDP && c == 0 {
        c = 0xffff;
    }
    l4[at..at + 2].copy_from_slice(&c.to_be_bytes());
}

/// Where a NIC that completes transport checksums (transmit checksum offload) finds the
/// TCP or UDP checksum of an Ethernet `frame`: (start of the transport header, offset of
/// its checksum field from there), both from the frame's first byte and transport header;
/// None for frames that are not IPv4 TCP or UDP, or are fragments.
pub fn l4_checksum_field(frame: &[u8]) -> Option<(usize, usize)> {
    let (ihl, ip) = ipv4(frame)?.ok()?;
    if is_fragment(ip) {
        return None;
    }
    let at = match ip[9] {
        TCP => TCP_CHECKSUM_AT,
        UDP => UDP_CHECKSUM_AT,
        _ => return None,
    };
    (ip.len() >= ihl + at + 2).then_some((ETH_HEADER + ihl, at))
}

/// [`fill`] for a NIC that completes the TCP or UDP checksum itself (virtio-net's
/// `VIRTIO_NET_F_CSUM`, Linux's `CHECKSUM_PARTIAL`): fills in the IPv4 header checksum and
/// writes only the pseudo-header sum (folded, not complemented) into the transport
/// checksum field, which the NIC then completes over the transport header and payload from
/// [`l4_checksum_field`]. No pass over the payload here.
pub fn fill_partial(frame: &mut [u8]) {
    let (ihl, len) = match ipv4(frame) {
        Some(Ok((ihl, ip))) => (ihl, ip.len()),
        _ => return,
    };
    let Some((_, at)) = l4_checksum_field(frame) else {
        // Not TCP or UDP, or a fragment: the IPv4 header at least.
        fill(frame);
        return;
    };
    let ip = &mut frame[ETH_HEADER..ETH_HEADER + len];
    ip[10..12].fill(0);
    let c = !sum(&ip[..ihl]);
    ip[10..12].copy_from_slice(&c.to_be_bytes());
    let proto = ip[9];
    let l4_len = len - ihl;
    let partial = fold(pseudo_header(ip, proto, l4_len));
    ip[ihl + at..ihl + at + 2].copy_from_slice(&partial.to_be_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference: big-endian 16-bit words, one at a time.
    fn slow(data: &[u8]) -> u16 {
        let mut s = 0u64;
        for (i, &b) in data.iter().enumerate() {
            s += if i % 2 == 0 {
                u64::from(b) << 8
            } else {
                u64::from(b)
            };
        }
        fold(s)
    }

    #[test]
    fn word_sum_matches_the_reference_at_every_alignment_and_length() {
        let data: [u8; 300] = core::array::from_fn(|i| (i * 151 + 7) as u8);
        for start in 0..8 {
            for end in start..data.len() {
                assert_eq!(
                    sum(&data[start..end]),
                    slow(&data[start..end]),
                    "{start}..{end}"
                );
            }
        }
        assert_eq!(sum(&[0xff; 64]), 0xffff);
    }

    /// An Ethernet + IPv4 + UDP frame to 198.18.0.1 with `payload`, checksums zero.
    fn udp_frame(payload: &[u8]) -> [u8; 64] {
        let mut f = [0u8; 64];
        f[12..14].copy_from_slice(&ETHERTYPE_IPV4);
        let len = 20 + 8 + payload.len();
        let ip = &mut f[14..];
        ip[0] = 0x45;
        ip[2..4].copy_from_slice(&(len as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = UDP;
        ip[12..16].copy_from_slice(&[198, 18, 0, 2]);
        ip[16..20].copy_from_slice(&[198, 18, 0, 1]);
        ip[20..22].copy_from_slice(&7u16.to_be_bytes());
        ip[22..24].copy_from_slice(&40000u16.to_be_bytes());
        ip[24..26].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        ip[28..28 + payload.len()].copy_from_slice(payload);
        f
    }

    #[test]
    fn filled_frames_verify_and_any_flipped_bit_is_caught() {
        let mut f = udp_frame(b"hello, checksum");
        let n = 14 + 20 + 8 + 15;
        assert_eq!(verify(&f[..n]), Verdict::Bad, "IPv4 header checksum 0");
        fill(&mut f[..n]);
        assert_eq!(verify(&f[..n]), Verdict::Good);
        assert_ne!(&f[40..42], &[0, 0]);
        let mut none = f;
        none[40..42].fill(0);
        assert_eq!(
            verify(&none[..n]),
            Verdict::Good,
            "UDP checksum 0 means none"
        );
        for byte in 14..n {
            let mut g = f;
            g[byte] ^= 0x10;
            let v = verify(&g[..n]);
            // A flipped length or protocol may also make it "not checkable"; never good.
            assert_ne!(v, Verdict::Good, "byte {byte}");
        }
    }

    /// A partial fill completed the way a NIC does it (the sum from the transport header on,
    /// complemented, into the field) is the full fill.
    #[test]
    fn a_partial_fill_completed_by_the_nic_is_the_full_one() {
        let n = 14 + 20 + 8 + 15;
        let mut full = udp_frame(b"hello, checksum");
        fill(&mut full[..n]);
        let mut partial = udp_frame(b"hello, checksum");
        fill_partial(&mut partial[..n]);
        assert_eq!(&partial[24..26], &full[24..26], "IPv4 header filled");
        let (start, at) = l4_checksum_field(&partial[..n]).unwrap();
        assert_eq!((start, at), (34, UDP_CHECKSUM_AT));
        let c = !sum(&partial[start..n]);
        partial[start + at..start + at + 2].copy_from_slice(&c.to_be_bytes());
        assert_eq!(&partial[..n], &full[..n]);
        let mut arp = [0u8; 42];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(l4_checksum_field(&arp), None);
    }

    #[test]
    fn what_the_stack_checks_is_left_to_it() {
        let mut arp = [0u8; 42];
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        assert_eq!(verify(&arp), Verdict::Unchecked);
        let mut f = udp_frame(b"x");
        f[14 + 9] = 1; // ICMP
        fill(&mut f[..43]);
        assert_eq!(verify(&f[..43]), Verdict::Unchecked);
        let mut lying = udp_frame(b"x");
        lying[16..18].copy_from_slice(&1000u16.to_be_bytes());
        assert_eq!(verify(&lying[..43]), Verdict::Bad);
        assert_eq!(verify(&[0u8; 10]), Verdict::Unchecked);
    }
}
