//! How `linklab track run` and `walk` measure a suite's `[[device]]` and `[[sim]]` entries:
//! their words parsed as `linklab probe`'s and `linklab bench`'s own options (the same parser
//! as the commands', so the same options and the same refusals), then measured in this process
//! by the commands themselves (`commands::probe::run`, `commands::bench::run`: their lines on
//! stdout as a user sees them). The documents come back through the `--json` file they write,
//! in a folder of this process's (made fresh, 0700, removed after).

use std::ffi::OsString;

use anyhow::Context;
use clap::Parser;
use linklab_results::probe::ProbeReport;
use linklab_track::instruments::Instruments;
use linklab_track::suite::{DeviceEntry, SimEntry};

/// linklab's own probe and bench, measuring a suite's entries.
pub struct ProbeAndBench;

/// `linklab probe`'s options, parsed from a suite's words.
#[derive(Parser)]
#[command(name = "linklab probe")]
struct ProbeWords {
    #[command(flatten)]
    args: crate::commands::probe::Args,
}

/// `linklab bench`'s options, parsed from a suite's words.
#[derive(Parser)]
#[command(name = "linklab bench")]
struct BenchWords {
    #[command(flatten)]
    args: crate::commands::bench::Args,
}

impl Instruments for ProbeAndBench {
    fn probe(&mut self, entry: &DeviceEntry, repeat: u32) -> anyhow::Result<ProbeReport> {
        let dir = private_folder()?;
        let json = dir.path().join("probe.json");
        let mut words: Vec<OsString> = vec!["linklab probe".into(), (&entry.address).into()];
        words.extend(entry.args.iter().map(OsString::from));
        let html_asked = entry
            .args
            .iter()
            .any(|a| a.starts_with("-o") || a.starts_with("--output"));
        if !html_asked {
            words.extend(["-o".into(), dir.path().join("probe.html").into_os_string()]);
        }
        if repeat > 1 {
            words.extend(["--repeat".into(), repeat.to_string().into()]);
        }
        words.extend(["--json".into(), json.clone().into_os_string()]);
        let options = ProbeWords::try_parse_from(words).map_err(one_line)?;
        crate::commands::probe::run(options.args)?;
        let text = std::fs::read(&json).context("linklab probe wrote no JSON")?;
        serde_json::from_slice(&text).context("linklab probe's JSON")
    }

    fn bench(&mut self, entry: &SimEntry) -> anyhow::Result<serde_json::Value> {
        let dir = private_folder()?;
        let json = dir.path().join("bench.json");
        let mut words: Vec<OsString> = vec!["linklab bench".into()];
        words.extend(entry.args.iter().map(OsString::from));
        words.extend(["--json".into(), json.clone().into_os_string()]);
        let options = BenchWords::try_parse_from(words).map_err(one_line)?;
        crate::commands::bench::run(options.args)?;
        let text = std::fs::read(&json).context("linklab bench wrote no JSON")?;
        serde_json::from_slice(&text).context("linklab bench's JSON")
    }
}

/// A fresh folder of this process's (mode 0700) for a command's outputs, removed on drop.
fn private_folder() -> anyhow::Result<tempfile::TempDir> {
    use std::os::unix::fs::PermissionsExt;
    tempfile::Builder::new()
        .prefix("linklab-track-")
        .permissions(std::fs::Permissions::from_mode(0o700))
        .tempdir()
        .context("cannot make a folder under the temporary folder")
}

/// A clap error as one line: its first paragraph, without `error: `.
fn one_line(e: clap::Error) -> anyhow::Error {
    let text = e.render().to_string();
    let body = text.trim_start();
    let body = body.strip_prefix("error: ").unwrap_or(body);
    let line: Vec<&str> = body
        .lines()
        .take_while(|l| !l.trim().is_empty())
        .map(str::trim)
        .collect();
    anyhow::anyhow!("{}", line.join(" "))
}
