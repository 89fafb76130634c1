//! The C library calls `linklab iperf` needs for iperf3's text: `strftime(3)` in local time
//! and UTC, `uname(2)` for the system line, `daemon(3)` for `-D`, and the default signal
//! dispositions of a server. Every `unsafe` block of the CLI's iperf lives here.

use std::ffi::{CStr, CString};

/// `strftime(fmt)` of `secs` since the epoch, in local time (`utc` false) or UTC.
fn strftime(fmt: &str, secs: i64, utc: bool) -> String {
    let Ok(cfmt) = CString::new(fmt) else {
        return String::new();
    };
    let t = secs as libc::time_t;
    // SAFETY: tm is plain old data; localtime_r/gmtime_r fill it from `t`; strftime writes
    // at most buf.len() bytes including the NUL and returns how many it wrote.
    unsafe {
        let mut tm: libc::tm = std::mem::zeroed();
        let ok = if utc {
            !libc::gmtime_r(&t, &mut tm).is_null()
        } else {
            !libc::localtime_r(&t, &mut tm).is_null()
        };
        if !ok {
            return String::new();
        }
        let mut buf = [0u8; 256];
        let n = libc::strftime(buf.as_mut_ptr().cast(), buf.len(), cfmt.as_ptr(), &tm);
        String::from_utf8_lossy(&buf[..n]).into_owned()
    }
}

/// Seconds since the epoch.
pub fn unix_time() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64)
}

/// Now in local time, formatted with strftime `fmt` (iperf3's `--timestamps`).
pub fn local_time(fmt: &str) -> String {
    strftime(fmt, unix_time(), false)
}

/// Now as RFC 1123 in UTC, as iperf3 prints `Time:`.
pub fn rfc1123_now() -> (String, i64) {
    let now = unix_time();
    (strftime("%a, %d %b %Y %H:%M:%S %Z", now, true), now)
}

/// `uname -a`-like line iperf3 prints as system information.
pub fn system_info() -> String {
    // SAFETY: utsname is plain old data that uname fills with NUL-terminated strings.
    unsafe {
        let mut u: libc::utsname = std::mem::zeroed();
        if libc::uname(&mut u) != 0 {
            return String::new();
        }
        let f = |c: &[libc::c_char]| CStr::from_ptr(c.as_ptr()).to_string_lossy().into_owned();
        format!(
            "{} {} {} {} {}",
            f(&u.sysname),
            f(&u.nodename),
            f(&u.release),
            f(&u.version),
            f(&u.machine)
        )
    }
}

/// Detaches from the terminal (`-D`): fork, new session, stdio to /dev/null.
pub fn daemonize() -> std::io::Result<()> {
    // SAFETY: called before any thread is started; daemon(3) forks and the parent exits.
    if unsafe { libc::daemon(0, 0) } == 0 {
        Ok(())
    } else {
        Err(std::io::Error::last_os_error())
    }
}

/// A server started from a script may inherit SIGINT ignored (SIG_IGN survives exec); stop
/// on SIGINT and SIGTERM alike, as iperf3 does.
pub fn default_stop_signals() {
    // SAFETY: restoring the default disposition of two signals; no handler is installed.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
}
