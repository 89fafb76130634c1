//! What the device keeps in flight and queued, seen from outside: a capture of a transfer on
//! the lab's TAP (dumpcap, read back with tshark), and `/stats`' send queues polled while one
//! runs.

use std::process::Stdio;

use anyhow::{bail, Context};

use super::super::lab::{Lab, DEVICE_IP, TAP};

/// A packet capture on the lab's TAP while a transfer runs (dumpcap, headers only), read
/// back with tshark.
pub(super) struct Capture {
    child: std::process::Child,
    file: std::path::PathBuf,
    /// The capture's private folder (dumpcap, run as root, writes where it is told: never
    /// at a name known beforehand in a shared folder).
    _dir: tempfile::TempDir,
}

impl Capture {
    pub(super) fn start(lab: &Lab, name: &str) -> anyhow::Result<Capture> {
        let dir = crate::scratch::private_dir("linklab-parts-")?;
        let file = dir.path().join(format!("{name}.pcapng"));
        let path = file.display().to_string();
        let child = lab
            .command(&["dumpcap", "-q", "-i", TAP, "-s", "96", "-w", &path])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .context("cannot run dumpcap (Debian's tshark package)")?;
        // dumpcap needs a moment before it captures.
        for _ in 0..50 {
            if file.exists() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        std::thread::sleep(std::time::Duration::from_millis(300));
        Ok(Capture {
            child,
            file,
            _dir: dir,
        })
    }

    /// Stops the capture and returns, for the device's TCP segments from `port`, the largest
    /// window it advertised and the most bytes it had in flight (tshark's analysis).
    pub(super) fn stop(mut self, port: u16) -> anyhow::Result<(u64, u64)> {
        std::thread::sleep(std::time::Duration::from_millis(300));
        let pid = nix::unistd::Pid::from_raw(self.child.id() as libc::pid_t);
        let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGINT);
        let _ = self.child.wait();
        let filter = format!("ip.src=={DEVICE_IP} && tcp.srcport=={port}");
        let out = std::process::Command::new("tshark")
            .args(["-r", &self.file.display().to_string(), "-Y", &filter])
            .args(["-T", "fields", "-e", "tcp.window_size", "-e"])
            .arg("tcp.analysis.bytes_in_flight")
            .stderr(Stdio::null())
            .output()
            .context("cannot run tshark (Debian's tshark package)")?;
        let _ = std::fs::remove_file(&self.file);
        let (mut window, mut flight) = (0u64, 0u64);
        for line in String::from_utf8_lossy(&out.stdout).lines() {
            let mut f = line.split('\t');
            let mut next = || f.next().and_then(|v| v.trim().parse::<u64>().ok());
            window = window.max(next().unwrap_or(0));
            flight = flight.max(next().unwrap_or(0));
        }
        if window == 0 {
            bail!(
                "parts: the capture of the transfer shows no segment from the device's port {port}"
            );
        }
        Ok((window, flight))
    }
}

impl Drop for Capture {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_file(&self.file);
    }
}

/// The most bytes the device's sockets on `port` held to send (`/stats` `tcp[].tx_queue`,
/// polled) while `argv` ran in the lab; 0 where `/stats` lists no queues (the embassy image).
pub(super) fn queued_while(lab: &Lab, port: u16, argv: &[&str]) -> anyhow::Result<u64> {
    let mut child = lab
        .command(argv)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .with_context(|| format!("cannot run {}", argv[0]))?;
    let mut most = 0;
    while child.try_wait()?.is_none() {
        if let Ok(stats) = lab.stats() {
            for s in stats["tcp"].as_array().into_iter().flatten() {
                if s["port"].as_u64() == Some(u64::from(port)) {
                    most = most.max(s["tx_queue"].as_u64().unwrap_or(0));
                }
            }
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    Ok(most)
}
