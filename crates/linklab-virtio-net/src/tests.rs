//! The driver against a model of a virtio-mmio network device: feature negotiation, queue
//! setup, and a device side that reads the driver's rings from memory as DMA would, writes
//! received frames into the posted chains and takes transmitted ones.

extern crate std;

use core::cell::RefCell;
use std::boxed::Box;
use std::vec;
use std::vec::Vec;

use linklab_mac::{
    Inline, Mac, MacAddr, MacConfig, NoClock, RxChecksums, RxFormat, RxQueue, RxTag,
    MIN_QUEUE_CAPACITY,
};

use super::mmio::reg;
use super::*;

/// A chain as the device reads it: (address, length, device writes) per buffer.
type Chain = Vec<(usize, usize, bool)>;

/// One queue as the device sees it.
#[derive(Default, Clone, Copy)]
struct DevQueue {
    num: usize,
    desc: u64,
    driver: u64,
    device: u64,
    ready: bool,
    /// Next driver-area entry to take.
    next_avail: u16,
    /// Device-area index published.
    used_idx: u16,
}

#[derive(Default)]
struct Dev {
    version: u32,
    offered: u64,
    accepted: u64,
    device_sel: u32,
    driver_sel: u32,
    status: u32,
    queue_sel: usize,
    queues: [DevQueue; 2],
    interrupt: u32,
    notifies: [u32; 2],
}

struct Model(RefCell<Dev>);

const MAC: [u8; 6] = [0x52, 0x54, 0x00, 0x12, 0x34, 0x56];

impl Model {
    fn new(offered: u64) -> Model {
        Model(RefCell::new(Dev {
            version: 2,
            offered,
            ..Dev::default()
        }))
    }

    /// The descriptors of the next chain the driver offered on `q`: (head, [(addr, len,
    /// device writes)]), taken off the driver area.
    fn take_chain(&self, q: usize) -> Option<(u16, Chain)> {
        let mut d = self.0.borrow_mut();
        let dq = &mut d.queues[q];
        // SAFETY: the driver told the device where its areas are; they live as long as the
        // driver (leaked in these tests). Read as a device's DMA would.
        unsafe {
            let avail_idx = ((dq.driver as usize + 2) as *const u16).read_volatile();
            if avail_idx == dq.next_avail {
                return None;
            }
            let slot = usize::from(dq.next_avail) % dq.num;
            let head = ((dq.driver as usize + 4 + 2 * slot) as *const u16).read_volatile();
            dq.next_avail = dq.next_avail.wrapping_add(1);
            let mut chain = Vec::new();
            let mut i = usize::from(head);
            loop {
                let at = dq.desc as usize + 16 * i;
                let addr = (at as *const u64).read_volatile() as usize;
                let len = ((at + 8) as *const u32).read_volatile() as usize;
                let flags = ((at + 12) as *const u16).read_volatile();
                let next = ((at + 14) as *const u16).read_volatile();
                chain.push((addr, len, flags & 2 != 0));
                if flags & 1 == 0 {
                    break;
                }
                i = usize::from(next);
            }
            Some((head, chain))
        }
    }

    /// Publishes the completion of chain `head` on `q` with `len` bytes written.
    fn push_used(&self, q: usize, head: u16, len: u32) {
        let mut d = self.0.borrow_mut();
        let dq = &mut d.queues[q];
        let slot = usize::from(dq.used_idx) % dq.num;
        // SAFETY: as in take_chain.
        unsafe {
            let elem = dq.device as usize + 4 + 8 * slot;
            (elem as *mut u32).write_volatile(u32::from(head));
            ((elem + 4) as *mut u32).write_volatile(len);
            dq.used_idx = dq.used_idx.wrapping_add(1);
            ((dq.device as usize + 2) as *mut u16).write_volatile(dq.used_idx);
        }
        d.interrupt |= 1;
    }

