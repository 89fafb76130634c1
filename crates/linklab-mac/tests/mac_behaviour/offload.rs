//! TAP mode, checksum offload and frames built in a buffer the PHY lends.

use super::*;

#[test]
fn tap_mode_plain_frames_both_ways() {
    let q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let rec = Recorder::default();
    let mut mac = Mac::new(q.consumer(), rec.clone(), NoClock, MacConfig::tap(ME));
    // An ARP-sized frame as a TAP delivers it: 42 bytes, no padding, no FCS.
    let mut arp = vec![0u8; 42];
    fill_frame(&mut arp, MacAddr::BROADCAST, PEER, &[1; 28]);
    assert!(q.producer().push(&arp));
    let f = mac.receive().unwrap();
    assert_eq!(&f[..], &arp[..]);
    drop(f);
    mac.transmit(42, |f| f.copy_from_slice(&arp)).unwrap();
    assert_eq!(rec.take(), vec![arp.clone()]);
    // The longest untagged frame, as given.
    let mut full = vec![0u8; 1514];
    fill_frame(&mut full, ME, PEER, &[7; 1500]);
    assert!(q.producer().push(&full));
    assert_eq!(mac.receive().as_deref(), Some(&full[..]));
    // Too short for a header, too long: counted.
    assert!(q.producer().push(&arp[..13]));
    assert!(q.producer().push(&vec![0u8; 1515]));
    assert!(mac.receive().is_none());
    let c = mac.counters();
    assert_eq!((c.rx_short_length_errors, c.rx_long_length_errors), (1, 1));
    c.check_conservation().unwrap();
}

/// Checksum offload: the MAC fills in the IPv4 and UDP checksums of what it sends, delivers
/// frames whose checksums are right, drops and counts the ones whose IPv4 header, TCP or UDP
/// checksum is wrong, leaves the rest (ARP) to the stack; the law counts the drops.
#[test]
fn checksum_offload_fills_verifies_and_counts() {
    let q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let rec = Recorder::default();
    let mut mac = Mac::new(q.consumer(), rec.clone(), NoClock, MacConfig::tap(ME));
    mac.set_checksum_offload(true);
    // IPv4 (20) + UDP (8) + 6 bytes, checksums zero as smoltcp leaves them with offload.
    let mut ip = vec![0u8; 34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&34u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[198, 18, 0, 2]);
    ip[16..20].copy_from_slice(&[198, 18, 0, 1]);
    ip[20..22].copy_from_slice(&7u16.to_be_bytes());
    ip[22..24].copy_from_slice(&9u16.to_be_bytes());
    ip[24..26].copy_from_slice(&14u16.to_be_bytes());
    ip[28..].copy_from_slice(b"abcdef");
    let mut frame = vec![0u8; 48];
    fill_frame(&mut frame, PEER, ME, &ip);
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    mac.transmit(48, |f| f.copy_from_slice(&frame)).unwrap();
    let sent = rec.take().remove(0);
    assert_ne!(&sent[24..26], &[0, 0], "IPv4 header checksum filled");
    assert_ne!(&sent[40..42], &[0, 0], "UDP checksum filled");
    assert_eq!(
        linklab_mac::checksum::verify(&sent),
        linklab_mac::checksum::Verdict::Good
    );
    // Back in: good, then bad IPv4 header, bad UDP checksum, and an ARP frame.
    let mut back = sent.clone();
    back[0..6].copy_from_slice(&ME.0);
    let mut bad_ip = back.clone();
    bad_ip[24] ^= 1;
    let mut bad_udp = back.clone();
    bad_udp[45] ^= 0x40;
    let mut arp = vec![0u8; 42];
    fill_frame(&mut arp, ME, PEER, &[1; 28]);
    for f in [&back, &bad_ip, &bad_udp, &arp] {
        assert!(q.producer().push(f));
    }
    let mut got = Vec::new();
    while let Some(f) = mac.receive() {
        got.push(f.len());
    }
    assert_eq!(got, vec![48, 42]);
    let c = mac.counters();
    assert_eq!((c.rx_packets, c.rx_checksum_errors), (2, 2));
    c.check_conservation().unwrap();
    // Off: the stack's business again.
    mac.set_checksum_offload(false);
    assert!(q.producer().push(&bad_udp));
    assert!(mac.receive().is_some());
}

