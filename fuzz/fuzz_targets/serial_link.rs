//! Fuzz linklab-serial's receive state machine: a `Link` driven by a script of operations —
//! raw bytes from the line, well-formed frames with fuzzed header fields (a correct CRC, the
//! link's own epoch or a wrong one), time steps, application sends and receives, output
//! polls. Must never panic; the counters must conserve after every step and delivered frames
//! must be ones the fuzzer sent, each once.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_serial::framing::{encode, Deframer};
use linklab_serial::wire::{self, Header, Kind, HEADER_LEN, MAX_FRAME, MAX_WIRE};
use linklab_serial::{Config, Link};

/// The link's epoch, read from the SYN it sends first.
fn epoch_of(link: &mut Link) -> u16 {
    let mut out = [0u8; MAX_WIRE];
    let n = link.poll_output(0, &mut out);
    let mut epoch = 1;
    Deframer::new().push(&out[..n], |c| {
        if let Ok((h, _)) = c
            .map_err(|_| ())
            .and_then(|f| wire::open(f).map_err(|_| ()))
        {
            epoch = h.src_epoch;
        }
    });
    epoch
}

fuzz_target!(|data: &[u8]| {
    let mut link: Box<Link> = Box::new(Link::new(Config::for_line_rate(300_000), 7));
    let mine = epoch_of(&mut link);
    let peer = 0x4242;
    let mut now = 0u64;
    let mut out = [0u8; MAX_WIRE];
    let mut ops = data;
    let mut delivered = 0u64;
    while let Some((&op, rest)) = ops.split_first() {
        ops = rest;
        match op % 6 {
            0 => {
                // Raw bytes: a length, then that many.
                let Some((&n, rest)) = ops.split_first() else {
                    break;
                };
                let n = (n as usize).min(rest.len());
                link.handle_input(now, &rest[..n]);
                ops = &rest[n..];
            }
            1 => {
                // A well-formed frame: 8 bytes of header fields, a payload length, payload.
                if ops.len() < 9 {
                    break;
                }
                let (f, rest) = ops.split_at(9);
                let kind = match f[0] % 4 {
                    0 => Kind::Syn,
                    1 => Kind::SynAck,
                    2 => Kind::Data,
                    _ => Kind::Ack,
                };
                let header = Header {
                    kind,
                    flags: f[0] & 0x70 & if kind == Kind::Data { 0x70 } else { 0x10 },
                    seq: f[1],
                    ack: f[2],
                    credits: f[3],
                    sack: u16::from_le_bytes([f[4], f[5]]),
                    src_epoch: if f[6] & 1 == 0 {
                        peer
                    } else {
                        u16::from(f[7]) | 1
                    },
                    dst_epoch: if f[6] & 2 == 0 { mine } else { u16::from(f[7]) },
                };
                let len = if kind == Kind::Data {
                    (f[8] as usize).min(rest.len())
                } else {
                    0
                };
                let mut frame = [0u8; MAX_FRAME];
                frame[HEADER_LEN..HEADER_LEN + len].copy_from_slice(&rest[..len]);
                let n = wire::seal(&mut frame, &header, len);
                let m = encode(&frame[..n], f[6] & 4 != 0, &mut out);
                link.handle_input(now, &out[..m]);
                ops = &rest[len..];
            }
            2 => {
                let Some((&dt, rest)) = ops.split_first() else {
                    break;
                };
                now += u64::from(dt) * 1000;
                ops = rest;
            }
            3 => {
                let Some((&len, rest)) = ops.split_first() else {
                    break;
                };
                let _ = link.send(len as usize * 6, |b| b.fill(len));
                ops = rest;
            }
            4 => {
                while let Some(f) = link.receive() {
                    assert!(f.payload().len() <= wire::MAX_PAYLOAD);
                    delivered += 1;
                }
            }
            _ => {
                let _ = link.poll_output(now, &mut out);
                let _ = link.poll_at(now);
            }
        }
        let c = link.counters();
        if let Err(e) = c.check_conservation() {
            panic!("{e}: {c:?}");
        }
        assert_eq!(c.rx_delivered, delivered);
        assert!(c.rx_data <= c.rx_chunks);
    }
});
