//! `linklab emu --cost-parts`: instructions per part of the device's work (RX interrupt per
//! frame and per byte, main loop per pass, per received and transmitted frame and byte), the
//! counts the simulator's `riscv32-measured` profile charges. QEMU runs at `-icount shift=0`;
//! stock iperf3 moves data both ways with three segment sizes (the kernel side's MTU sets the
//! MSS both ends use: the device refuses iperf3's `-M`, as a stack without a settable MSS
//! does) and once paced (`-b`, so
//! the main loop makes more passes per frame); each transfer gives the firmware's work
//! counters (`/stats` `cpu.work`) and the MAC's frame and byte counters, less one `/stats`
//! fetch; two curl downloads from the device's HTTP server give that server's own per-byte
//! cost; a least-squares fit over the transfers gives the parts. Each run's residual is kept
//! in the output so the fit can be judged.

use std::path::Path;

use anyhow::{bail, Context};
use linklab_sim::measured::{fingerprint, MeasuredCounts, Parts, SOURCES};
use serde_json::{json, Value};

use super::board::Board;
use super::lab::Lab;

/// The command that writes the data file (from the repository root).
pub const COMMAND: &str = "linklab emu --board riscv32-virt --cost-parts --json crates/linklab-sim/data/riscv32-measured.json";

/// The transfers: the kernel side's MTU (1500, or 576 / 1040 for 536- / 1000-byte segments
/// both ways), then iperf3 options after `-c DEVICE -J`; then curl downloads from the device's
/// HTTP server (whose body generation costs more per byte than iperf3's source: its own part).
const RUNS: [(u16, &[&str]); 6] = [
    (1500, &["-n", "2M"]),
    (576, &["-n", "2M"]),
    (1500, &["-n", "1M", "-b", "20M"]),
    (1500, &["-n", "2M", "-R"]),
    (576, &["-n", "2M", "-R"]),
    (1040, &["-n", "1M", "-R"]),
];
/// The HTTP downloads (paths on the device).
const HTTP_RUNS: [&str; 2] = ["/1MB.txt", "/100kB.txt"];

/// One transfer's counts (differences of `/stats`).
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    isr: f64,
    main: f64,
    passes: f64,
    rx_frames: f64,
    rx_bytes: f64,
    tx_frames: f64,
    tx_bytes: f64,
    /// Bytes the device's HTTP server sent (its body generation's own per-byte cost).
    http_bytes: f64,
}

impl Counts {
    /// `later − earlier` (the ISR counter wraps at 32 bits).
    fn between(earlier: &Value, later: &Value) -> anyhow::Result<Counts> {
        let get = |v: &Value, path: &[&str]| -> anyhow::Result<u64> {
            let mut x = v;
            for p in path {
                x = &x[*p];
            }
            x.as_u64()
                .with_context(|| format!("/stats has no {}", path.join(".")))
        };
        let d = |path: &[&str]| -> anyhow::Result<f64> {
            Ok(get(later, path)?.wrapping_sub(get(earlier, path)?) as f64)
        };
        let isr = (get(later, &["cpu", "work", "isr"])? as u32)
            .wrapping_sub(get(earlier, &["cpu", "work", "isr"])? as u32);
        Ok(Counts {
            isr: f64::from(isr),
            main: d(&["cpu", "work", "main"])?,
            passes: d(&["cpu", "work", "loops"])?,
            rx_frames: d(&["mac", "rx_packets"])?,
            rx_bytes: d(&["mac", "rx_bytes"])?,
            tx_frames: d(&["mac", "tx_packets"])?,
            tx_bytes: d(&["mac", "tx_bytes"])?,
            http_bytes: 0.0,
        })
    }

    fn minus(&self, o: &Counts) -> Counts {
        Counts {
            isr: self.isr - o.isr,
            main: self.main - o.main,
            passes: self.passes - o.passes,
            rx_frames: self.rx_frames - o.rx_frames,
            rx_bytes: self.rx_bytes - o.rx_bytes,
            tx_frames: self.tx_frames - o.tx_frames,
            tx_bytes: self.tx_bytes - o.tx_bytes,
            http_bytes: self.http_bytes,
        }
    }

    fn isr_row(&self) -> Vec<f64> {
        vec![self.rx_frames, self.rx_bytes, self.tx_frames]
    }

    fn main_row(&self) -> Vec<f64> {
        vec![
            self.passes,
            self.rx_frames,
            self.rx_bytes,
            self.tx_frames,
            self.tx_bytes,
            self.http_bytes,
        ]
    }
}

/// Least squares: the `x` minimizing |A x − y|, by the normal equations (a handful of
/// unknowns, well-scaled after dividing each column by its largest value). None if singular.
fn least_squares(a: &[Vec<f64>], y: &[f64]) -> Option<Vec<f64>> {
    let n = a.first()?.len();
    let scale: Vec<f64> = (0..n)
        .map(|j| a.iter().map(|r| r[j].abs()).fold(0.0, f64::max).max(1e-12))
        .collect();
    // Normal equations M x' = b with x' = x · scale.
    let mut m = vec![vec![0.0; n + 1]; n];
    for (row, &yi) in a.iter().zip(y) {
        for i in 0..n {
            for j in 0..n {
                m[i][j] += row[i] / scale[i] * row[j] / scale[j];
            }
            m[i][n] += row[i] / scale[i] * yi;
        }
    }
    for c in 0..n {
        let p = (c..n).max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))?;
        if m[p][c].abs() < 1e-9 {
            return None;
        }
        m.swap(c, p);
        let pivot = m[c].clone();
        for (r, row) in m.iter_mut().enumerate() {
            if r != c {
                let f = row[c] / pivot[c];
                for (x, p) in row.iter_mut().zip(&pivot).skip(c) {
                    *x -= f * p;
                }
            }
        }
    }
    Some((0..n).map(|i| m[i][n] / m[i][i] / scale[i]).collect())
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn round3(x: f64) -> f64 {
    (x * 1000.0).round() / 1000.0
}

