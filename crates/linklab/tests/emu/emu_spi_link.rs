//! The Pico as an SPI device (examples/boards/rp2040-spi-link: PIO and DMA shift the bytes,
//! linklab-serial's link carries Ethernet frames, embassy-net runs linklab-perf's apps) in
//! rp2040js, the host's SPI master modelled on the chip's clock (emulators/rp2040js/
//! spi-master.mjs, pico-spi.mjs) and the host's end of the link in linklab:
//!
//! - booted as a user does, `linklab emu pico --image spi-link`: stock ping and iperf3 both
//!   ways through the TAP, the device's `/stats` (the link's laws, the transport's counters);
//! - `linklab serial --spi-emu spi-link --selftest`: the link's self-test, read through its
//!   document (`linklab_results::serial::SerialReport`);
//! - bad input from the master, each held by a test: garbage clocked in, a frame cut by CS,
//!   transfers that do not wait for READY, and the host's restart; after each the link
//!   resumes, every self-test frame comes back and both ends' counters keep their laws;
//! - `linklab serial`'s SPI options refused with one line.
//!
//! Every figure is in the chip's clock. Needs root, node with `npm ci` in
//! emulators/rp2040js (scripts/setup), iperf3 and curl; builds the example itself.

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use linklab_emu::pin_spi::SpiMaster;
use linklab_results::serial::SerialReport;
use linklab_serial::selftest::{Event, Plan, Tester};
use linklab_serial::{Link, State};
use linklab_serve::serial::spi::{SpiBus, SpiLine};
use linklab_serve::serial::spi_emu::EmuBus;
use linklab_serve::serial::{spi_config, Line, SerialLink};
use linklab_testkit::device::DEVICE;
use linklab_testkit::emulated_clock::Status;
use linklab_testkit::ping::Ping;
use linklab_testkit::rp2040js::build_elf;
use linklab_testkit::{assert_one_line_error, linklab_bin, run_ok, Netns};

/// The example, built once for every test here.
fn elf() -> PathBuf {
    static ELF: OnceLock<PathBuf> = OnceLock::new();
    ELF.get_or_init(|| build_elf("rp2040-spi-link", "", "spi-link"))
        .clone()
}

#[test]
fn spi_link_booted_as_a_user_does_answers_ping_and_iperf3_both_ways() {
    let dir = linklab_testkit::tempdir("spilink");
    let status = Status(dir.join("status.json"));
    let (ns, cli) = boot_board("spilink", "spi-link", &elf(), 20_000_000, &status);
    iperf3_both_ways(&ns, 100);

    let out = ns.run(&["curl", "-s", "--max-time", "120", "http://198.18.0.2/stats"]);
    let stats = linklab_testkit::stats::Stats::parse(&out.stdout);
    assert_eq!(stats.text("board"), "rp2040-spi-link", "{stats}");
    assert_eq!(stats.text("link_conservation"), "ok", "{stats}");
    let spi = |name: &str| stats.counter("spi", name);
    assert!(spi("transfers") > 100, "{stats}");
    assert_eq!(spi("unarmed"), 0, "the master waited for READY: {stats}");
    assert_eq!(spi("rx_overruns"), 0, "{stats}");
    let crc_errors = stats.counter("link", "rx_crc_errors");
    assert_eq!(crc_errors, 0, "a clean line: {stats}");
    println!("spi-link: device {}", stats.show("spi"));

    let out = cli.interrupt(Duration::from_secs(20));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("| conserved"), "the host's link: {text}");
    println!("spi-link: harness {}", status.figures().show("spi_master"));
}

#[test]
fn spi_link_selftest_through_linklab_serial_loses_nothing() {
    let dir = linklab_testkit::tempdir("spiselftest");
    let json = dir.join("st.json");
    let elf = elf();
    let out = run_ok(std::process::Command::new(linklab_bin()).args([
        "serial",
        "--spi-emu",
        "spi-link",
        "--elf",
        elf.to_str().unwrap(),
        "--selftest",
        "--sizes",
        "16,1514",
        "--rtt-frames",
        "4",
        "--stream-frames",
        "12",
        "--json",
        json.to_str().unwrap(),
    ]));
    let report: SerialReport =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).expect("the document");
    assert_eq!(report.conservation, "ok", "{report:?}");
    assert_eq!(report.line_bytes_per_s, 20_000_000 / 8);
    assert_eq!(report.sizes.len(), 2);
    for s in &report.sizes {
        assert_eq!(
            (s.sent, s.received, s.lost, s.corrupt),
            (16, 16, 0, 0),
            "{s:?}"
        );
        assert_eq!(s.rx_errors, 0, "a clean line: {s:?}");
    }
    println!("{}", String::from_utf8_lossy(&out.stdout));
}

