//! What the receive interrupt tells the MAC of a frame's IPv4, TCP and UDP checksums, from
//! the one's complement sum it took while moving the frame's words out of the FIFO
//! (`crate::fifo::read_summed`): the checksums then cost no pass over the payload of their
//! own.
//!
//! The words summed are the stored frame from byte 2 on (the RX data offset puts byte 2 on a
//! word: `crate::RX_DATA_OFFSET`), to the end of the last word read: the rest of the
//! Ethernet header, the IPv4 header, the transport segment, then whatever follows the IPv4
//! packet in the frame (Ethernet padding, the FCS, the last word's spare bytes). The
//! transport sum is that total less the words that are not the segment, in one's complement
//! arithmetic (RFC 1071), taken again from the stored words (a dozen or so per frame): the
//! Ethernet header's last three words, the IPv4 header's (which must sum to 0xffff itself)
//! and the tail after the packet (its first word masked to the tail's bytes).
//!
//! A frame whose checksums are all right is tagged [`RxChecksums::Valid`]: the MAC does not
//! look again, and smoltcp is told not to (the MAC's checksum offload). Every other frame —
//! not IPv4 TCP or UDP, a fragment, a UDP datagram without checksum, lengths that do not
//! add up, or a wrong checksum — is tagged [`RxChecksums::Unchecked`], so the MAC verifies
//! it as it verifies an untagged frame: bad ones are dropped there and counted in
//! `rx_checksum_errors`, never passed up.

use linklab_mac::RxChecksums;

use crate::fifo::add_ones;

const ETH_HEADER: usize = 14;
const IPV4: [u8; 2] = [0x08, 0x00];
const TCP: u8 = 6;
const UDP: u8 = 17;

/// Folds a 32-bit one's complement sum into 16 bits.
fn fold(mut s: u32) -> u16 {
    while s > 0xffff {
        s = (s & 0xffff) + (s >> 16);
    }
    s as u16
}

/// The one's complement sum of little-endian words.
fn sum_words(words: &[u32]) -> u32 {
    words
        .iter()
        .fold(0, |acc, &w| add_ones(acc, u32::from_le(w)))
}

/// The checksums of the frame stored as `frame` (without FCS), given `body` — the stored
/// bytes from the frame's byte 2 on, as the words the copy wrote (little-endian in memory) —
/// and `body_sum`, their 32-bit one's complement sum.
pub(crate) fn checksums(frame: &[u8], body: &[u32], body_sum: u32) -> RxChecksums {
    if good(frame, body, body_sum) == Some(true) {
        RxChecksums::Valid
    } else {
        RxChecksums::Unchecked
    }
}

/// True if the frame is IPv4 TCP or UDP with every checksum right; false or None for
/// everything the MAC should look at itself.
fn good(frame: &[u8], body: &[u32], body_sum: u32) -> Option<bool> {
    if frame.get(12..14)? != IPV4 {
        return None;
    }
    let ip = &frame[ETH_HEADER..];
    let vihl = *ip.first()?;
    let ihl = usize::from(vihl & 0x0f) * 4;
    let total = usize::from(u16::from_be_bytes([*ip.get(2)?, *ip.get(3)?]));
    if vihl >> 4 != 4 || ihl < 20 || total < ihl || total > ip.len() {
        return None;
    }
    let fragment = u16::from_be_bytes([ip[6], ip[7]]) & 0x3fff != 0;
    let proto = ip[9];
    let field = match proto {
        TCP => 16,
        UDP => 6,
        _ => return None,
    };
    let l4_len = total - ihl;
    if fragment || l4_len < field + 2 {
        return None;
    }
    if proto == UDP && ip[ihl + field..ihl + field + 2] == [0, 0] {
        return None; // No checksum: the MAC passes it as it is.
    }
    // Word j of `body` holds frame bytes 2 + 4j ..: the Ethernet header's last 12 bytes are
    // words 0..3, the IPv4 header words 3..3 + ihl / 4.
    let ethernet = sum_words(body.get(..3)?);
    let header = sum_words(body.get(3..3 + ihl / 4)?);
    if fold(header) != 0xffff {
        return Some(false);
    }
    // The tail: from frame byte 14 + total, in word `at`, its first `skip` bytes the
    // packet's.
    let tail_from = ETH_HEADER + total - 2;
    let (at, skip) = (tail_from / 4, tail_from % 4);
    let first = u32::from_le(*body.get(at)?) & (u32::MAX << (8 * skip));
    let tail = add_ones(sum_words(body.get(at + 1..)?), first);
    // The segment's sum, plus the pseudo-header's addresses (IPv4 header bytes 12..20:
    // words 6 and 7 of the header, 3 + 3 and 3 + 4 of `body`).
    let mut segment = add_ones(body_sum, !ethernet);
    segment = add_ones(segment, !header);
    segment = add_ones(segment, !tail);
    segment = add_ones(segment, u32::from_le(*body.get(6)?));
    segment = add_ones(segment, u32::from_le(*body.get(7)?));
    // The little-endian words from an even position sum to the byte-swapped sum of the
    // big-endian 16-bit words (RFC 1071 2(B)); the rest of the pseudo-header is big-endian.
    let all = fold(u32::from(fold(segment).swap_bytes()) + u32::from(proto) + l4_len as u32);
    // Zero in one's complement has two forms; a sum with the pseudo-header in it is never
    // the positive one, but modulo 0xffff both mean "right".
    Some(all == 0xffff || all == 0)
}

