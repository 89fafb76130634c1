//! linklab-mac: a software Ethernet MAC for microcontrollers.
//!
//! `#![no_std]`, no `alloc`, no panics on wire input. Layers, bottom to top:
//!
//! * [`fcs`]: the CRC-32 frame check sequence (portable slicing-by-8; crc32fast on hosts).
//! * [`tx`]: TX framing in place (preamble, SFD, padding, FCS) through a closure.
//! * [`mod@deframe`]: RX deframing of raw PHY captures (SFD at any bit offset, either
//!   polarity, realigned in place) or aligned frames with/without FCS.
//! * [`queue`]: the zero-copy RX queue (bbqueue framed): the PHY's interrupt grants,
//!   writes, commits or cancels; the main loop reads in place and releases. Its ring is an
//!   inline array (a `static` on a microcontroller) or, with feature `alloc`, a heap slice
//!   of any size chosen at run time.
//! * [`Mac`]: the consumer side plus the transmitter: counters with a conservation law
//!   ([`counters`]), address filter ([`filter`]), inter-packet gap ([`timing`]), 802.3x
//!   PAUSE ([`pause`]); with feature `smoltcp` a `smoltcp::phy::Device`.
//! * [`window`]: the TCP receive window that keeps a peer from overrunning the queue.
//!
//! # Usage
//!
//! ```
//! use linklab_mac::{impair, Inline, Mac, MacAddr, MacConfig, NoClock, PhyTx, RxQueue};
//!
//! /// The PHY transmit sink: anything implementing `PhyTx` (a closure works too).
//! struct Wire(Vec<Vec<u8>>);
//! impl PhyTx for Wire {
//!     fn transmit(&mut self, wire: &[u8]) {
//!         self.0.push(wire.to_vec());
//!     }
//! }
//!
//! // The queue lives in a static (or a local); the PHY's interrupt owns the producer. On a
//! // host, `RxQueue::boxed(bytes)` (feature `alloc`) takes a size chosen at run time.
//! static RX: RxQueue<Inline<8192>> = RxQueue::new();
//! let (producer, consumer) = RX.split();
//!
//! let me = MacAddr([0x02, 0, 0, 0, 0, 1]);
//! let config = MacConfig::raw_phy(me, 10_000_000);
//! let mut mac = Mac::new(consumer, Wire(Vec::new()), NoClock, config);
//!
//! // TX: the closure writes the frame in place; the PHY gets preamble, SFD, the frame
//! // padded to 60 bytes, and the FCS.
//! let fill = |f: &mut [u8]| {
//!     f[0..6].copy_from_slice(&me.0); // to ourselves, for the demo
//!     f[6..12].copy_from_slice(&me.0);
//!     f[12..14].copy_from_slice(&[0x88, 0xB5]); // local experimental EtherType
//!     f[14..18].copy_from_slice(b"ping");
//! };
//! mac.transmit(18, fill).unwrap();
//! let wire = mac.phy().0[0].clone();
//! assert_eq!(wire.len(), 8 + 60 + 4);
//!
//! // What a sampling PHY may capture: 3 bits late, on an inverted pair.
//! let mut raw = [0u8; 80];
//! let n = impair::shift_into(&mut raw, &wire, 3, true);
//!
//! // RX, interrupt side: grant, let the PHY write, commit the used length.
//! let mut grant = producer.grant().unwrap();
//! grant.buf()[..n].copy_from_slice(&raw[..n]);
//! grant.commit(n);
//!
//! // RX, main loop: the frame comes back realigned, FCS checked and stripped, in place.
//! let frame = mac.receive().unwrap();
//! assert_eq!(frame.len(), 60);
//! assert_eq!(&frame[14..18], b"ping");
//! drop(frame); // releases the queue space
//!
//! let c = mac.counters();
//! assert_eq!((c.rx_packets, c.tx_packets), (1, 1));
//! c.check_conservation().unwrap();
//! ```
//!
//! For a Linux TAP use [`MacConfig::tap`] (aligned frames without FCS in, plain frames out)
//! and [`RxProducer::push`] to copy each frame read from the TAP into the queue. For a soft
//! PHY that decodes the line itself (linklab-phy10) use [`MacConfig::decoding_phy`]: its
//! interrupt decodes straight into the grant, FCS included, and the MAC checks it here.
//!
//! # Features
#![doc = document_features::document_features!()]
#![no_std]
#![cfg_attr(docsrs, feature(doc_cfg))]

#[cfg(feature = "std")]
extern crate std;

// The logging macros (trace!, debug!, ...) for every module below; see linklab-fmt.
#[macro_use]
extern crate linklab_fmt;
linklab_fmt::exclusive_features!();

mod atomic;
pub mod checksum;
pub mod counters;
pub mod deframe;
#[cfg(feature = "smoltcp")]
pub mod device;
#[cfg(feature = "embassy")]
pub mod embassy;
pub mod fcs;
pub mod filter;
pub mod frame;
pub mod impair;
mod mac;
pub mod pause;
pub mod queue;
pub mod run;
pub mod timing;
pub mod tx;
pub mod window;

pub use counters::{ConservationError, Counters};
pub use deframe::{deframe, RxChecksums, RxError, RxFormat, RxTag, RX_TAG_LEN};
#[cfg(feature = "embassy-time")]
pub use embassy::EmbassyTimeClock;
#[cfg(feature = "embassy")]
pub use embassy::{AlwaysUp, EmbassyMac, LinkSignal, LinkStatus, WakeAt};
pub use filter::AddressFilter;
pub use frame::MacAddr;
pub use mac::{Mac, MacConfig, PauseWatermarks, PhyTx, RxFrame};
#[cfg(feature = "alloc")]
pub use queue::BoxedSlice;
pub use queue::{
    Inline, QueueTooSmall, RxConsumer, RxGrant, RxProducer, RxQueue, RxRead, Storage, FRAME_ALIGN,
    MIN_QUEUE_CAPACITY, RX_GRANT_LEN,
};
pub use run::{RxRun, MAX_RUN_SLOTS, RUN_SLOT_LEN, RUN_STRIDE};
pub use timing::{Clock, FnClock, NoClock};
pub use tx::{TxError, TxFormat};
