//! The driver against a small model of the controller: the registers it uses, the MAC CSR
//! indirection, the RX status and data FIFOs (with the RX data offset) and the TX data FIFO
//! (commands A and B, the data start offset), as QEMU's `lan9118` and the datasheet have
//! them.

extern crate std;

use core::cell::RefCell;
use std::collections::VecDeque;
use std::vec::Vec;

use linklab_mac::{Inline, PhyTx, RxChecksums, RxQueue, RxTag, MIN_QUEUE_CAPACITY};

use super::*;

#[derive(Default)]
struct State {
    csr: [u32; 16],
    mac_data: u32,
    int_sts: u32,
    int_en: u32,
    irq_cfg: u32,
    tx_cfg: u32,
    rx_cfg: u32,
    /// Frames waiting: (status word, data words).
    rx: VecDeque<(u32, VecDeque<u32>)>,
    /// The frame being read.
    current: VecDeque<u32>,
    /// Every word written to the TX data FIFO.
    tx_words: Vec<u32>,
}

#[derive(Default)]
struct Model(RefCell<State>);

/// TX command A: first and last segment, data start offset.
const CMD_A_FIRST_LAST: u32 = 3 << 12;

impl Model {
    /// A frame (with its FCS) arrives: its words behind the RX data offset's bytes.
    fn receive(&self, frame_with_fcs: &[u8]) {
        let offset = ((self.0.borrow().rx_cfg >> 8) & 3) as usize;
        let mut bytes = std::vec![0u8; offset];
        bytes.extend_from_slice(frame_with_fcs);
        let words = bytes
            .chunks(4)
            .map(|c| {
                let mut w = [0u8; 4];
                w[..c.len()].copy_from_slice(c);
                u32::from_le_bytes(w)
            })
            .collect();
        let status = (frame_with_fcs.len() as u32) << 16;
        self.0.borrow_mut().rx.push_back((status, words));
    }

    /// The frames the TX data FIFO's words make (command A's length and data start offset).
    fn sent(&self) -> Vec<Vec<u8>> {
        let words = self.0.borrow().tx_words.clone();
        let mut frames = Vec::new();
        let mut i = 0;
        while i + 1 < words.len() {
            let a = words[i];
            assert_eq!(
                a & CMD_A_FIRST_LAST,
                CMD_A_FIRST_LAST,
                "one buffer per frame"
            );
            let len = (a & 0x7ff) as usize;
            let offset = ((a >> 16) & 0x1f) as usize;
            assert_eq!(words[i + 1], (len as u32) << 16 | len as u32, "command B");
            let n = (offset + len).div_ceil(4);
            let data: Vec<u8> = words[i + 2..i + 2 + n]
                .iter()
                .flat_map(|w| w.to_le_bytes())
                .collect();
            frames.push(data[offset..offset + len].to_vec());
            i += 2 + n;
        }
        frames
    }
}

impl Registers for &Model {
    fn read(&self, offset: usize) -> u32 {
        let mut s = self.0.borrow_mut();
        match offset {
            o if o <= reg::RX_DATA_FIFO_LAST => s.current.pop_front().unwrap_or(0),
            reg::RX_STATUS_FIFO => match s.rx.pop_front() {
                Some((status, words)) => {
                    s.current = words;
                    status
                }
                None => 0,
            },
            reg::ID_REV => 0x0118_0001,
            reg::BYTE_TEST => 0x8765_4321,
            reg::INT_STS => s.int_sts,
            reg::HW_CFG | reg::MAC_CSR_CMD => 0,
            reg::PMT_CTRL => 1,
            reg::RX_FIFO_INF => (s.rx.len() as u32) << 16,
            reg::TX_FIFO_INF => 4608,
            reg::MAC_CSR_DATA => s.mac_data,
            _ => panic!("read of unmodelled register {offset:#x}"),
        }
    }

