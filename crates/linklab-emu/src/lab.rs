//! A private lab for measuring firmware: a network namespace of our own (a 198.18.N.0/24 of
//! its own), QEMU running the image inside it with the NIC's TAP configured on the kernel
//! side (or, for the soft-PHY image, the simulated line between QEMU and a TAP made in the
//! namespace), and the stock tools (curl, iperf3, ping) run in the namespace against the
//! device. QEMU may run free, at a fixed instruction rate, or counted by our TCG plugin.
//! Everything is removed when the lab is dropped: QEMU, the line, the namespace and the
//! lab's private folder (sockets, the plugin's files).

use std::net::Ipv4Addr;
use std::os::fd::AsFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_perf::device_config::DeviceConfig;
use linklab_tap::Tap;
use nix::sched::CloneFlags;
use serde_json::Value;
use tempfile::TempDir;

use crate::blob::ConfigBlob;
use crate::board::Board;
use crate::counted::counter::{self, Counter, Mark};
use crate::line::{self, Line, LineSettings, Socket};
use crate::qemu::{dies_with_us, on_path, Boot, Network, Qemu};

/// The device's address in a lab of the measuring verbs ([`Subnet::EMU`]).
pub const DEVICE_IP: &str = "198.18.0.2";
/// The TAP's name inside the namespace.
pub const TAP: &str = "llemu0";
/// How long an image gets to boot in a lab.
const BOOT_TIMEOUT: Duration = Duration::from_secs(60);

/// A lab's link: 198.18.N.0/24, the kernel side .1, the device .2.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Subnet(u8);

impl Subnet {
    /// 198.18.0.0/24: the measuring verbs' labs.
    pub const EMU: Subnet = Subnet(0);
    /// 198.18.9.0/24: the counted lab's (the lwIP peer's image has 198.18.9.2 built in).
    pub const COUNTED: Subnet = Subnet(9);

    /// The device's address.
    pub fn device(self) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, self.0, 2)
    }

    /// The kernel side's address.
    pub fn host(self) -> Ipv4Addr {
        Ipv4Addr::new(198, 18, self.0, 1)
    }

    /// The configuration blob's content for a linklab image on this link, with NIC address
    /// `mac`.
    pub fn device_config(self, mac: [u8; 6]) -> DeviceConfig {
        DeviceConfig {
            ip: self.device().octets(),
            prefix: 24,
            mac,
        }
    }
}

/// How QEMU runs the guest in a lab.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Clock {
    /// Free-running.
    Free,
    /// `-icount` with these options (`shift=0`; `shift=N,align=on,sleep=on`).
    Icount(String),
    /// Free-running, every instruction counted by our TCG plugin (the library `plugin`,
    /// [`crate::counted::counter::build_plugin`]); with `profile`, each reading
    /// ([`Lab::mark`]) also writes the per-block counts to the file `profile.N`.
    Counted {
        /// The plugin's library.
        plugin: PathBuf,
        /// Where its profile files go (None: no profile).
        profile: Option<PathBuf>,
    },
}

/// What a lab boots, and how.
pub struct LabBoot<'a> {
    /// The board.
    pub board: &'a Board,
    /// The ELF image.
    pub image: &'a Path,
    /// The lab's link.
    pub subnet: Subnet,
    /// The configuration blob's content (a linklab image), or None (an image with its
    /// address built in).
    pub config: Option<DeviceConfig>,
    /// The NIC's MAC address as QEMU gives it (an image that takes it from its NIC).
    pub nic_mac: Option<&'a str>,
    /// How QEMU runs.
    pub clock: Clock,
    /// The console line that says the image is up.
    pub up_line: UpLine<'a>,
    /// The console lines at which the counter is read as they arrive (lines starting with
    /// this), with [`Clock::Counted`].
    pub marked_lines: Option<&'static str>,
    /// The host acknowledges every segment the device sends (`quickack 1` on its route), so
    /// the count of ACKs the device takes in no longer follows the host's delayed-ACK timing.
    pub ack_every_segment: bool,
    /// A monitor socket, for [`Lab::memory`].
    pub monitor: bool,
}

/// The console line a lab waits for before it pings the device.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UpLine<'a> {
    /// linklab's firmware's boot line (`linklab firmware: BOARD up ...`, decoded defmt too).
    Firmware,
    /// The first line containing this text (a peer image's own).
    Containing(&'a str),
    /// None: the device is waited for by ping alone.
    None,
}

