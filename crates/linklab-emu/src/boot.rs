//! `linklab emu BOARD --tap NAME --ip ADDR/PREFIX`: builds (or finds) the board's image, boots
//! it in QEMU with its network on a TAP, and hands it its address through a small
//! configuration blob that QEMU's loader puts in RAM (no rebuild per address). The user then
//! runs stock ping, curl and iperf3 against the device; a signal stops QEMU, which takes its
//! TAP with it. The blob is removed once the image has booted (QEMU read it when it started),
//! so a killed `linklab emu` leaves nothing in the temporary directory.
//!
//! The image's table entry says what its network is attached to: the NIC on a TAP QEMU
//! creates; the serial link on a pseudo-terminal, bridged here to the TAP; or the soft-PHY
//! line, which this process runs between the device and a TAP it creates ([`crate::line`]).
//!
//! Three steps, so a caller can install its signal handling between building and booting
//! (a build may take minutes, and must stay interruptible): [`prepare`] checks the options
//! and builds the image, [`Prepared::start`] boots it, [`Booted::serve`] serves until a
//! signal.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{bail, Context};
use linklab_perf::device_config::DeviceConfig;
use linklab_results::bail_usage;
use linklab_serve::serve::StopSignals;
use linklab_tap::Tap;

use crate::blob::ConfigBlob;
use crate::board::{Attach, Board, ImageSpec};
use crate::image;
use crate::line::{self, Line, LineOptions, LineSettings, Socket};
use crate::qemu::{self, Boot, Network, Qemu};

/// What boots an image: the board, the image, the TAP and the device's address.
#[derive(Clone, Debug)]
pub struct BootOptions {
    /// The emulated board.
    pub board: Board,
    /// The image: a name from the board's table, or an ELF file (None: `main`); see
    /// [`image::choose`].
    pub image: Option<PathBuf>,
    /// With an image name: this ELF file of that image instead of building it.
    pub elf: Option<PathBuf>,
    /// The TAP to create for the device; it must not exist yet.
    pub tap: String,
    /// The device's IPv4 address.
    pub ip: Ipv4Addr,
    /// Its prefix length.
    pub prefix: u8,
    /// The device's MAC address (None: [`DeviceConfig::DEFAULT`]'s).
    pub mac: Option<[u8; 6]>,
    /// Run QEMU with `-icount shift=N` (None: free-running).
    pub icount: Option<u32>,
    /// How long to wait for the firmware's boot line.
    pub boot_timeout: Duration,
    /// The soft-PHY line's options (an image with a line only).
    pub line: LineOptions,
}

/// An image ready to boot: the options checked, the ELF built.
pub struct Prepared {
    options: BootOptions,
    spec: &'static ImageSpec,
    image: PathBuf,
    line: Option<LineSettings>,
    config: DeviceConfig,
}

/// Checks `options` (one usage line for what does not fit) and finds or builds the image.
pub fn prepare(options: &BootOptions) -> anyhow::Result<Prepared> {
    let board = options.board;
    qemu::require(&board)?;
    let chosen = image::choose(&board, options.image.as_deref(), options.elf.as_deref())?;
    let spec = chosen.spec;
    if !spec.serves() {
        bail_usage!(
            "--image {}: {} (no network to boot it on; see linklab emu -h for the verb that runs it)",
            spec.name,
            spec.about
        );
    }
    let line = options.line.resolve(spec.attach == Attach::SoftPhyLine)?;
    let tap = &options.tap;
    if Path::new("/sys/class/net").join(tap).exists() {
        bail!("--tap {tap}: an interface of that name already exists; linklab emu only uses a TAP it creates (pick another name)");
    }
    let image = chosen.find_or_build(&board)?;
    Ok(Prepared {
        config: DeviceConfig {
            ip: options.ip.octets(),
            prefix: options.prefix,
            mac: options.mac.unwrap_or(DeviceConfig::DEFAULT.mac),
        },
        options: options.clone(),
        spec,
        image,
        line,
    })
}

/// The name of the configuration blob's file (`linklab-emu-PID-….cfg`).
fn blob_name() -> String {
    format!("linklab-emu-{}", std::process::id())
}

