//! linklab beside lwIP on the same emulated board, counted by the same method in one run
//! (needs root, QEMU's qemu-system-arm, iperf, iperf3, gcc and curl):
//!
//! ```sh
//! cargo bench -p linklab --bench lwip_side_by_side                    # the table
//! cargo bench -p linklab --bench lwip_side_by_side -- --write-readme  # and into docs/lwip.md, firmware/README.md
//! ```
//!
//! Both images run on QEMU 7.2's `mps2-an385` (Cortex-M3, LAN9118), free-running, with
//! linklab's own TCG plugin (linklab-emu's `counted/insncount.c`, built here with gcc) counting
//! every executed guest instruction; the bench reads the count over a socket at each mark,
//! so a mark is exact rather than interpolated. Per image: the idle rate over 4 s, then
//! 10 MiB to the device and 10 MiB from it (lwIP's lwiperf speaks iperf 2: `iperf -n 10M`
//! and the second half of the tradeoff `-n 10M -r`, counted from lwiperf's console report of
//! the first half's end to the client's exit; linklab's images speak iperf3: `-n 10M` and
//! `-R`, but the compact one, which serves iperf 2 alone: `iperf -n 10M` and `-R`),
//! instructions per payload byte = (instructions − idle rate × seconds) / the bytes
//! the receiving side counted. Flash and RAM come from every image's ELF by one rule
//! (flash: allocated sections with contents; RAM: allocated writable sections but a stack
//! reserve); the stack row is each image's deepest use (linklab's painted peak; lwIP's
//! lowest touched byte of its zero-started stack, read through QEMU's monitor). The main
//! image is also counted by `linklab emu cost` (`-icount shift=0`, the device's own
//! count), which should agree.
//!
//! The lwIP image: `$LINKLAB_LWIP_ELF` (the lwIP 2.2.1 peer's `lwip_perf_O2.elf`
//! built for mps2-an385), else `tests/data/lwip-2.2.1-mps2-an385.elf`. linklab's images are built from `firmware/` (`$LINKLAB_IMAGE` counts that
//! ELF as the main image instead).
//!
//! Options (after `--`): `--runs N` (default 2), `--write-readme`, `--json FILE`,
//! `--throughput` (adds each device's Mbit/s at 31.25 MIPS: take it last, on a quiet
//! machine), `--profile` (per-function instructions per byte of every transfer), `--no-cost`
//! (skip `linklab emu cost`), `--only lwip|main|compact|minimal|embassy` (repeatable; the
//! embassy image, `fw-mps2-an385-embassy`, is counted only when named).

#[path = "lwip_side_by_side/report.rs"]
mod report;

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context};

use linklab_emu::cost::{self, CostOptions};
use linklab_emu::counted::image::{Address, Image as Counted, Speaks};
use linklab_emu::counted::measure::{self, Counting};
use linklab_emu::counted::{counter, throughput};
use linklab_emu::image::ImageChoice;
use linklab_emu::{board::Board, elf};
use report::Column;

/// The lwIP peer image's NIC address (its netif reads the one QEMU gives the LAN9118).
const LWIP_MAC: &str = "02:4c:57:00:00:02";
/// linklab's address on the same link.
const LINKLAB_MAC: [u8; 6] = [0x02, 0x4c, 0x4c, 0, 0, 0x02];

/// One image to count.
struct Image {
    /// Short name for `--only` and file names.
    key: &'static str,
    label: String,
    elf: PathBuf,
    speaks: Speaks,
    /// Counted by `linklab emu cost` too.
    device_count: bool,
}

#[derive(Default)]
struct Options {
    runs: usize,
    write_readme: bool,
    json: Option<PathBuf>,
    throughput: bool,
    profile: bool,
    cost: bool,
    only: Vec<String>,
}

