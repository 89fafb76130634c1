//! `linklab serial`: linklab-serial's reliable framed link on a serial port (linklab-serve's
//! `serial`): bridged to a TAP, the device side, or the link's self-test.

use std::net::Ipv4Addr;
use std::path::PathBuf;

use anyhow::Context;
use linklab_results::{bail_usage, usage::usage, values};
use linklab_serve::serial::{self, Mode, Options, SelfTestOptions, MAX_PAYLOAD, MIN_SIZE};

/// Options of `linklab serial`.
#[derive(clap::Args, Debug)]
pub struct Args {
    /// The serial port or terminal (e.g. /dev/ttyUSB0, /dev/ttyACM0, /dev/pts/3).
    #[arg(long, value_name = "PATH", required = true)]
    dev: Option<String>,
    /// Line rate in baud (8N1: a byte is 10 bits), a standard rate.
    #[arg(long, value_name = "N", default_value_t = 115_200, value_parser = serial::baud)]
    baud: u32,
    /// Bridge the link to this TAP interface (created, and removed at exit).
    #[arg(long, value_name = "NAME", value_parser = values::interface_name)]
    tap: Option<String>,
    /// Run the device side here: smoltcp and the apps of `linklab serve`.
    #[arg(long)]
    serve: bool,
    /// Run the link's self-test against the other end.
    #[arg(long)]
    selftest: bool,
    /// With --tap: the kernel side's address; with --serve: the device's. ADDR/PREFIX.
    #[arg(long, value_name = "ADDR/PREFIX", value_parser = values::ipv4_with_prefix)]
    ip: Option<(Ipv4Addr, u8)>,
    /// With --serve: the device's MAC address [default: 02:4c:4c:00:00:01].
    #[arg(long, value_name = "MAC", value_parser = values::mac_address)]
    mac: Option<[u8; 6]>,
    /// With --selftest: payload sizes, comma separated, 16..=1514.
    #[arg(long, value_name = "LIST", value_delimiter = ',',
          default_value = "16,64,256,512,1024,1514",
          value_parser = values::ranged(MIN_SIZE, MAX_PAYLOAD))]
    sizes: Vec<usize>,
    /// With --selftest: frames sent one at a time per size (round trips), 1..=100000.
    #[arg(long, value_name = "N", default_value_t = 20, value_parser = values::ranged(1u32, 100_000))]
    rtt_frames: u32,
    /// With --selftest: frames streamed per size (goodput, inter-arrival), 1..=100000.
    #[arg(long, value_name = "N", default_value_t = 40, value_parser = values::ranged(1u32, 100_000))]
    stream_frames: u32,
    /// With --selftest: also write the results as JSON (input of `linklab report`).
    #[arg(long, value_name = "FILE")]
    json: Option<PathBuf>,
}

impl Args {
    fn mode(&self) -> anyhow::Result<Mode> {
        let chosen = [self.tap.is_some(), self.serve, self.selftest]
            .iter()
            .filter(|&&m| m)
            .count();
        if chosen != 1 {
            bail_usage!("give exactly one of --tap NAME, --serve or --selftest");
        }
        let ip = || {
            self.ip
                .ok_or_else(|| usage("--ip: required (ADDR/PREFIX, e.g. 198.18.0.1/24)"))
        };
        if let Some(name) = &self.tap {
            let (ip, prefix) = ip()?;
            return Ok(Mode::Tap {
                name: name.clone(),
                ip,
                prefix,
            });
        }
        if self.serve {
            let (ip, prefix) = ip()?;
            let mac = self.mac.unwrap_or([0x02, 0x4c, 0x4c, 0x00, 0x00, 0x01]);
            return Ok(Mode::Serve { ip, prefix, mac });
        }
        if self.ip.is_some() {
            bail_usage!("--ip: only with --tap or --serve");
        }
        Ok(Mode::SelfTest(SelfTestOptions {
            sizes: self.sizes.clone(),
            rtt_frames: self.rtt_frames,
            stream_frames: self.stream_frames,
        }))
    }
}

/// Runs `linklab serial`; with `--selftest --json FILE`, writes the self-test's document.
pub fn run(args: Args) -> anyhow::Result<()> {
    let mode = args.mode()?;
    let options = Options {
        // clap requires --dev.
        dev: args.dev.clone().unwrap_or_default(),
        baud: args.baud,
        mode,
    };
    let report = serial::run(&options)?;
    if let (Some(report), Some(path)) = (report, &args.json) {
        let text = serde_json::to_string_pretty(&report).context("the self-test's document")?;
        std::fs::write(path, text + "\n")
            .with_context(|| format!("--json: cannot write {}", path.display()))?;
    }
    Ok(())
}