    fn write(&self, offset: usize, value: u32) {
        let mut s = self.0.borrow_mut();
        match offset {
            o if (reg::TX_DATA_FIFO..=reg::TX_DATA_FIFO_LAST).contains(&o) => {
                s.tx_words.push(value)
            }
            reg::INT_STS => s.int_sts &= !value,
            reg::INT_EN => s.int_en = value,
            reg::IRQ_CFG => s.irq_cfg = value,
            reg::TX_CFG => s.tx_cfg = value,
            reg::RX_CFG => s.rx_cfg = value,
            reg::HW_CFG | reg::FIFO_INT => {}
            reg::MAC_CSR_DATA => s.mac_data = value,
            reg::MAC_CSR_CMD => {
                let csr = (value & 0xf) as usize;
                if value & CSR_READ != 0 {
                    s.mac_data = match csr as u32 {
                        mac_csr::MII_ACC => 0,
                        mac_csr::MII_DATA => 0x782d, // link up
                        _ => s.csr[csr],
                    };
                } else {
                    s.csr[csr] = s.mac_data;
                }
            }
            _ => panic!("write of unmodelled register {offset:#x}"),
        }
    }
}

const MAC: [u8; 6] = [0x02, 0x4c, 0x4c, 0, 0, 7];

/// A model brought up by the driver (the RX data offset set).
fn started() -> Model {
    let model = Model::default();
    Lan9118::new(&model).init(MAC).unwrap();
    model
}

#[test]
fn init_sets_the_address_filter_the_rx_offset_and_the_rx_interrupt() {
    let model = Model::default();
    let mut nic = Lan9118::new(&model);
    nic.init(MAC).unwrap();
    let s = model.0.borrow();
    assert_eq!(s.csr[2], 0x0700);
    assert_eq!(s.csr[3], 0x004c_4c02);
    assert_eq!(
        s.csr[1] & (MAC_CR_TXEN | MAC_CR_RXEN),
        MAC_CR_TXEN | MAC_CR_RXEN
    );
    assert_eq!(s.int_en, INT_RSFL);
    assert_eq!(s.irq_cfg & IRQ_EN, IRQ_EN);
    assert_eq!(s.tx_cfg & TX_CFG_TX_ON, TX_CFG_TX_ON);
    assert_eq!((s.rx_cfg >> 8) & 0x1f, RX_DATA_OFFSET as u32);
    drop(s);
    assert!(nic.link_up());
}

#[test]
fn a_wrong_chip_is_refused() {
    #[derive(Clone, Copy)]
    struct Other;
    impl Registers for Other {
        fn read(&self, _: usize) -> u32 {
            0xdead_beef
        }
        fn write(&self, _: usize, _: u32) {}
    }
    let mut nic = Lan9118::new(Other);
    assert_eq!(nic.init(MAC), Err(InitError::NotFound(0xdead_beef)));
}

/// The frame of a stored transmission of `RxFormat::Tagged`, and its tag.
fn untag(stored: &[u8]) -> (&[u8], RxTag) {
    let tag = RxTag::of(stored).expect("a tag");
    let end = stored.len() - 4 - usize::from(tag.padding);
    (&stored[..end], tag)
}

#[test]
fn received_frames_land_in_grants_tagged_or_with_their_fcs() {
    static Q: RxQueue<Inline<{ 2 * MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let model = started();
    let nic = Lan9118::new(&model);
    let (mut rx, _tx) = nic.split();
    assert_eq!(rx.format(), RX_FORMAT);
    let producer = Q.producer();
    let consumer = Q.consumer();
    // Every length mod 4, so the first and last words are cut every way.
    for len in 60..68u8 {
        let frame: Vec<u8> = (0..len).collect();
        model.receive(&frame);
        assert_eq!(rx.on_interrupt(&producer), 1);
        let mut read = consumer.read().unwrap();
        let (stored, tag) = untag(read.buf());
        assert_eq!(stored, &frame[..frame.len() - 4], "{len}");
        // Not IPv4: the MAC looks at it.
        assert_eq!(tag.checksums, RxChecksums::Unchecked);
    }
    assert_eq!(rx.counters().frames, 8);
    rx.set_keep_fcs(true);
    assert_eq!(rx.format(), linklab_mac::RxFormat::Aligned { fcs: true });
    let frame: Vec<u8> = (0..64u8).chain([1, 2, 3]).collect(); // 67 bytes
    model.receive(&frame);
    model.receive(&[9u8; 60]);
    assert_eq!(rx.on_interrupt(&producer), 2);
    assert_eq!(consumer.read().unwrap().bytes(), &frame[..]);
    assert_eq!(consumer.read().unwrap().bytes(), &[9u8; 60][..]);
}

/// An IPv4 TCP frame with `payload`, its checksums filled in, and a 4-byte FCS.
fn tcp_frame(payload: &[u8]) -> Vec<u8> {
    let total = 40 + payload.len();
    let mut f = std::vec![0u8; 14 + total];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&(total as u16).to_be_bytes());
    f[22] = 64;
    f[23] = 6;
    f[26..30].copy_from_slice(&[198, 18, 0, 1]);
    f[30..34].copy_from_slice(&[198, 18, 0, 2]);
    f[46] = 5 << 4;
    f[54..].copy_from_slice(payload);
    linklab_mac::checksum::fill(&mut f);
    f.extend_from_slice(&[0xde, 0xad, 0xbe, 0xef]);
    f
}

