//! `linklab track run`'s suite files: a small suite of two images as a user writes it,
//! relative paths from the suite's folder, and every mistake answered with one line carrying its line
//! number (nothing is measured or stored then).

use std::path::{Path, PathBuf};

use linklab_testkit::track::{labels, stderr, stdout, track};
use linklab_testkit::{assert_one_line_error, tempdir};

/// Writes `text` as `suite.toml` in a fresh folder; the suite's path.
fn suite(name: &str, text: &str) -> PathBuf {
    let dir = tempdir(name);
    let path = dir.join("suite.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn dry_run(path: &Path) -> std::process::Output {
    let db = path.with_file_name("t.sqlite");
    track(&db, &["run", path.to_str().unwrap(), "--dry-run"])
}

/// Another stack's ELF beside one of linklab's images (the ELF's path relative to the suite's
/// folder, outside it).
const TWO_IMAGES: &str = r#"[[image]]                      # another stack's firmware, booted on linklab's board
name = "lwip"
board = "mps2-an385"
elf = "../peers/lwip/lwip_perf_O2.elf"
address = "198.18.9.2"         # where it answers once booted (host side: .1 of its /24)
mac = "02:4c:57:00:00:02"
iperf = 2                      # lwiperf: TCP both ways through -r

[[image]]                      # one of linklab's own images
name = "main"
board = "mps2-an385"
image = "main"
"#;

#[test]
fn a_suite_of_two_images_works_as_written_with_paths_from_its_folder() {
    let path = suite("track-suite-two-images", TWO_IMAGES);
    let out = dry_run(&path);
    assert!(out.status.success(), "{}", stderr(&out));
    let text = stdout(&out);
    let dir = path.parent().unwrap();
    let elf = dir.join("../peers/lwip/lwip_perf_O2.elf");
    assert!(
        text.contains(&format!("lwip (line 1): {} (iperf 2", elf.display())),
        "{text}"
    );
    assert!(text.contains("mac 02:4c:57:00:00:02"), "{text}");
    assert!(
        text.contains(
            "main (line 9): linklab's main image on mps2-an385: flash, static_ram, stack, cost"
        ),
        "{text}"
    );
}

#[test]
fn mistakes_are_one_line_with_their_line_number() {
    let cases: [(&str, &str); 11] = [
        (
            "[[image]]\nname = \"a\"\nboard = \"mps2-an385\"\nimage = \"main\"\ncolour = 3\n",
            ":5: unknown field `colour`",
        ),
        ("[[image]]\nname = \"a\"\nimage = \"main\"\n", ":1: missing field `board`"),
        (
            "build = \"make\"\n\n[[image]]\nname = \"a\"\nboard = \"mps2-an385\"\n",
            ":3: [[image]] \"a\": missing field `image` or `elf`",
        ),
        (
            "[[image]]\nname = \"a\"\nboard = \"mps2-an385\"\nelf = \"x.elf\"\niperf = 4\n",
            ":1: [[image]] \"a\": iperf = 4: 2, 3 or \"auto\"",
        ),
        (
            "[[image]]\nname = \"a\"\nboard = \"sabrelite\"\nimage = \"main\"\n",
            "board \"sabrelite\": the counting lab boots mps2-an385 only",
        ),
        (
            "[[sim]]\nname = \"s\"\n\n[[sim]]\nname = \"s\"\n",
            ":4: a second entry named \"s\"",
        ),
        ("[[image]\nname = 1\n", ":1: "),
        ("# nothing\n", "no [[image]], [[device]] or [[sim]]"),
        (
            "[[device]]\nname = \"d\"\naddress = \"198.18.0.2\"\nargs = [\"--json\", \"x.json\"]\n",
            ":1: [[device]] \"d\": args: \"--json\" is set by track",
        ),
        ("[[device]]\nname = \"d\"\n", ":1: missing field `address`"),
        (
            "[[image]]\nname = \"a\"\nboard = \"mps2-an385\"\nimage = \"main\"\nfigures = [\"flash\", \"speed\"]\n",
            "figures: unknown \"speed\"",
        ),
    ];
    for (i, (text, expected)) in cases.iter().enumerate() {
        let path = suite(&format!("track-suite-bad-{i}"), text);
        let out = dry_run(&path);
        assert_one_line_error(&out, expected);
        assert!(stderr(&out).contains("suite.toml:"), "{}", stderr(&out));
        // Nothing measured, nothing stored: the store was never created.
        assert!(!path.with_file_name("t.sqlite").exists());
    }
}

#[test]
fn an_entry_that_cannot_be_measured_is_stored_failed_beside_the_others() {
    let text = "[[image]]\nname = \"gone\"\nboard = \"mps2-an385\"\nelf = \"missing/fw.elf\"\niperf = 2\n\n[[sim]]\nname = \"sim\"\nargs = [\"--pings\", \"2\", \"--sizes\", \"10kB\", \"--gets\", \"1\"]\n";
    let path = suite("track-suite-failed", text);
    let db = path.with_file_name("t.sqlite");
    let out = track(&db, &["run", path.to_str().unwrap(), "--label", "one"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    let missing = path.parent().unwrap().join("missing/fw.elf");
    assert!(
        printed.contains(&format!(
            "gone: failed: {} is not a file",
            missing.display()
        )),
        "{printed}"
    );
    assert!(printed.contains("sim: get /10kB"), "{printed}");
    assert!(printed.contains("sim: ping rtt"), "{printed}");
    assert_eq!(labels(&db), ["one"]);
}

/// A `[[device]]`: `linklab probe` of a live device, its figures stored under probe's ids
/// with their samples (here the host's own loopback answering ICMP: the plumbing, in a few
/// seconds; a device on a TAP is probed so in the farm); a device that cannot be probed is
/// stored failed with probe's own line, beside the others.
#[test]
fn a_live_device_is_probed_and_its_figures_stored() {
    let text = "[[device]]\nname = \"lo\"\naddress = \"127.0.0.1\"\nargs = [\"--only\", \"icmp\", \"--duration\", \"10\"]\n\n[[device]]\nname = \"nowhere\"\naddress = \"nowhere.invalid\"\nargs = [\"--only\", \"icmp\"]\n";
    let path = suite("track-suite-device", text);
    let out = dry_run(&path);
    assert!(out.status.success(), "{}", stderr(&out));
    assert!(
        stdout(&out).contains("lo: linklab probe 127.0.0.1 --only icmp --duration 10"),
        "{}",
        stdout(&out)
    );
    let db = path.with_file_name("t.sqlite");
    let out = track(&db, &["run", path.to_str().unwrap(), "--label", "live"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let printed = stdout(&out);
    let rtt = printed
        .lines()
        .find(|l| l.starts_with("lo: icmp.rtt_p50.64B "))
        .unwrap_or_else(|| panic!("no round trip stored: {printed}"));
    // Its range: the quartiles around the median, in microseconds.
    let samples: Vec<f64> = rtt
        .split_whitespace()
        .skip(2)
        .take_while(|w| w.parse::<f64>().is_ok())
        .map(|w| w.parse().unwrap())
        .collect();
    assert_eq!(samples.len(), 3, "{rtt}");
    assert!(
        samples[0] <= samples[1] && samples[1] <= samples[2] && samples[0] > 0.0,
        "{rtt}"
    );
    assert!(
        printed.contains("nowhere: failed: linklab probe nowhere.invalid: "),
        "{printed}"
    );
    assert_eq!(labels(&db), ["live"]);
}
