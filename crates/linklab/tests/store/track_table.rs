//! `linklab track table`: a stored run written between a file's markers, the rest of the file
//! untouched; `--check` passes on the table the run gives and fails, with one line and the
//! file unchanged, on one that differs (a stale README).

use linklab_testkit::track::{image, import, stderr, track};
use linklab_testkit::{assert_one_line_error, tempdir};

#[test]
fn the_table_is_written_between_the_markers_and_checked() {
    let dir = tempdir("track-table");
    let db = dir.join("t.sqlite");
    import(
        &db,
        &dir,
        "baseline",
        vec![
            image("main", 20000.0, &[2.0, 2.5], &[3.0]),
            image("lwip", 40000.0, &[4.0], &[6.0]),
        ],
    );
    let readme = dir.join("README.md");
    let before = "# Figures\n\n<!-- track:baseline begin -->\npasted\n<!-- track:baseline end -->\n\nAfter.\n";
    std::fs::write(&readme, before).unwrap();
    let file = readme.to_str().unwrap();
    let args = ["table", "baseline", "--file", file, "--reference", "lwip"];
    let out = track(&db, &args);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));
    let written = std::fs::read_to_string(&readme).unwrap();
    assert!(
        written
            .starts_with("# Figures\n\n<!-- track:baseline begin -->\n| figure | main | lwip |\n"),
        "{written}"
    );
    assert!(
        written.ends_with("<!-- track:baseline end -->\n\nAfter.\n"),
        "{written}"
    );
    assert!(written.contains("| 20000, 0.50× | 40000 |"), "{written}");
    assert!(written.contains("| 2.25 (2–2.5), 0.56× | 4 |"), "{written}");
    assert!(!written.contains("pasted"));

    let check = [&args[..], &["--check"]].concat();
    let out = track(&db, &check);
    assert_eq!(out.status.code(), Some(0), "{}", stderr(&out));

    let stale = written.replace("20000, 0.50×", "19000, 0.48×");
    std::fs::write(&readme, &stale).unwrap();
    let out = track(&db, &check);
    assert_one_line_error(&out, "the track:baseline table is not run \"baseline\"'s");
    assert_eq!(std::fs::read_to_string(&readme).unwrap(), stale);

    // No such block, no such reference: one line each.
    let out = track(
        &db,
        &["table", "baseline", "--file", file, "--block", "other"],
    );
    assert_one_line_error(&out, "no table block \"other\"");
    let out = track(
        &db,
        &["table", "baseline", "--file", file, "--reference", "zephyr"],
    );
    assert_one_line_error(&out, "has no entry zephyr");
}