#[cfg(test)]
mod tests {
    extern crate std;

    use super::*;
    use crate::fifo::add_ones;
    use linklab_mac::checksum::{fill, verify, Verdict};

    /// What the interrupt stores of a frame: the words from its byte 2 on (the frame, its
    /// FCS, the last word's spare bytes) and their sum.
    fn stored(frame: &[u8]) -> (std::vec::Vec<u32>, u32) {
        let with_fcs = frame.len() + 4;
        let words = (with_fcs + 2).div_ceil(4);
        let mut s = std::vec![0xa5u8; 4 * words - 2];
        s[..frame.len()].copy_from_slice(frame);
        s[frame.len()..frame.len() + 4].copy_from_slice(&[1, 2, 3, 4]);
        let body: std::vec::Vec<u32> = s[2..]
            .chunks_exact(4)
            .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]).to_le())
            .collect();
        let sum = body
            .iter()
            .fold(0, |acc, &w| add_ones(acc, u32::from_le(w)));
        (body, sum)
    }

    /// Ethernet + IPv4 + TCP to 198.18.0.2 with `payload` and `options` bytes of IPv4
    /// options, checksums filled in, then `pad` bytes of Ethernet padding.
    fn tcp_frame(payload: &[u8], options: usize, pad: usize) -> std::vec::Vec<u8> {
        let ihl = 20 + options;
        let total = ihl + 20 + payload.len();
        let mut f = std::vec![0u8; 14 + total + pad];
        f[..6].copy_from_slice(&[2, 0x4c, 0x4c, 0, 0, 2]);
        f[12..14].copy_from_slice(&IPV4);
        let ip = &mut f[14..];
        ip[0] = 0x40 | (ihl / 4) as u8;
        ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
        ip[8] = 64;
        ip[9] = TCP;
        ip[12..16].copy_from_slice(&[198, 18, 0, 1]);
        ip[16..20].copy_from_slice(&[198, 18, 0, 2]);
        ip[20..ihl].fill(1); // IPv4 options (NOPs)
        let tcp = &mut ip[ihl..];
        tcp[0..2].copy_from_slice(&40000u16.to_be_bytes());
        tcp[2..4].copy_from_slice(&5201u16.to_be_bytes());
        tcp[12] = 5 << 4;
        tcp[20..20 + payload.len()].copy_from_slice(payload);
        fill(&mut f[..14 + total]);
        f
    }

    #[test]
    fn right_frames_are_valid_at_every_length_and_any_flipped_byte_is_not() {
        for len in [0, 1, 2, 3, 5, 6, 7, 100, 1457, 1460] {
            let payload: std::vec::Vec<u8> = (0..len).map(|i| (i * 7 + 3) as u8).collect();
            for options in [0, 4, 8] {
                for pad in [0, 1, 5] {
                    let f = tcp_frame(&payload, options, pad);
                    assert_eq!(verify(&f), Verdict::Good);
                    let (s, sum) = stored(&f);
                    assert_eq!(
                        checksums(&f, &s, sum),
                        RxChecksums::Valid,
                        "{len} {options} {pad}"
                    );
                    for at in [14, 24, 30, 34 + options, f.len() - pad - 1] {
                        let mut g = f.clone();
                        g[at] ^= 0x40;
                        let (s, sum) = stored(&g);
                        assert_eq!(
                            checksums(&g, &s, sum),
                            RxChecksums::Unchecked,
                            "{len} {options} {pad} byte {at}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn what_the_mac_must_look_at_is_unchecked() {
        let f = tcp_frame(b"abc", 0, 0);
        let (s, sum) = stored(&f);
        // A sum that does not match the stored words.
        assert_eq!(checksums(&f, &s, add_ones(sum, 1)), RxChecksums::Unchecked);
        // Lengths past the frame, short frames, ARP.
        assert_eq!(checksums(&f[..20], &s, sum), RxChecksums::Unchecked);
        let mut lying = f.clone();
        lying[16..18].copy_from_slice(&2000u16.to_be_bytes());
        let (s, sum) = stored(&lying);
        assert_eq!(checksums(&lying, &s, sum), RxChecksums::Unchecked);
        let mut arp = f.clone();
        arp[12..14].copy_from_slice(&[0x08, 0x06]);
        let (s, sum) = stored(&arp);
        assert_eq!(checksums(&arp, &s, sum), RxChecksums::Unchecked);
        // A fragment.
        let mut frag = f.clone();
        frag[20] = 0x20;
        fill(&mut frag);
        let (s, sum) = stored(&frag);
        assert_eq!(checksums(&frag, &s, sum), RxChecksums::Unchecked);
        assert_eq!(checksums(&[], &[], 0), RxChecksums::Unchecked);
    }
}
