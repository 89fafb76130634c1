//! What a probe run is made of: its steps in order with their share of the time, and which
//! iperf measures the device — iperf3 where a server answered on its port, else iperf 2
//! (`--iperf auto`), or the one `--iperf 3|2` names.

use linklab_results::probe::{Service, ServiceState};

/// The steps, in the order they run, with their share of the time.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Step {
    /// ICMP echo round trips.
    Icmp,
    /// UDP echo round trips.
    EchoUdp,
    /// TCP echo round trips.
    EchoTcp,
    /// HTTP downloads.
    Http,
    /// TCP each way through the iperf in use.
    Tcp,
    /// A UDP sweep to the device.
    SweepTo,
    /// A UDP sweep from the device.
    SweepFrom,
    /// Round trips idle and while TCP runs each way and both (`latency`).
    Latency,
}

impl Step {
    /// Every step, in order.
    pub const ALL: [Step; 8] = [
        Step::Icmp,
        Step::EchoUdp,
        Step::EchoTcp,
        Step::Http,
        Step::Tcp,
        Step::SweepTo,
        Step::SweepFrom,
        Step::Latency,
    ];

    /// The name in the JSON and on screen.
    pub fn name(self) -> &'static str {
        match self {
            Step::Icmp => "icmp",
            Step::EchoUdp => "echo-udp",
            Step::EchoTcp => "echo-tcp",
            Step::Http => "http",
            Step::Tcp => "tcp",
            Step::SweepTo => "sweep-to-device",
            Step::SweepFrom => "sweep-from-device",
            Step::Latency => "latency",
        }
    }

    /// The service it needs (`iperf`: whichever iperf measures).
    pub fn service(self) -> &'static str {
        match self {
            Step::Icmp => "icmp",
            Step::EchoUdp => "echo-udp",
            Step::EchoTcp => "echo-tcp",
            Step::Http => "http",
            Step::Tcp | Step::SweepTo | Step::SweepFrom | Step::Latency => IPERF,
        }
    }

    /// Its share of the time, relative to the others that run: the TCP tests' rounds, the
    /// sweeps' repeats and the latency step's loads want the most.
    pub fn weight(self) -> f64 {
        match self {
            Step::Icmp | Step::EchoUdp | Step::EchoTcp => 0.6,
            Step::Http => 1.0,
            Step::Tcp => 6.0,
            Step::SweepTo | Step::SweepFrom => 3.0,
            Step::Latency => 5.0,
        }
    }

    /// The prefix of its figures' ids (they are replaced when it runs); iperf 2's figures
    /// are `iperf2.`-prefixed, so a baseline never compares them with iperf3's.
    pub fn figure_prefix(self, iperf2: bool) -> &'static str {
        match (self, iperf2) {
            (Step::Icmp, _) => "icmp.",
            (Step::EchoUdp, _) => "echo_udp.",
            (Step::EchoTcp, _) => "echo_tcp.",
            (Step::Http, _) => "http.",
            (Step::Tcp, false) => "tcp.",
            (Step::Tcp, true) => "iperf2.tcp.",
            (Step::SweepTo, false) => "udp.knee.to_device",
            (Step::SweepTo, true) => "iperf2.udp.knee.to_device",
            (Step::SweepFrom, false) => "udp.knee.from_device",
            (Step::SweepFrom, true) => "iperf2.udp.knee.from_device",
            (Step::Latency, _) => "latency",
        }
    }
}

impl std::str::FromStr for Step {
    type Err = String;

    /// A step by its name (`--only`).
    fn from_str(name: &str) -> Result<Step, String> {
        Step::ALL
            .into_iter()
            .find(|s| s.name() == name)
            .ok_or_else(|| {
                let names: Vec<&str> = Step::ALL.iter().map(|s| s.name()).collect();
                format!("no step {name:?}; the steps are {}", names.join(", "))
            })
    }
}

/// The service name the iperf steps need: whichever iperf was chosen.
pub const IPERF: &str = "iperf";

/// Which iperf to look for (`--iperf auto|3|2`).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum IperfChoice {
    /// iperf3 on its port (5201), else iperf 2 on 5001.
    Auto,
    /// iperf3 only.
    Three,
    /// iperf 2 only.
    Two,
}

/// iperf3's port by default.
pub const IPERF3_PORT: u16 = 5201;
/// iperf 2's port by default.
pub const IPERF2_PORT: u16 = 5001;

impl IperfChoice {
    /// The ports discovery asks, `(iperf3, iperf2)`: `--iperf-port` is the port of the
    /// iperf named, or with `auto` iperf3's (iperf 2 is then asked on 5001).
    pub fn ports(self, given: Option<u16>) -> (Option<u16>, Option<u16>) {
        match self {
            IperfChoice::Auto => (Some(given.unwrap_or(IPERF3_PORT)), Some(IPERF2_PORT)),
            IperfChoice::Three => (Some(given.unwrap_or(IPERF3_PORT)), None),
            IperfChoice::Two => (None, Some(given.unwrap_or(IPERF2_PORT))),
        }
    }
}

/// The iperf server that measures the device.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Iperf {
    /// 3 or 2.
    pub version: u8,
    /// Its port.
    pub port: u16,
    /// iperf 2: the server replied with its version (a 2.1 server: `-R` on the one
    /// connection); without it the tests ask for `-r` (lwiperf connects back).
    pub replies: bool,
}

impl Iperf {
    /// iperf 2 (its figures are `iperf2.`-prefixed).
    pub fn is_iperf2(&self) -> bool {
        self.version == 2
    }
}

/// The iperf discovery found ready: iperf3 when present, else iperf 2.
pub fn choose(services: &[Service]) -> Option<Iperf> {
    let present = |name: &str| {
        services
            .iter()
            .find(|s| s.name == name && s.state == ServiceState::Present)
    };
    if let Some(s) = present("iperf3") {
        return Some(Iperf {
            version: 3,
            port: s.port?,
            replies: true,
        });
    }
    present("iperf2").and_then(|s| {
        Some(Iperf {
            version: 2,
            port: s.port?,
            replies: s.version.is_some(),
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn svc(name: &str, state: ServiceState, version: Option<&str>) -> Service {
        Service {
            name: name.into(),
            port: Some(if name == "iperf3" { 5201 } else { 5001 }),
            state,
            detail: String::new(),
            version: version.map(Into::into),
        }
    }

    #[test]
    fn the_port_given_is_the_iperf_named() {
        assert_eq!(IperfChoice::Auto.ports(None), (Some(5201), Some(5001)));
        assert_eq!(
            IperfChoice::Auto.ports(Some(6000)),
            (Some(6000), Some(5001))
        );
        assert_eq!(IperfChoice::Three.ports(None), (Some(5201), None));
        assert_eq!(IperfChoice::Two.ports(Some(6001)), (None, Some(6001)));
    }

    #[test]
    fn iperf3_first_then_iperf2() {
        use ServiceState::*;
        let three = [svc("iperf3", Present, None), svc("iperf2", Present, None)];
        assert_eq!(choose(&three).map(|i| i.version), Some(3));
        let two = [
            svc("iperf3", Failed, None),
            svc("iperf2", Present, Some("2.1.8")),
        ];
        let i = choose(&two).unwrap();
        assert!(i.is_iperf2() && i.replies && i.port == 5001);
        let silent = [svc("iperf3", Absent, None), svc("iperf2", Present, None)];
        assert!(!choose(&silent).unwrap().replies);
        assert_eq!(
            choose(&[svc("iperf3", Absent, None), svc("iperf2", Absent, None)]),
            None
        );
    }
}