impl Prepared {
    /// Boots the image and waits for its boot line; with the soft-PHY line, the line runs
    /// from then on.
    pub fn start(self) -> anyhow::Result<Booted> {
        let o = &self.options;
        let timeout = o.boot_timeout;
        let icount = o.icount;
        if let Some(settings) = &self.line {
            let tap = Tap::open(&o.tap).with_context(|| format!("cannot create TAP {}", o.tap))?;
            let blob = ConfigBlob::write(&blob_name(), &settings.blob(&self.config.to_bytes()))?;
            let dir = crate::scratch::private_dir("linklab-line-")?;
            let socket = Socket::bind_in(dir.path())?;
            let mut qemu = Qemu::start(Boot {
                config_blob: Some(blob),
                icount: icount.map(line::icount_options),
                echo_console: true,
                ..Boot::new(&o.board, &self.image, Network::Stream(socket.path()))
            })?;
            let stream = socket.accept(Duration::from_secs(10))?;
            qemu.wait_for_boot(timeout)?;
            let line = Line::start(settings, tap, stream)?;
            return Ok(Booted {
                qemu,
                network: Served::Line {
                    line,
                    settings: settings.clone(),
                    _dir: dir,
                },
                prepared: self,
            });
        }
        let blob = ConfigBlob::write(&blob_name(), &self.config.to_bytes())?;
        let serial = self.spec.attach == Attach::SerialPty;
        let mut qemu = Qemu::start(Boot {
            config_blob: Some(blob),
            icount: icount.map(|n| format!("shift={n}")),
            echo_console: true,
            ..Boot::new(
                &o.board,
                &self.image,
                if serial {
                    Network::SerialPty
                } else {
                    Network::Tap(&o.tap)
                },
            )
        })?;
        qemu.wait_for_boot(timeout)?;
        let network = if serial {
            let pty = qemu
                .serial_pty()
                .context("QEMU did not say which pseudo-terminal it gave the UART")?;
            Served::Serial { pty }
        } else {
            Served::Tap
        };
        Ok(Booted {
            qemu,
            network,
            prepared: self,
        })
    }
}

/// A booted image, serving.
pub struct Booted {
    qemu: Qemu,
    network: Served,
    prepared: Prepared,
}

/// What a booted image's network is served by.
enum Served {
    /// QEMU's TAP.
    Tap,
    /// The serial image's UART, on this pseudo-terminal, bridged here to the TAP.
    Serial { pty: String },
    /// The soft-PHY line (its socket in a private folder).
    Line {
        line: Line,
        settings: LineSettings,
        _dir: tempfile::TempDir,
    },
}

/// How serving ended.
#[derive(Debug)]
pub struct Ended {
    /// The soft-PHY line's counters and laws in one line (`linklab emu: line k=v ...`).
    pub line_counters: Option<String>,
    /// The signal that stopped it (None: the serial bridge ended by itself), or why it
    /// failed.
    pub outcome: anyhow::Result<Option<i32>>,
}

impl Booted {
    /// The line that says where the device is and how to stop it.
    pub fn banner(&self) -> String {
        let o = &self.prepared.options;
        let (board, tap, ip, prefix) = (o.board.name, &o.tap, o.ip, o.prefix);
        match &self.network {
            Served::Tap => {
                let spec = self.prepared.spec;
                let which = if spec.name == "main" {
                    String::new()
                } else {
                    format!(" ({} image)", spec.name)
                };
                format!(
                    "linklab emu: {board}{which} on TAP {tap}, device {ip}/{prefix}; Ctrl-C stops it"
                )
            }
            Served::Serial { pty } => format!(
                "linklab emu: {board} (serial image) on {pty}, device {ip}/{prefix}, bridged to TAP {tap}; Ctrl-C stops it"
            ),
            Served::Line { settings: a, .. } => format!(
                "linklab emu: {board} soft PHY at {}x on TAP {tap} (drift {} ppm, jitter {} samples, noise {}, {}); Ctrl-C stops it",
                a.oversample,
                a.drift,
                a.jitter,
                a.noise,
                if a.no_pace { "unpaced" } else { "paced at 10 Mbit/s" }
            ),
        }
    }

    /// Serves until one of `signals` (or QEMU exits, or the line breaks: an error with the
    /// console's last lines); QEMU is stopped then.
    pub fn serve(self, signals: &StopSignals) -> Ended {
        let Booted {
            mut qemu,
            network,
            prepared,
        } = self;
        match network {
            Served::Serial { pty } => {
                let result =
                    linklab_serve::serial::bridge_pty(&pty, &prepared.options.tap, signals);
                qemu.stop();
                Ended {
                    line_counters: None,
                    outcome: result.map(|()| None),
                }
            }
            Served::Tap => {
                let outcome = wait(&mut qemu, None, signals);
                qemu.stop();
                Ended {
                    line_counters: None,
                    outcome: outcome.map(Some),
                }
            }
            Served::Line { line, .. } => {
                let outcome = wait(&mut qemu, Some(&line), signals);
                let counters = line.stop();
                qemu.stop();
                Ended {
                    line_counters: Some(counters.summary()),
                    outcome: outcome.map(Some),
                }
            }
        }
    }
}

/// Waits for a signal (its number), or fails when QEMU exits or the line breaks.
fn wait(qemu: &mut Qemu, line: Option<&Line>, signals: &StopSignals) -> anyhow::Result<i32> {
    loop {
        if let Some(sig) = signals.take() {
            return Ok(sig);
        }
        if let Some(status) = qemu.exited() {
            bail!(
                "QEMU exited ({status}); the console's last lines: {}",
                qemu.last_lines()
            );
        }
        if line.is_some_and(Line::broken) {
            bail!(
                "the line's socket closed; the console's last lines: {}",
                qemu.last_lines()
            );
        }
        linklab_serve::serve::wait_readable(
            &[std::os::fd::AsFd::as_fd(&signals)],
            Some(Duration::from_millis(200)),
        )?;
    }
}
