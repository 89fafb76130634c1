//! The client's parameters accepted, or refused as a stock iperf3 server refuses what its
//! sockets or its build cannot do.

use super::{PoolServer, PoolSockets, Slot};
use crate::iperf::errors::{errno, i_errno};
use crate::iperf::json::{Params, Protocol};
use crate::socket::TcpOps;

impl<'a, E: Copy + PartialEq, const N: usize, const S: usize> PoolServer<'a, E, N, S> {
    /// Accepts the client's parameters or refuses what a device stack cannot do, with the
    /// SERVER_ERROR a stock server sends when setsockopt fails: `-w` (buffers are fixed
    /// when the sockets are made), `-M` (no MSS option), `-S`/`--dscp` (no TOS option),
    /// `-A ,m` for a CPU other than 0 (one core). The rest is honoured: `-N` (the device
    /// never uses Nagle), `-Z` (data is sent in place), `--dont-fragment` (smoltcp always
    /// sets DF), `--fq-rate` (paced by the session), `-C` (reported, like a stock server
    /// that lacks the algorithm, as the congestion control actually used).
    pub(super) fn review<P: PoolSockets>(&mut self, sockets: &mut P, n: usize) {
        let p = *self.session.params();
        let ipv6 = self.slots[..n]
            .iter()
            .position(|s| *s == Slot::Control)
            .is_some_and(|i| sockets.tcp(i).remote_is_ipv6());
        match refusal(&p, ipv6, self.stream_capacity(n)) {
            Some((code, err)) => self.session.refuse_params(code, err),
            None => {
                if n > 0 {
                    let cc = sockets.tcp(0).congestion_control();
                    self.session.set_congestion_used(cc);
                }
                self.session.accept_params();
            }
        }
    }
}

/// True when `p` asks for a mode this build leaves out (features `iperf-udp`,
/// `iperf-parallel`, `iperf-bidir`, `iperf-rate`).
fn unimplemented(p: &Params) -> bool {
    let paced = p.rate_bps != 0 || p.fq_rate_bps != 0 || p.burst != 0;
    (p.protocol == Protocol::Udp && !cfg!(feature = "iperf-udp"))
        || (p.parallel > 1 && !cfg!(feature = "iperf-parallel"))
        || (p.bidirectional && !cfg!(feature = "iperf-bidir"))
        || (paced && !cfg!(feature = "iperf-rate"))
}

/// What the device refuses of `p`, as (`i_errno`, `errno`); `ipv6` if the client came over
/// IPv6 (TOS is then the traffic class); `capacity` the streams its sockets carry.
fn refusal(p: &Params, ipv6: bool, capacity: usize) -> Option<(i32, i32)> {
    let streams = usize::from(p.parallel.max(1)) * if p.bidirectional { 2 } else { 1 };
    if unimplemented(p) {
        // What iperf3 answers for a protocol or option it was built without (SCTP, QUIC).
        Some((i_errno::UNIMP, 0))
    } else if streams > capacity {
        Some((i_errno::NUM_STREAMS, 0))
    } else if p.window != 0 {
        Some((i_errno::SET_BUF, errno::EOPNOTSUPP))
    } else if p.mss != 0 {
        Some((i_errno::SET_MSS, errno::EOPNOTSUPP))
    } else if p.tos != 0 && ipv6 {
        Some((i_errno::SET_COS, errno::EOPNOTSUPP))
    } else if p.tos != 0 {
        Some((i_errno::SET_TOS, errno::EOPNOTSUPP))
    } else if p.server_affinity.is_some_and(|cpu| cpu != 0) {
        Some((i_errno::AFFINITY, errno::EINVAL))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_what_a_device_stack_cannot_do() {
        let refusal = |p: &Params, ipv6| refusal(p, ipv6, 2);
        let ok = Params::default();
        assert_eq!(refusal(&ok, false), None);
        let with = |f: fn(&mut Params)| {
            let mut p = Params::default();
            f(&mut p);
            p
        };
        assert_eq!(
            refusal(&with(|p| p.window = 8192), false),
            Some((i_errno::SET_BUF, errno::EOPNOTSUPP))
        );
        assert_eq!(
            refusal(&with(|p| p.mss = 1000), false),
            Some((i_errno::SET_MSS, errno::EOPNOTSUPP))
        );
        assert_eq!(
            refusal(&with(|p| p.tos = 0x20), true).map(|r| r.0),
            Some(i_errno::SET_COS)
        );
        assert_eq!(
            refusal(&with(|p| p.server_affinity = Some(1)), false),
            Some((i_errno::AFFINITY, errno::EINVAL))
        );
        let honoured = with(|p| {
            p.nodelay = true;
            p.zerocopy = true;
            p.dont_fragment = true;
            if cfg!(feature = "iperf-rate") {
                p.fq_rate_bps = 1_000_000;
            }
            p.server_affinity = Some(0);
        });
        assert_eq!(refusal(&honoured, false), None);
    }

    #[test]
    fn refuses_more_streams_than_the_sockets_carry() {
        let p = Params {
            parallel: 2,
            ..Params::default()
        };
        let refused = refusal(&p, false, 1).map(|r| r.0);
        let expected = if cfg!(feature = "iperf-parallel") {
            i_errno::NUM_STREAMS
        } else {
            i_errno::UNIMP
        };
        assert_eq!(refused, Some(expected));
        assert_eq!(refusal(&Params::default(), false, 1), None);
    }

    /// The modes a build leaves out are refused with iperf3's "not implemented".
    #[test]
    fn left_out_modes_are_not_implemented() {
        let udp = Params {
            protocol: Protocol::Udp,
            ..Params::default()
        };
        let bidir = Params {
            bidirectional: true,
            ..Params::default()
        };
        let parallel = Params {
            parallel: 2,
            ..Params::default()
        };
        let rate = Params {
            rate_bps: 10_000_000,
            ..Params::default()
        };
        let fq_rate = Params {
            fq_rate_bps: 10_000_000,
            ..Params::default()
        };
        let burst = Params {
            burst: 10,
            ..Params::default()
        };
        for (p, built) in [
            (udp, cfg!(feature = "iperf-udp")),
            (bidir, cfg!(feature = "iperf-bidir")),
            (parallel, cfg!(feature = "iperf-parallel")),
            (rate, cfg!(feature = "iperf-rate")),
            (fq_rate, cfg!(feature = "iperf-rate")),
            (burst, cfg!(feature = "iperf-rate")),
        ] {
            let want = (!built).then_some((i_errno::UNIMP, 0));
            assert_eq!(refusal(&p, false, 16), want, "{p:?}");
        }
    }
}