/// A booted image in its own namespace.
pub struct Lab {
    qemu: Option<Qemu>,
    /// The soft-PHY image's line between QEMU and the TAP.
    line: Option<Line>,
    /// A pin-level board: the rp2040js harness and its line.
    pin: Option<crate::pin_boot::BootedPin>,
    /// A pin-level board whose network is its USB port: `linklab serial` bridging the port
    /// to the TAP, as a user runs it.
    usb_bridge: Option<std::process::Child>,
    counter: Option<counter::Shared>,
    /// The profile files' base path, when the counter writes them.
    profile: Option<PathBuf>,
    ns: String,
    subnet: Subnet,
    /// The lab's private folder (QEMU's sockets, a line's socket, saved memory); after the
    /// namespace (field order: dropped last).
    dir: TempDir,
}

/// Labs made by this process so far (each gets a namespace of its own).
static LABS: AtomicU32 = AtomicU32::new(0);

impl Lab {
    /// A new namespace of this process's, with nothing in it yet (the stock tools checked).
    fn empty(subnet: Subnet) -> anyhow::Result<Lab> {
        require_tools()?;
        let n = LABS.fetch_add(1, Ordering::Relaxed);
        let ns = match n {
            0 => format!("llemu{}", std::process::id()),
            n => format!("llemu{}-{n}", std::process::id()),
        };
        let dir = crate::scratch::private_dir("linklab-lab-")?;
        let status = Command::new("ip").args(["netns", "add", &ns]).status();
        if !matches!(status, Ok(s) if s.success()) {
            bail!("cannot create the network namespace {ns} (needs root / CAP_SYS_ADMIN)");
        }
        Ok(Lab {
            qemu: None,
            line: None,
            pin: None,
            usb_bridge: None,
            counter: None,
            profile: None,
            ns,
            subnet,
            dir,
        })
    }

    /// Boots `image` of `board` (a linklab image: its address by the configuration blob)
    /// with `icount` (None: free-running) in a new namespace and waits until the device
    /// answers ping.
    pub fn boot(board: &Board, image: &Path, icount: Option<String>) -> anyhow::Result<Lab> {
        Lab::start(&LabBoot {
            board,
            image,
            subnet: Subnet::EMU,
            config: Some(Subnet::EMU.device_config(DeviceConfig::DEFAULT.mac)),
            nic_mac: None,
            clock: icount.map_or(Clock::Free, Clock::Icount),
            up_line: UpLine::Firmware,
            marked_lines: None,
            ack_every_segment: false,
            monitor: false,
        })
    }

    /// Boots as `b` says in a new namespace and waits until the device answers ping.
    pub fn start(b: &LabBoot<'_>) -> anyhow::Result<Lab> {
        let mut lab = Lab::empty(b.subnet)?;
        lab.run(&["ip", "link", "set", "lo", "up"])?;
        let blob = b
            .config
            .map(|c| ConfigBlob::write_in(lab.dir.path(), "config", &c.to_bytes()))
            .transpose()?;
        let monitor = lab.dir.path().join("monitor.sock");
        let count_socket = lab.dir.path().join("count.sock");
        let (icount, plugin) = match &b.clock {
            Clock::Free => (None, None),
            Clock::Icount(o) => (Some(o.clone()), None),
            Clock::Counted { plugin, profile } => {
                let mut arg = format!("{},sock={}", plugin.display(), count_socket.display());
                if let Some(p) = profile {
                    arg.push_str(&format!(",prof={}", p.display()));
                    lab.profile = Some(p.clone());
                }
                (None, Some(arg))
            }
        };
        let mut qemu = Qemu::start(Boot {
            config_blob: blob,
            nic_mac: b.nic_mac,
            icount,
            plugin,
            monitor: b.monitor.then_some(monitor.as_path()),
            netns: Some(&lab.ns),
            ..Boot::new(b.board, b.image, Network::Tap(TAP))
        })?;
        if matches!(b.clock, Clock::Counted { .. }) {
            let counter = Arc::new(Mutex::new(Counter::connect(&count_socket)?));
            if let Some(prefix) = b.marked_lines {
                qemu.mark_lines(Arc::clone(&counter), prefix, lab.profile.is_some())?;
            }
            lab.counter = Some(counter);
        }
        match b.up_line {
            UpLine::Firmware => {
                qemu.wait_for_boot(BOOT_TIMEOUT)?;
            }
            UpLine::Containing(text) => {
                qemu.wait_for_nth(text, 0, BOOT_TIMEOUT)?;
            }
            UpLine::None => {}
        }
        lab.qemu = Some(qemu);
        lab.configure(b.ack_every_segment)?;
        Ok(lab)
    }