/// Runs the transfers and fits the parts; the data file's content.
pub fn cost_parts(board: &Board, image: &Path) -> anyhow::Result<Value> {
    if board.name != "riscv32-virt" {
        bail!("--cost-parts: only on riscv32-virt (its minstret counts instructions; the Cortex-M3 board counts time awake)");
    }
    let root = super::image::firmware_dir()
        .parent()
        .context("the firmware folder has no parent")?
        .to_path_buf();
    let sources: Vec<String> = SOURCES.iter().map(|s| s.to_string()).collect();
    let print = fingerprint(&root, &sources).context("cannot fingerprint the measured sources")?;

    let lab = Lab::boot(board, image, Some("shift=0".into()))?;
    let s0 = lab.stats()?;
    let mut prev = lab.stats()?;
    let fetch = Counts::between(&s0, &prev)?;
    let mut runs = Vec::new();
    for (mtu, opts) in RUNS {
        let mtu = mtu.to_string();
        lab.run(&["ip", "link", "set", "dev", super::lab::TAP, "mtu", &mtu])?;
        lab.iperf3(opts)?;
        lab.run(&["ip", "link", "set", "dev", super::lab::TAP, "mtu", "1500"])?;
        let next = lab.stats()?;
        let what = format!("{} (kernel-side MTU {mtu})", opts.join(" "));
        runs.push((what, Counts::between(&prev, &next)?.minus(&fetch)));
        prev = next;
    }
    for path in HTTP_RUNS {
        let url = format!("http://{}{path}", super::lab::DEVICE_IP);
        lab.run(&["curl", "-sS", "--max-time", "60", "-o", "/dev/null", &url])?;
        let next = lab.stats()?;
        let mut c = Counts::between(&prev, &next)?.minus(&fetch);
        c.http_bytes = c.tx_bytes;
        runs.push((format!("curl {path}"), c));
        prev = next;
    }
    if prev["conservation"]["holds"].as_bool() != Some(true) {
        bail!("--cost-parts: the MAC's conservation law does not hold after the runs");
    }

    let isr_rows: Vec<Vec<f64>> = runs.iter().map(|(_, c)| c.isr_row()).collect();
    let isr_y: Vec<f64> = runs.iter().map(|(_, c)| c.isr).collect();
    let main_rows: Vec<Vec<f64>> = runs.iter().map(|(_, c)| c.main_row()).collect();
    let main_y: Vec<f64> = runs.iter().map(|(_, c)| c.main).collect();
    let isr = least_squares(&isr_rows, &isr_y).context("the interrupt's fit is singular")?;
    let main = least_squares(&main_rows, &main_y).context("the main loop's fit is singular")?;
    let parts = Parts {
        isr_per_rx_frame: round3(isr[0]),
        isr_per_rx_byte: round3(isr[1]),
        isr_per_tx_frame: round3(isr[2]),
        main_per_pass: round3(main[0]),
        main_per_rx_frame: round3(main[1]),
        main_per_rx_byte: round3(main[2]),
        main_per_tx_frame: round3(main[3]),
        main_per_tx_byte: round3(main[4]),
        http_per_tx_byte: round3(main[5]),
    };
    let run_json: Vec<Value> = runs
        .iter()
        .map(|(opts, c)| {
            let pi = dot(&c.isr_row(), &isr);
            let pm = dot(&c.main_row(), &main);
            json!({
                "transfer": opts,
                "isr": c.isr, "main": c.main, "passes": c.passes,
                "rx_frames": c.rx_frames, "rx_bytes": c.rx_bytes,
                "tx_frames": c.tx_frames, "tx_bytes": c.tx_bytes,
                "isr_fit_error_pct": round3((pi - c.isr) / c.isr.max(1.0) * 100.0),
                "main_fit_error_pct": round3((pm - c.main) / c.main.max(1.0) * 100.0),
            })
        })
        .collect();
    let data = MeasuredCounts {
        about: "Instructions per part of the device's work on linklab's riscv32imac firmware \
                (riscv32-virt, virtio-net), counted with minstret under QEMU -icount shift=0 \
                over stock iperf3 transfers and curl downloads (each less one /stats fetch), \
                fitted by least squares; read by linklab-sim's riscv32-measured profile"
            .into(),
        command: COMMAND.into(),
        isa: board.isa.into(),
        icount: "shift=0".into(),
        sources,
        fingerprint: print,
        parts,
        runs: Value::Array(run_json),
    };
    Ok(serde_json::to_value(data)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn least_squares_recovers_exact_coefficients() {
        let x = [3.0, 0.5, 200.0];
        let a: Vec<Vec<f64>> = [
            [10.0, 15_000.0, 5.0],
            [20.0, 10_000.0, 9.0],
            [7.0, 700.0, 30.0],
            [1.0, 60.0, 1.0],
        ]
        .iter()
        .map(|r| r.to_vec())
        .collect();
        let y: Vec<f64> = a.iter().map(|r| dot(r, &x)).collect();
        let got = least_squares(&a, &y).unwrap();
        for (g, w) in got.iter().zip(x) {
            assert!((g - w).abs() < 1e-6 * w.abs().max(1.0), "{got:?}");
        }
        assert!(least_squares(&[vec![1.0, 2.0], vec![2.0, 4.0]], &[1.0, 2.0]).is_none());
    }
}
