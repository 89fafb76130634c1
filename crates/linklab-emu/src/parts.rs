//! `linklab emu parts`: one counted profile of the simulator, from its image. QEMU
//! runs at `-icount shift=0`; stock iperf3 moves data both ways with several segment sizes
//! (the kernel side's MTU sets the MSS both ends use: the device refuses iperf3's `-M`, as a
//! stack without a settable MSS does; MTUs of 1499 and 1498 give segments that are not whole
//! words, so their payloads land off their word in the receive ring) and once paced (`-b`,
//! so the main loop makes more passes per frame); curl downloads from the device's HTTP
//! server give that server's own per-byte cost. Each transfer gives the firmware's counted
//! work (`/stats` `cpu.work`: instructions, or on the Cortex-M3 nanoseconds awake on its
//! 25 MHz timer, one instruction each at `shift=0`), its passes, the bytes its memcpy copied
//! off their word, and the MAC's frame and byte counters, less one `/stats` fetch; the parts
//! are the least-squares solution of those totals (each transfer's residual is kept).
//!
//! The device's figures come from the image too: its RX queue and TCP window from `/stats`,
//! the window it advertises and the bytes it keeps in flight from a capture of the
//! transfers (tshark). A soft-PHY image's decoder at every factor comes from
//! `linklab emu phy10` on the same board.

use std::path::Path;

use anyhow::{bail, Context};
use linklab_results::emu::parts::PartsRun;
use linklab_sim::counts::{
    fingerprint, CountedProfile, Decoder, Device, LoopShape, Parts, PROFILES,
};
use serde_json::Value;

mod capture;
mod solve;

use super::board::{Attach, Board, ImageSpec, Runtime, BOARDS};
use super::image::ImageChoice;
use super::lab::{Lab, DEVICE_IP, TAP};
use super::line::{LineOptions, LineSettings};
use super::transfer::{Transfer, Watch};
use capture::{queued_while, Capture};
use solve::{dot, nonnegative_least_squares};

/// What `linklab emu parts` counts.
#[derive(Clone, Debug)]
pub struct PartsOptions {
    /// The board and image (one a simulator profile is counted from).
    pub image: ImageChoice,
    /// The soft-PHY line's options (a soft-PHY image: the default line).
    pub line: LineOptions,
}

/// Builds (or finds) the image and counts it: the data file of its simulator profile. Only
/// the images with a simulator profile are counted (said before anything is built).
pub fn run(options: &PartsOptions) -> anyhow::Result<CountedProfile> {
    let p = options.image.prepare("parts", &options.line, counted)?;
    cost_parts(&p.board, p.chosen.spec, &p.image, p.line.as_ref())
}

/// One transfer: the kernel side's MTU, then iperf3 options after `-c DEVICE -J`.
type Run = (u16, &'static [&'static str]);

/// The iperf3 transfers, device receiving then sending. The host sends with CUBIC, as the
/// simulator's host does (this machine may default to BBR, which paces). Sending, the
/// segments stay above 700 bytes: the riscv32 image sends at a few kB/s into a kernel-side
/// MTU of 576 or 700 (retransmissions; 800 and up are fine), a limit of that image not
/// looked into here.
///
/// Paced sending (`-R -b`) and faster paced receiving are left out: their timer passes do
/// less than a pass that moves data, and the linear parts then miss the other transfers by
/// up to 23 % (one count with them; without, every transfer but the 100 kB download within
/// 1.6 %).
const RUNS: [Run; 8] = [
    (1500, &["-n", "2M", "-C", "cubic"]),
    (1499, &["-n", "2M", "-C", "cubic"]),
    (1498, &["-n", "1M", "-C", "cubic"]),
    (576, &["-n", "2M", "-C", "cubic"]),
    (1500, &["-n", "1M", "-b", "20M", "-C", "cubic"]),
    (1500, &["-n", "2M", "-R"]),
    (1140, &["-n", "2M", "-R"]),
    (800, &["-n", "1M", "-R"]),
];
/// The first sending transfer in [`RUNS`].
const FIRST_SEND: usize = 5;
/// The HTTP downloads (paths on the device).
const HTTP_RUNS: [&str; 2] = ["/1MB.txt", "/100kB.txt"];

