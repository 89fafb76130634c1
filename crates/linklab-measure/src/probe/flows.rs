//! The TCP loads of the latency step: one iperf3 test to the device, from it (`-R`) or both
//! ways (`--bidir`), run by our own client, with each interval's bytes per direction and the
//! retransmissions our sending streams counted (`TCP_INFO`), timed on the step's clock.

use std::time::{Duration, Instant};

use linklab_perf::iperf::{Params, Protocol};
use linklab_perf_host::iperf3::{run_client_observed, HostInterval, Observer};

use linklab_results::probe::latency::FlowInterval;

use super::steps::iperf_config;
use crate::sweep::{client_config, client_error, is_resetting};

/// Which way a load's TCP runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Way {
    /// We send to the device.
    ToDevice,
    /// The device sends to us (`-R`).
    FromDevice,
    /// Both at once (`--bidir`).
    Both,
}

impl Way {
    /// Every load, in the order they run.
    pub const ALL: [Way; 3] = [Way::ToDevice, Way::FromDevice, Way::Both];

    /// The load's name in the document.
    pub fn name(self) -> &'static str {
        match self {
            Way::ToDevice => "to_device",
            Way::FromDevice => "from_device",
            Way::Both => "both",
        }
    }

    /// What runs it.
    pub fn via(self) -> &'static str {
        match self {
            Way::ToDevice => "iperf3",
            Way::FromDevice => "iperf3 -R",
            Way::Both => "iperf3 --bidir",
        }
    }
}

/// A load that ran: its goodput each way and its intervals on the step's clock.
pub struct Flow {
    /// What the device received over the test (the server's count), bit/s; none without a
    /// flow that way.
    pub to_device_bps: Option<f64>,
    /// What we received from the device, bit/s.
    pub from_device_bps: Option<f64>,
    /// Each interval, seconds since the step's epoch (this side's count: what we wrote, or
    /// with a flow from the device what we read).
    pub intervals: Vec<FlowInterval>,
}

/// Records each interval against the step's epoch.
struct Recorder {
    epoch: Instant,
    /// The test's start on the step's clock, set at the first interval.
    test_start_s: Option<f64>,
    intervals: Vec<FlowInterval>,
}

impl Observer for Recorder {
    fn interval(&mut self, iv: &HostInterval) {
        let i = &iv.interval;
        if i.omitted || i.end_s <= i.start_s {
            return;
        }
        let now = self.epoch.elapsed().as_secs_f64();
        let start = *self.test_start_s.get_or_insert(now - i.end_s);
        let seconds = i.end_s - i.start_s;
        let rate = |sender: bool| {
            let streams: Vec<u64> = i
                .streams
                .iter()
                .filter(|s| s.sender == sender)
                .map(|s| s.bytes)
                .collect();
            (!streams.is_empty()).then(|| streams.iter().sum::<u64>() as f64 * 8.0 / seconds)
        };
        let retransmits: Vec<u64> = iv.tcp.iter().flatten().map(|t| t.retransmits).collect();
        self.intervals.push(FlowInterval {
            start_s: start + i.start_s,
            end_s: start + i.end_s,
            to_device_bps: rate(true),
            from_device_bps: rate(false),
            retransmits: (!retransmits.is_empty()).then(|| retransmits.iter().sum()),
        });
    }
}

/// Runs one load of `seconds` against the iperf3 server at `host:port`, its intervals every
/// `slice`; a server still resetting from the test before is asked again twice.
pub fn run(
    host: &str,
    port: u16,
    way: Way,
    seconds: u32,
    slice: Duration,
    epoch: Instant,
) -> anyhow::Result<Flow> {
    let cfg = iperf_config(host, port, false, seconds, way == Way::FromDevice, true);
    let params = Params {
        protocol: Protocol::Tcp,
        duration_s: seconds,
        reverse: way == Way::FromDevice,
        bidirectional: way == Way::Both,
        parallel: 1,
        len: 0,
        ..Params::default()
    };
    let client = client_config(&cfg, params, slice);
    let mut tries = 0;
    loop {
        let mut rec = Recorder {
            epoch,
            test_start_s: None,
            intervals: Vec::new(),
        };
        match run_client_observed(&client, &mut rec).map_err(|e| client_error(&cfg, e)) {
            Ok(r) => {
                let goodput = |d: Option<&linklab_perf::iperf::report::DirectionReport>| {
                    d.map(|d| d.bits_per_second_received)
                };
                return Ok(Flow {
                    to_device_bps: goodput(r.report.forward.as_ref()),
                    from_device_bps: goodput(r.report.reverse.as_ref()),
                    intervals: rec.intervals,
                });
            }
            Err(e) if is_resetting(&e) && tries < 2 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(500));
            }
            Err(e) => return Err(e),
        }
    }
}
