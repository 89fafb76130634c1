//! How many runs per second `linklab track`'s store takes from 1, 8 and 32 writers at once,
//! SQLite beside PostgreSQL (docs/track.md, "PostgreSQL"), and the rows one run adds:
//!
//! ```sh
//! cargo bench -p linklab --bench track_store
//! ```
//!
//! Each writer is a loop of `linklab track import track/baseline.json --db DB` processes, as
//! a farm's machines each store their runs (process start, connecting and the schema check
//! included); the writers start together and the rate is all their runs over the wall time
//! from the first start to the last end. PostgreSQL is a throwaway server of the bench's own
//! (tests/common/pg_server.rs: 127.0.0.1, `fsync` on as SQLite's commits are), a fresh
//! database per case; SQLite a fresh file per case in the target's temporary folder. Each
//! store is created by one import before the clock starts. `TRACK_STORE_RUNS=64` sets the runs per case (split over the
//! writers, at least one each); `LINKLAB_BIN` measures another build.

// The integration tests' helpers (the throwaway server, the linklab binary).

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use linklab_testkit::pg_server::PgServer;

/// The numbers of writers at once.
const WRITERS: [usize; 3] = [1, 8, 32];

/// One import of `run` into `db`; panics with its stderr when it fails.
fn import(bin: &Path, run: &Path, db: &str) {
    let out = Command::new(bin)
        .args(["track", "import"])
        .arg(run)
        .args(["--db", db])
        .stdout(Stdio::null())
        .output()
        .expect("run linklab track import");
    assert!(
        out.status.success(),
        "import into {db}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `writers` threads, each importing `run` `each` times in a row; the seconds from the first
/// start to the last end.
fn writers_at_once(bin: &Path, run: &Path, db: &str, writers: usize, each: usize) -> f64 {
    let start = Instant::now();
    std::thread::scope(|s| {
        for _ in 0..writers {
            s.spawn(|| (0..each).for_each(|_| import(bin, run, db)));
        }
    });
    start.elapsed().as_secs_f64()
}

/// Rows per table in the PostgreSQL database at `url`, and the tables' bytes on disk with
/// their indexes (`pg_total_relation_size`).
fn rows(url: &str) -> (Vec<(&'static str, i64)>, i64) {
    let mut c = postgres::Client::connect(url, postgres::NoTls).expect("connect");
    let mut bytes = 0;
    let counts = ["runs", "entries", "figures", "samples"]
        .into_iter()
        .map(|t| {
            let r = c
                .query_one(
                    &format!("SELECT count(*), pg_total_relation_size('{t}') FROM {t}"),
                    &[],
                )
                .expect("count");
            bytes += r.get::<_, i64>(1);
            (t, r.get(0))
        })
        .collect();
    (counts, bytes)
}

fn load() -> String {
    let text = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    text.split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" ")
}

fn main() {
    let bin =
        std::env::var_os("LINKLAB_BIN").map_or_else(linklab_testkit::linklab_bin, PathBuf::from);
    let run = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../track/baseline.json");
    let per_case: usize = std::env::var("TRACK_STORE_RUNS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(64);
    let dir = linklab_testkit::tempdir("track_store_bench");
    let server = PgServer::start_with("track-store-bench", true);
    println!(
        "linklab: {} · run: {} · {} cores · load before: {}",
        bin.display(),
        run.display(),
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load()
    );
    println!(
        "{:<10} {:>7} {:>5} {:>8} {:>7}",
        "store", "writers", "runs", "seconds", "runs/s"
    );
    let mut first_pg = None;
    for writers in WRITERS {
        let each = per_case.div_ceil(writers).max(1);
        for store in ["sqlite", "postgres"] {
            let db = match store {
                "sqlite" => dir.join(format!("w{writers}.sqlite")).display().to_string(),
                _ => server.create_db(&format!("w{writers}")),
            };
            let _ = std::fs::remove_file(&db);
            import(&bin, &run, &db);
            let secs = writers_at_once(&bin, &run, &db, writers, each);
            let n = writers * each;
            println!(
                "{store:<10} {writers:>7} {n:>5} {secs:>8.2} {:>7.1}",
                n as f64 / secs
            );
            if store == "postgres" {
                first_pg.get_or_insert(db);
            }
        }
    }
    let url = first_pg.expect("a PostgreSQL case");
    let (counts, bytes) = rows(&url);
    let runs = counts[0].1;
    let per_run: Vec<String> = counts
        .iter()
        .map(|(t, n)| format!("{} {t}", n / runs))
        .collect();
    let total: i64 = counts.iter().map(|(_, n)| n / runs).sum();
    println!(
        "one run of {} adds {} = {total} rows, {} bytes in PostgreSQL ({runs} runs: {bytes} bytes) · load after: {}",
        run.file_name().unwrap().to_string_lossy(),
        per_run.join(" + "),
        bytes / runs,
        load()
    );
}
