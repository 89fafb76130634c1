//! `linklab emu blast`: the raw ceiling beside the stack. The firmware's packet blaster
//! (firmware/common/src/blast.rs, messages in `linklab_perf::blast`) sends UDP datagrams
//! back to a receiver here for a bounded time of the device's clock, two ways: frames it
//! builds itself, handed straight to the NIC driver's transmit path, and the same datagrams
//! through smoltcp's UDP socket. QEMU runs at `-icount shift=0` (one instruction per
//! nanosecond), so the device's clock counts instructions and frames per second of it are
//! frames per second of a 1 GIPS core.
//!
//! Per way and payload size: frames the device handed to its driver, what the driver
//! dropped, what arrived here (each payload's pattern checked, duplicates counted), what the
//! host's UDP layer dropped (`RcvbufErrors`, `InErrors` in the namespace's /proc/net/snmp),
//! frames per second of the device's clock, and the device's work per frame. Fails unless
//! every frame is accounted for (arrived = handed to the driver − driver drops − host drops),
//! every payload is intact, and the requests that must be refused were refused and counted.
//! The same boot then sends frames with wrong IPv4, TCP and UDP checksums
//! (`bad_checksums`), which must be dropped and counted.

use std::net::{SocketAddr, UdpSocket};
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{bail, Context};
use linklab_perf::blast::{self, Report, Request, Way};
use linklab_results::emu::blast::{self as doc, BlastReport, BlastRun, Ceiling};
use nix::sys::socket::{setsockopt, sockopt};
use serde_json::Value;

use super::board::Board;
use super::image::ImageChoice;
use super::lab::{Lab, DEVICE_IP, TAP};

/// What `linklab emu blast` runs.
#[derive(Clone, Debug)]
pub struct BlastOptions {
    /// The board and image (one with the packet blaster).
    pub image: ImageChoice,
    /// Milliseconds of the device's clock each blast lasts, 1..=2000.
    pub ms: u16,
}

/// Builds (or finds) the image and blasts: the `blast` document, and whether every frame
/// and request was accounted for (the figures are worth writing either way).
pub fn run(options: &BlastOptions) -> anyhow::Result<(BlastReport, anyhow::Result<()>)> {
    let (board, chosen) = options.image.choose_for("blast", |spec| {
        if spec.blaster {
            Ok(())
        } else {
            Err("has no packet blaster".into())
        }
    })?;
    let image = chosen.find_or_build(&board)?;
    measure(&board, &image, options.ms)
}

/// Payload sizes blasted: a full-size frame, and the smallest.
const PAYLOADS: [u16; 2] = [blast::MAX_PAYLOAD, blast::MIN_PAYLOAD];
/// Wall time to wait for a blast's report before giving up (QEMU at `shift=0` runs the
/// device's clock several times slower than real time; this is far more).
const REPORT_TIMEOUT: Duration = Duration::from_secs(60);
/// Wall time to keep reading after the report (frames still in the driver's ring).
const STRAGGLERS: Duration = Duration::from_millis(500);

/// What one blast gave.
struct Run {
    report: Report,
    received: u64,
    pattern_errors: u64,
    duplicates: u64,
    host_drops: u64,
}

impl Run {
    /// Work spent sending, per frame.
    fn per_frame(&self) -> f64 {
        per_frame(self.report.send_work, self.report.frames)
    }

    /// Frames arrived per second of the device's clock.
    fn frames_per_s(&self) -> f64 {
        let secs = self.report.duration_ns as f64 / 1e9;
        if secs > 0.0 {
            (self.received as f64 / secs).round()
        } else {
            0.0
        }
    }

    fn document(&self) -> BlastRun {
        let r = &self.report;
        BlastRun {
            way: if r.stack { "stack_udp" } else { "raw" }.into(),
            payload_bytes: r.payload_len,
            frames_to_driver: r.frames,
            driver_drops: r.driver_drops,
            host_drops: self.host_drops,
            received: self.received,
            pattern_errors: self.pattern_errors,
            duplicates: self.duplicates,
            device_ns: r.duration_ns,
            work: r.work,
            send_work: r.send_work,
            frames_per_s: self.frames_per_s(),
            instr_per_frame: self.per_frame(),
            busy_instr_per_frame: per_frame(r.work, r.frames),
        }
    }

