//! The driver against a small model of the controller: the registers it uses, the MAC CSR
//! indirection, the RX status and data FIFOs, and the TX data FIFO.

extern crate std;

use core::cell::RefCell;
use std::collections::VecDeque;
use std::vec::Vec;

use linklab_mac::{Inline, RxQueue, MIN_QUEUE_CAPACITY};

use super::*;

#[derive(Default)]
struct State {
    csr: [u32; 16],
    mac_data: u32,
    int_sts: u32,
    int_en: u32,
    irq_cfg: u32,
    tx_cfg: u32,
    /// Frames waiting: (status word, data words).
    rx: VecDeque<(u32, VecDeque<u32>)>,
    /// The frame being read.
    current: VecDeque<u32>,
    tx_words: Vec<u32>,
}

#[derive(Default)]
struct Model(RefCell<State>);

impl Model {
    fn receive(&self, frame_with_fcs: &[u8]) {
        let words = frame_with_fcs
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

#[test]
fn init_sets_the_address_filter_and_the_rx_interrupt() {
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

#[test]
fn received_frames_land_in_grants_with_their_fcs() {
    static Q: RxQueue<Inline<{ 2 * MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let model = Model::default();
    let nic = Lan9118::new(&model);
    let (mut rx, _tx) = nic.split();
    let frame: Vec<u8> = (0..64u8).chain([1, 2, 3]).collect(); // 67 bytes: not word aligned
    model.receive(&frame);
    model.receive(&[9u8; 60]);
    let producer = Q.producer();
    rx.set_keep_fcs(true);
    assert_eq!(rx.on_interrupt(&producer), 2);
    let consumer = Q.consumer();
    assert_eq!(consumer.read().unwrap().bytes(), &frame[..]);
    assert_eq!(consumer.read().unwrap().bytes(), &[9u8; 60][..]);
    assert_eq!(rx.counters().frames, 2);
    // By default the FCS (the last 4 bytes) is left in the controller.
    rx.set_keep_fcs(false);
    model.receive(&frame);
    assert_eq!(rx.on_interrupt(&producer), 1);
    assert_eq!(consumer.read().unwrap().bytes(), &frame[..63]);
}

#[test]
fn flagged_frames_are_dropped_unless_the_mac_checks_the_fcs() {
    static Q: RxQueue<Inline<{ 2 * MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let model = Model::default();
    let (mut rx, _tx) = Lan9118::new(&model).split();
    model.receive(&[3u8; 64]);
    model.0.borrow_mut().rx[0].0 |= RX_STS_ES;
    assert_eq!(rx.on_interrupt(&Q.producer()), 0);
    assert_eq!(rx.counters().flagged, 1);
    assert!(Q.consumer().read().is_none());
}

#[test]
fn a_full_queue_drops_in_the_controller_and_counts_missed() {
    static Q: RxQueue<Inline<{ MIN_QUEUE_CAPACITY }>> = RxQueue::new();
    let model = Model::default();
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
    let model = Model::default();
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
fn transmit_writes_commands_and_little_endian_words() {
    let model = Model::default();
    let (_rx, mut tx) = Lan9118::new(&model).split();
    tx.transmit(&[1, 2, 3, 4, 5]);
    let words = model.0.borrow().tx_words.clone();
    assert_eq!(
        words,
        [
            TX_CMD_A_FIRST | TX_CMD_A_LAST | 5,
            5 << 16 | 5,
            0x0403_0201,
            0x0000_0005
        ]
    );
    tx.transmit(&[0u8; 2000]);
    tx.transmit(&[]);
    assert_eq!(tx.dropped(), 2);
}