    /// Receives `frame` with header `flags` into the next posted chain; false if none.
    fn deliver(&self, flags: u8, frame: &[u8]) -> bool {
        let Some((head, chain)) = self.take_chain(0) else {
            return false;
        };
        let mut bytes = vec![0u8; HEADER_LEN];
        bytes[0] = flags;
        bytes.extend_from_slice(frame);
        let mut written = 0;
        for (addr, len, device_writes) in chain {
            assert!(device_writes, "receive buffers are the device's to write");
            let n = len.min(bytes.len() - written);
            // SAFETY: the driver posted `addr..addr + len` for the device to write.
            unsafe {
                core::ptr::copy_nonoverlapping(bytes[written..].as_ptr(), addr as *mut u8, n)
            };
            written += n;
        }
        assert_eq!(written, bytes.len(), "frame longer than the posted chain");
        self.push_used(0, head, written as u32);
        true
    }

    /// Where the next posted receive chain puts the frame (its second buffer).
    fn posted_frame_buffer(&self) -> Option<(usize, usize)> {
        let d = self.0.borrow();
        let dq = d.queues[0];
        drop(d);
        // Peek without taking: read the head of the next entry.
        // SAFETY: as in take_chain.
        unsafe {
            let avail_idx = ((dq.driver as usize + 2) as *const u16).read_volatile();
            if avail_idx == dq.next_avail {
                return None;
            }
            let slot = usize::from(dq.next_avail) % dq.num;
            let head = ((dq.driver as usize + 4 + 2 * slot) as *const u16).read_volatile();
            let at = dq.desc as usize + 16 * usize::from(head);
            let next = ((at + 14) as *const u16).read_volatile();
            let at = dq.desc as usize + 16 * usize::from(next);
            let addr = (at as *const u64).read_volatile() as usize;
            let len = ((at + 8) as *const u32).read_volatile() as usize;
            Some((addr, len))
        }
    }

    /// Takes every transmitted chain: (header, frame).
    fn sent(&self) -> Vec<([u8; HEADER_LEN], Vec<u8>)> {
        let mut out = Vec::new();
        while let Some((head, chain)) = self.take_chain(1) {
            let mut bytes = Vec::new();
            for (addr, len, device_writes) in chain {
                assert!(!device_writes);
                // SAFETY: the driver offered `addr..addr + len` for the device to read.
                bytes.extend_from_slice(unsafe {
                    core::slice::from_raw_parts(addr as *const u8, len)
                });
            }
            let mut h = [0u8; HEADER_LEN];
            h.copy_from_slice(&bytes[..HEADER_LEN]);
            out.push((h, bytes[HEADER_LEN..].to_vec()));
            self.push_used(1, head, 0);
        }
        out
    }
}

impl Registers for &Model {
    fn read(&self, offset: usize) -> u32 {
        let d = self.0.borrow();
        match offset {
            reg::MAGIC => 0x7472_6976,
            reg::VERSION => d.version,
            reg::DEVICE_ID => 1,
            reg::DEVICE_FEATURES => (d.offered >> (32 * d.device_sel)) as u32,
            reg::QUEUE_NUM_MAX => 256,
            reg::QUEUE_READY => u32::from(d.queues[d.queue_sel].ready),
            reg::INTERRUPT_STATUS => d.interrupt,
            reg::STATUS => d.status,
            reg::CONFIG => u32::from_le_bytes([MAC[0], MAC[1], MAC[2], MAC[3]]),
            o if o == reg::CONFIG + 4 => u32::from_le_bytes([MAC[4], MAC[5], 0, 0]),
            _ => 0,
        }
    }

