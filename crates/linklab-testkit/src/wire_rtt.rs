//! Round trips read off a pcap stamped with a device's emulated clock (the W5500-EVB-Pico
//! harness's `--pcap`: each frame at the moment its last bit is on the W5500's port), with
//! stock tshark: `linklab rtt`'s echo probes to port 7, over UDP (a reply paired with its
//! request by the probe's run and sequence number) and TCP (by the offset of the probe's bytes
//! in the connection), less the header-only probe (run 0xffff) `linklab rtt` first sends to
//! check the echo. A round trip runs from the request's first bit on the line to the
//! reply's last bit: what a host on the other end of the cable would see, less its own stack.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// The header-only probe `linklab rtt` sends first on each connection, to check the echo.
const CHECK_PROBE: u64 = 16;

/// Time a frame of `len` bytes (no FCS) is on a 100 Mbit/s line: preamble and SFD, the frame
/// padded to 60, FCS; 80 ns a byte.
pub fn frame_ns(len: u64) -> u64 {
    (8 + len.max(60) + 4) * 80
}

/// The round trips of one probe size, in emulated nanoseconds.
#[derive(Debug, Default)]
pub struct RoundTrips {
    /// Probe size (UDP payload, or bytes of the TCP stream per probe).
    pub size: usize,
    /// One per answered probe sent while no earlier probe was waiting for its reply.
    pub ns: Vec<u64>,
    /// Probes sent while an earlier one was still waiting (left out of `ns`: they queued).
    pub overlapped: usize,
    /// Probes without a reply in the capture.
    pub unanswered: usize,
}

impl RoundTrips {
    /// The `q` quantile (0..=1) of the round trips, nearest rank.
    pub fn quantile(&self, q: f64) -> u64 {
        let mut v = self.ns.clone();
        v.sort_unstable();
        if v.is_empty() {
            return 0;
        }
        let i = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len()) - 1;
        v[i]
    }

    /// Min, median, p90, p99, max in µs, one line.
    pub fn summary(&self) -> String {
        format!(
            "min {:.1} p50 {:.1} p90 {:.1} p99 {:.1} max {:.1} µs ({} round trips, {} overlapped, {} unanswered)",
            self.quantile(0.0) as f64 / 1e3,
            self.quantile(0.5) as f64 / 1e3,
            self.quantile(0.9) as f64 / 1e3,
            self.quantile(0.99) as f64 / 1e3,
            self.quantile(1.0) as f64 / 1e3,
            self.ns.len(),
            self.overlapped,
            self.unanswered
        )
    }

    /// A text histogram in buckets of `bucket_ns`, one line per non-empty bucket.
    pub fn histogram(&self, bucket_ns: u64) -> String {
        let mut buckets: BTreeMap<u64, usize> = BTreeMap::new();
        for &t in &self.ns {
            *buckets.entry(t / bucket_ns).or_default() += 1;
        }
        let most = buckets.values().copied().max().unwrap_or(1);
        let mut out = String::new();
        for (b, n) in buckets {
            out.push_str(&format!(
                "  {:>7.1}-{:<7.1} µs {:>4} {}\n",
                (b * bucket_ns) as f64 / 1e3,
                ((b + 1) * bucket_ns) as f64 / 1e3,
                n,
                "#".repeat((n * 40).div_ceil(most))
            ));
        }
        out
    }
}

/// One frame of the capture as tshark gives its fields.
struct Frame {
    /// Emulated ns when its last bit was on the line.
    t: u64,
    /// Its length without FCS.
    len: u64,
    /// Sent by the device.
    from_device: bool,
    /// The rest of tshark's fields.
    fields: Vec<String>,
}

/// tshark's `fields` for the frames matching `filter`.
fn frames(pcap: &Path, device: &str, filter: &str, fields: &[&str]) -> Vec<Frame> {
    let mut cmd = Command::new("tshark");
    cmd.arg("-r")
        .arg(pcap)
        .args(["-Y", filter, "-T", "fields", "-E", "separator=,"]);
    for f in ["frame.time_epoch", "frame.len", "ip.src"]
        .iter()
        .chain(fields)
    {
        cmd.args(["-e", f]);
    }
    let out = cmd.output().expect("run tshark");
    assert!(
        out.status.success(),
        "tshark: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|line| {
            let mut f = line.split(',').map(str::to_string);
            let t = epoch_ns(&f.next().unwrap_or_default());
            let len = f.next().and_then(|s| s.parse().ok()).unwrap_or(0);
            let from_device = f.next().as_deref() == Some(device);
            Frame {
                t,
                len,
                from_device,
                fields: f.collect(),
            }
        })
        .collect()
}