/// A tagged NIC (`RxFormat::Tagged`): frames its driver vouches for skip the MAC's
/// checksum check (virtio-net's `DATA_VALID`/`NEEDS_CSUM`: a partial checksum from the
/// host would fail it), the others are verified, and bad ones dropped and counted.
#[test]
fn tagged_frames_the_nic_vouches_for_are_not_verified_again() {
    use linklab_mac::RxChecksums;
    let q: RxQueue<Inline<16384>> = RxQueue::new();
    let config = MacConfig {
        rx_format: RxFormat::Tagged,
        ..MacConfig::tap(ME)
    };
    let mut mac = Mac::new(q.consumer(), Recorder::default(), NoClock, config);
    mac.set_checksum_offload(true);
    // IPv4 + UDP, both checksums wrong (zero).
    let mut ip = vec![0u8; 34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&34u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[198, 18, 0, 1]);
    ip[16..20].copy_from_slice(&[198, 18, 0, 2]);
    ip[24..26].copy_from_slice(&14u16.to_be_bytes());
    ip[26..28].copy_from_slice(&[0x12, 0x34]);
    let mut frame = vec![0u8; 48];
    fill_frame(&mut frame, ME, PEER, &ip);
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    for checksums in [RxChecksums::Valid, RxChecksums::Unchecked] {
        let mut g = q.producer().grant().unwrap();
        g.buf()[..48].copy_from_slice(&frame);
        g.commit_tagged(48, checksums);
    }
    let f = mac.receive().expect("vouched for: delivered");
    assert_eq!(&f[..], &frame[..]);
    drop(f);
    assert!(mac.receive().is_none(), "unchecked and bad: dropped");
    let c = mac.counters();
    assert_eq!((c.rx_packets, c.rx_checksum_errors), (1, 1));
    c.check_conservation().unwrap();
}

/// A PHY that lends its own buffers (a DMA engine's) and completes transport checksums.
#[derive(Default)]
struct Lending {
    buffer: Vec<u8>,
    free: bool,
    lent: Option<usize>,
    from_buffer: Vec<Vec<u8>>,
    copied: Vec<Vec<u8>>,
}

impl linklab_mac::PhyTx for Lending {
    fn transmit(&mut self, wire: &[u8]) {
        self.copied.push(wire.to_vec());
    }

    fn tx_buffer(&mut self, len: usize) -> Option<&mut [u8]> {
        assert!(self.lent.is_none(), "one buffer lent at a time");
        if !self.free {
            return None;
        }
        self.lent = Some(len);
        Some(&mut self.buffer[..len])
    }

    fn transmit_buffer(&mut self, len: usize) {
        assert!(self.lent.take().is_some_and(|l| l >= len));
        self.from_buffer.push(self.buffer[..len].to_vec());
    }

    fn completes_l4_checksums(&mut self) -> bool {
        true
    }
}

/// Frames are built in the PHY's buffer when it lends one (and copied from the MAC's when
/// it does not), with only the pseudo-header sum in a TCP/UDP checksum for a PHY that
/// completes them.
#[test]
fn frames_are_built_in_a_lent_buffer_with_partial_checksums() {
    let q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let phy = Lending {
        buffer: vec![0; 1600],
        free: true,
        ..Lending::default()
    };
    let mut mac = Mac::new(q.consumer(), phy, NoClock, MacConfig::tap(ME));
    mac.set_checksum_offload(true);
    let mut ip = vec![0u8; 34];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&34u16.to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[198, 18, 0, 2]);
    ip[16..20].copy_from_slice(&[198, 18, 0, 1]);
    ip[24..26].copy_from_slice(&14u16.to_be_bytes());
    let mut frame = vec![0u8; 48];
    fill_frame(&mut frame, PEER, ME, &ip);
    frame[12..14].copy_from_slice(&[0x08, 0x00]);
    mac.transmit(48, |f| f.copy_from_slice(&frame)).unwrap();
    mac.phy_mut().free = false;
    mac.transmit(48, |f| f.copy_from_slice(&frame)).unwrap();
    let phy = mac.phy();
    assert_eq!(phy.from_buffer.len(), 1);
    assert_eq!(phy.copied.len(), 1);
    assert_eq!(phy.from_buffer[0], phy.copied[0]);
    let sent = &phy.from_buffer[0];
    // The IPv4 header checksum is complete; the UDP field holds the pseudo-header sum.
    let mut partial = frame.clone();
    linklab_mac::checksum::fill_partial(&mut partial);
    assert_eq!(sent, &partial);
    assert_eq!(mac.counters().tx_packets, 2);
}
