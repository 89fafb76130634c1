//! Criterion benchmarks: FCS back ends side by side, and the whole RX path
//! (enqueue + deframe + FCS + dequeue) per 64- and 1518-byte frame.
//!
//! ```text
//! cargo bench -p linklab-mac --features std --bench mac
//! ```
#![allow(missing_docs)] // criterion_group! defines an undocumented public function

use criterion::{black_box, criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use linklab_mac::impair::shift_into;
use linklab_mac::tx::{build, TxFormat};
use linklab_mac::{fcs, Inline, Mac, MacAddr, MacConfig, NoClock, RxFormat, RxQueue};

const ME: MacAddr = MacAddr([0x02, 0, 0, 0, 0, 1]);

/// Frame sizes with FCS, as on the wire after the SFD.
const SIZES: [usize; 2] = [64, 1518];

fn frame_bytes(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 131 + 7) as u8).collect()
}

fn bench_fcs(c: &mut Criterion) {
    let mut g = c.benchmark_group("fcs");
    for size in SIZES {
        let data = frame_bytes(size);
        g.throughput(Throughput::Bytes(size as u64));
        g.bench_with_input(BenchmarkId::new("bytewise", size), &data, |b, d| {
            b.iter(|| fcs::bytewise(black_box(d)))
        });
        g.bench_with_input(BenchmarkId::new("slicing4", size), &data, |b, d| {
            b.iter(|| fcs::slicing4(black_box(d)))
        });
        g.bench_with_input(BenchmarkId::new("slicing8", size), &data, |b, d| {
            b.iter(|| fcs::slicing8(black_box(d)))
        });
        g.bench_with_input(BenchmarkId::new("crc32fast", size), &data, |b, d| {
            b.iter(|| fcs::crc32fast(black_box(d)))
        });
        g.bench_with_input(BenchmarkId::new("crc-fast", size), &data, |b, d| {
            b.iter(|| crc_fast::checksum(crc_fast::CrcAlgorithm::Crc32IsoHdlc, black_box(d)) as u32)
        });
        g.bench_with_input(BenchmarkId::new("fcs-api", size), &data, |b, d| {
            b.iter(|| fcs::fcs(black_box(d)))
        });
    }
    g.finish();
}

/// One transmission as the PHY hands it over in `format`, for a frame of `size` bytes
/// including FCS.
fn capture(size: usize, format: RxFormat, offset: usize, invert: bool) -> Vec<u8> {
    let mut wire = vec![0u8; 1600];
    let (n, ()) = build(&mut wire, TxFormat::Wire, size - 4, |f| {
        for (i, b) in f.iter_mut().enumerate() {
            *b = (i * 7) as u8;
        }
        f[0..6].copy_from_slice(&ME.0);
        f[12..14].copy_from_slice(&[0x88, 0xB5]);
    })
    .unwrap();
    match format {
        RxFormat::Raw => {
            let mut raw = vec![0u8; n + 1];
            let m = shift_into(&mut raw, &wire[..n], offset, invert);
            raw.truncate(m);
            raw
        }
        RxFormat::Aligned { fcs: true } => wire[8..n].to_vec(),
        RxFormat::Aligned { fcs: false } => wire[8..n - 4].to_vec(),
        RxFormat::Tagged => {
            let mut v = wire[8..n - 4].to_vec();
            v.extend_from_slice(
                &linklab_mac::RxTag {
                    checksums: linklab_mac::RxChecksums::Unchecked,
                    padding: 0,
                }
                .to_bytes(),
            );
            v
        }
    }
}

fn bench_rx_path(c: &mut Criterion) {
    let mut g = c.benchmark_group("rx_path");
    let cases = [
        ("raw-aligned", RxFormat::Raw, 0, false),
        ("raw-shift3-inverted", RxFormat::Raw, 3, true),
        ("aligned-fcs", RxFormat::Aligned { fcs: true }, 0, false),
    ];
    for size in SIZES {
        g.throughput(Throughput::Bytes(size as u64));
        for (name, format, offset, invert) in cases {
            let cap = capture(size, format, offset, invert);
            let q: RxQueue<Inline<16384>> = RxQueue::new();
            let p = q.producer();
            let mut cfg = MacConfig::raw_phy(ME, 0);
            cfg.rx_format = format;
            let mut mac = Mac::new(q.consumer(), |_: &[u8]| {}, NoClock, cfg);
            g.bench_with_input(BenchmarkId::new(name, size), &cap, |b, cap| {
                b.iter(|| {
                    // Enqueue: the PHY writes into the grant (here: a copy), commits.
                    let mut grant = p.grant().unwrap();
                    grant.buf()[..cap.len()].copy_from_slice(black_box(cap));
                    grant.commit(cap.len());
                    // Dequeue: deframe + FCS + filter in place, then release.
                    let f = mac.receive().unwrap();
                    black_box(f.len())
                })
            });
            assert_eq!(mac.counters().rx_crc_errors, 0);
        }
    }
    g.finish();
}

criterion_group!(benches, bench_fcs, bench_rx_path);
criterion_main!(benches);
