use super::*;

#[test]
fn ticks_are_round_and_cover_the_range() {
    let a = Axis::new("x", 0.0, 437.0);
    assert_eq!(a.lo, 0.0);
    assert!(a.hi >= 437.0 && a.hi <= 500.0, "{}", a.hi);
    assert!(
        a.ticks.iter().all(|(t, _)| (t / 100.0).fract() == 0.0),
        "{:?}",
        a.ticks
    );
    let b = Axis::new("y", 1.93, 2.11);
    assert!(b.lo <= 1.93 && b.hi >= 2.11 && b.ticks.len() >= 3);
    let flat = Axis::new("z", 5.0, 5.0);
    assert!(flat.hi > flat.lo);
}

#[test]
fn renders_every_mark_with_escaping() {
    let mut c = Chart::new(
        "t",
        "a < b",
        400.0,
        300.0,
        Axis::new("x", 0.0, 10.0),
        Axis::new("y", 0.0, 10.0),
    );
    c.y2 = Some(Axis::new("y2", 0.0, 1.0));
    c.series.push(Series {
        name: "l".into(),
        color: "#000",
        mark: Mark::LinePoints,
        right: false,
        points: vec![(1.0, 1.0), (2.0, 4.0)],
    });
    c.series.push(Series {
        name: "b".into(),
        color: "#111",
        mark: Mark::Bars { width: 1.0 },
        right: true,
        points: vec![(5.0, 0.5)],
    });
    c.vlines.push(VLine {
        x: 3.0,
        label: "knee".into(),
        color: "#0a0",
    });
    let svg = c.render().into_string();
    assert!(svg.contains("a &lt; b"));
    assert_eq!(svg.matches(r#"class="data""#).count(), 4);
    assert!(svg.contains(r#"data-chart="t""#) && svg.contains(r#"data-points="3""#));
    assert!(svg.contains(">knee<"));
}

#[test]
fn log_axis_spans_decades() {
    let a = Axis::log("rtt", 12.0, 2300.0);
    assert_eq!((a.lo, a.hi), (10.0, 10000.0));
    assert!(a.ticks.iter().any(|t| t.1 == "100") && a.ticks.iter().any(|t| t.1 == "2000"));
    assert!((a.frac(100.0) - 1.0 / 3.0).abs() < 1e-9);
    assert_eq!(a.frac(0.0), 0.0);
    let wide = Axis::log("x", 1.0, 1e6);
    assert_eq!(wide.ticks.len(), 7);
}

#[test]
fn numbers_are_compact() {
    assert_eq!(num(200.0), "200");
    assert_eq!(num(2.5), "2.5");
    assert_eq!(num(0.125), "0.125");
    assert_eq!(num(12.0), "12");
    assert_eq!(num(0.0001), "0.0001");
    assert_eq!(num(0.05), "0.05");
    assert_eq!(num(-3.5), "-3.5");
}