    fn write(&self, offset: usize, value: u32) {
        let mut d = self.0.borrow_mut();
        let q = d.queue_sel;
        let set_low = |x: &mut u64, v: u32| *x = (*x & !0xffff_ffff) | u64::from(v);
        let set_high = |x: &mut u64, v: u32| *x = (*x & 0xffff_ffff) | u64::from(v) << 32;
        match offset {
            reg::DEVICE_FEATURES_SEL => d.device_sel = value,
            reg::DRIVER_FEATURES_SEL => d.driver_sel = value,
            reg::DRIVER_FEATURES => {
                let shift = 32 * d.driver_sel;
                d.accepted = (d.accepted & !(0xffff_ffffu64 << shift)) | u64::from(value) << shift;
            }
            reg::STATUS => {
                // FEATURES_OK only for a subset of what was offered.
                let ok = d.accepted & !d.offered == 0;
                d.status = if value & 8 != 0 && !ok {
                    value & !8
                } else {
                    value
                };
                if value == 0 {
                    let (version, offered) = (d.version, d.offered);
                    *d = Dev {
                        version,
                        offered,
                        ..Dev::default()
                    };
                }
            }
            reg::QUEUE_SEL => d.queue_sel = value as usize,
            reg::QUEUE_NUM => d.queues[q].num = value as usize,
            reg::QUEUE_READY => d.queues[q].ready = value == 1,
            reg::QUEUE_DESC_LOW => set_low(&mut d.queues[q].desc, value),
            reg::QUEUE_DESC_HIGH => set_high(&mut d.queues[q].desc, value),
            reg::QUEUE_DRIVER_LOW => set_low(&mut d.queues[q].driver, value),
            reg::QUEUE_DRIVER_HIGH => set_high(&mut d.queues[q].driver, value),
            reg::QUEUE_DEVICE_LOW => set_low(&mut d.queues[q].device, value),
            reg::QUEUE_DEVICE_HIGH => set_high(&mut d.queues[q].device, value),
            reg::QUEUE_NOTIFY => d.notifies[value as usize % 2] += 1,
            reg::INTERRUPT_ACK => d.interrupt &= !value,
            _ => {}
        }
    }
}

const OFFERED: u64 = feature::VERSION_1
    | feature::MAC
    | feature::CSUM
    | feature::GUEST_CSUM
    | (1 << 15) // MRG_RXBUF: offered, not taken
    | (1 << 16); // STATUS: offered, not taken

type Queue = RxQueue<Inline<{ 2 * MIN_QUEUE_CAPACITY }>>;

fn leaked_queue() -> &'static Queue {
    Box::leak(Box::new(Queue::new()))
}

fn device(
    model: &'static Model,
    queue: &'static Queue,
) -> VirtioNet<Inline<{ 2 * MIN_QUEUE_CAPACITY }>, &'static Model> {
    let mem = Box::leak(Box::new(NicMemory::new()));
    let mut dev = VirtioNet::with_memory(model, 5, queue.producer(), mem).unwrap();
    dev.start().unwrap();
    dev
}

/// A queue with room for a whole run behind the first frame (a firmware image's ring is
/// 15 364 bytes), and a device over it.
fn device_with_room(
    m: &'static Model,
) -> (
    &'static RxQueue<Inline<16384>>,
    VirtioNet<Inline<16384>, &'static Model>,
) {
    let q: &'static RxQueue<Inline<16384>> = Box::leak(Box::new(RxQueue::new()));
    let mem = Box::leak(Box::new(NicMemory::new()));
    let mut dev = VirtioNet::with_memory(m, 5, q.producer(), mem).unwrap();
    dev.start().unwrap();
    (q, dev)
}

/// The MAC's configuration for what the driver commits.
fn tagged() -> MacConfig {
    MacConfig {
        rx_format: RxFormat::Tagged,
        ..MacConfig::tap(MacAddr(MAC))
    }
}

fn model(offered: u64) -> &'static Model {
    Box::leak(Box::new(Model::new(offered)))
}

/// An Ethernet + IPv4 + UDP frame to us, checksums zero (wrong).
fn udp_frame(payload: &[u8]) -> Vec<u8> {
    let mut f = vec![0u8; 42 + payload.len()];
    f[0..6].copy_from_slice(&MAC);
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    let ip = &mut f[14..];
    ip[0] = 0x45;
    ip[2..4].copy_from_slice(&((28 + payload.len()) as u16).to_be_bytes());
    ip[8] = 64;
    ip[9] = 17;
    ip[12..16].copy_from_slice(&[198, 18, 0, 1]);
    ip[16..20].copy_from_slice(&[198, 18, 0, 2]);
    ip[24..26].copy_from_slice(&((8 + payload.len()) as u16).to_be_bytes());
    ip[26..28].copy_from_slice(&[0x12, 0x34]);
    ip[28..].copy_from_slice(payload);
    f
}

