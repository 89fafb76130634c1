//! `linklab iperf`: the role the options choose, after refusing what this build cannot do.

use linklab_perf::iperf::errors;

use super::options::Options;
use super::version::VERSION;
use super::{client, server};
use crate::command_error::CommandError;
use crate::sys;

/// Runs `linklab iperf` with `options`: prints the version (`-v`), or runs the server
/// (`-s`) or the client (`-c HOST`) as iperf3 3.12 would, its text or `-J` on stdout (or
/// `--logfile`).
pub fn run(options: Options) -> Result<(), CommandError> {
    if options.version {
        println!("{VERSION}\n{}", sys::system_info());
        return Ok(());
    }
    refuse_unsupported(&options)?;
    match (options.server, options.client.clone()) {
        (true, Some(_)) => Err(CommandError::usage(errors::text(1).0)),
        (true, None) => server::run(options),
        (false, Some(host)) => client::run(options, host),
        (false, None) => Err(CommandError::usage(errors::text(2).0)),
    }
}

/// SCTP and authentication: iperf3's own words for what this build cannot do.
fn refuse_unsupported(a: &Options) -> Result<(), CommandError> {
    if a.sctp || a.xbind.is_some() || a.nstreams.is_some() {
        return Err(CommandError::usage(errors::text(18).0));
    }
    let auth = a.username.is_some()
        || a.rsa_public_key_path.is_some()
        || a.rsa_private_key_path.is_some()
        || a.authorized_users_path.is_some()
        || a.time_skew_threshold.is_some();
    if auth {
        return Err(CommandError::usage(errors::text(13).0));
    }
    Ok(())
}