    /// Boots the soft-PHY image `image` of `board` with its line (the settings `line`, at
    /// `-icount shift` if given) in a new namespace: the TAP is made in the namespace by this
    /// process, which runs the line between it and QEMU; waits until the device answers ping.
    pub fn boot_line(
        board: &Board,
        image: &Path,
        shift: Option<u32>,
        settings: &LineSettings,
    ) -> anyhow::Result<Lab> {
        let mut lab = Lab::empty(Subnet::EMU)?;
        lab.run(&["ip", "link", "set", "lo", "up"])?;
        let tap = lab
            .in_netns(|| Tap::open(TAP))?
            .with_context(|| format!("cannot create TAP {TAP} in the lab"))?;
        let config = Subnet::EMU.device_config(DeviceConfig::DEFAULT.mac);
        let blob =
            ConfigBlob::write_in(lab.dir.path(), "config", &settings.blob(&config.to_bytes()))?;
        let socket = Socket::bind_in(lab.dir.path())?;
        let mut qemu = Qemu::start(Boot {
            config_blob: Some(blob),
            icount: shift.map(line::icount_options),
            netns: Some(&lab.ns),
            ..Boot::new(board, image, Network::Stream(socket.path()))
        })?;
        let stream = socket.accept(Duration::from_secs(10))?;
        qemu.wait_for_boot(BOOT_TIMEOUT)?;
        lab.line = Some(Line::start(settings, tap, stream)?);
        lab.qemu = Some(qemu);
        lab.configure(false)?;
        Ok(lab)
    }

    /// Configures the kernel side of the TAP and waits until the device answers ping.
    fn configure(&self, ack_every_segment: bool) -> anyhow::Result<()> {
        let host = format!("{}/24", self.subnet.host());
        self.run(&["ip", "addr", "add", &host, "dev", TAP])?;
        self.run(&["ip", "link", "set", TAP, "up"])?;
        if ack_every_segment {
            let route = format!(
                "{}/24 proto kernel scope link src {} quickack 1",
                Ipv4Addr::from(u32::from(self.subnet.host()) & !0xff),
                self.subnet.host()
            );
            let mut argv = vec!["ip", "route", "change"];
            argv.extend(route.split(' '));
            argv.extend(["dev", TAP]);
            self.run(&argv)?;
        }
        let device = self.subnet.device().to_string();
        for _ in 0..30 {
            if self
                .command(&["ping", "-c", "1", "-W", "1", &device])
                .output()
                .is_ok_and(|o| o.status.success())
            {
                return Ok(());
            }
        }
        bail!("the device booted but never answered ping");
    }

    /// Boots `image` of the pin-level `board` (see [`crate::pin_boot`]; `elf`: that build
    /// instead of building it) in a new namespace, the TAP and the line made inside it;
    /// waits until the device answers ping. The harness writes the chip's clock to
    /// [`Lab::pin_status`].
    pub fn boot_pin(
        board: crate::pin_board::PinBoard,
        image: &str,
        elf: Option<PathBuf>,
    ) -> anyhow::Result<Lab> {
        let mut lab = Lab::empty(Subnet::EMU)?;
        lab.run(&["ip", "link", "set", "lo", "up"])?;
        let usb = board.image(Some(image))?.carry == crate::pin_board::PinCarry::Usb;
        let port = lab.dir.path().join("ttyACM0");
        let prepared = crate::pin_boot::prepare(&crate::pin_boot::PinBootOptions {
            board,
            image: Some(image.into()),
            elf,
            tap: (!usb).then(|| TAP.into()),
            ip: (!usb).then_some((Subnet::EMU.device(), 24)),
            pty: usb.then(|| port.clone()),
            line: Default::default(),
            status: Some(lab.pin_status()),
            pcap: None,
            connect_timeout: BOOT_TIMEOUT,
        })?;
        // The TAP in the namespace; the harness from this thread, which outlives the board.
        let (prepared, tap) = lab.in_netns(move || {
            let tap = prepared.make_tap();
            tap.map(|t| (prepared, t))
        })??;
        lab.pin = Some(prepared.start_on(tap)?);
        if usb {
            lab.bridge_usb_port(&port)?;
        } else {
            lab.configure(false)?;
        }
        Ok(lab)
    }