    /// Every frame accounted for and intact.
    fn check(&self) -> anyhow::Result<()> {
        let r = &self.report;
        let expected = u64::from(r.frames)
            .saturating_sub(u64::from(r.driver_drops))
            .saturating_sub(self.host_drops);
        let way = if r.stack { "stack" } else { "raw" };
        if self.pattern_errors > 0 || self.duplicates > 0 {
            bail!(
                "--blast: {way} {} B: {} payloads with a broken pattern, {} duplicates",
                r.payload_len,
                self.pattern_errors,
                self.duplicates
            );
        }
        if self.received != expected || r.frames == 0 {
            bail!(
                "--blast: {way} {} B: {} frames arrived, expected {} ({} to the driver, {} dropped by it, {} by the host)",
                r.payload_len,
                self.received,
                expected,
                r.frames,
                r.driver_drops,
                self.host_drops
            );
        }
        Ok(())
    }
}

fn per_frame(work: u64, frames: u32) -> f64 {
    if frames == 0 {
        return 0.0;
    }
    (work as f64 / f64::from(frames) * 10.0).round() / 10.0
}

/// A UDP socket bound inside the lab's namespace (the socket stays in that namespace
/// wherever it is used), with a receive buffer large enough for a blast.
fn socket_in_netns(lab: &Lab, bind: &str) -> anyhow::Result<UdpSocket> {
    let bind = bind.to_string();
    let sock = lab.in_netns(move || {
        UdpSocket::bind(&bind).with_context(|| format!("cannot bind {bind}"))
    })??;
    // Best effort: without it the default buffer may overflow, which the RcvbufErrors count
    // then shows.
    let _ = setsockopt(&sock, sockopt::RcvBufForce, &(32 << 20));
    Ok(sock)
}

/// `RcvbufErrors + InErrors` of the namespace's UDP layer.
fn udp_drops(lab: &Lab) -> anyhow::Result<u64> {
    let out = lab.run(&["cat", "/proc/net/snmp"])?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut udp = text.lines().filter(|l| l.starts_with("Udp:"));
    let (Some(names), Some(values)) = (udp.next(), udp.next()) else {
        bail!("/proc/net/snmp has no Udp lines");
    };
    let mut drops = 0;
    for (k, v) in names.split_whitespace().zip(values.split_whitespace()) {
        if k == "RcvbufErrors" || k == "InErrors" {
            drops += v.parse::<u64>().unwrap_or(0);
        }
    }
    Ok(drops)
}

/// The TAP's Ethernet address (the kernel side), where the raw way sends its frames.
fn tap_mac(lab: &Lab) -> anyhow::Result<[u8; 6]> {
    let out = lab.run(&["cat", &format!("/sys/class/net/{TAP}/address")])?;
    let text = String::from_utf8_lossy(&out.stdout);
    let mut mac = [0u8; 6];
    let mut parts = text.trim().split(':');
    for b in &mut mac {
        let p = parts.next().context("TAP address is not a MAC")?;
        *b = u8::from_str_radix(p, 16).context("TAP address is not a MAC")?;
    }
    Ok(mac)
}

/// Asks for one blast and receives it.
fn one_blast(lab: &Lab, sock: &UdpSocket, req: Request) -> anyhow::Result<Run> {
    let device: SocketAddr = format!("{DEVICE_IP}:{}", blast::PORT).parse()?;
    let drops_before = udp_drops(lab)?;
    sock.send_to(&req.to_bytes(), device)
        .context("cannot send the blast request")?;
    let mut seen = vec![0u64; 1 << 16];
    let (mut received, mut pattern_errors, mut duplicates) = (0u64, 0u64, 0u64);
    let mut report = None;
    let mut buf = [0u8; 2048];
    let started = Instant::now();
    let mut deadline = started + REPORT_TIMEOUT;
    loop {
        let now = Instant::now();
        if now >= deadline {
            break;
        }
        sock.set_read_timeout(Some(deadline - now))?;
        let n = match sock.recv_from(&mut buf) {
            Ok((n, from)) if from == device => n,
            Ok(_) => continue,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                break
            }
            Err(e) => return Err(e).context("receiving the blast"),
        };
        if let Some(r) = Report::parse(&buf[..n]) {
            if report.is_none() {
                report = Some(r);
                deadline = Instant::now() + STRAGGLERS;
            }
            continue;
        }
        if n != usize::from(req.payload_len) {
            pattern_errors += 1;
            continue;
        }
        match blast::check_payload(&buf[..n]) {
            Some(seq) => {
                let seq = seq as usize;
                if seq / 64 >= seen.len() {
                    seen.resize(seq / 64 + 1, 0);
                }
                let bit = 1u64 << (seq % 64);
                if seen[seq / 64] & bit != 0 {
                    duplicates += 1;
                } else {
                    seen[seq / 64] |= bit;
                    received += 1;
                }
            }
            None => pattern_errors += 1,
        }
    }
    let Some(report) = report else {
        bail!(
            "--blast: the device sent no report within {} s ({received} datagrams arrived)",
            REPORT_TIMEOUT.as_secs()
        );
    };
    let host_drops = udp_drops(lab)?.saturating_sub(drops_before);
    Ok(Run {
        report,
        received,
        pattern_errors,
        duplicates,
        host_drops,
    })
}