fn options() -> anyhow::Result<Options> {
    let mut o = Options {
        runs: 2,
        cost: true,
        ..Options::default()
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--bench" => {}
            "--runs" => {
                o.runs = args
                    .next()
                    .and_then(|n| n.parse().ok())
                    .filter(|&n| n > 0)
                    .context("--runs takes a positive number")?
            }
            "--write-readme" => o.write_readme = true,
            "--json" => o.json = Some(args.next().context("--json takes a file")?.into()),
            "--throughput" => o.throughput = true,
            "--profile" => o.profile = true,
            "--no-cost" => o.cost = false,
            "--only" => o.only.push(args.next().context("--only takes an image")?),
            other => bail!("unknown option {other} (see the bench's doc comment)"),
        }
    }
    Ok(o)
}

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// The lwIP peer's ELF (see the module docs).
fn lwip_elf() -> anyhow::Result<PathBuf> {
    if let Some(p) = std::env::var_os("LINKLAB_LWIP_ELF") {
        return Ok(p.into());
    }
    let candidates =
        [Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/lwip-2.2.1-mps2-an385.elf")];
    candidates
        .into_iter()
        .find(|p| p.is_file())
        .context("no lwIP image: set LINKLAB_LWIP_ELF to the peer's lwip_perf_O2.elf")
}

/// Builds (or finds built) mps2-an385's image `name` from `firmware/`, as the board table
/// says, and returns its ELF.
fn build_firmware(name: &str) -> anyhow::Result<PathBuf> {
    let board = Board::by_name("mps2-an385").map_err(anyhow::Error::msg)?;
    linklab_emu::image::Chosen {
        spec: board.image(name)?,
        elf: None,
    }
    .find_or_build(&board)
}

fn images(o: &Options) -> anyhow::Result<Vec<Image>> {
    let wanted = |k: &str| o.only.is_empty() || o.only.iter().any(|w| w == k);
    let mut v = Vec::new();
    if wanted("lwip") {
        v.push(Image {
            key: "lwip",
            label: "lwIP 2.2.1 -O2 (perf config)".into(),
            elf: lwip_elf()?,
            speaks: Speaks::Lwip,
            device_count: false,
        });
    }
    if wanted("main") {
        let elf = match std::env::var_os("LINKLAB_IMAGE") {
            Some(p) => PathBuf::from(p),
            None => build_firmware("main")?,
        };
        v.push(Image {
            key: "main",
            label: "linklab main loop".into(),
            elf,
            speaks: Speaks::Linklab {
                stats: true,
                defmt: false,
                iperf2: false,
            },
            device_count: true,
        });
    }
    // The embassy image, only when asked for by name (it is not in the README's table).
    if o.only.iter().any(|w| w == "embassy") {
        v.push(Image {
            key: "embassy",
            label: "linklab embassy".into(),
            elf: build_firmware("embassy")?,
            speaks: Speaks::Linklab {
                stats: true,
                defmt: true,
                iperf2: false,
            },
            // `linklab emu cost` takes an ELF given by path as a main-loop image.
            device_count: false,
        });
    }
    // The images built with the `minimal` profile: lwIP's feature set (iperf 2 alone), the
    // iperf3 server alone.
    for (key, label) in [
        ("compact", "linklab compact (lwIP's feature set)"),
        ("minimal", "linklab minimal"),
    ] {
        if !wanted(key) || std::env::var_os("LINKLAB_IMAGE").is_some() {
            continue;
        }
        v.push(Image {
            key,
            label: label.into(),
            elf: build_firmware(key)?,
            speaks: Speaks::Linklab {
                stats: false,
                defmt: false,
                iperf2: key == "compact",
            },
            device_count: false,
        });
    }
    Ok(v)
}

/// Where the bench keeps its profiles (with `--profile`).
fn work_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| repo().join("target"), PathBuf::from)
        .join("lwip_side_by_side")
}