#[test]
fn negotiates_what_it_needs_and_refuses_legacy() {
    let m = model(OFFERED);
    let dev = device(m, leaked_queue());
    assert_eq!(
        dev.features(),
        feature::VERSION_1 | feature::MAC | feature::CSUM | feature::GUEST_CSUM
    );
    assert_eq!(dev.mac_address(), MAC);
    assert!(dev.completes_l4_checksums());
    let d = m.0.borrow();
    assert_eq!(
        d.status,
        1 | 2 | 4 | 8,
        "ACKNOWLEDGE, DRIVER, FEATURES_OK, DRIVER_OK"
    );
    assert!(d.queues.iter().all(|q| q.ready && q.num == QUEUE_SIZE));
    drop(d);

    let legacy = model(OFFERED);
    legacy.0.borrow_mut().version = 1;
    let mem = Box::leak(Box::new(NicMemory::new()));
    assert!(matches!(
        VirtioNet::with_memory(legacy, 5, leaked_queue().producer(), mem),
        Err(InitError::Device)
    ));
    let old = model(feature::MAC | feature::CSUM);
    let mem = Box::leak(Box::new(NicMemory::new()));
    assert!(matches!(
        VirtioNet::with_memory(old, 5, leaked_queue().producer(), mem),
        Err(InitError::Device)
    ));
}

/// The device writes each frame straight into a grant of the RX queue, tagged with what
/// its header says; the MAC delivers the vouched-for frame with a wrong checksum and drops
/// the unchecked one.
#[test]
fn frames_land_in_grants_tagged_by_their_header() {
    let m = model(OFFERED);
    let q = leaked_queue();
    let mut dev = device(m, q);
    let (addr, len) = m.posted_frame_buffer().unwrap();
    let ring =
        q as *const Queue as usize..q as *const Queue as usize + core::mem::size_of::<Queue>();
    assert!(
        ring.contains(&addr),
        "the posted frame buffer is the RX queue's memory"
    );
    assert_eq!(len, linklab_mac::RUN_SLOT_LEN);
    assert_eq!(addr % 4, linklab_mac::FRAME_ALIGN);

    let frame = udp_frame(b"hello");
    for flags in [HDR_F_DATA_VALID, 0, HDR_F_NEEDS_CSUM] {
        assert!(m.deliver(flags, &frame));
        assert_eq!(dev.on_interrupt(), 1);
        assert_eq!(m.0.borrow().interrupt, 0, "acknowledged");
    }

    let mut mac = Mac::new(q.consumer(), |_: &[u8]| {}, NoClock, tagged());
    mac.set_checksum_offload(true);
    let mut got = Vec::new();
    while let Some(f) = mac.receive() {
        got.push(f.to_vec());
    }
    assert_eq!(got, vec![frame.clone(), frame.clone()]);
    let c = mac.counters();
    assert_eq!(
        c.rx_checksum_errors, 1,
        "the frame without flags was verified"
    );
    c.check_conservation().unwrap();
}

