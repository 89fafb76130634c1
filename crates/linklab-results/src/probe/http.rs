//! The HTTP part of a probe document: each path's downloads, how they ended, their samples.

use serde::{Deserialize, Serialize};

use crate::quantity::Quantity;

/// The downloads of one HTTP path.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HttpDownload {
    /// The path requested.
    pub path: String,
    /// How it ended: `done` (a rate), `absent` (404 or 410), `failed`, `out_of_time` (`done`
    /// in documents before version 3, which did not tell).
    #[serde(default = "done")]
    pub state: PathState,
    /// The response status (of the first download; none when no status line arrived).
    pub status: Option<u16>,
    /// The status line as the server sent it (none before version 3).
    #[serde(default)]
    pub status_line: Option<String>,
    /// The body length the response announced (`Content-Length`); none when it announced
    /// none (the body then ends at the server's close) or before version 3.
    #[serde(default)]
    pub content_length: Option<u64>,
    /// Body bytes of one download.
    pub body: Quantity,
    /// Downloads made (1 in version 1 documents).
    #[serde(default = "one")]
    pub downloads: u32,
    /// Request sent to last byte, added over every download.
    pub time: Quantity,
    /// The median of the samples' rates (version 1: the one download's body bits over its
    /// time); none unless `state` is `done`.
    pub rate: Option<Quantity>,
    /// Each sample: back-to-back downloads covering at least a set time, their body bits over
    /// their added times (none in version 1 documents).
    #[serde(default)]
    pub samples: Vec<HttpSample>,
    /// False when the time budget cut the last download short (since version 3 that
    /// download is not counted).
    pub complete: bool,
    /// For linklab's bench files downloaded whole: whether every CRC32 was right.
    pub crc_ok: Option<bool>,
    /// For a body whose first 256 bytes are 0, 1, ... 255 (byte i is i & 0xff, as the lwIP
    /// peer's `/big.bin`): whether every byte of every download followed it.
    #[serde(default)]
    pub index_bytes_ok: Option<bool>,
    /// Why there is no rate (`absent`, `failed`, `out_of_time`), with the status line.
    #[serde(default)]
    pub reason: Option<String>,
}

/// How an HTTP path ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathState {
    /// Downloaded whole, with a 2xx status and its checks passed: a rate.
    Done,
    /// 404 or 410: the device has no such path.
    Absent,
    /// Any other status, a body short or longer than announced, a stall, wrong content.
    Failed,
    /// The budget ended the first download before its last byte.
    OutOfTime,
}

/// One sample of an HTTP path: a batch of back-to-back downloads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HttpSample {
    /// Downloads in the batch.
    pub downloads: u32,
    /// Their request-to-last-byte times, added.
    pub time: Quantity,
    /// Their body bits over that time.
    pub rate: Quantity,
}

fn done() -> PathState {
    PathState::Done
}

fn one() -> u32 {
    1
}