    /// `linklab serial --dev PORT --tap TAP --ip HOST/24` in the namespace (this binary: the
    /// linklab CLI), then waits until the device answers ping through it.
    fn bridge_usb_port(&mut self, port: &Path) -> anyhow::Result<()> {
        let exe = std::env::current_exe().context("the linklab binary's path")?;
        let host = format!("{}/24", self.subnet.host());
        let child = self
            .command(&[exe.to_string_lossy().as_ref(), "serial", "--dev"])
            .arg(port)
            .args(["--baud", "4000000", "--tap", TAP, "--ip", &host])
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .spawn()
            .context("cannot start linklab serial on the USB port")?;
        self.usb_bridge = Some(child);
        let device = self.subnet.device().to_string();
        for _ in 0..60 {
            if self
                .command(&["ping", "-c", "1", "-W", "2", &device])
                .output()
                .is_ok_and(|o| o.status.success())
            {
                return Ok(());
            }
        }
        bail!("the device booted but never answered ping through its USB port")
    }

    /// The pin-level harness's status file: the chip's clock and its devices' counters.
    pub fn pin_status(&self) -> PathBuf {
        self.dir.path().join("pin-status.json")
    }

    /// Runs `f` on a thread of its own inside the lab's namespace: what it opens (a TAP, a
    /// socket) stays in the namespace wherever it is used after.
    pub fn in_netns<T: Send + 'static>(
        &self,
        f: impl FnOnce() -> T + Send + 'static,
    ) -> anyhow::Result<T> {
        let path = format!("/run/netns/{}", self.ns);
        std::thread::spawn(move || -> anyhow::Result<T> {
            let ns = std::fs::File::open(&path).with_context(|| format!("cannot open {path}"))?;
            nix::sched::setns(ns.as_fd(), CloneFlags::CLONE_NEWNET)
                .with_context(|| format!("cannot enter the namespace {path}"))?;
            Ok(f())
        })
        .join()
        .map_err(|_| anyhow::anyhow!("the namespace thread panicked"))?
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

    /// The device's address.
    pub fn device_ip(&self) -> Ipv4Addr {
        self.subnet.device()
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

    fn qemu(&self) -> anyhow::Result<&Qemu> {
        self.qemu.as_ref().context("the lab runs no QEMU")
    }

    /// The next console line starting with `prefix` (an image without `/stats` prints its
    /// work counters as `linklab work: ...` at boot and after each iperf3 test), waiting up
    /// to `timeout`.
    pub fn console_line(&mut self, prefix: &str, timeout: Duration) -> anyhow::Result<String> {
        let qemu = self.qemu.as_mut().context("the lab runs no QEMU")?;
        let lines = qemu.lines_until(prefix, timeout)?;
        lines
            .last()
            .cloned()
            .context("the console ended before the line")
    }

    /// The console lines so far that contain `text`, with the counter's readings.
    pub fn lines_containing(&self, text: &str) -> Vec<crate::qemu::Line> {
        self.qemu
            .as_ref()
            .map(|q| q.lines_containing(text))
            .unwrap_or_default()
    }

    /// Waits up to `timeout` for the console line containing `text` after the first `seen`
    /// such lines.
    pub fn wait_for_nth(
        &self,
        text: &str,
        seen: usize,
        timeout: Duration,
    ) -> anyhow::Result<crate::qemu::Line> {
        self.qemu()?.wait_for_nth(text, seen, timeout)
    }

    /// Reads the counter now (with a profile file if this boot profiles).
    pub fn mark(&self) -> anyhow::Result<Mark> {
        let c = self
            .counter
            .as_ref()
            .context("this lab's QEMU runs without the counter")?;
        counter::mark(c, self.profile.is_some())
    }

    /// The profile file a mark wrote.
    pub fn profile_file(&self, mark: &Mark) -> Option<PathBuf> {
        let base = self.profile.as_ref()?;
        let n = mark.profile?;
        Some(PathBuf::from(format!("{}.{n}", base.display())))
    }

    /// `len` bytes of guest memory at `addr` (a lab booted with a monitor).
    pub fn memory(&self, addr: u64, len: u64) -> anyhow::Result<Vec<u8>> {
        self.qemu()?.memory(addr, len)
    }

    /// The device's `/stats`.
    pub fn stats(&self) -> anyhow::Result<Value> {
        let url = format!("http://{}/stats", self.device_ip());
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
        if let Some(line) = self.line.take() {
            line.stop();
        }
        if let Some(mut bridge) = self.usb_bridge.take() {
            let pid = nix::unistd::Pid::from_raw(bridge.id() as i32);
            let _ = nix::sys::signal::kill(pid, nix::sys::signal::Signal::SIGTERM);
            let _ = bridge.wait();
        }
        if let Some(pin) = self.pin.take() {
            pin.stop();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.ns]).status();
    }
}
