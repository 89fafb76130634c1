//! `linklab iperf`: an iperf3-compatible server (`-s`) and client (`-c HOST`) on the host,
//! built on `linklab_perf::iperf` (the same sans-IO core the device runs). It takes every
//! option of iperf3 3.12's `--help`, so `alias iperf3='linklab iperf'` keeps working;
//! human output follows iperf3's layout, `-J` prints iperf3's JSON schema.
//!
//! - `args`: the options and their value parsers;
//! - `client` / `server`: the two roles, from options to a run;
//! - `text` / `json`: iperf3's human output and `-J` document;
//! - `summary`: a finished test per stream, as both outputs see it;
//! - `output`: where lines go (`--logfile`, `-T`, `--timestamps`, `--forceflush`);
//! - `units`: iperf3's number formats;
//! - `sys`: the C library calls (strftime, uname, daemon, signals).

mod args;
mod client;
mod json;
mod output;
mod server;
mod summary;
pub(crate) mod sys;
mod text;
mod units;

use linklab_perf::iperf::errors;

pub use args::Args;
use linklab_results::{bail_usage, usage::usage};

/// What `-v` and `-J` call this program: iperf3's version it speaks, and who it is.
pub const VERSION: &str = "iperf 3.12 (linklab)";

/// Runs `linklab iperf`.
pub fn run(args: Args) -> anyhow::Result<()> {
    if args.version {
        println!("{VERSION}\n{}", sys::system_info());
        return Ok(());
    }
    refuse_unsupported(&args)?;
    match (args.server, args.client.clone()) {
        (true, Some(_)) => bail_usage!("{}", errors::text(1).0),
        (true, None) => server::run(args),
        (false, Some(host)) => client::run(args, host),
        (false, None) => bail_usage!("{}", errors::text(2).0),
    }
}

/// SCTP and authentication: iperf3's own words for what this build cannot do.
fn refuse_unsupported(a: &Args) -> anyhow::Result<()> {
    if a.sctp || a.xbind.is_some() || a.nstreams.is_some() {
        return Err(usage(errors::text(18).0));
    }
    let auth = a.username.is_some()
        || a.rsa_public_key_path.is_some()
        || a.rsa_private_key_path.is_some()
        || a.authorized_users_path.is_some()
        || a.time_skew_threshold.is_some();
    if auth {
        return Err(usage(errors::text(13).0));
    }
    Ok(())
}

/// Writes the process id to `-I FILE` and removes it when dropped.
struct PidFile(Option<std::path::PathBuf>);

impl PidFile {
    fn create(path: Option<&std::path::Path>) -> anyhow::Result<Self> {
        if let Some(p) = path {
            std::fs::write(p, format!("{}\n", std::process::id()))
                .map_err(|e| anyhow::anyhow!("{}: {e}", errors::text(135).0))?;
        }
        Ok(Self(path.map(Into::into)))
    }
}

impl Drop for PidFile {
    fn drop(&mut self) {
        if let Some(p) = &self.0 {
            let _ = std::fs::remove_file(p);
        }
    }
}

/// Splits `HOST%DEV` (the `%DEV` part means `--bind-dev`), leaving IPv6 link-local
/// literals (`fe80::1%eth0`) whole, as iperf3 does.
fn host_and_dev(spec: &str) -> (String, Option<String>) {
    let Some((host, dev)) = spec.split_once('%') else {
        return (spec.into(), None);
    };
    let link_local = host
        .parse::<std::net::Ipv6Addr>()
        .is_ok_and(|a| a.segments()[0] & 0xffc0 == 0xfe80);
    if link_local || dev.is_empty() {
        (spec.into(), None)
    } else {
        (host.into(), Some(dev.into()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_and_device() {
        assert_eq!(host_and_dev("h"), ("h".into(), None));
        assert_eq!(host_and_dev("h%eth0"), ("h".into(), Some("eth0".into())));
        assert_eq!(host_and_dev("fe80::1%eth0"), ("fe80::1%eth0".into(), None));
    }
}