/// The host's end of the link on the emulated Pico's SPI, in this process: the faults come
/// from here.
struct Host {
    line: SpiLine<EmuBus>,
    link: Box<SerialLink>,
    _device: linklab_emu::pin_boot::SpiDevice,
}

impl Host {
    fn boot() -> Host {
        let master = SpiMaster::default();
        let device = linklab_emu::pin_boot::boot_spi_device(
            "spi-link",
            Some(elf()),
            &master,
            None,
            Duration::from_secs(120),
        )
        .expect("the harness");
        let stream = device.stream.try_clone().unwrap();
        let bus = EmuBus::new(stream, master.hz, "the emulated Pico").unwrap();
        Host {
            line: SpiLine::new(bus),
            link: Box::new(Link::new(spi_config(), std::process::id())),
            _device: device,
        }
    }

    /// One round: the link's bytes both ways, then a wait for the device or the link's timer.
    fn step(&mut self) {
        self.line.read(&mut self.link).unwrap();
        self.line.write(&mut self.link).unwrap();
        let now = self.line.now_us();
        let until = self
            .link
            .poll_at(now)
            .map(|t| t.min(now + 20_000))
            .or(Some(now + 20_000));
        self.line.wait(&[], until).unwrap();
    }

    /// Runs the link's self-test (`frames` of each size, one at a time then streamed) and
    /// returns (sent, received, corrupt) over all sizes; fails if it does not finish.
    fn selftest(&mut self, frames: u32) -> (u64, u64, u64) {
        let started = Instant::now();
        while self.link.state() != State::Established {
            assert!(started.elapsed() < Duration::from_secs(120), "no handshake");
            self.step();
        }
        let sizes = [16usize, 600, 1514];
        let plan = Plan {
            sizes: &sizes,
            rtt_frames: frames,
            stream_frames: frames,
        };
        let mut tester = Tester::new(plan, self.line.now_us() as u32 | 1);
        let (mut sent, mut received, mut corrupt) = (0, 0, 0);
        while !tester.is_done() {
            assert!(
                started.elapsed() < Duration::from_secs(600),
                "self-test stalled"
            );
            let now = self.line.now_us();
            tester.poll(&mut self.link, now, |e| {
                if let Event::PhaseDone(p) = e {
                    sent += u64::from(p.sent);
                    received += u64::from(p.received);
                    corrupt += u64::from(p.corrupt);
                }
            });
            self.step();
        }
        self.link.counters().check_conservation().unwrap();
        (sent, received, corrupt)
    }

    /// Clocks `tx` without the link: bytes the link never sent, its own bytes back lost.
    fn raw(&mut self, tx: &[u8], wait_ready: bool) {
        let mut rx = vec![0; tx.len()];
        let bus = self.line.bus();
        if wait_ready {
            bus.transfer(tx, &mut rx).unwrap();
        } else {
            bus.transfer_unready(tx, &mut rx).unwrap();
        }
    }
}

/// A seeded byte generator for garbage.
fn garbage(n: usize, seed: u32) -> Vec<u8> {
    let mut x = seed | 1;
    (0..n)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 17;
            x ^= x << 5;
            x as u8
        })
        .collect()
}

#[test]
fn spi_link_resumes_after_garbage_a_cut_frame_unready_transfers_and_a_host_restart() {
    let mut host = Host::boot();
    let (sent, received, corrupt) = host.selftest(2);
    assert_eq!((received, corrupt), (sent, 0), "before any fault");

    // Garbage: 3 transfers of noise (no 0x00 for a while: COBS chunks too long, bad CRCs).
    for seed in 1..=3 {
        host.raw(&garbage(1500, seed), true);
    }
    let before = host.link.counters();
    let (sent, received, corrupt) = host.selftest(2);
    assert_eq!((received, corrupt), (sent, 0), "after garbage");

    // A frame cut by CS: half of the link's next frame goes, the rest never does.
    host.link.send(1200, |b| b.fill(0x5a)).unwrap();
    let mut wire = vec![0; 4096];
    let n = host.link.poll_output(host.line.now_us(), &mut wire);
    assert!(n > 1200, "the frame's bytes: {n}");
    host.raw(&wire[..n / 2], true);
    let (sent, received, corrupt) = host.selftest(2);
    assert_eq!((received, corrupt), (sent, 0), "after the cut frame");
    let c = host.link.counters();
    assert!(
        c.tx_retransmissions > before.tx_retransmissions,
        "the cut frame went again: {c:?}"
    );

    // Unready: 20 transfers back to back that do not wait for the device to re-arm.
    for seed in 0..20 {
        let mut bytes = vec![0; 256];
        let n = host.link.poll_output(host.line.now_us(), &mut bytes);
        bytes.truncate(n.max(64));
        let _ = seed;
        host.raw(&bytes, false);
    }
    let (sent, received, corrupt) = host.selftest(2);
    assert_eq!((received, corrupt), (sent, 0), "after unready transfers");

    // The host restarts: a new link, a new epoch; the device sees the restart and resumes.
    *host.link = Link::new(spi_config(), std::process::id() ^ 0xdead_beef);
    let (sent, received, corrupt) = host.selftest(2);
    assert_eq!((received, corrupt), (sent, 0), "after the host's restart");
    let c = host.link.counters();
    println!("spi-link faults: host link after restart {c:?}");
    println!("spi-link faults: master {:?}", host.line.counts);
}

