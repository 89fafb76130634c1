//! A private lab for measuring firmware: a network namespace of our own (198.18.0.0/24), QEMU
//! running the image inside it with the NIC's TAP configured on the kernel side, and the
//! stock tools (curl, iperf3, ping) run in the namespace against the device. Everything is
//! removed when the lab is dropped.

use std::path::Path;
use std::process::{Command, Output};
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_perf::device_config::DeviceConfig;
use serde_json::Value;

use super::blob::ConfigBlob;
use super::board::Board;
use super::qemu::{dies_with_us, on_path, Boot, Network, Qemu};

/// The device's address in a lab.
pub const DEVICE_IP: &str = "198.18.0.2";
/// The kernel side of the TAP.
const HOST_CIDR: &str = "198.18.0.1/24";
/// The TAP's name inside the namespace.
pub const TAP: &str = "llemu0";

/// A booted image in its own namespace.
pub struct Lab {
    qemu: Option<Qemu>,
    /// `linklab emu BOARD --image soft-phy` (the soft-PHY image and its line) in place of
    /// QEMU.
    line: Option<std::process::Child>,
    ns: String,
}

impl Lab {
    /// A new namespace of this process's, with nothing in it yet (the stock tools checked).
    fn empty() -> anyhow::Result<Lab> {
        require_tools()?;
        let ns = format!("llemu{}", std::process::id());
        let status = Command::new("ip").args(["netns", "add", &ns]).status();
        if !matches!(status, Ok(s) if s.success()) {
            bail!("cannot create the network namespace {ns} (needs root / CAP_SYS_ADMIN)");
        }
        Ok(Lab {
            qemu: None,
            line: None,
            ns,
        })
    }

    /// Boots `image` of `board` with `icount` (None: free-running) in a new namespace and
    /// waits until the device answers ping.
    pub fn boot(board: &Board, image: &Path, icount: Option<String>) -> anyhow::Result<Lab> {
        let mut lab = Lab::empty()?;
        let config = DeviceConfig {
            ip: [198, 18, 0, 2],
            prefix: 24,
            mac: DeviceConfig::DEFAULT.mac,
        };
        let blob = ConfigBlob::write(&lab.ns, &config.to_bytes())?;
        let mut qemu = Qemu::start(Boot {
            board,
            image,
            config_blob: Some(blob),
            network: Network::Tap(TAP),
            icount,
            netns: Some(&lab.ns),
            echo_console: false,
        })?;
        qemu.wait_for_boot(Duration::from_secs(60))?;
        lab.qemu = Some(qemu);
        lab.configure()
    }

