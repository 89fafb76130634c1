//! `linklab track`'s SQLite store: created with its schema on first use, migrated from an
//! older schema, refusing a file that is not SQLite, is corrupt or is newer (one line naming
//! it, the file untouched), a label given twice kept as two runs, two writers at once both
//! landing, and a run killed while it is being stored leaving nothing behind.

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::Duration;

use linklab_testkit::track::{image, import, labels, stderr, track, write_run};
use linklab_testkit::{assert_one_line_error, linklab_bin, tempdir};

fn db_in(name: &str) -> (PathBuf, PathBuf) {
    let dir = tempdir(name);
    (dir.join("track.sqlite"), dir)
}

fn version(db: &std::path::Path) -> i64 {
    let c = rusqlite::Connection::open(db).unwrap();
    c.query_row("PRAGMA user_version", [], |r| r.get(0))
        .unwrap()
}

#[test]
fn a_store_is_created_on_first_use_and_a_label_twice_is_two_runs() {
    let (db, dir) = db_in("track-store-create");
    assert!(!db.exists());
    import(&db, &dir, "v1", vec![image("main", 100.0, &[3.0], &[4.0])]);
    assert!(db.exists());
    assert_eq!(version(&db), 2);
    import(&db, &dir, "v1", vec![image("main", 101.0, &[3.0], &[4.0])]);
    assert_eq!(labels(&db), ["v1", "v1"]);
    // compare takes the label's latest run: flash 100 -> 101 is found worse against
    // itself only if both runs were kept.
    import(&db, &dir, "v0", vec![image("main", 100.0, &[3.0], &[4.0])]);
    let out = track(&db, &["compare", "v0", "v1"]);
    assert_eq!(out.status.code(), Some(3), "{}", stderr(&out));
}

#[test]
fn an_older_schema_is_migrated() {
    let (db, dir) = db_in("track-store-migrate");
    import(&db, &dir, "old", vec![image("main", 100.0, &[3.0], &[4.0])]);
    {
        // Back to version 1: the second migration's indexes gone.
        let c = rusqlite::Connection::open(&db).unwrap();
        c.execute_batch(
            "DROP INDEX runs_by_label; DROP INDEX entries_by_run; DROP INDEX figures_by_entry;
             PRAGMA user_version = 1;",
        )
        .unwrap();
    }
    assert_eq!(labels(&db), ["old"]);
    assert_eq!(version(&db), 2);
    let c = rusqlite::Connection::open(&db).unwrap();
    let indexes: i64 = c
        .query_row(
            "SELECT count(*) FROM sqlite_master WHERE type = 'index' AND name LIKE '%_by_%'",
            [],
            |r| r.get(0),
        )
        .unwrap();
    assert_eq!(indexes, 3);
}

#[test]
fn a_store_that_is_not_sqlite_corrupt_or_newer_is_refused_untouched() {
    let (db, dir) = db_in("track-store-refuse");
    let run = dir.join("r.json");
    write_run(&run, "x", vec![]);
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (b"label,flash\nv1,100\n".to_vec(), "not an SQLite database"),
        (
            [&b"SQLite format 3\0"[..], &[0x5a; 4080]].concat(),
            "corrupt",
        ),
    ];
    for (bytes, expected) in cases {
        std::fs::write(&db, &bytes).unwrap();
        let out = track(&db, &["import", run.to_str().unwrap()]);
        assert_one_line_error(&out, expected);
        assert!(
            stderr(&out).contains(db.to_str().unwrap()),
            "{}",
            stderr(&out)
        );
        assert_eq!(std::fs::read(&db).unwrap(), bytes, "the file was changed");
    }
    std::fs::remove_file(&db).unwrap();
    import(&db, &dir, "ok", vec![]);
    rusqlite::Connection::open(&db)
        .unwrap()
        .execute_batch("PRAGMA user_version = 99")
        .unwrap();
    let before = std::fs::read(&db).unwrap();
    let out = track(&db, &["runs"]);
    assert_one_line_error(&out, "schema version 99 is newer than this linklab's 2");
    assert_eq!(std::fs::read(&db).unwrap(), before, "the file was changed");
}

/// `linklab track import FILE` holding its write transaction for `pause_ms` before commit.
fn slow_import(db: &std::path::Path, file: &std::path::Path, pause_ms: u64) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let mut cmd = Command::new(linklab_bin());
    // Ctrl-C as a terminal delivers it: a test run started in the background (nohup, `&`)
    // inherits SIGINT ignored, and so would the import (a fresh-clone check saw it run on).
    // SAFETY: signal() is async-signal-safe; nothing else runs between fork and exec.
    unsafe {
        cmd.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    cmd.args(["track", "import"])
        .arg(file)
        .arg("--db")
        .arg(db)
        .env("LINKLAB_TRACK_PAUSE_BEFORE_COMMIT_MS", pause_ms.to_string())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap()
}

fn run_file(dir: &std::path::Path, label: &str) -> PathBuf {
    let f = dir.join(format!("{label}.json"));
    write_run(&f, label, vec![image("main", 1.0, &[2.0], &[3.0])]);
    f
}

#[test]
fn two_writers_at_once_both_land() {
    let (db, dir) = db_in("track-store-concurrent");
    import(&db, &dir, "first", vec![]);
    let (a, b) = (run_file(&dir, "a"), run_file(&dir, "b"));
    // Each holds the write lock for 1.5 s: the second waits for the first.
    let children = [slow_import(&db, &a, 1500), slow_import(&db, &b, 1500)];
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let mut got = labels(&db);
    got.sort();
    assert_eq!(got, ["a", "b", "first"]);
}

#[test]
fn a_run_killed_while_being_stored_leaves_nothing() {
    let (db, dir) = db_in("track-store-killed");
    import(&db, &dir, "kept", vec![image("main", 1.0, &[2.0], &[3.0])]);
    let f = run_file(&dir, "half");
    let mut child = slow_import(&db, &f, 60_000);
    // Wait until it holds the write lock (its journal exists), then interrupt it.
    let journal = db.with_extension("sqlite-journal");
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !journal.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(journal.exists(), "the import never began its transaction");
    // SAFETY: a signal to the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let status = child.wait().unwrap();
    assert!(!status.success());
    assert_eq!(labels(&db), ["kept"]);
    let c = rusqlite::Connection::open(&db).unwrap();
    let samples: i64 = c
        .query_row("SELECT count(*) FROM samples", [], |r| r.get(0))
        .unwrap();
    assert_eq!(samples, 3, "only the kept run's three samples");
}