/// One buffer is posted at first; once a frame came in, RX_POSTED, each on the RX queue's
/// memory a run's stride apart, so the device can write a burst before the interrupt runs.
/// The burst comes out whole and in order.
#[test]
fn a_burst_lands_in_the_posted_buffers_in_order() {
    let m = model(OFFERED);
    let (q, mut dev) = device_with_room(m);
    let first = udp_frame(b"first");
    assert!(m.deliver(HDR_F_DATA_VALID, &first));
    assert!(
        !m.deliver(HDR_F_DATA_VALID, &first),
        "one buffer posted at first"
    );
    assert_eq!(dev.on_interrupt(), 1);
    let burst: Vec<Vec<u8>> = (0..RX_POSTED)
        .map(|i| udp_frame(&vec![i as u8; 100 + 300 * i]))
        .collect();
    let mut at = Vec::new();
    for f in &burst {
        at.push(m.posted_frame_buffer().expect("a buffer posted").0);
        assert!(m.deliver(HDR_F_DATA_VALID, f));
    }
    assert!(
        !m.deliver(HDR_F_DATA_VALID, &first),
        "{RX_POSTED} buffers posted"
    );
    assert!(at
        .windows(2)
        .all(|w| w[1] - w[0] == linklab_mac::RUN_STRIDE));
    assert_eq!(dev.on_interrupt(), RX_POSTED);
    let mut mac = Mac::new(q.consumer(), |_: &[u8]| {}, NoClock, tagged());
    assert_eq!(&mac.receive().unwrap()[..], &first[..]);
    for f in &burst {
        assert_eq!(&mac.receive().unwrap()[..], &f[..]);
    }
    assert!(mac.receive().is_none());
    mac.counters().check_conservation().unwrap();
}

/// Without GUEST_CSUM the header's flags mean nothing: every frame is verified.
#[test]
fn without_guest_csum_every_frame_is_unchecked() {
    let m = model(feature::VERSION_1 | feature::MAC);
    let q = leaked_queue();
    let mut dev = device(m, q);
    assert!(!dev.completes_l4_checksums());
    assert!(m.deliver(HDR_F_DATA_VALID, &udp_frame(b"x")));
    assert_eq!(dev.on_interrupt(), 1);
    let mut c = q.consumer();
    let r = c.read().unwrap();
    assert_eq!(
        RxTag::of(r.bytes()).map(|t| t.checksums),
        Some(RxChecksums::Unchecked)
    );
    drop(r);
    let _ = &mut c;
}

/// A full queue: the spill buffer is posted; what lands there is dropped and counted while
/// the queue stays full, copied into a grant once there is room again.
#[test]
fn a_full_queue_spills_then_recovers() {
    let m = model(OFFERED);
    let q = leaked_queue();
    let mut dev = device(m, q);
    let mut mac = Mac::new(q.consumer(), |_: &[u8]| {}, NoClock, tagged());
    let frame = udp_frame(&[0xAB; 1400]);
    let mut held = 0;
    for _ in 0..8 {
        assert!(m.deliver(HDR_F_DATA_VALID, &frame));
        held += dev.on_interrupt();
    }
    assert!(held < 8, "the ring holds {held} frames");
    assert_eq!(dev.counters().rx_spilled as usize, 8 - held);
    // The spill buffer is posted now; make room, then a frame lands in it and is copied.
    let (addr, _) = m.posted_frame_buffer().unwrap();
    assert_eq!(addr, dev.mem.spill as usize);
    for _ in 0..held {
        assert_eq!(&mac.receive().unwrap()[..], &frame[..]);
    }
    assert!(m.deliver(HDR_F_DATA_VALID, &frame));
    assert_eq!(dev.on_interrupt(), 1, "copied from the spill buffer");
    assert_eq!(&mac.receive().unwrap()[..], &frame[..]);
    // And the next one goes straight into a grant again.
    let (addr, _) = m.posted_frame_buffer().unwrap();
    assert_ne!(addr, dev.mem.spill as usize);
    let counters = mac.counters();
    assert_eq!(counters.rx_missed_errors as usize, 8 - held);
    assert_eq!(counters.rx_packets as usize, held + 1);
    counters.check_conservation().unwrap();
}

/// A completion whose length cannot be a frame is counted and not committed.
#[test]
fn bad_lengths_are_counted() {
    let m = model(OFFERED);
    let q = leaked_queue();
    let mut dev = device(m, q);
    let (head, _) = m.take_chain(0).unwrap();
    m.push_used(0, head, 5);
    assert_eq!(dev.on_interrupt(), 0);
    assert_eq!(dev.counters().rx_bad_length, 1);
    assert!(q.consumer().read().is_none());
    assert!(m.posted_frame_buffer().is_some(), "posted again");
}

