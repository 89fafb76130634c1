//! A tiny workload for `valgrind --tool=callgrind`: instructions per byte of the FCS back
//! ends and of the whole RX path. Each workload runs in its own `#[inline(never)]`
//! function so callgrind's `--toggle-collect` can count exactly that function.
//!
//! ```text
//! cargo build --release -p linklab-mac --example callgrind_rx
//! valgrind --tool=callgrind --callgrind-out-file=/dev/null \
//!   --toggle-collect='callgrind_rx::work_*' \
//!   target/release/examples/callgrind_rx rx-raw 1518 1000
//! ```
//!
//! With `--toggle-collect` the `I refs` total counts only the workload function (and what
//! it calls), so instructions per byte = I refs / (iterations × frame size). Without the `std`
//! feature the `fcs` API is the portable slicing-by-8 (what a microcontroller runs). With
//! `--features alloc`, `rx-raw-boxed` runs `rx-raw` over a queue sized at run time (heap
//! storage) instead of an inline one.

use linklab_mac::impair::shift_into;
use linklab_mac::tx::{build, TxFormat};
use linklab_mac::{fcs, Inline, Mac, MacAddr, MacConfig, NoClock, RxFormat, RxQueue, Storage};
use std::hint::black_box;

const ME: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 1]);

#[inline(never)]
fn work_fcs_bytewise(d: &[u8], n: usize) -> u32 {
    (0..n).fold(0u32, |a, _| a.wrapping_add(fcs::bytewise(black_box(d))))
}

#[inline(never)]
fn work_fcs_slicing4(d: &[u8], n: usize) -> u32 {
    (0..n).fold(0u32, |a, _| a.wrapping_add(fcs::slicing4(black_box(d))))
}

#[inline(never)]
fn work_fcs_slicing8(d: &[u8], n: usize) -> u32 {
    (0..n).fold(0u32, |a, _| a.wrapping_add(fcs::slicing8(black_box(d))))
}

#[inline(never)]
fn work_fcs_crc32fast(d: &[u8], n: usize) -> u32 {
    (0..n).fold(0u32, |a, _| a.wrapping_add(fcs::crc32fast(black_box(d))))
}

/// The RX path as in the criterion bench: grant + copy + commit, receive, release.
#[inline(never)]
fn work_rx_path(cap: &[u8], format: RxFormat, n: usize) -> usize {
    let q: RxQueue<Inline<16384>> = RxQueue::new();
    rx_path(&q, cap, format, n)
}

/// The same over a queue sized at run time (heap storage, feature `alloc`).
#[cfg(feature = "alloc")]
#[inline(never)]
fn work_rx_path_boxed(cap: &[u8], format: RxFormat, n: usize) -> usize {
    let q = RxQueue::boxed(16384).expect("above the minimum");
    rx_path(&q, cap, format, n)
}

fn rx_path<S: Storage>(q: &RxQueue<S>, cap: &[u8], format: RxFormat, n: usize) -> usize {
    let p = q.producer();
    let mut cfg = MacConfig::raw_phy(ME, 0);
    cfg.rx_format = format;
    let mut mac = Mac::new(q.consumer(), |_: &[u8]| {}, NoClock, cfg);
    let mut total = 0;
    for _ in 0..n {
        let mut grant = p.grant().expect("grant");
        grant.buf()[..cap.len()].copy_from_slice(black_box(cap));
        grant.commit(cap.len());
        total += mac.receive().expect("good frame").len();
    }
    total
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let workload = args.first().map(String::as_str).unwrap_or("all");
    let size: usize = args.get(1).and_then(|s| s.parse().ok()).unwrap_or(1518);
    let n: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(1000);
    if !(64..=1518).contains(&size) || n == 0 {
        eprintln!("usage: callgrind_rx [WORKLOAD|all] [SIZE 64..=1518] [ITERATIONS >= 1]");
        std::process::exit(1);
    }
    let data: Vec<u8> = (0..size).map(|i| (i * 131 + 7) as u8).collect();
    let mut wire = vec![0u8; 1600];
    let (w, ()) = build(&mut wire, TxFormat::Wire, size - 4, |f| {
        f.copy_from_slice(&data[..size - 4]);
        f[0..6].copy_from_slice(&ME.0);
        f[12..14].copy_from_slice(&[0x88, 0xB5]);
    })
    .expect("build");
    let mut shifted = vec![0u8; w + 1];
    let m = shift_into(&mut shifted, &wire[..w], 3, true);
    let run = |name: &str| -> Option<u64> {
        Some(match name {
            "fcs-bytewise" => work_fcs_bytewise(&data, n) as u64,
            "fcs-slicing4" => work_fcs_slicing4(&data, n) as u64,
            "fcs-slicing8" => work_fcs_slicing8(&data, n) as u64,
            "fcs-crc32fast" => work_fcs_crc32fast(&data, n) as u64,
            "rx-raw" => work_rx_path(&wire[..w], RxFormat::Raw, n) as u64,
            "rx-raw-shift3-inverted" => work_rx_path(&shifted[..m], RxFormat::Raw, n) as u64,
            "rx-aligned-fcs" => {
                work_rx_path(&wire[8..w], RxFormat::Aligned { fcs: true }, n) as u64
            }
            #[cfg(feature = "alloc")]
            "rx-raw-boxed" => work_rx_path_boxed(&wire[..w], RxFormat::Raw, n) as u64,
            _ => return None,
        })
    };
    let names = [
        "fcs-bytewise",
        "fcs-slicing4",
        "fcs-slicing8",
        "fcs-crc32fast",
        "rx-raw",
        "rx-raw-shift3-inverted",
        "rx-aligned-fcs",
    ];
    let chosen: Vec<&str> = if workload == "all" {
        names.to_vec()
    } else {
        vec![workload]
    };
    for name in chosen {
        match run(name) {
            Some(v) => println!("{name} size {size} iterations {n}: result {v}"),
            None => {
                eprintln!("unknown workload {name}; one of: all {}", names.join(" "));
                std::process::exit(1);
            }
        }
    }
}
