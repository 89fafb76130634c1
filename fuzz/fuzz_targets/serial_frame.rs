//! Fuzz linklab-serial's frame parser: arbitrary bytes through the COBS deframer and the
//! header/CRC check. Must never panic; every chunk is either a frame that re-encodes to what
//! was decoded, or an error.
#![no_main]

use libfuzzer_sys::fuzz_target;
use linklab_serial::framing::{encode, Deframer};
use linklab_serial::wire::{self, MAX_FRAME, MAX_WIRE};

fuzz_target!(|data: &[u8]| {
    let mut deframer = Deframer::new();
    // Split the input at an arbitrary point, as reads from a port would.
    let cut = data.first().map_or(0, |&b| b as usize).min(data.len());
    for part in [&data[..cut], &data[cut..]] {
        deframer.push(part, |chunk| {
            let Ok(frame) = chunk else { return };
            assert!(frame.len() <= MAX_FRAME);
            if let Ok((header, payload)) = wire::open(frame) {
                assert!(payload.len() <= wire::MAX_PAYLOAD);
                // A good frame survives its own re-encoding bit for bit.
                let mut again = [0u8; MAX_FRAME];
                again[wire::HEADER_LEN..wire::HEADER_LEN + payload.len()].copy_from_slice(payload);
                let n = wire::seal(&mut again, &header, payload.len());
                assert_eq!(&again[..n], frame);
                let mut out = [0u8; MAX_WIRE];
                let m = encode(frame, true, &mut out);
                let mut d = Deframer::new();
                let mut seen = 0;
                d.push(&out[..m], |c| {
                    assert_eq!(c.ok(), Some(frame));
                    seen += 1;
                });
                assert_eq!(seen, 1);
            }
        });
    }
    assert!(deframer.pending() <= wire::MAX_ENCODED);
});
