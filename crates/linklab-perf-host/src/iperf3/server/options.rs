//! What the server does with a test's parameters before the streams exist (iperf3's
//! `iperf_tcp_listen` / `iperf_udp_listen` and the affinity step): pin the CPU, listen
//! again with `-w`/`-M`/`-N` so accepted streams inherit them, set TOS, pacing and Don't
//! Fragment on the shared UDP socket; and undo it all after the test.

use socket2::SockRef;
use std::os::fd::AsRawFd;

use std::net::TcpListener;

use super::super::error::Error;
use super::super::report::TestText;
use super::super::sockets::{self, ListenConfig, StreamOptions};
use super::listening::Server;
use crate::sys;
use linklab_perf::iperf::errors::i_errno;
use linklab_perf::iperf::json::{Params, Protocol};

/// What the server changed for one test.
#[derive(Default)]
pub(super) struct TestSetup {
    /// The options of this test's data streams.
    pub(super) opts: StreamOptions,
    /// The listener was opened again with options; open a plain one after the test.
    listener_replaced: bool,
    /// The shared UDP socket's buffer sizes before `-w` changed them.
    udp_buffers: Option<(usize, usize)>,
    /// TOS or pacing were set on the shared UDP socket; clear them after the test.
    udp_marked: bool,
}

impl Server {
    /// Applies the parameters of a test; an error is what iperf3 would answer with
    /// SERVER_ERROR (`i_errno`, `errno`).
    pub(super) fn set_up(&mut self, p: &Params, text: &TestText) -> Result<TestSetup, Error> {
        let mut setup = TestSetup {
            opts: StreamOptions {
                window: p.window,
                mss: p.mss,
                nodelay: p.nodelay,
                tos: p.tos,
                flowlabel: 0,
                fq_rate_bps: p.fq_rate_bps,
                congestion: text.congestion.clone(),
                snd_timeout: self.cfg.snd_timeout,
                dont_fragment: p.dont_fragment,
                bind_dev: self.cfg.listen.bind_dev.clone(),
            },
            ..TestSetup::default()
        };
        if let Some(cpu) = p.server_affinity {
            sys::set_cpu_affinity(usize::from(cpu))
                .map_err(|e| sockets::iperf_err(i_errno::AFFINITY, &e))?;
        }
        let port = self.port;
        match p.protocol {
            Protocol::Tcp if p.window != 0 || p.mss != 0 || p.nodelay => {
                // Like iperf3: close the listener and open one with the options, so the
                // SYN-ACK of each data stream carries them. Control connections that try
                // meanwhile are refused, as with iperf3.
                self.listener = None;
                match sockets::listen_tcp(&self.cfg.listen, port, &setup.opts) {
                    Ok((l, _)) => {
                        self.listener = Some(l);
                        setup.listener_replaced = true;
                    }
                    Err(e) => {
                        self.listener = plain_listener(&self.cfg.listen, port);
                        return Err(e);
                    }
                }
            }
            Protocol::Tcp => {}
            Protocol::Udp => {
                let udp = self.udp.clone();
                if p.window != 0 {
                    let r = SockRef::from(&*udp);
                    let before = (
                        r.recv_buffer_size().unwrap_or(0),
                        r.send_buffer_size().unwrap_or(0),
                    );
                    setup.udp_buffers = Some(before);
                    sockets::set_buffers(&r, p.window)?;
                }
                let r = SockRef::from(&*udp);
                let v4 = udp.local_addr().is_ok_and(|a| a.is_ipv4());
                if p.tos != 0 {
                    setup.udp_marked = true;
                    // A dual-stack socket carries IPv4 clients too: mark both.
                    if v4 {
                        sockets::set_tos(&r, p.tos, false)?;
                    } else {
                        sockets::set_tos(&r, p.tos, true)?;
                        let _ = r.set_tos(u32::from(p.tos));
                    }
                }
                if p.fq_rate_bps != 0 {
                    setup.udp_marked = true;
                    let _ = sys::set_max_pacing_rate(udp.as_raw_fd(), p.fq_rate_bps / 8);
                }
                // iperf3 sets Don't Fragment on IPv4 sockets only.
                if p.dont_fragment && v4 {
                    sys::set_dont_fragment(udp.as_raw_fd())
                        .map_err(|e| sockets::iperf_err(i_errno::SET_DONT_FRAGMENT, &e))?;
                }
            }
        }
        Ok(setup)
    }

    /// Undoes what [`set_up`](Self::set_up) changed.
    pub(super) fn tear_down(&mut self, setup: &TestSetup) {
        let port = self.port;
        if setup.listener_replaced {
            self.listener = None;
            self.listener = plain_listener(&self.cfg.listen, port);
        }
        let r = SockRef::from(&*self.udp);
        if let Some((rcv, snd)) = setup.udp_buffers {
            let _ = r.set_recv_buffer_size(rcv / 2);
            let _ = r.set_send_buffer_size(snd / 2);
        }
        if setup.udp_marked {
            let _ = r.set_tos(0);
            let _ = r.set_tclass_v6(0);
            let _ = sys::set_max_pacing_rate(self.udp.as_raw_fd(), u64::from(u32::MAX));
        }
    }
}

/// A listener without test options (`None` if the port cannot be bound again).
fn plain_listener(cfg: &ListenConfig, port: u16) -> Option<TcpListener> {
    sockets::listen_tcp(cfg, port, &StreamOptions::default())
        .ok()
        .map(|(l, _)| l)
}