/// tshark's `frame.time_epoch` ("S.NNNNNNNNN") in ns, exactly.
fn epoch_ns(s: &str) -> u64 {
    let (sec, frac) = s.split_once('.').unwrap_or((s, "0"));
    let mut frac = frac.to_string();
    frac.truncate(9);
    while frac.len() < 9 {
        frac.push('0');
    }
    sec.parse::<u64>().unwrap_or(0) * 1_000_000_000 + frac.parse::<u64>().unwrap_or(0)
}

/// UDP echo round trips to `device`'s `port`, by probe size, in the order the capture has
/// the requests (a reply is matched to the request that carried the same probe header).
pub fn udp(pcap: &Path, device: &str, port: u16) -> Vec<RoundTrips> {
    let all = frames(
        pcap,
        device,
        &format!("udp.port == {port}"),
        &["udp.payload"],
    );
    // Requests by probe header (magic, run, seq), in order; replies by header.
    let mut requests: Vec<(String, usize, u64)> = Vec::new();
    let mut replies: BTreeMap<String, u64> = BTreeMap::new();
    for f in &all {
        let payload = f.fields.first().cloned().unwrap_or_default();
        if payload.len() < 16 {
            continue;
        }
        let key = payload[..16].to_string();
        if &payload[4..8] == "ffff" {
            continue;
        }
        if f.from_device {
            replies.entry(key).or_insert(f.t);
        } else if !requests.iter().any(|(k, _, _)| *k == key) {
            requests.push((key, payload.len() / 2, f.t - frame_ns(f.len)));
        }
    }
    let mut by_size: Vec<RoundTrips> = Vec::new();
    let mut last_reply = 0u64;
    for (key, size, start) in requests {
        if by_size.last().map(|r| r.size) != Some(size) {
            by_size.push(RoundTrips {
                size,
                ..Default::default()
            });
        }
        let r = by_size.last_mut().expect("pushed");
        match replies.get(&key) {
            None => r.unanswered += 1,
            Some(&end) if start < last_reply => {
                r.overlapped += 1;
                last_reply = last_reply.max(end);
            }
            Some(&end) => {
                r.ns.push(end - start);
                last_reply = end;
            }
        }
    }
    by_size
}

/// TCP echo round trips to `device`'s `port`: one connection per size, in the order of
/// `sizes` (as `linklab rtt --tcp` makes them); after the check probe, probe k is bytes
/// k*size.. of each direction.
pub fn tcp(pcap: &Path, device: &str, port: u16, sizes: &[usize]) -> Vec<RoundTrips> {
    let all = frames(
        pcap,
        device,
        &format!("tcp.port == {port} && tcp.len > 0"),
        &["tcp.stream", "tcp.seq", "tcp.len"],
    );
    let mut streams: Vec<u64> = Vec::new();
    for f in &all {
        let s: u64 = f.fields[0].parse().unwrap_or(0);
        if !streams.contains(&s) {
            streams.push(s);
        }
    }
    let mut out = Vec::new();
    for (&stream, &size) in streams.iter().zip(sizes) {
        let seg = |from_device: bool| -> Vec<(u64, u64, u64, u64)> {
            all.iter()
                .filter(|f| f.from_device == from_device && f.fields[0] == stream.to_string())
                .map(|f| {
                    let seq: u64 = f.fields[1].parse().unwrap_or(0);
                    let len: u64 = f.fields[2].parse().unwrap_or(0);
                    (f.t, f.len, seq, len)
                })
                .collect()
        };
        let (requests, replies) = (seg(false), seg(true));
        // The first frame (in capture order) that carries byte `offset` of a direction.
        let carrying = |segs: &[(u64, u64, u64, u64)], offset: u64| {
            segs.iter()
                .find(|&&(_, _, seq, len)| seq <= offset && offset < seq + len)
                .copied()
        };
        let sent: u64 = requests
            .iter()
            .map(|&(_, _, seq, len)| seq + len - 1)
            .max()
            .unwrap_or(0);
        let mut r = RoundTrips {
            size,
            ..Default::default()
        };
        let mut last_reply = 0u64;
        for k in 0..sent.saturating_sub(CHECK_PROBE) / size as u64 {
            let first = 1 + CHECK_PROBE + k * size as u64;
            let Some((t, flen, _, _)) = carrying(&requests, first) else {
                continue;
            };
            let start = t - frame_ns(flen);
            match carrying(&replies, first + size as u64 - 1) {
                None => r.unanswered += 1,
                Some((end, _, _, _)) if start < last_reply => {
                    r.overlapped += 1;
                    last_reply = last_reply.max(end);
                }
                Some((end, _, _, _)) => {
                    r.ns.push(end - start);
                    last_reply = end;
                }
            }
        }
        out.push(r);
    }
    out
}