    /// Boots the soft-PHY image `image` of `board` with its line (`linklab emu BOARD --image
    /// soft-phy`, this very program, run in the namespace with `line`'s options and
    /// `--icount shift`) and waits until the device answers ping.
    pub fn boot_line(
        board: &Board,
        image: &Path,
        shift: Option<u32>,
        line: &super::line::LineArgs,
    ) -> anyhow::Result<Lab> {
        let mut lab = Lab::empty()?;
        let exe = std::env::current_exe().context("cannot find linklab's own binary")?;
        let mut argv: Vec<String> = vec![
            exe.display().to_string(),
            "emu".into(),
            board.name.into(),
            "--image".into(),
            "soft-phy".into(),
            "--elf".into(),
            image.display().to_string(),
            "--tap".into(),
            TAP.into(),
            "--ip".into(),
            format!("{DEVICE_IP}/24"),
        ];
        argv.extend(line.to_argv());
        if let Some(n) = shift {
            argv.push("--icount".into());
            argv.push(n.to_string());
        }
        let child = lab
            .command(&argv.iter().map(String::as_str).collect::<Vec<_>>())
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .context("cannot start linklab emu --image soft-phy")?;
        lab.line = Some(child);
        for _ in 0..600 {
            let shown = lab.command(&["ip", "link", "show", TAP]).output();
            if shown.is_ok_and(|o| o.status.success()) {
                // The TAP exists once the image is built; give it time to boot.
                return lab.configure();
            }
            if let Some(Ok(Some(status))) = lab.line.as_mut().map(|c| c.try_wait()) {
                bail!("linklab emu --image soft-phy exited ({status}) before its TAP appeared");
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        bail!("linklab emu --image soft-phy did not create its TAP within 120 s")
    }

    /// Configures the kernel side of the TAP and waits until the device answers ping.
    fn configure(self) -> anyhow::Result<Lab> {
        let lab = self;
        lab.run(&["ip", "link", "set", "lo", "up"])?;
        lab.run(&["ip", "addr", "add", HOST_CIDR, "dev", TAP])?;
        lab.run(&["ip", "link", "set", TAP, "up"])?;
        for _ in 0..30 {
            if lab
                .command(&["ping", "-c", "1", "-W", "1", DEVICE_IP])
                .output()
                .is_ok_and(|o| o.status.success())
            {
                return Ok(lab);
            }
        }
        bail!("the device booted but never answered ping");
    }

    /// Turns Linux's tail-loss probe off in the lab's namespace (`net.ipv4.tcp_early_retrans
    /// = 0`), for a run at a fixed instruction rate. QEMU's `-icount align=on` lets the guest
    /// run up to 3 ms ahead of real time, then stops it until real time catches up. The
    /// kernel's probe fires after about two round trips without an ACK, so in such a stop it
    /// sends a segment again, and a probe acknowledged without a DSACK (smoltcp sends none)
    /// is taken as a loss: the congestion window falls to 3-5 segments and the device waits
    /// for a host that holds back. A device on a wire never stops like that. Retransmission
    /// on timeout and on duplicate ACKs stay as they are. The setting is the namespace's own
    /// since Linux 4.15; on a kernel where it is global, this process's own is put back and
    /// the run refused.
    pub fn without_tail_loss_probes(&self) -> anyhow::Result<()> {
        const SETTING: &str = "/proc/sys/net/ipv4/tcp_early_retrans";
        let ours =
            std::fs::read_to_string(SETTING).with_context(|| format!("cannot read {SETTING}"))?;
        self.run(&["sh", "-c", &format!("echo 0 > {SETTING}")])?;
        let out = self.run(&["cat", SETTING])?;
        if String::from_utf8_lossy(&out.stdout).trim() != "0" {
            bail!(
                "cannot turn off the tail-loss probe in the namespace {}",
                self.ns
            );
        }
        if std::fs::read_to_string(SETTING).ok().as_deref() != Some(ours.as_str()) {
            let _ = std::fs::write(SETTING, ours.trim());
            bail!(
                "this kernel keeps {SETTING} for every namespace (Linux before 4.15): the \
                 host's tail-loss probe cannot be turned off for the lab alone"
            );
        }
        Ok(())
    }

    /// The namespace's name (under /run/netns).
    pub fn netns(&self) -> &str {
        &self.ns
    }

    /// A command to run inside the namespace. It dies with us: a `linklab` killed in the
    /// middle of a transfer leaves no client behind (an `iperf3 -R` whose server vanished
    /// spins on a core until killed).
    pub fn command(&self, argv: &[&str]) -> Command {
        let mut c = Command::new("ip");
        c.args(["netns", "exec", &self.ns]).args(argv);
        dies_with_us(&mut c);
        c
    }

    /// Runs `argv` in the namespace; an error with its stderr if it fails.
    pub fn run(&self, argv: &[&str]) -> anyhow::Result<Output> {
        let out = self
            .command(argv)
            .output()
            .with_context(|| format!("cannot run {}", argv[0]))?;
        if !out.status.success() {
            bail!(
                "{} failed: {}",
                argv.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            );
        }
        Ok(out)
    }

    /// The next console line starting with `prefix` (an image without `/stats` prints its
    /// work counters as `linklab work: ...` at boot and after each iperf3 test), waiting up
    /// to `timeout`.
    pub fn console_line(&mut self, prefix: &str, timeout: Duration) -> anyhow::Result<String> {
        let qemu = self
            .qemu
            .as_mut()
            .context("the console is only read from a QEMU this lab started")?;
        let lines = qemu.lines_until(prefix, timeout)?;
        lines
            .last()
            .cloned()
            .context("the console ended before the line")
    }

    /// The device's `/stats`.
    pub fn stats(&self) -> anyhow::Result<Value> {
        let url = format!("http://{DEVICE_IP}/stats");
        let out = self.run(&["curl", "-sS", "--max-time", "20", &url])?;
        serde_json::from_slice(&out.stdout).context("/stats is not JSON")
    }
}

/// One line naming the Debian package of a missing stock tool.
fn require_tools() -> anyhow::Result<()> {
    for (tool, package) in [
        ("ip", "iproute2"),
        ("iperf3", "iperf3"),
        ("curl", "curl"),
        ("ping", "iputils-ping"),
    ] {
        if !on_path(tool) {
            bail!("{tool} not found: install Debian's {package} package");
        }
    }
    Ok(())
}

impl Drop for Lab {
    fn drop(&mut self) {
        if let Some(mut q) = self.qemu.take() {
            q.stop();
        }
        if let Some(mut child) = self.line.take() {
            // SAFETY: a signal to the child we started.
            unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
            let deadline = std::time::Instant::now() + Duration::from_secs(15);
            while std::time::Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(50));
            }
            let _ = child.kill();
            let _ = child.wait();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}