/// One transfer counted: what it was, its counts, iperf3's report of it.
type Counted = (String, Counts, Option<Value>);

/// The counted profile of `board`'s `spec` image and its data file, or an error naming the
/// images that have one.
pub fn profile_of(board: &Board, spec: &ImageSpec) -> anyhow::Result<(&'static str, &'static str)> {
    let Some(name) = spec.sim_profile else {
        bail!(
            "{}'s {} image {}",
            board.name,
            spec.name,
            counted(spec).err().unwrap_or_default()
        );
    };
    let path = PROFILES
        .iter()
        .find(|(n, _, _)| *n == name)
        .map(|(_, p, _)| *p)
        .context("the simulator lists every counted profile")?;
    Ok((name, path))
}

/// Accepts an image a simulator profile is counted from; else says which are.
pub fn counted(spec: &ImageSpec) -> Result<(), String> {
    if spec.sim_profile.is_some() {
        return Ok(());
    }
    let counted: Vec<String> = BOARDS
        .iter()
        .flat_map(|b| {
            b.images
                .iter()
                .filter(|i| i.sim_profile.is_some())
                .map(move |i| format!("{} {}", b.name, i.name))
        })
        .collect();
    Err(format!(
        "has no simulator profile (the images that have one: {})",
        counted.join(", ")
    ))
}

/// The command that writes the data file of `board`'s `spec` image (from the repository
/// root, as root).
pub fn command(board: &Board, spec: &ImageSpec) -> anyhow::Result<String> {
    let (_, path) = profile_of(board, spec)?;
    let image = if spec.name == "main" {
        String::new()
    } else {
        format!(" --image {}", spec.name)
    };
    Ok(format!(
        "linklab emu parts {}{image} --json {path}",
        board.name
    ))
}

/// The sources whose code the counts of `board`'s `spec` image measure: the firmware
/// workspace's common code, memcpy and lock file (smoltcp's version), the board's crate, its
/// driver, the MAC and the apps (and for a soft PHY, linklab-phy10 and its bench image).
pub fn sources(board: &Board, spec: &ImageSpec) -> Vec<String> {
    let mut s: Vec<String> = [
        "firmware/Cargo.toml",
        "firmware/Cargo.lock",
        "firmware/.cargo/config.toml",
        "firmware/common",
        "firmware/memcpy",
        "crates/linklab-mac/src",
        "crates/linklab-perf/src",
    ]
    .map(String::from)
    .to_vec();
    s.push(format!("firmware/{}", board.name));
    s.extend(board.driver_sources.iter().map(|d| d.to_string()));
    s.extend(spec.extra_sources.iter().map(|d| d.to_string()));
    s
}

/// One transfer's counts (differences of `/stats`).
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    isr: f64,
    main: f64,
    /// The loop's own work, outside the stack and the apps (`main − stack − apps`): clock
    /// reads, the deadline, the sleep's check — counted per pass by itself.
    rest: f64,
    passes: f64,
    rx_frames: f64,
    rx_bytes: f64,
    misaligned: f64,
    tx_frames: f64,
    tx_bytes: f64,
    /// Bytes the device's HTTP server sent (its body generation's own per-byte cost).
    http_bytes: f64,
}

