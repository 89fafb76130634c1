//! The HTTP step: each `--http` path downloaded in samples, and judged before it counts.
//!
//! A download counts only when it is whole (`http::fetch`: the body it announced, or the body
//! to the server's close when it announced none) with a 2xx status and a body that passed the
//! checks known for it (a linklab bench file's CRC32, the byte-index pattern). A 404 or 410 is
//! the path **absent**; any other status, a body short or longer than announced, a stall or
//! wrong bytes is the path **failed**; both with the status line and no rate. A path whose
//! first download the budget cut short is **out of time**, also without a rate.

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use linklab_results::probe::{figures, HttpDownload, HttpSample, PathState};
use linklab_results::quantity::Quantity;

use super::http;
use super::steps::Outcome;

/// An HTTP sample covers at least this much download time: back-to-back downloads of a small
/// path until their added times reach it (one download of a few hundred microseconds is the
/// host's scheduling as much as the device).
const HTTP_SAMPLE_TIME: Duration = Duration::from_millis(200);
/// Samples per HTTP path, at most.
const HTTP_SAMPLES: usize = 5;
/// The first download of a path may take this long whatever its share: long enough to tell a
/// server that stalls ([`http::STALL`]) from a budget that ran out.
const FIRST_LIMIT: Duration = Duration::from_secs(3);

/// Downloads each path in samples, sharing `time` between the paths: each sample is
/// back-to-back downloads until their added times reach [`HTTP_SAMPLE_TIME`], up to
/// [`HTTP_SAMPLES`] samples; a download starts only when the last one would still end in
/// the path's share (the first always runs, for up to [`FIRST_LIMIT`]). Every path is tried;
/// the error names each that failed.
pub fn downloads(
    host: &str,
    peer: SocketAddr,
    paths: &[String],
    time: Duration,
) -> Outcome<Vec<HttpDownload>> {
    let mut out = Vec::new();
    let end = Instant::now() + time;
    for (i, path) in paths.iter().enumerate() {
        let left = end.saturating_duration_since(Instant::now());
        let share = (left / (paths.len() - i) as u32).max(Duration::from_secs(1));
        out.push(sample_path(host, peer, path, share));
    }
    let detail = out
        .iter()
        .map(|d| match d.state {
            PathState::Done => format!("{} {} × {}", d.path, d.samples.len(), d.downloads),
            other => format!("{} {}", d.path, state_word(other)),
        })
        .collect::<Vec<_>>()
        .join(", ");
    let detail = format!("{} paths (samples × downloads: {detail})", out.len());
    let failed: Vec<String> = out
        .iter()
        .filter(|d| d.state == PathState::Failed)
        .filter_map(|d| d.reason.clone())
        .collect();
    Outcome {
        figures: figures::http(&out),
        not_measured: figures::http_not_measured(&out),
        error: (!failed.is_empty())
            .then(|| anyhow::anyhow!("HTTP at {peer}: {}", failed.join("; "))),
        value: out,
        detail,
    }
}

/// A path state in the step's detail.
fn state_word(state: PathState) -> &'static str {
    match state {
        PathState::Done => "done",
        PathState::Absent => "absent",
        PathState::Failed => "failed",
        PathState::OutOfTime => "out of time",
    }
}

/// Why a whole response does not count, if it does not: its state and the reason.
fn refusal(path: &str, f: &http::Fetched) -> Option<(PathState, String)> {
    let why = match f.status {
        404 | 410 => return Some((PathState::Absent, format!("GET {path}: {}", f.said()))),
        s if !(200..300).contains(&s) => "not a 2xx status",
        _ if f.crc_ok == Some(false) => "the body's CRC32 is not the linklab bench file's",
        _ if f.index_bytes_ok == Some(false) => {
            "the body began 0, 1, ... 255 and then broke the pattern byte i = i & 0xff"
        }
        _ if f.complete && f.body_bytes == 0 => "an empty body, nothing to time",
        _ => return None,
    };
    Some((
        PathState::Failed,
        format!("GET {path}: {} ({why})", f.said()),
    ))
}

