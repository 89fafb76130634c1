//! The W5500 model's SPI figures, as the rp2040js harness's status file reports them (the
//! W5500-EVB-Pico test's: bytes per payload byte, the share of time that carries payload).

use serde_json::Value;

use super::emulated_clock::Status;

/// The SPI's counters at one moment (the harness's status).
#[derive(Clone)]
pub struct Spi(pub Value);

impl Spi {
    /// The counters in the harness's status now.
    pub fn at(status: &Status) -> Spi {
        Spi(status.read())
    }

    /// Counter `key` (0 when absent).
    pub fn n(&self, key: &str) -> f64 {
        self.0[key].as_f64().unwrap_or(0.0)
    }

    /// What the SPI did between `before` and now, for `payload` application bytes moved: one
    /// line of figures, and the rate in Mbit/s of the chip's clock.
    pub fn since(&self, before: &Spi, payload: u64) -> (String, f64) {
        let d = |k: &str| self.n(k) - before.n(k);
        let secs = d("emulated_ns") / 1e9;
        let mbps = payload as f64 * 8.0 / secs / 1e6;
        let byte_ns = self.n("spi_byte_ns");
        let elapsed = d("emulated_ns");
        let mut kinds: Vec<(String, f64)> = self.0["spi_kinds"]
            .as_object()
            .map(|o| {
                o.iter()
                    .map(|(k, v)| {
                        let was = before.0["spi_kinds"][k]["selected_ns"]
                            .as_f64()
                            .unwrap_or(0.0);
                        (k.clone(), v["selected_ns"].as_f64().unwrap_or(0.0) - was)
                    })
                    .collect()
            })
            .unwrap_or_default();
        kinds.sort_by(|a, b| b.1.total_cmp(&a.1));
        let top: Vec<String> = kinds
            .iter()
            .take(4)
            .map(|(k, ns)| format!("{k} {:.0} %", ns / d("spi_selected_ns") * 100.0))
            .collect();
        // The median time between transactions, as the bucket of the histogram it falls in.
        let hist: Vec<f64> = (0..self.0["spi_gap_hist"].as_array().map_or(0, |a| a.len()))
            .map(|i| {
                self.0["spi_gap_hist"][i].as_f64().unwrap_or(0.0)
                    - before.0["spi_gap_hist"][i].as_f64().unwrap_or(0.0)
            })
            .collect();
        let bounds: Vec<f64> = self.0["spi_gap_buckets_ns"]
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_f64).collect())
            .unwrap_or_default();
        let half = hist.iter().sum::<f64>() / 2.0;
        let mut seen = 0.0;
        let median = hist.iter().position(|n| {
            seen += n;
            seen >= half
        });
        let median = match median {
            Some(0) => format!("under {:.2} µs", bounds[0] / 1e3),
            Some(i) if i < bounds.len() => {
                format!("{:.2}-{:.2} µs", bounds[i - 1] / 1e3, bounds[i] / 1e3)
            }
            _ => "over the last bucket".into(),
        };
        let line = format!(
            "{payload} B in {secs:.3} s: {mbps:.2} Mbit/s; SPI {:.2} bytes per payload byte, \
             payload {:.1} % of the time (frame bytes {:.1} %, SCK running {:.1} %, CS low {:.1} %), \
             {:.0} transactions, between them median {median}, mean {:.1} µs; CS-low time by kind: {}",
            d("spi_bytes") / payload as f64,
            payload as f64 * byte_ns / elapsed * 100.0,
            d("spi_frame_clocked_ns") / elapsed * 100.0,
            d("spi_clocked_ns") / elapsed * 100.0,
            d("spi_selected_ns") / elapsed * 100.0,
            d("spi_transactions"),
            d("spi_gap_ns") / d("spi_gaps").max(1.0) / 1e3,
            top.join(", ")
        );
        (line, mbps)
    }
}