impl Counts {
    /// `later − earlier` (the ISR and misaligned-copy counters wrap at 32 bits).
    fn between(earlier: &Value, later: &Value) -> anyhow::Result<Counts> {
        let get = |v: &Value, path: &[&str]| -> anyhow::Result<u64> {
            let mut x = v;
            for p in path {
                x = &x[*p];
            }
            x.as_u64()
                .with_context(|| format!("/stats has no {}", path.join(".")))
        };
        let d = |path: &[&str]| -> anyhow::Result<f64> {
            Ok(get(later, path)?.wrapping_sub(get(earlier, path)?) as f64)
        };
        let d32 = |path: &[&str]| -> anyhow::Result<f64> {
            Ok(f64::from(
                (get(later, path)? as u32).wrapping_sub(get(earlier, path)? as u32),
            ))
        };
        let main = d(&["cpu", "work", "main"])?;
        let layers = d(&["cpu", "work", "stack"])? + d(&["cpu", "work", "apps"])?;
        Ok(Counts {
            isr: d32(&["cpu", "work", "isr"])?,
            main,
            rest: main - layers,
            passes: d(&["cpu", "work", "loops"])?,
            rx_frames: d(&["mac", "rx_packets"])?,
            rx_bytes: d(&["mac", "rx_bytes"])?,
            misaligned: d32(&["cpu", "work", "misaligned_copy_bytes"])?,
            tx_frames: d(&["mac", "tx_packets"])?,
            tx_bytes: d(&["mac", "tx_bytes"])?,
            http_bytes: 0.0,
        })
    }

    fn minus(&self, o: &Counts) -> Counts {
        Counts {
            isr: self.isr - o.isr,
            main: self.main - o.main,
            rest: self.rest - o.rest,
            passes: self.passes - o.passes,
            rx_frames: self.rx_frames - o.rx_frames,
            rx_bytes: self.rx_bytes - o.rx_bytes,
            misaligned: self.misaligned - o.misaligned,
            tx_frames: self.tx_frames - o.tx_frames,
            tx_bytes: self.tx_bytes - o.tx_bytes,
            http_bytes: self.http_bytes,
        }
    }

    fn isr_row(&self) -> Vec<f64> {
        vec![self.rx_frames, self.rx_bytes, self.tx_frames]
    }

    fn main_row(&self) -> Vec<f64> {
        vec![
            self.passes,
            self.rx_frames,
            self.rx_bytes,
            self.misaligned,
            self.tx_frames,
            self.tx_bytes,
            self.http_bytes,
        ]
    }
}