#[test]
fn linklab_serial_refuses_bad_spi_options_with_one_line() {
    let cases: [(&[&str], &str); 5] = [
        (
            &["serial", "--spidev", "/dev/spidev0.0", "--selftest"],
            "--ready-line",
        ),
        (
            &["serial", "--spi-emu", "nope", "--selftest"],
            "not an SPI image",
        ),
        (
            &[
                "serial",
                "--spi-emu",
                "spi-link",
                "--spi-hz",
                "40000000",
                "--selftest",
            ],
            "--spi-hz 40000000",
        ),
        (
            &[
                "serial",
                "--dev",
                "/dev/null",
                "--spi-gap-us",
                "5",
                "--selftest",
            ],
            "not with --dev",
        ),
        (
            &[
                "serial",
                "--dev",
                "/dev/null",
                "--spidev",
                "/dev/spidev0.0",
                "--selftest",
            ],
            "exactly one of",
        ),
    ];
    for (argv, text) in cases {
        let out = std::process::Command::new(linklab_bin())
            .args(argv)
            .output()
            .unwrap();
        assert_one_line_error(&out, text);
        assert_eq!(out.status.code(), Some(2), "{argv:?}");
    }
}

/// Stock iperf3 into the device and from it (`-R`), `kib` KiB each; the device's iperf3 server
/// times its side on the chip's clock (into it, it stops counting at the client's TEST_END,
/// while the host may still hold bytes). The device's Mbit/s each way.
fn iperf3_both_ways(ns: &Netns, kib: u64) -> [f64; 2] {
    let bytes = format!("{kib}K");
    let mut rates = [0.0; 2];
    for (i, reverse) in [false, true].into_iter().enumerate() {
        let mut argv = vec![
            "iperf3",
            "-c",
            DEVICE,
            "-n",
            &bytes,
            "-J",
            "--connect-timeout",
            "60000",
        ];
        if reverse {
            argv.push("-R");
        }
        let out = ns.run(&argv);
        let report = linklab_testkit::iperf3::Report::parse(&out.stdout);
        assert!(report.error.is_none(), "iperf3: {report:?}");
        let side = if reverse { "sum_sent" } else { "sum_received" };
        let device = report.end.sum(side);
        let (moved, secs) = (device.bytes, device.end);
        assert!(
            moved > 10_000 && secs > 0.0,
            "iperf3 -R={reverse}: {:?}",
            report.end
        );
        if reverse {
            let host = linklab_testkit::end_bytes(&report, "sum_received");
            assert!(
                host >= kib * 1024,
                "every byte asked, from the device: {:?}",
                report.end
            );
        }
        rates[i] = moved as f64 * 8.0 / secs / 1e6;
        println!(
            "spi-link: iperf3{}: the device's side {moved} B in {secs:.3} s of its clock, {:.2} Mbit/s",
            if reverse { " -R" } else { "" },
            rates[i]
        );
    }
    rates
}

/// Boots `image` (`elf`) by `linklab emu pico` with the master at `hz` in a namespace of its
/// own, its TAP addressed, and waits until it answers a ping.
fn boot_board(
    tag: &str,
    image: &str,
    elf: &std::path::Path,
    hz: u32,
    status: &Status,
) -> (Netns, linklab_testkit::ChildGuard) {
    let ns = Netns::new(tag);
    let cli = ns.spawn(&[
        linklab_bin().to_str().unwrap(),
        "emu",
        "pico",
        "--image",
        image,
        "--elf",
        elf.to_str().unwrap(),
        "--tap",
        "sp0",
        "--ip",
        "198.18.0.2/24",
        "--spi-hz",
        &hz.to_string(),
        "--status",
        status.0.to_str().unwrap(),
    ]);
    let started = Instant::now();
    while !ns
        .command(&["ip", "link", "show", "sp0"])
        .output()
        .is_ok_and(|o| o.status.success())
    {
        assert!(started.elapsed() < Duration::from_secs(60), "no TAP sp0");
        std::thread::sleep(Duration::from_millis(50));
    }
    ns.run(&["ip", "addr", "add", "198.18.0.1/24", "dev", "sp0"]);
    ns.run(&["ip", "link", "set", "sp0", "up"]);
    // The link's handshake and embassy-net's start take a few ms of the chip's clock; before
    // them the kernel's ARP goes unanswered and ping gives up.
    status.wait_until(300_000_000, Duration::from_secs(300));
    Ping::new(DEVICE, 2)
        .deadline(180)
        .assert_answered(|argv| ns.run(argv).stdout);
    (ns, cli)
}

