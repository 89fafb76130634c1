//! [`DeviceApps`]' counters, named as every home names them ([`crate::app_counters`]).

use super::DeviceApps;
#[cfg(not(all(feature = "echo", feature = "http")))]
use super::Taken;
use crate::app_counters::{AppCounter, APP_COUNTERS};

impl<const N: usize, const S: usize, const H: usize, const M: usize> DeviceApps<'_, N, S, H, M> {
    /// Every app's counters, for `/stats` and the console (0 for an app the build lacks).
    pub fn counters(&self) -> [AppCounter; APP_COUNTERS] {
        #[cfg(feature = "echo")]
        let (e, echo_idle_closed, echo_taken) =
            (self.echo.counters(), self.echo_idle_closed, self.echo_taken);
        #[cfg(not(feature = "echo"))]
        let (e, echo_idle_closed, echo_taken) =
            (crate::echo::EchoCounters::default(), 0, Taken::default());
        #[cfg(feature = "http")]
        let (http_responses, http_idle_closed, http_taken) =
            (self.http_responses, self.http_idle_closed, self.http_taken);
        #[cfg(not(feature = "http"))]
        let (http_responses, http_idle_closed, http_taken) = (0, 0, Taken::default());
        #[cfg(feature = "iperf3")]
        let (i, iperf_open) = (self.iperf.counters(), self.iperf.open_streams());
        #[cfg(not(feature = "iperf3"))]
        let (i, iperf_open) = (crate::iperf::pool::ServerCounters::default(), 0);
        #[cfg(feature = "iperf2-tcp")]
        let i2 = crate::app_counters::iperf2_values(
            &self.iperf2().counters(),
            self.iperf2().open_streams(),
            // The one-socket server (without `iperf2`) has no SYN rule: nothing counted.
            #[cfg(feature = "iperf2")]
            &self.iperf2().syns(),
            #[cfg(not(feature = "iperf2"))]
            &crate::syns::SynCounts::new(),
        );
        #[cfg(not(feature = "iperf2-tcp"))]
        let i2 = [0u64; 16];
        let [er, ee, ea, es, eh, ed] = echo_taken.values();
        let [hr, he, ha, hs, hh, hd] = http_taken.values();
        let [is, ih, id] = crate::app_counters::syn_values(&i.syns);
        let [a, b, c, d, e2, f, g, h, i_, j, k, l, m, n_, o, p] = i2;
        crate::app_counters::named([
            e.udp_rx_datagrams,
            e.udp_tx_datagrams,
            e.udp_dropped,
            e.udp_unsent,
            e.tcp_connections,
            e.tcp_bytes,
            echo_idle_closed,
            er,
            ee,
            ea,
            es,
            eh,
            ed,
            http_responses,
            http_idle_closed,
            hr,
            he,
            ha,
            hs,
            hh,
            hd,
            u64::from(i.tests_done),
            u64::from(i.tests_failed),
            u64::from(i.denied),
            iperf_open as u64,
            u64::from(i.reclaimed),
            u64::from(i.evicted),
            u64::from(i.reclaimed_answered),
            is,
            ih,
            id,
            a,
            b,
            c,
            d,
            e2,
            f,
            g,
            h,
            i_,
            j,
            k,
            l,
            m,
            n_,
            o,
            p,
        ])
    }
}