#[test]
fn right_checksums_are_vouched_for_and_wrong_ones_left_to_the_mac() {
    static Q: RxQueue<Inline<{ 2 * MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let model = started();
    let (mut rx, _tx) = Lan9118::new(&model).split();
    let producer = Q.producer();
    let consumer = Q.consumer();
    for len in [0usize, 1, 2, 3, 501, 1460] {
        let payload: Vec<u8> = (0..len).map(|i| (i * 13 + 5) as u8).collect();
        let good = tcp_frame(&payload);
        let mut bad = good.clone();
        let last = bad.len() - 5;
        bad[54.min(last)] ^= 1;
        for (frame, want) in [(&good, RxChecksums::Valid), (&bad, RxChecksums::Unchecked)] {
            model.receive(frame);
            assert_eq!(rx.on_interrupt(&producer), 1);
            let mut read = consumer.read().unwrap();
            let (stored, tag) = untag(read.buf());
            assert_eq!(stored, &frame[..frame.len() - 4]);
            assert_eq!(tag.checksums, want, "{len}");
        }
    }
}

#[test]
fn flagged_frames_are_dropped_unless_the_mac_checks_the_fcs() {
    static Q: RxQueue<Inline<{ 2 * MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let model = started();
    let (mut rx, _tx) = Lan9118::new(&model).split();
    model.receive(&[3u8; 64]);
    model.0.borrow_mut().rx[0].0 |= 1 << 15;
    assert_eq!(rx.on_interrupt(&Q.producer()), 0);
    assert_eq!(rx.counters().flagged, 1);
    assert!(Q.consumer().read().is_none());
    let s = model.0.borrow();
    assert!(s.rx.is_empty() && s.current.is_empty(), "read out");
}

#[test]
fn a_full_queue_drops_in_the_controller_and_counts_missed() {
    static Q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let model = started();
    let (mut rx, _tx) = Lan9118::new(&model).split();
    let producer = Q.producer();
    let _held = producer.grant().unwrap(); // the only grant: the queue has no room
    model.receive(&[5u8; 200]);
    model.receive(&[6u8; 8]);
    assert_eq!(rx.on_interrupt(&producer), 0);
    assert_eq!(rx.counters().missed, 2);
    let s = model.0.borrow();
    assert!(
        s.rx.is_empty() && s.current.is_empty(),
        "both frames read out"
    );
}

#[test]
fn an_impossible_length_is_dropped_not_trusted() {
    static Q: RxQueue<Inline<{ 2 * MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let model = started();
    let (mut rx, _tx) = Lan9118::new(&model).split();
    model
        .0
        .borrow_mut()
        .rx
        .push_back((0x3fff << 16, VecDeque::from([0u32; 8])));
    assert_eq!(rx.on_interrupt(&Q.producer()), 0);
    assert_eq!(rx.counters().missed, 1);
}

#[test]
fn transmit_writes_the_frame_from_any_alignment() {
    let model = Model::default();
    let (_rx, mut tx) = Lan9118::new(&model).split();
    #[repr(align(4))]
    struct Aligned([u8; 1600]);
    let mut buf = Aligned([0; 1600]);
    for (i, b) in buf.0.iter_mut().enumerate() {
        *b = (i * 7 + 1) as u8;
    }
    let mut want = Vec::new();
    for start in 0..4 {
        for len in [1, 2, 3, 4, 5, 6, 7, 33, 64, 65, 66, 67, 1514] {
            let frame = &buf.0[start..start + len];
            tx.transmit(frame);
            want.push(frame.to_vec());
        }
    }
    assert_eq!(model.sent(), want);
    assert_eq!(tx.dropped(), 0);
    tx.transmit(&[0u8; 2000]);
    tx.transmit(&[]);
    assert_eq!(tx.dropped(), 2);
}
