//! `linklab track report`: every figure's history as an SVG chart with its steps marked by
//! the run's label, and the last comparison's table; the page renders in Chromium with every
//! chart's data drawn.

use linklab_testkit::track::{image, import, stderr, stdout, track};
use linklab_testkit::{assert_one_line_error, charts, chromium, tempdir};

#[test]
fn the_history_renders_with_steps_marked() {
    let dir = tempdir("track-report");
    let db = dir.join("t.sqlite");
    import(
        &db,
        &dir,
        "r1",
        vec![image("compact", 36464.0, &[2.0, 2.02], &[2.7])],
    );
    import(
        &db,
        &dir,
        "r2",
        vec![image("compact", 36464.0, &[2.01], &[2.71])],
    );
    import(
        &db,
        &dir,
        "70bbdba",
        vec![image("compact", 35868.0, &[2.02], &[2.7])],
    );
    import(
        &db,
        &dir,
        "slower",
        vec![image("compact", 35868.0, &[2.5, 2.55], &[2.7])],
    );
    let html = dir.join("history.html");
    let out = track(&db, &["report", "-o", html.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(stdout(&out).contains("(4 runs)"), "{}", stdout(&out));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!DOCTYPE html>") && page.trim_end().ends_with("</html>"));
    assert_eq!(
        page.matches("<svg ").count(),
        page.matches("</svg>").count()
    );
    assert_eq!(
        page.matches("<section").count(),
        page.matches("</section>").count()
    );
    assert_eq!(
        page.matches("<table").count(),
        page.matches("</table>").count()
    );
    // The flash step is marked with the commit that made it; the slower run's receive cost.
    let markers: Vec<&str> = page
        .split(r#"class="marker-label""#)
        .skip(1)
        .filter_map(|m| m.split("</text>").next()?.rsplit('>').next())
        .collect();
    assert_eq!(markers, ["70bbdba", "slower"]);
    assert!(page.contains("Last comparison: 70bbdba → slower"));
    assert!(page.contains(r#"<td class="warn">worse</td>"#));

    let dom = chromium(&html, &["--dump-dom"]);
    assert!(dom.status.success(), "chromium: {}", stderr(&dom));
    let drawn = charts(&String::from_utf8_lossy(&dom.stdout));
    let ids: Vec<&str> = drawn.iter().map(|c| c.0.as_str()).collect();
    assert_eq!(ids, ["track-0", "track-1", "track-2"], "{drawn:?}");
    for (id, points, shown) in &drawn {
        // Four medians and each run's lowest and highest sample.
        assert_eq!(*points, 12, "{id}");
        assert!(*shown > 0, "{id}: the browser drew no data element");
    }
}

#[test]
fn an_empty_store_has_no_report() {
    let dir = tempdir("track-report-empty");
    let db = dir.join("t.sqlite");
    let out = track(&db, &["report", "-o", dir.join("x.html").to_str().unwrap()]);
    assert_one_line_error(&out, "no run stored yet");
}