/// The iperf3 data socket's send buffer the image reports in `/stats`
/// (`iperf_send_buffer.bytes`; 0 from an image without it). What the captures see in flight
/// and `/stats` lists queued can fall short of it: behind a soft PHY's 10 Mbit/s line the
/// device's frames wait in its socket, and the capture saw one or two segments in flight by
/// the timing of the host's ACKs.
fn configured_send_buffer(stats: &serde_json::Value) -> u64 {
    stats["iperf_send_buffer"]["bytes"].as_u64().unwrap_or(0)
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Sets the kernel side's MTU (the MSS both ends use).
fn set_mtu(lab: &Lab, mtu: u16) -> anyhow::Result<()> {
    lab.run(&["ip", "link", "set", "dev", TAP, "mtu", &mtu.to_string()])?;
    Ok(())
}

/// Counts `board`'s `spec` image (`image`; a soft PHY's on the line `line`, which must be the
/// default clean 4x line) and returns the data file of its simulator profile.
pub fn cost_parts(
    board: &Board,
    spec: &ImageSpec,
    image: &Path,
    line: Option<&LineSettings>,
) -> anyhow::Result<CountedProfile> {
    let (name, _) = profile_of(board, spec)?;
    if let Some(l) = line {
        if l.oversample != 4 || l.drift != 0 || l.jitter != 0.0 || l.noise != 0.0 || l.no_pace {
            bail!("parts: the soft-PHY profile is counted on the default line (4x, no drift, jitter or noise, paced)");
        }
    }
    let root = super::image::firmware_dir()
        .parent()
        .context("the firmware folder has no parent")?
        .to_path_buf();
    let sources = sources(board, spec);
    let print = fingerprint(&root, &sources).context("cannot fingerprint the measured sources")?;
    // A soft PHY's decoder at every factor, from the bench image on the same board.
    let decoder = decoder_of(board, spec)?;

    let lab = match line {
        Some(l) => Lab::boot_line(board, image, Some(0), l)?,
        None => Lab::boot(board, image, Some("shift=0".into()))?,
    };
    let s0 = lab.stats()?;
    let mut prev = lab.stats()?;
    let fetch = Counts::between(&s0, &prev)?;
    let mut runs = Vec::new();
    let (advertised, iperf3_flight) = iperf3_runs(&lab, &mut prev, &fetch, &mut runs)?;
    let mut http_flight = 0;
    for (i, path) in HTTP_RUNS.into_iter().enumerate() {
        let capture = (i == 0).then(|| Capture::start(&lab, "http")).transpose()?;
        lab.download(path)?;
        if let Some(c) = capture {
            http_flight = c.stop(80)?.1;
        }
        let next = lab.stats()?;
        let mut c = Counts::between(&prev, &next)?.minus(&fetch);
        c.http_bytes = c.tx_bytes;
        runs.push((format!("curl {path}"), c, None));
        prev = next;
    }
    if prev["conservation"]["holds"].as_bool() != Some(true) {
        bail!("parts: the MAC's conservation law does not hold after the runs");
    }
    let flights = (advertised, iperf3_flight, http_flight);
    let device = device_of(&lab, spec, &prev, flights)?;

    let (parts, run_json) = solve_parts(&runs)?;
    let data = CountedProfile {
        profile: name.into(),
        about: format!(
            "Instructions per part of the device's work on linklab's {} image of {} ({}), counted under QEMU -icount shift=0 over stock iperf3 transfers and curl downloads (each less one /stats fetch), solved by least squares; read by linklab-sim's {name} profile",
            match (spec.attach, spec.runtime) {
                (Attach::SoftPhyLine, _) => "soft-PHY",
                (_, Runtime::Embassy) => "embassy",
                _ => "main-loop",
            },
            board.name,
            board.isa
        ),
        command: command(board, spec)?,
        board: board.name.into(),
        image: spec.name.into(),
        isa: board.isa.into(),
        icount: "shift=0".into(),
        work_unit: prev["cpu"]["work_unit"]
            .as_str()
            .unwrap_or("instructions")
            .into(),
        sources,
        fingerprint: print,
        device,
        parts,
        decoder,
        runs: serde_json::to_value(run_json)?,
    };
    Ok(data)
}

/// A soft PHY's decoder at every factor, from the bench image on the same board.
fn decoder_of(board: &Board, spec: &ImageSpec) -> anyhow::Result<Option<Decoder>> {
    let decoder = match spec.attach {
        Attach::SoftPhyLine => {
            let cases = super::phy10::measure(board, None)?.cases;
            let mut per_wire_bit: Vec<(u8, f64)> = Vec::new();
            for c in &cases {
                let f = u8::try_from(c.oversample).context("an oversampling factor over 255")?;
                match per_wire_bit.iter_mut().find(|(g, _)| *g == f) {
                    Some((_, n)) => *n = n.max(round3(c.per_bit())),
                    None => per_wire_bit.push((f, round3(c.per_bit()))),
                }
            }
            per_wire_bit.sort_by_key(|(f, _)| *f);
            Some(Decoder {
                image_oversample: 4,
                per_wire_bit,
            })
        }
        _ => None,
    };
    Ok(decoder)
}

/// The iperf3 transfers ([`RUNS`]), each counted into `runs`; returns the window the device
/// advertised and the bytes it kept in flight, from the first transfer each way.
fn iperf3_runs(
    lab: &Lab,
    prev: &mut Value,
    fetch: &Counts,
    runs: &mut Vec<Counted>,
) -> anyhow::Result<(u64, u64)> {
    let (mut advertised, mut iperf3_flight) = (0u64, 0u64);
    for (i, (mtu, opts)) in RUNS.into_iter().enumerate() {
        set_mtu(lab, mtu)?;
        // The first transfer each way is captured: the window the device advertises, the
        // bytes it keeps in flight.
        let capture = match i {
            0 | FIRST_SEND => Some(Capture::start(lab, &i.to_string())?),
            _ => None,
        };
        // A transfer the device refused or dropped midway (an embassy image's iperf3 server
        // now and then closes a new control connection while the last test's sockets close)
        // counts nothing: its work is left out (`prev` moves past it) and it is run again.
        let mut tries = 0;
        let report = loop {
            let t = Transfer::Iperf3 {
                device_sends: false,
                options: opts,
            };
            match lab.transfer(t, Watch::Nothing) {
                Ok(m) => break m.report,
                Err(e) if tries < 2 => {
                    tries += 1;
                    eprintln!("parts: {e}; again");
                    std::thread::sleep(std::time::Duration::from_secs(1));
                    *prev = lab.stats()?;
                }
                Err(e) => return Err(e),
            }
        };
        if let Some(c) = capture {
            let (window, flight) = c.stop(5201)?;
            if i == 0 {
                advertised = window;
            } else {
                iperf3_flight = flight;
            }
        }
        set_mtu(lab, 1500)?;
        let next = lab.stats()?;
        let what = format!("{} (kernel-side MTU {mtu})", opts.join(" "));
        let c = Counts::between(prev, &next)?.minus(fetch);
        runs.push((what, c, report));
        *prev = next;
    }
    Ok((advertised, iperf3_flight))
}

/// The device's figures: its queues and windows from `/stats` and the captures, its loop's shape.
fn device_of(
    lab: &Lab,
    spec: &ImageSpec,
    prev: &Value,
    (advertised, iperf3_flight, http_flight): (u64, u64, u64),
) -> anyhow::Result<Device> {
    // The send buffers, where `/stats` lists the sockets' queues (the main-loop images):
    // the most bytes queued while a sender keeps them full, on transfers not counted.
    let iperf3_queued = queued_while(lab, 5201, &["iperf3", "-c", DEVICE_IP, "-t", "1", "-R"])?;
    let url = format!("http://{DEVICE_IP}/3MB.txt");
    let http_queued = queued_while(
        lab,
        80,
        &[
            "curl",
            "-sS",
            "--limit-rate",
            "2M",
            "--max-time",
            "3",
            "-o",
            "/dev/null",
            &url,
        ],
    )?;
    let figure = |path: [&str; 2]| -> anyhow::Result<usize> {
        prev[path[0]][path[1]]
            .as_u64()
            .map(|v| v as usize)
            .with_context(|| format!("/stats has no {}.{}", path[0], path[1]))
    };
    let device = Device {
        rx_queue_frames: figure(["rx_queue", "frames"])?,
        tcp_window: figure(["tcp_window", "bytes"])?,
        advertised_window: advertised as usize,
        iperf3_send_buffer: iperf3_flight
            .max(iperf3_queued)
            .max(configured_send_buffer(prev)) as usize,
        http_send_buffer: http_flight.max(http_queued) as usize,
        shape: match spec.runtime {
            Runtime::Embassy => LoopShape::Executor,
            Runtime::MainLoop => LoopShape::MainLoop,
        },
    };
    Ok(device)
}

/// The parts solved from the runs' counts, and each run as the data file lists it (with the
/// fit's error).
fn solve_parts(runs: &[Counted]) -> anyhow::Result<(Parts, Vec<PartsRun>)> {
    let isr_rows: Vec<Vec<f64>> = runs.iter().map(|(_, c, _)| c.isr_row()).collect();
    let isr_y: Vec<f64> = runs.iter().map(|(_, c, _)| c.isr).collect();
    // The loop's own work is per pass by construction: counted, not solved. The stack's and
    // the apps' work (whose per-pass share passes and frames, which move together, leave
    // hard to tell apart) is solved, and their per-pass share added to it.
    let passes: f64 = runs.iter().map(|(_, c, _)| c.passes).sum();
    let rest_per_pass = runs.iter().map(|(_, c, _)| c.rest).sum::<f64>() / passes.max(1.0);
    let main_rows: Vec<Vec<f64>> = runs.iter().map(|(_, c, _)| c.main_row()).collect();
    let main_y: Vec<f64> = runs
        .iter()
        .map(|(_, c, _)| c.main - rest_per_pass * c.passes)
        .collect();
    let isr = nonnegative_least_squares(&isr_rows, &isr_y)
        .context("the interrupt's solution is singular")?;
    let mut main = nonnegative_least_squares(&main_rows, &main_y)
        .context("the main loop's solution is singular")?;
    main[0] += rest_per_pass;
    let parts = Parts {
        isr_per_rx_frame: round3(isr[0]),
        isr_per_rx_byte: round3(isr[1]),
        isr_per_tx_frame: round3(isr[2]),
        main_per_pass: round3(main[0]),
        main_per_rx_frame: round3(main[1]),
        main_per_rx_byte: round3(main[2]),
        main_per_misaligned_byte: round3(main[3]),
        main_per_tx_frame: round3(main[4]),
        main_per_tx_byte: round3(main[5]),
        http_per_tx_byte: round3(main[6]),
    };
    let run_json: Vec<PartsRun> = runs
        .iter()
        .map(|(what, c, report)| {
            let pi = dot(&c.isr_row(), &isr);
            let pm = dot(&c.main_row(), &main);
            PartsRun {
                transfer: what.clone(),
                isr: c.isr,
                main: c.main,
                loop_rest: c.rest,
                passes: c.passes,
                rx_frames: c.rx_frames,
                rx_bytes: c.rx_bytes,
                misaligned_copy_bytes: c.misaligned,
                tx_frames: c.tx_frames,
                tx_bytes: c.tx_bytes,
                iperf3_bytes_received: report
                    .as_ref()
                    .and_then(|r| r["end"]["sum_received"]["bytes"].as_u64()),
                isr_fit_error_pct: round3((pi - c.isr) / c.isr.max(1.0) * 100.0),
                main_fit_error_pct: round3((pm - c.main) / c.main.max(1.0) * 100.0),
            }
        })
        .collect();
    Ok((parts, run_json))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_counted_profile_has_an_image_and_a_command_that_writes_its_file() {
        let counted: Vec<(&Board, &ImageSpec)> = BOARDS
            .iter()
            .flat_map(|b| {
                b.images
                    .iter()
                    .filter(|i| i.sim_profile.is_some())
                    .map(move |i| (b, i))
            })
            .collect();
        // scripts/refresh-profiles runs every profile's command.
        let script = super::super::image::firmware_dir()
            .parent()
            .unwrap()
            .join("scripts/refresh-profiles");
        let script = std::fs::read_to_string(&script).unwrap();
        for (name, path, _) in PROFILES {
            let (board, spec) = counted
                .iter()
                .find(|(b, i)| profile_of(b, i).is_ok_and(|(n, _)| n == name))
                .unwrap_or_else(|| panic!("no image counts {name}"));
            let c = command(board, spec).unwrap();
            assert!(
                c.starts_with(&format!("linklab emu parts {} ", board.name))
                    && c.ends_with(&format!("--json {path}")),
                "{c}"
            );
            let line = c.replacen("linklab ", "\"$linklab\" ", 1);
            assert!(
                script.contains(&line),
                "scripts/refresh-profiles lacks: {line}"
            );
        }
        let mps2 = Board::by_name("mps2-an385").unwrap();
        let riscv = Board::by_name("riscv32-virt").unwrap();
        let e = profile_of(&mps2, mps2.image("embassy").unwrap()).unwrap_err();
        assert!(
            e.to_string().contains("has no simulator profile")
                && e.to_string().contains("riscv32-virt soft-phy"),
            "{e}"
        );
        assert!(sources(&riscv, riscv.image("soft-phy").unwrap())
            .contains(&"crates/linklab-phy10/src".into()));
        assert!(sources(&mps2, mps2.main_image()).contains(&"crates/linklab-lan9118/src".into()));
    }
}
