//! `linklab serial --selftest` against `linklab serial --serve` over two pseudo-terminals and
//! the tests' rate-limited relay (crates/linklab/tests/pty_relay): the link between two real
//! processes at a UART's byte rate, with the host's scheduling in the picture. Writes the
//! self-test JSON (render it with `linklab report`).
//!
//! ```sh
//! cargo build --release -p linklab && \
//!   cargo run --release -p linklab --example serial_pty -- 115200 out/serial-115200.json
//! ```

use std::process::{Command, Stdio};

use linklab_serial::impair::Impairment;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let baud: u64 = args.get(1).and_then(|b| b.parse().ok()).unwrap_or(115_200);
    let json = args
        .get(2)
        .cloned()
        .unwrap_or_else(|| "serial-selftest.json".into());
    let sizes = args
        .get(3)
        .cloned()
        .unwrap_or_else(|| "16,64,256,1024,1514".into());
    let bin = std::env::current_exe()
        .expect("own path")
        .parent()
        .and_then(|p| p.parent())
        .expect("target dir")
        .join("linklab");
    assert!(
        bin.exists(),
        "build the CLI first: cargo build --release -p linklab"
    );
    let relay = linklab_testkit::pty_relay::start(baud / 10, Impairment::default(), 1);
    let baud_s = baud.to_string();
    let mut serve = Command::new(&bin)
        .args(["serial", "--dev", &relay.b, "--baud", &baud_s, "--serve"])
        .args(["--ip", "198.18.9.2/24"])
        .stdout(Stdio::null())
        .spawn()
        .expect("start --serve");
    let status = Command::new(&bin)
        .args(["serial", "--dev", &relay.a, "--baud", &baud_s, "--selftest"])
        .args([
            "--sizes",
            &sizes,
            "--rtt-frames",
            "100",
            "--stream-frames",
            "50",
        ])
        .args(["--json", &json])
        .status()
        .expect("run --selftest");
    let _ = serve.kill();
    let _ = serve.wait();
    assert!(status.success());
}
