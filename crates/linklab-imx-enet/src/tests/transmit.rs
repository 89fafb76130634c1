//! The transmit half: frames built in place or copied, checksum insertion, the transmit
//! shift, a full ring.

use std::vec;
use std::vec::Vec;

use linklab_mac::PhyTx;

use super::model::{frames, internet_sum};
use super::*;
use crate::descriptor::*;

/// An Ethernet + IPv4 + `proto` frame with `payload`, its IPv4 header checksum right and
/// its TCP/UDP checksum field holding `field`.
fn ipv4_frame(proto: u8, payload: &[u8], field: u16) -> Vec<u8> {
    let l4_header = if proto == 6 { 20 } else { 8 };
    let total = 20 + l4_header + payload.len();
    let mut f = vec![0u8; 14 + total];
    f[..6].copy_from_slice(&[0x02, 0, 0, 0, 0, 1]);
    f[6..12].copy_from_slice(&MAC);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&(total as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = proto;
    ip[12..16].copy_from_slice(&[198, 18, 0, 2]);
    ip[16..20].copy_from_slice(&[198, 18, 0, 1]);
    let sum = internet_sum(&[&ip[..20]]);
    ip[10..12].copy_from_slice(&sum.to_be_bytes());
    let l4 = &mut ip[20..];
    l4[..4].copy_from_slice(&[0x13, 0x89, 0xC0, 0x01]);
    if proto == 6 {
        l4[12] = 0x50;
        l4[16..18].copy_from_slice(&field.to_be_bytes());
    } else {
        l4[4..6].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
        l4[6..8].copy_from_slice(&field.to_be_bytes());
    }
    l4[l4_header..].copy_from_slice(payload);
    f
}

/// True if the TCP/UDP checksum of the IPv4 frame `f` verifies.
fn l4_checksum_ok(f: &[u8]) -> bool {
    let total = usize::from(u16::from_be_bytes([f[16], f[17]]));
    let mut pseudo = [0u8; 12];
    pseudo[..8].copy_from_slice(&f[26..34]);
    pseudo[9] = f[23];
    pseudo[10..].copy_from_slice(&((total - 20) as u16).to_be_bytes());
    internet_sum(&[&pseudo, &f[34..14 + total]]) == 0
}

#[test]
fn frames_built_in_place_and_copied_go_out_whole() {
    let m = model(qemu_phy());
    let (_rx, mut tx) = started(m, queue(), config(16));
    let a = frames(1, 60, 60).remove(0);
    let buf = PhyTx::tx_buffer(&mut tx, a.len()).expect("a free buffer");
    assert_eq!(buf.as_ptr() as usize % 4, linklab_mac::FRAME_ALIGN);
    buf.copy_from_slice(&a);
    PhyTx::transmit_buffer(&mut tx, a.len());
    let b = frames(2, 1514, 1514).remove(1);
    PhyTx::transmit(&mut tx, &b);
    let s = m.0.borrow();
    assert_eq!(s.sent, vec![a, b]);
    assert_eq!(
        s.sent_pins,
        vec![false, false],
        "not IPv4: nothing to insert"
    );
    assert!(
        s.sent_at.iter().all(|at| at % 4 == 2),
        "the DMA starts at the frame"
    );
    assert_eq!(tx.counters().tx_frames, 2);
}

/// The MAC leaves TCP and UDP checksums to the ENET (it writes the pseudo-header sum where
/// virtio-net wants it): the driver zeroes the field and sets PINS, and what leaves
/// verifies.
#[test]
fn checksums_are_left_to_the_enet() {
    let m = model(qemu_phy());
    let (_rx, mut tx) = started(m, queue(), config(16));
    assert!(PhyTx::completes_l4_checksums(&mut tx));
    let payload: Vec<u8> = (0..333u32).map(|i| i as u8).collect();
    for proto in [6u8, 17] {
        PhyTx::transmit(&mut tx, &ipv4_frame(proto, &payload, 0xBEEF));
    }
    let icmp = ipv4_frame(1, &payload, 0);
    PhyTx::transmit(&mut tx, &icmp);
    let s = m.0.borrow();
    assert_eq!(s.sent_pins, vec![true, true, false]);
    assert!(l4_checksum_ok(&s.sent[0]) && l4_checksum_ok(&s.sent[1]));
    assert_eq!(s.sent[2], icmp, "ICMP untouched");
}

#[test]
fn without_insertion_frames_go_out_as_the_mac_built_them() {
    let m = model(qemu_phy());
    let cfg = EnetConfig {
        tx_checksum_insertion: false,
        ..config(16)
    };
    let (_rx, mut tx) = started(m, queue(), cfg);
    assert!(!PhyTx::completes_l4_checksums(&mut tx));
    let f = ipv4_frame(17, b"abc", 0x1234);
    PhyTx::transmit(&mut tx, &f);
    assert_eq!(m.0.borrow().sent, vec![f]);
    assert_eq!(m.0.borrow().sent_pins, vec![false]);
}

/// With the transmit shift, the DMA starts on the buffer's alignment and the ENET skips the
/// two bytes in front.
#[test]
fn the_transmit_shift_starts_the_dma_aligned() {
    let m = model(qemu_phy());
    let cfg = EnetConfig {
        tx_shift16: true,
        ..config(16)
    };
    let (_rx, mut tx) = started(m, queue(), cfg);
    assert_eq!(
        m.0.borrow().regs[crate::regs::TACC / 4],
        crate::regs::TACC_SHIFT16
    );
    let f = frames(1, 98, 98).remove(0);
    PhyTx::transmit(&mut tx, &f);
    let s = m.0.borrow();
    assert_eq!(s.sent, vec![f]);
    assert_eq!(s.sent_at[0] % 64, 0);
}

/// An ENET that does not send: the ring fills, `ready` says so, further frames are dropped
/// and counted; once it sends, the ring is taken back.
#[test]
fn a_full_ring_drops_and_counts_then_recovers() {
    let m = model(qemu_phy());
    let (_rx, mut tx) = started(m, queue(), config(16));
    // Stop the model's transmitter: TDAR is ignored while the MAC is off.
    m.0.borrow_mut().regs[crate::regs::ECR / 4] &= !crate::regs::ECR_ETHEREN;
    let f = frames(1, 100, 100).remove(0);
    for _ in 0..TX_DESCRIPTORS {
        assert!(PhyTx::ready(&mut tx));
        PhyTx::transmit(&mut tx, &f);
    }
    assert!(!PhyTx::ready(&mut tx));
    assert!(PhyTx::tx_buffer(&mut tx, 100).is_none());
    PhyTx::transmit(&mut tx, &f);
    assert_eq!(PhyTx::dropped(&mut tx), 1);
    assert!(
        PhyTx::tx_buffer(&mut tx, BUFFER_LEN).is_none(),
        "longer than a buffer"
    );
    m.0.borrow_mut().regs[crate::regs::ECR / 4] |= crate::regs::ECR_ETHEREN;
    m.write(crate::regs::TDAR, crate::regs::TDAR_ACTIVE);
    assert_eq!(m.0.borrow().sent.len(), TX_DESCRIPTORS);
    assert!(PhyTx::ready(&mut tx));
    PhyTx::transmit(&mut tx, &f);
    assert_eq!(m.0.borrow().sent.len(), TX_DESCRIPTORS + 1);
}

/// Errors the ENET reports on a sent descriptor are counted when it is taken back.
#[test]
fn transmit_errors_are_counted() {
    let m = model(qemu_phy());
    let (_rx, mut tx) = started(m, queue(), config(16));
    let f = frames(1, 100, 100).remove(0);
    PhyTx::transmit(&mut tx, &f);
    let first = m.0.borrow().regs[crate::regs::TDSR / 4];
    // SAFETY: the driver's first transmit descriptor, in leaked memory.
    let d = unsafe { &*(first as usize as *const Descriptor) };
    d.write(2, d.read(2) | TX_ERROR | (1 << 13));
    for _ in 0..TX_DESCRIPTORS {
        PhyTx::transmit(&mut tx, &f);
    }
    assert_eq!(tx.counters().tx_errors, 1);
    assert_eq!(tx.counters().tx_dropped, 0);
}
