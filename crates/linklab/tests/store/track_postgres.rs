//! `linklab track`'s PostgreSQL store (`--db postgres://...`), on a throwaway server of the
//! test's own: the same runs give the same answers as in SQLite (runs, compare, report,
//! export) with the same tables and columns; eight writers importing at once into a fresh
//! database all land with distinct ids; a role that may only read reads; a newer schema is
//! refused and a server that cannot be reached is one line.

use std::path::Path;
use std::process::{Command, Stdio};

use linklab_results::track::TrackEntry;
use linklab_testkit::pg_server::PgServer;
use linklab_testkit::track::{
    entry, failed, figure, image, import, labels, stderr, stdout, track, write_run,
};
use linklab_testkit::{assert_one_line_error, linklab_bin, tempdir};

/// Runs with figures of every rule, a sim entry, a failed entry and samples that do not
/// print short (their bits must come back as they went in).
fn runs() -> Vec<(&'static str, Vec<TrackEntry>)> {
    let sim = |rate: &[f64]| {
        entry(
            "sim-10m",
            "sim",
            vec![
                figure("get /10kB", "kB/s", "higher", "rate", rate),
                figure("ping rtt", "ms", "lower", "count", &[0.1 + 0.2, 1.0 / 3.0]),
            ],
        )
    };
    let failed = TrackEntry {
        board: "mps2-an385".into(),
        ..failed("lwip", "image", "never answered on 198.18.9.2")
    };
    vec![
        (
            "v0",
            vec![
                image(
                    "main",
                    39940.0,
                    &[3.5091, 3.5138, 3.5059],
                    &[4.5301, 4.5011],
                ),
                sim(&[812.5, 799.25, 805.0]),
            ],
        ),
        (
            "v1",
            vec![
                image(
                    "main",
                    40112.0,
                    &[3.9091, 3.9138, 3.9059],
                    &[4.5301, 4.5011],
                ),
                sim(&[512.5, 499.25, 505.0]),
                failed,
            ],
        ),
        ("v1", vec![image("main", 40000.0, &[3.6, 3.61], &[4.5])]),
    ]
}