/// The samples of one path within `share`, judged (see the module).
fn sample_path(host: &str, peer: SocketAddr, path: &str, share: Duration) -> HttpDownload {
    let end = Instant::now() + share;
    let mut d = HttpDownload {
        path: path.into(),
        state: PathState::Done,
        status: None,
        status_line: None,
        content_length: None,
        body: Quantity::new(0.0, "bytes"),
        downloads: 0,
        time: Quantity::new(0.0, "s"),
        rate: None,
        samples: Vec::new(),
        complete: true,
        crc_ok: None,
        index_bytes_ok: None,
        reason: None,
    };
    let mut last = Duration::ZERO;
    'samples: while d.samples.len() < HTTP_SAMPLES {
        let (mut n, mut seconds, mut bytes) = (0u32, 0.0, 0u64);
        while seconds < HTTP_SAMPLE_TIME.as_secs_f64() {
            let first = d.samples.is_empty() && n == 0;
            let left = end.saturating_duration_since(Instant::now());
            if !first && left < last.max(Duration::from_millis(1)) {
                break;
            }
            let began = Instant::now();
            let limit = left.max(if first {
                FIRST_LIMIT
            } else {
                Duration::from_secs(1)
            });
            let f = match http::fetch(peer, host, path, limit) {
                Ok(f) => f,
                Err(e) => return finish(d, Some((PathState::Failed, format!("{e:#}")))),
            };
            last = began.elapsed();
            if first {
                d.status = Some(f.status);
                d.status_line = Some(f.status_line.clone());
                d.content_length = f.content_length;
                d.body = Quantity::new(f.body_bytes as f64, "bytes");
            }
            if let Some(refused) = refusal(path, &f) {
                return finish(d, Some(refused));
            }
            if !f.complete {
                // Not whole: not counted.
                d.complete = false;
                if first {
                    let reason = format!(
                        "GET {path}: {}: the time budget ended the first download after {} bytes",
                        f.status_line, f.body_bytes
                    );
                    return finish(d, Some((PathState::OutOfTime, reason)));
                }
                if n > 0 {
                    d.samples.push(sample(n, seconds, bytes));
                }
                break 'samples;
            }
            d.crc_ok = f.crc_ok.or(d.crc_ok);
            d.index_bytes_ok = f.index_bytes_ok.or(d.index_bytes_ok);
            n += 1;
            seconds += f.seconds;
            bytes += f.body_bytes;
        }
        if n > 0 {
            d.samples.push(sample(n, seconds, bytes));
        }
        if seconds < HTTP_SAMPLE_TIME.as_secs_f64() {
            break;
        }
    }
    finish(d, None)
}

/// One sample: `n` whole downloads of `bytes` in all over `seconds`.
fn sample(n: u32, seconds: f64, bytes: u64) -> HttpSample {
    HttpSample {
        downloads: n,
        time: Quantity::new(seconds, "s"),
        rate: Quantity::new(bytes as f64 * 8.0 / seconds.max(1e-9), "bit/s"),
    }
}

/// The path's totals from its samples; a rate only when nothing refused it.
fn finish(mut d: HttpDownload, refused: Option<(PathState, String)>) -> HttpDownload {
    d.downloads = d.samples.iter().map(|s| s.downloads).sum();
    d.time = Quantity::new(d.samples.iter().map(|s| s.time.value).sum(), "s");
    match refused {
        Some((state, reason)) => {
            d.state = state;
            d.reason = Some(reason);
        }
        None if d.samples.is_empty() => {
            d.state = PathState::OutOfTime;
            d.reason = Some(format!("GET {}: no download ended in time", d.path));
        }
        None => {
            let rates: Vec<f64> = d.samples.iter().map(|s| s.rate.value).collect();
            d.rate = Some(Quantity::new(figures::median(&rates), "bit/s"));
        }
    }
    d
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fetched(status: u16, line: &str) -> http::Fetched {
        http::Fetched {
            status,
            status_line: line.into(),
            content_length: Some(100),
            body_bytes: 100,
            seconds: 0.01,
            complete: true,
            crc_ok: None,
            index_bytes_ok: None,
        }
    }

    #[test]
    fn only_a_whole_checked_2xx_counts() {
        assert!(refusal("/x", &fetched(200, "HTTP/1.1 200 OK")).is_none());
        let mut empty = fetched(204, "HTTP/1.1 204 No Content");
        (empty.body_bytes, empty.content_length) = (0, None);
        let (state, reason) = refusal("/x", &empty).unwrap();
        assert_eq!(state, PathState::Failed);
        assert!(
            reason.ends_with("(an empty body, nothing to time)"),
            "{reason}"
        );
        let (state, reason) = refusal("/x", &fetched(404, "HTTP/1.0 404 File not found")).unwrap();
        assert_eq!(state, PathState::Absent);
        assert_eq!(
            reason,
            "GET /x: HTTP/1.0 404 File not found (100-byte body)"
        );
        assert_eq!(
            refusal("/x", &fetched(410, "HTTP/1.1 410 Gone")).unwrap().0,
            PathState::Absent
        );
        for status in [301, 403, 500, 503] {
            let (state, reason) = refusal("/x", &fetched(status, "HTTP/1.1 xxx")).unwrap();
            assert_eq!(state, PathState::Failed, "{status}");
            assert!(reason.ends_with("(not a 2xx status)"), "{reason}");
        }
        let mut bad_crc = fetched(200, "HTTP/1.1 200 OK");
        bad_crc.crc_ok = Some(false);
        assert_eq!(refusal("/1MB.txt", &bad_crc).unwrap().0, PathState::Failed);
        let mut bad_pattern = fetched(200, "HTTP/1.1 200 OK");
        bad_pattern.index_bytes_ok = Some(false);
        assert_eq!(
            refusal("/big.bin", &bad_pattern).unwrap().0,
            PathState::Failed
        );
    }
}