/// With buffers posted behind it, a completion whose length cannot be a frame is passed on
/// empty (the MAC counts it short), so the buffers behind stay where the device writes.
#[test]
fn a_bad_length_with_buffers_behind_keeps_them_in_place() {
    let m = model(OFFERED);
    let (q, mut dev) = device_with_room(m);
    let first = udp_frame(b"first");
    assert!(m.deliver(HDR_F_DATA_VALID, &first));
    assert_eq!(dev.on_interrupt(), 1);
    let (head, _) = m.take_chain(0).unwrap();
    m.push_used(0, head, 5);
    let after = udp_frame(b"after");
    assert!(m.deliver(HDR_F_DATA_VALID, &after));
    assert_eq!(dev.on_interrupt(), 1);
    assert_eq!(dev.counters().rx_bad_length, 1);
    let mut mac = Mac::new(q.consumer(), |_: &[u8]| {}, NoClock, tagged());
    assert_eq!(&mac.receive().unwrap()[..], &first[..]);
    assert_eq!(&mac.receive().unwrap()[..], &after[..]);
    assert!(mac.receive().is_none());
    let c = mac.counters();
    assert_eq!(c.rx_short_length_errors, 1);
    c.check_conservation().unwrap();
}

/// Frames go out behind a header that asks the device to complete TCP/UDP checksums; with
/// every buffer in flight, the next is dropped and counted until the device gives them back.
#[test]
fn transmit_asks_for_checksums_and_reclaims_buffers() {
    let m = model(OFFERED);
    let mut dev = device(m, leaked_queue());
    let udp = udp_frame(b"payload");
    let mut arp = vec![0u8; 42];
    arp[12..14].copy_from_slice(&[0x08, 0x06]);
    dev.transmit(&udp);
    dev.transmit(&arp);
    let sent = m.sent();
    assert_eq!(sent.len(), 2);
    let (h, f) = &sent[0];
    assert_eq!(f, &udp);
    assert_eq!(h[0], HDR_F_NEEDS_CSUM);
    assert_eq!(u16::from_le_bytes([h[6], h[7]]), 34, "csum_start");
    assert_eq!(u16::from_le_bytes([h[8], h[9]]), 6, "csum_offset (UDP)");
    assert_eq!(sent[1].0, [0; HEADER_LEN]);
    assert_eq!(sent[1].1, arp);
    for _ in 0..TX_BUFFERS + 1 {
        dev.transmit(&arp);
    }
    assert_eq!(dev.counters().tx_dropped, 1);
    assert!(!dev.tx_ready());
    assert_eq!(m.sent().len(), TX_BUFFERS);
    assert!(dev.tx_ready());
}

/// A lent buffer: the frame built in it goes out as built (its header asking for the
/// checksum), and while lent the buffer is not handed out again.
#[test]
fn a_lent_buffer_is_sent_in_place() {
    let m = model(OFFERED);
    let mut dev = device(m, leaked_queue());
    let udp = udp_frame(b"in place");
    let buf = dev.tx_buffer(udp.len()).unwrap();
    assert_eq!(buf.as_ptr() as usize % 4, linklab_mac::FRAME_ALIGN);
    buf.copy_from_slice(&udp);
    assert!(dev.tx_buffer(60).is_none(), "one lent at a time");
    for _ in 0..TX_BUFFERS - 1 {
        dev.transmit(&udp);
    }
    assert!(!dev.tx_ready(), "the lent one is not free");
    dev.transmit_buffer(udp.len());
    let sent = m.sent();
    assert_eq!(sent.len(), TX_BUFFERS);
    assert!(sent
        .iter()
        .all(|(h, f)| f == &udp && h[0] == HDR_F_NEEDS_CSUM));
    assert!(dev.tx_buffer(BUFFER_LEN).is_none(), "too long for a buffer");
    assert_eq!(dev.counters().tx_dropped, 0);
}