/// Requests the device must refuse: not a request, one byte too long, a payload out of
/// range, a full-size datagram. Returns how many were sent.
fn send_refusals(sock: &UdpSocket, good: Request) -> anyhow::Result<u64> {
    let device: SocketAddr = format!("{DEVICE_IP}:{}", blast::PORT).parse()?;
    let mut long = good.to_bytes().to_vec();
    long.push(0);
    let huge = Request {
        payload_len: blast::MAX_PAYLOAD + 1,
        ..good
    }
    .to_bytes();
    let mut unknown = good.to_bytes();
    unknown[..4].copy_from_slice(b"HTTP");
    let full = [0x55u8; blast::MAX_PAYLOAD as usize];
    let bad: [&[u8]; 4] = [&unknown, &long, &huge, &full];
    for b in bad {
        sock.send_to(b, device)?;
        // One at a time: the device's request socket holds a full-size datagram, not four.
        std::thread::sleep(Duration::from_millis(50));
    }
    Ok(bad.len() as u64)
}

fn blast_counter(stats: &Value, key: &str) -> anyhow::Result<u64> {
    stats["blast"][key]
        .as_u64()
        .with_context(|| format!("/stats has no blast.{key}"))
}

/// Runs the blasts (`duration_ms` each) and the refusals: the figures as JSON, and whether
/// every frame and request was accounted for (the figures are worth writing either way).
pub fn measure(
    board: &Board,
    image: &Path,
    duration_ms: u16,
) -> anyhow::Result<(BlastReport, anyhow::Result<()>)> {
    let lab = Lab::boot(board, image, Some("shift=0".into()))?;
    let sock = socket_in_netns(&lab, "198.18.0.1:0")?;
    let mac = tap_mac(&lab)?;
    let s0 = lab.stats()?;
    let template = Request {
        way: Way::Raw,
        payload_len: blast::MAX_PAYLOAD,
        duration_ms,
        mac,
    };
    let refusals = send_refusals(&sock, template)?;
    let mut runs = Vec::new();
    for payload_len in PAYLOADS {
        for way in [Way::Raw, Way::Stack] {
            let req = Request {
                way,
                payload_len,
                ..template
            };
            runs.push(one_blast(&lab, &sock, req)?);
        }
    }
    let (bad_checksums, checksum_verdict) = super::bad_checksums::probe(&lab, mac)?;
    let s1 = lab.stats()?;
    let refused = blast_counter(&s1, "refused")? - blast_counter(&s0, "refused")?;
    let obeyed = blast_counter(&s1, "runs")? - blast_counter(&s0, "runs")?;
    let mut ceiling = Vec::new();
    for pair in runs.chunks(2) {
        let (raw, stack) = (&pair[0], &pair[1]);
        let ratio = if raw.per_frame() > 0.0 {
            (stack.per_frame() / raw.per_frame() * 100.0).round() / 100.0
        } else {
            0.0
        };
        ceiling.push(Ceiling {
            payload_bytes: raw.report.payload_len,
            blast_instr_per_frame: raw.per_frame(),
            stack_udp_instr_per_frame: stack.per_frame(),
            stack_over_raw: ratio,
            blast_frames_per_s: raw.frames_per_s(),
            stack_udp_frames_per_s: stack.frames_per_s(),
        });
    }
    let result = BlastReport {
        kind: doc::KIND.into(),
        schema_version: doc::SCHEMA_VERSION,
        board: board.name.into(),
        isa: board.isa.into(),
        icount: "shift=0".into(),
        work_unit: s1["cpu"]["work_unit"].as_str().map(String::from),
        duration_ms,
        ceiling,
        runs: runs.iter().map(Run::document).collect(),
        requests_refused_sent: refusals,
        requests_refused_counted: refused,
        blasts_counted: obeyed,
        bad_checksums,
    };
    let verdict = runs.iter().try_for_each(Run::check).and(checksum_verdict).and_then(|()| {
        if refused != refusals || obeyed != runs.len() as u64 {
            bail!(
                "blast: the device counted {refused} refusals of {refusals} bad requests and {obeyed} blasts of {}",
                runs.len()
            );
        }
        Ok(())
    });
    Ok((result, verdict))
}