/// `linklab track ARGS` on `db` with `out` in place of the store's name.
fn answers(db: &Path, dir: &Path) -> Vec<String> {
    let masked = |text: String| text.replace(db.to_str().unwrap(), "DB");
    let mut got = Vec::new();
    let runs = stdout(&track(db, &["runs"]));
    // id and label (the time is the import's own).
    got.push(
        runs.lines()
            .map(|l| l.split_whitespace().take(2).collect::<Vec<_>>().join(" "))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    for args in [&["compare", "v0", "v1"][..], &["compare", "--last", "3"]] {
        let out = track(db, args);
        got.push(format!(
            "{:?}\n{}{}",
            out.status.code(),
            stdout(&out),
            stderr(&out)
        ));
    }
    for label in ["v0", "v1"] {
        let file = dir.join(format!("export-{label}.json"));
        let out = track(db, &["export", label, "-o", file.to_str().unwrap()]);
        assert!(out.status.success(), "{}", stderr(&out));
        got.push(std::fs::read_to_string(&file).unwrap());
    }
    let html = dir.join("report.html");
    let out = track(db, &["report", "-o", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    let page = masked(std::fs::read_to_string(&html).unwrap());
    got.push(
        page.lines()
            .filter(|l| !l.contains(" · generated "))
            .collect::<Vec<_>>()
            .join("\n"),
    );
    got
}

/// Tables and their columns, in order: SQLite's `PRAGMA table_info`.
fn sqlite_columns(db: &Path) -> Vec<String> {
    let c = rusqlite::Connection::open(db).unwrap();
    let mut out = Vec::new();
    for table in ["runs", "entries", "figures", "samples"] {
        let mut q = c.prepare(&format!("PRAGMA table_info({table})")).unwrap();
        let rows = q
            .query_map([], |r| Ok(format!("{table}.{}", r.get::<_, String>(1)?)))
            .unwrap();
        out.extend(rows.map(Result::unwrap));
    }
    out
}

/// The same from PostgreSQL's information schema.
fn postgres_columns(url: &str) -> Vec<String> {
    let mut c = postgres::Client::connect(url, postgres::NoTls).unwrap();
    let mut out = Vec::new();
    for table in ["runs", "entries", "figures", "samples"] {
        let rows = c
            .query(
                "SELECT column_name::text FROM information_schema.columns
                 WHERE table_name = $1 ORDER BY ordinal_position",
                &[&table],
            )
            .unwrap();
        out.extend(
            rows.iter()
                .map(|r| format!("{table}.{}", r.get::<_, String>(0))),
        );
    }
    out
}

#[test]
fn postgres_gives_the_answers_sqlite_gives() {
    let server = PgServer::start("track-pg-same");
    let url = server.create_db("same");
    let pg = Path::new(&url);
    let dir = tempdir("track-pg-same");
    let sqlite = dir.join("track.sqlite");
    for (label, entries) in runs() {
        import(&sqlite, &dir, label, entries.clone());
        import(pg, &dir, label, entries);
    }
    assert_eq!(labels(pg), ["v0", "v1", "v1"]);
    let (a, b) = (answers(&sqlite, &dir), answers(pg, &dir));
    for (s, p) in a.iter().zip(&b) {
        assert_eq!(s, p, "SQLite and PostgreSQL differ");
    }
    assert!(a[1].starts_with("Some(3)"), "v1 is worse than v0: {}", a[1]);
    assert_eq!(sqlite_columns(&sqlite), postgres_columns(&url));

    // A role that may only read: it lists and exports; storing is one line.
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    c.batch_execute(
        "CREATE ROLE reader LOGIN; GRANT SELECT ON ALL TABLES IN SCHEMA public TO reader",
    )
    .unwrap();
    let reader = url.replace("postgres@", "reader@");
    assert_eq!(labels(Path::new(&reader)), ["v0", "v1", "v1"]);
    let file = dir.join("v0.json");
    let out = track(Path::new(&reader), &["import", file.to_str().unwrap()]);
    assert_one_line_error(&out, "cannot store the run (ERROR: permission denied");

    // A schema newer than this linklab's: refused with one line, left as it is.
    c.batch_execute("UPDATE linklab_track_schema SET version = 99")
        .unwrap();
    let out = track(pg, &["runs"]);
    assert_one_line_error(&out, "schema version 99 is newer than this linklab's 2");
    let v: i64 = c
        .query_one("SELECT version FROM linklab_track_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(v, 99);
}

#[test]
fn eight_writers_at_once_into_a_fresh_database_all_land() {
    const WRITERS: usize = 8;
    let server = PgServer::start("track-pg-writers");
    let url = server.create_db("fresh");
    let dir = tempdir("track-pg-writers");
    let children: Vec<_> = (0..WRITERS)
        .map(|i| {
            let file = dir.join(format!("w{i}.json"));
            let entries = vec![image("main", i as f64, &[2.0, 2.5], &[3.0])];
            write_run(&file, &format!("w{i}"), entries);
            // Each holds its transaction open a moment, so the writers overlap.
            Command::new(linklab_bin())
                .args(["track", "import"])
                .arg(&file)
                .args(["--db", &url])
                .env("LINKLAB_TRACK_PAUSE_BEFORE_COMMIT_MS", "300")
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap()
        })
        .collect();
    for c in children {
        let out = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", stderr(&out));
    }
    let out = track(Path::new(&url), &["runs"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let mut ids = Vec::new();
    let mut got = Vec::new();
    for line in stdout(&out).lines() {
        let mut words = line.split_whitespace();
        ids.push(words.next().unwrap().parse::<i64>().unwrap());
        got.push(words.next().unwrap().to_string());
    }
    got.sort();
    let want: Vec<String> = (0..WRITERS).map(|i| format!("w{i}")).collect();
    assert_eq!(got, want, "every writer's run, once");
    ids.sort();
    ids.dedup();
    assert_eq!(ids.len(), WRITERS, "distinct ids");
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let samples: i64 = c
        .query_one("SELECT count(*) FROM samples", &[])
        .unwrap()
        .get(0);
    assert_eq!(samples, 4 * WRITERS as i64, "each run's four samples");
    let schema_rows: i64 = c
        .query_one("SELECT count(*) FROM linklab_track_schema", &[])
        .unwrap()
        .get(0);
    assert_eq!(schema_rows, 1, "the schema was created once");
}

#[test]
fn a_server_that_cannot_be_reached_is_one_line() {
    let dir = tempdir("track-pg-unreachable");
    let file = dir.join("r.json");
    std::fs::write(&file, br#"{"label": "x", "entries": []}"#).unwrap();
    // Port 1 on loopback: nothing listens there.
    let url = "postgres://farm:s3cret@127.0.0.1:1/track";
    let out = track(Path::new(url), &["import", file.to_str().unwrap()]);
    assert_one_line_error(
        &out,
        "--db postgres://farm:***@127.0.0.1:1/track: cannot connect",
    );
    assert!(
        stderr(&out).contains("Connection refused"),
        "{}",
        stderr(&out)
    );
    assert!(!stderr(&out).contains("s3cret"), "{}", stderr(&out));
    let out = track(Path::new("postgres://127.0.0.1:1:2/x"), &["runs"]);
    assert_one_line_error(&out, "--db postgres://127.0.0.1:1:2/x");
}