/// `linklab emu cost` on `elf` (a main-loop image given as an ELF): instructions per byte
/// received and sent, as the device counts them.
fn device_count(elf: &Path) -> anyhow::Result<(f64, f64)> {
    let report = cost::run(&CostOptions {
        image: ImageChoice {
            board: Board::by_name("mps2-an385").map_err(anyhow::Error::msg)?,
            image: Some(elf.to_path_buf()),
            elf: None,
        },
        line: Default::default(),
        iperf2: false,
    })
    .context("linklab emu cost")?;
    Ok((report.rx_instr_per_byte, report.tx_instr_per_byte))
}

fn run() -> anyhow::Result<()> {
    let o = options()?;
    for (tool, package) in [
        ("qemu-system-arm", "qemu-system-arm"),
        ("iperf", "iperf"),
        ("iperf3", "iperf3"),
        ("gcc", "gcc"),
        ("curl", "curl"),
        ("ip", "iproute2"),
    ] {
        let found = Command::new("sh")
            .args(["-c", &format!("command -v {tool}")])
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            bail!("{tool} not found: install Debian's {package} package");
        }
    }
    let dir = work_dir();
    std::fs::create_dir_all(&dir).with_context(|| format!("cannot create {}", dir.display()))?;
    // The plugin QEMU loads, in a folder of its own no one else can write to.
    let plugin_dir = tempfile::tempdir().context("cannot create the plugin's folder")?;
    let images = images(&o)?;
    let counting = Counting {
        plugin: counter::build_plugin(&plugin_dir)?,
        profiles: o.profile.then(|| dir.clone()),
        ack_every_segment: false,
    };
    let mut columns: Vec<Column> = images
        .iter()
        .map(|i| {
            Ok(Column {
                label: i.label.clone(),
                elf: i.elf.display().to_string(),
                runs: Vec::new(),
                size: elf::size(&i.elf)?,
                device_count: None,
                throughput: None,
            })
        })
        .collect::<anyhow::Result<_>>()?;
    let counted = |i: &Image| Counted {
        elf: i.elf.clone(),
        speaks: i.speaks,
        address: match i.speaks {
            Speaks::Lwip => Address::BuiltIn(LWIP_MAC.to_string()),
            Speaks::Linklab { .. } => Address::Blob(LINKLAB_MAC),
        },
    };
    for round in 0..o.runs {
        for (i, c) in images.iter().zip(columns.iter_mut()) {
            let tag = format!("{}{round}", i.key);
            let counted = measure::count(&tag, &counted(i), &counting)
                .with_context(|| format!("counting {}", i.label))?;
            if let Err(e) = &counted.stack_peak {
                eprintln!("{tag}: no stack figure: {e}");
            }
            eprintln!(
                "{}: received {:.3}, sent {:.3} instructions per byte",
                i.label, counted.receive.per_byte, counted.send.per_byte
            );
            c.runs.push(counted);
        }
    }
    if o.cost {
        for (i, c) in images.iter().zip(columns.iter_mut()) {
            if i.device_count {
                c.device_count = Some(device_count(&i.elf)?);
            }
        }
    }
    if o.throughput {
        for (i, c) in images.iter().zip(columns.iter_mut()) {
            c.throughput = Some(throughput::measure(&counted(i))?);
        }
    }
    let load = std::fs::read_to_string("/proc/loadavg").unwrap_or_default();
    let table = report::table(&columns);
    println!("{table}");
    if o.profile {
        println!("{}", report::profiles(&columns));
    }
    println!("load average at the end: {}", load.trim());
    if let Some(path) = &o.json {
        let text = serde_json::to_string_pretty(&report::json(&columns, load.trim()))?;
        std::fs::write(path, text).with_context(|| format!("cannot write {}", path.display()))?;
    }
    if o.write_readme {
        // The write-up and the firmware README's cost table: one table, two places.
        for doc in ["docs/lwip.md", "firmware/README.md"] {
            report::write_readme(&repo().join(doc), &table)?;
        }
    }
    Ok(())
}

fn main() {
    if let Err(e) = run() {
        eprintln!("lwip_side_by_side: {e:#}");
        std::process::exit(1);
    }
}
