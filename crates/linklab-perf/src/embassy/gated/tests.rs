extern crate std;
use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::Wake;
use std::vec::Vec;

use super::*;
use crate::embassy::gate::Port;
use crate::rules::Peer;

struct Count(AtomicUsize);
impl Wake for Count {
    fn wake(self: Arc<Self>) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

/// A driver that lends the frames queued in `rx` and keeps what is sent, as a channel
/// driver does: no look before the token is consumed.
#[derive(Default)]
struct Fake {
    rx: VecDeque<Vec<u8>>,
    sent: Vec<Vec<u8>>,
}

struct FakeRx(Vec<u8>);
struct FakeTx<'a>(&'a mut Vec<Vec<u8>>);

impl RxToken for FakeRx {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(mut self, f: F) -> R {
        f(&mut self.0)
    }
}

impl TxToken for FakeTx<'_> {
    fn consume<R, F: FnOnce(&mut [u8]) -> R>(self, len: usize, f: F) -> R {
        let mut frame = std::vec![0u8; len];
        let r = f(&mut frame);
        self.0.push(frame);
        r
    }
}

impl Driver for Fake {
    type RxToken<'a> = FakeRx;
    type TxToken<'a> = FakeTx<'a>;
    fn receive(&mut self, _cx: &mut Context<'_>) -> Option<(FakeRx, FakeTx<'_>)> {
        let frame = self.rx.pop_front()?;
        Some((FakeRx(frame), FakeTx(&mut self.sent)))
    }
    fn transmit(&mut self, _cx: &mut Context<'_>) -> Option<FakeTx<'_>> {
        Some(FakeTx(&mut self.sent))
    }
    fn link_state(&mut self, _cx: &mut Context<'_>) -> LinkState {
        LinkState::Up
    }
    fn capabilities(&self) -> Capabilities {
        Capabilities::default()
    }
    fn hardware_address(&self) -> HardwareAddress {
        HardwareAddress::Ethernet([2, 0, 0, 0, 0, 1])
    }
}

/// An Ethernet/IPv4/TCP segment with `flags` from port `from` to 198.18.0.1:`to` (only
/// the ports and the destination address are filled in: all the gate reads).
fn segment(flags: u8, from: u16, to: u16) -> Vec<u8> {
    let mut f = std::vec![0u8; 54];
    f[12..14].copy_from_slice(&[0x08, 0x00]);
    f[14] = 0x45;
    f[16..18].copy_from_slice(&40u16.to_be_bytes());
    f[23] = 6;
    f[30..34].copy_from_slice(&[198, 18, 0, 1]);
    f[34..36].copy_from_slice(&from.to_be_bytes());
    f[36..38].copy_from_slice(&to.to_be_bytes());
    f[46] = 5 << 4;
    f[47] = flags;
    f
}

/// What the stack gets from one receive: None (nothing lent), or the frame it consumed.
fn stack_receives(d: &mut GatedDriver<'_, Fake>, cx: &mut Context<'_>) -> Option<Vec<u8>> {
    let (rx, _tx) = d.receive(cx)?;
    Some(rx.consume(|frame| frame.to_vec()))
}

#[test]
fn a_held_syn_waits_aside_and_passes_whole_once_its_service_answered() {
    let gate = &ServiceGate::new();
    assert!(gate.serve(Port::Tcp(80)));
    let stack = Arc::new(Count(AtomicUsize::new(0)));
    let waker = Waker::from(stack.clone());
    let mut cx = Context::from_waker(&waker);
    let mut d = GatedDriver::new(Fake::default(), gate);
    let syn = segment(0x02, 40000, 80);
    let ack = segment(0x10, 40001, 80);
    d.inner.rx.extend([syn.clone(), ack.clone()]);
    // The SYN is held: the stack is given an empty frame, then nothing.
    assert_eq!(stack_receives(&mut d, &mut cx), Some(Vec::new()));
    assert_eq!(stack_receives(&mut d, &mut cx), None);
    assert_eq!(
        d.inner.rx.len(),
        1,
        "the frame behind it waits in the driver"
    );
    // The service answers: the stack is woken and gets the SYN whole, then the next frame.
    let service = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
    assert!(gate.asked(Port::Tcp(80), &mut Context::from_waker(&service)));
    gate.answer(Port::Tcp(80));
    assert_eq!(stack.0.load(Ordering::Relaxed), 1);
    assert_eq!(stack_receives(&mut d, &mut cx), Some(syn));
    assert_eq!(stack_receives(&mut d, &mut cx), Some(ack));
    assert_eq!(stack_receives(&mut d, &mut cx), None);
}

#[test]
fn a_dropped_syn_never_reaches_the_stack() {
    let gate = &ServiceGate::new();
    assert!(gate.serve(Port::Tcp(7)));
    let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
    let mut cx = Context::from_waker(&waker);
    let mut d = GatedDriver::new(Fake::default(), gate);
    let other = segment(0x02, 40002, 22);
    d.inner.rx.extend([segment(0x02, 40000, 7), other.clone()]);
    assert_eq!(stack_receives(&mut d, &mut cx), Some(Vec::new()));
    assert!(gate.asked(Port::Tcp(7), &mut cx));
    gate.defer(Port::Tcp(7));
    // Dropped: nothing this time (the stack's task is woken to come again), then the next.
    assert_eq!(stack_receives(&mut d, &mut cx), None);
    assert_eq!(stack_receives(&mut d, &mut cx), Some(other));
}

#[test]
fn the_syn_acks_that_leave_are_noted_and_held_sending_waits() {
    let gate = &ServiceGate::new();
    let waker = Waker::from(Arc::new(Count(AtomicUsize::new(0))));
    let mut cx = Context::from_waker(&waker);
    let mut d = GatedDriver::new(Fake::default(), gate);
    let syn_ack = segment(0x12, 80, 40000);
    let tx = d.transmit(&mut cx).expect("a token");
    tx.consume(syn_ack.len(), |f| f.copy_from_slice(&syn_ack));
    assert_eq!(d.inner.sent, [syn_ack]);
    // The peer a SYN-ACK names is its destination.
    let peer = Peer {
        addr: [198, 18, 0, 1],
        port: 40000,
    };
    assert!(gate.answered(80, peer));
    // A segment wakes a service that asked: the stack's sending waits for it.
    gate.wake_on_segment(5201, &mut cx);
    d.inner.rx.push_back(segment(0x10, 40003, 5201));
    assert!(stack_receives(&mut d, &mut cx).is_some());
    assert!(d.transmit(&mut cx).is_none());
    gate.service_runs();
    assert!(d.transmit(&mut cx).is_some());
}