/// Stock iperf3 both ways (300 KB) at 10 and 20 MHz, clk_sys 125 and 240 MHz, the device's
/// rates in its clock. By hand: `cargo test -p linklab --test emu_spi_link -- --ignored
/// --nocapture spi_link_iperf3_figures`.
#[test]
#[ignore = "a benchmark of minutes: run by hand (docs/spi.md, Figures)"]
fn spi_link_iperf3_figures() {
    let elf125 = elf();
    let elf240 = build_elf("rp2040-spi-link", "sys-240mhz", "spi-link-240");
    let dir = linklab_testkit::tempdir("spiiperf");
    println!("| clk_sys | SPI clock | iperf3 into the device | from it (-R) |");
    println!("|---|---|---|---|");
    for (image, elf, sys) in [("spi-link", &elf125, 125), ("spi-link-240", &elf240, 240)] {
        for hz in [10_000_000u32, 20_000_000] {
            let status = Status(dir.join(format!("{image}-{hz}.json")));
            let (ns, cli) = boot_board("spiiperf", image, elf, hz, &status);
            let [into, from] = iperf3_both_ways(&ns, 300);
            println!(
                "| {sys} MHz | {} MHz | {into:.2} Mbit/s ({:.0} %) | {from:.2} Mbit/s ({:.0} %) |",
                hz / 1_000_000,
                into * 1e8 / f64::from(hz),
                from * 1e8 / f64::from(hz)
            );
            drop(cli.interrupt(Duration::from_secs(20)));
            drop(ns);
        }
    }
}

/// CBA's experiment on its chip, and past it: the link's self-test (1514-byte frames
/// streamed, echoed back by the device; 16-byte frames one at a time: the period of a cyclic
/// transaction) against the SPI clock, at clk_sys 125 and 240 MHz. A benchmark of minutes,
/// by hand: `cargo test -p linklab --test emu_spi_link -- --ignored --nocapture spi_link_sweep`.
#[test]
#[ignore = "a benchmark of minutes: run by hand (docs/spi.md, Figures)"]
fn spi_link_sweep() {
    let dir = linklab_testkit::tempdir("spisweep");
    let elf125 = elf();
    let elf240 = build_elf("rp2040-spi-link", "sys-240mhz", "spi-link-240");
    println!("| clk_sys | SPI clock | echo goodput each way | of the SPI bit rate | frames lost | link rx errors | retransmissions | 16 B round trip p50 / p99 |");
    println!("|---|---|---|---|---|---|---|---|");
    for (image, elf, sys) in [("spi-link", &elf125, 125), ("spi-link-240", &elf240, 240)] {
        for hz in [
            10_000_000u32,
            11_000_000,
            15_000_000,
            20_000_000,
            25_000_000,
            31_250_000,
        ] {
            let json = dir.join(format!("{image}-{hz}.json"));
            let out = std::process::Command::new(linklab_bin())
                .args(["serial", "--spi-emu", image, "--elf", elf.to_str().unwrap()])
                .args([
                    "--spi-hz",
                    &hz.to_string(),
                    "--selftest",
                    "--sizes",
                    "16,1514",
                ])
                .args(["--rtt-frames", "20", "--stream-frames", "40", "--json"])
                .arg(&json)
                .output()
                .unwrap();
            let Ok(text) = std::fs::read_to_string(&json) else {
                println!(
                    "| {sys} MHz | {} MHz | no result: {} | | | | | |",
                    f64::from(hz) / 1e6,
                    String::from_utf8_lossy(&out.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                );
                continue;
            };
            let r: SerialReport = serde_json::from_str(&text).unwrap();
            let small = &r.sizes[0];
            let big = &r.sizes[1];
            println!(
                "| {sys} MHz | {} MHz | {:.2} Mbit/s | {:.0} % | {} | {} | {} | {:.0} / {:.0} µs |",
                f64::from(hz) / 1e6,
                big.goodput_bytes_per_s * 8.0 / 1e6,
                big.efficiency * 100.0,
                small.lost + big.lost + small.corrupt + big.corrupt,
                small.rx_errors + big.rx_errors,
                small.retransmissions + big.retransmissions,
                small.rtt.p50_us,
                small.rtt.p99_us
            );
        }
    }
}
