//! Every subcommand speaks with one voice: each option that takes a value, given a value it
//! cannot accept, answers one line `linklab: error: …` naming the option, with exit code 2;
//! help and version still work. The options are read from each subcommand's own `--help`, so
//! an option added later is walked too (or must be listed below with the reason it is not).

use std::process::Command;

use linklab_testkit::linklab_bin;

/// Value names whose values cannot be wrong until the command runs (a path to write or read, a
/// host name to resolve: a bad one is a run-time error, exit 1, tested with each subcommand),
/// or that are free text (an iperf3 title: every printable value is valid; control characters
/// are refused, tested in iperf_cli.rs). `NAME|ELF` (emu's `--image`) is an image's name or
/// else a firmware file: any other value is a path, read when the command runs.
const NOT_WALKED: &[&str] = &[
    "FILE",
    "ELF",
    "NAME|ELF",
    "PATH",
    "HOST",
    "FILE.json",
    "TEXT",
];

/// A value the option's parser must refuse, by the option's value name.
fn bad_value(value_name: &str) -> &'static str {
    match value_name {
        // Interface names: any printable name without '/' or ':' is well formed.
        "NAME" => "a/b",
        _ => "bogus!",
    }
}

fn linklab(args: &[&str]) -> std::process::Output {
    Command::new(linklab_bin())
        .args(args)
        .output()
        .expect("run linklab")
}

/// The subcommands `linklab --help` lists (without `help`).
fn subcommands() -> Vec<String> {
    let out = linklab(&["--help"]);
    assert!(out.status.success());
    let help = String::from_utf8(out.stdout).unwrap();
    let list = help
        .split("Commands:")
        .nth(1)
        .expect("a command list")
        .split("Options:")
        .next()
        .unwrap();
    list.lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter(|c| *c != "help")
        .map(str::to_string)
        .collect()
}

/// The options of `sub` (a subcommand, or a verb under it: `emu boot`) that take a value:
/// (long name, value name).
fn value_options(sub: &[&str]) -> Vec<(String, String)> {
    let out = linklab(&[sub, &["--help"]].concat());
    assert_eq!(out.status.code(), Some(0), "{sub:?} --help");
    let help = String::from_utf8(out.stdout).unwrap();
    let mut options = Vec::new();
    for line in help.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        // `-p, --port <PORT>  …` or `--rate <RATE>  …`
        let at = match words.first() {
            Some(w) if w.starts_with("--") => 0,
            Some(w) if w.starts_with('-') && words.get(1).is_some_and(|n| n.starts_with("--")) => 1,
            _ => continue,
        };
        let Some(value) = words.get(at + 1) else {
            continue;
        };
        if value.starts_with('<') && value.ends_with('>') {
            let long = words[at].trim_end_matches(',').to_string();
            options.push((long, value.trim_matches(['<', '>']).to_string()));
        }
    }
    options
}

#[test]
fn every_option_refuses_a_bad_value_with_one_line_and_exit_2() {
    let subs = subcommands();
    for expected in [
        "bench", "serve", "serial", "emu", "iperf", "sweep", "rtt", "probe", "report",
    ] {
        assert!(subs.iter().any(|s| s == expected), "{expected} in {subs:?}");
    }
    let mut walked = 0;
    // `emu --help` names only what every boot needs (a screen); `emu boot --help` all.
    let emu_boot = ["emu", "boot"];
    let commands = subs
        .iter()
        .map(|s| vec![s.as_str()])
        .chain([emu_boot.to_vec()]);
    for sub in commands {
        for (option, value_name) in value_options(&sub) {
            if NOT_WALKED.contains(&value_name.as_str()) {
                continue;
            }
            let bad = bad_value(&value_name);
            let out = linklab(&[&sub[..], &[option.as_str(), bad]].concat());
            let stderr = String::from_utf8_lossy(&out.stderr);
            let what = format!("linklab {} {option} {bad:?}", sub.join(" "));
            assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
            assert_eq!(stderr.lines().count(), 1, "{what}: one line: {stderr}");
            assert!(
                stderr.starts_with("linklab: error: ") && stderr.contains(&option),
                "{what}: names the option: {stderr}"
            );
            assert!(out.stdout.is_empty(), "{what}: nothing on stdout");
            walked += 1;
        }
    }
    eprintln!(
        "{walked} value options walked over {} subcommands",
        subs.len()
    );
    assert!(walked >= 60, "only {walked} options walked");
}

#[test]
fn unknown_flags_and_subcommands_are_one_line_usage_errors() {
    for args in [
        &["bench", "--no-such-flag"][..],
        &["no-such-command"],
        &["serve", "--tap"],
        &["report"],
    ] {
        let out = linklab(args);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {stderr}");
        assert_eq!(stderr.lines().count(), 1, "{args:?}: {stderr}");
        assert!(stderr.starts_with("linklab: error: "), "{args:?}: {stderr}");
    }
}

#[test]
fn help_and_version_are_unchanged() {
    let out = linklab(&["--version"]);
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("linklab "));
    for sub in subcommands() {
        let out = linklab(&["help", &sub]);
        assert_eq!(out.status.code(), Some(0), "help {sub}");
        assert!(String::from_utf8_lossy(&out.stdout).contains("Usage:"));
    }
}

/// `linklab emu --help` fits a screen (24 lines): the verbs and what every boot needs; every
/// option of a boot is in `linklab emu boot --help`, and still taken by `linklab emu BOARD`.
#[test]
fn emu_help_fits_a_screen_and_boot_help_has_every_option() {
    for flag in ["--help", "-h"] {
        let out = linklab(&["emu", flag]);
        assert_eq!(out.status.code(), Some(0));
        let help = String::from_utf8(out.stdout).unwrap();
        assert!(help.lines().count() <= 24, "emu {flag}:\n{help}");
        assert!(help.contains("linklab emu boot --help"), "{help}");
    }
    let out = linklab(&["emu", "boot", "--help"]);
    let help = String::from_utf8(out.stdout).unwrap();
    for option in [
        "--image",
        "--elf",
        "--tap",
        "--ip",
        "--mac",
        "--icount",
        "--boot-timeout",
        "--status",
        "--pcap",
        "--oversample",
        "--drift",
        "--jitter",
        "--noise",
        "--no-pace",
        "--bad-captures",
    ] {
        assert!(help.contains(option), "emu boot --help lacks {option}");
        // Hidden from `emu --help`, still an option of `linklab emu BOARD`: a bad value is
        // the option's error, not an unknown flag's.
        if option == "--mac" || option == "--icount" {
            let out = linklab(&["emu", "mps2-an385", option, "bogus!"]);
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(
                stderr.contains(&format!("invalid value 'bogus!' for '{option}")),
                "{stderr}"
            );
        }
    }
}
