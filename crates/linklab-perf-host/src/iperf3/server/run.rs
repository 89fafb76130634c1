//! One test after another: the control connection, the streams, the results exchange;
//! everyone else gets ACCESS_DENIED.

use std::io::{self, ErrorKind};
use std::net::TcpStream;
use std::os::fd::AsFd;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::super::control::Control;
use super::super::error::Error;
use super::super::measure::CpuMeter;
use super::super::observer::{Observer, Quiet};
use super::super::report::{ControlInfo, HostInterval, HostReport, ServerOutput, TestText};
use super::super::sockets::BufferSizes;
use super::super::streams::DataStreams;
use super::accept::Pending;
use super::config::ServerOutcome;
use super::listening::Server;
use super::options;
use crate::clock::now_us;
use crate::iperf2::serve_handed_over;
use crate::sys;
use linklab_perf::iperf::errors::i_errno;
use linklab_perf::iperf::session::{Failure, Phase, Session};
use linklab_perf::iperf::wire::{COOKIE_SIZE, DEFAULT_TCP_BLOCK_LEN, MAX_JSON_LEN};
use linklab_perf::time::Micros;
use nix::poll::PollFlags;

/// Largest results document the server sends (its output rides along with
/// `--get-server-output`); the buffer is only touched as far as the document goes.
const MAX_SERVER_OUTPUT: usize = 64 << 20;

impl Server {
    /// Serves tests until `stop` is set (checked at least every 100 ms), reporting each
    /// finished test to `on_test`. Returns after the current test when `stop` is set.
    pub fn serve(
        &mut self,
        stop: &AtomicBool,
        on_test: &mut dyn FnMut(ServerOutcome),
    ) -> io::Result<()> {
        while !stop.load(Ordering::Relaxed) {
            if let Some(outcome) = self.serve_one_until(stop)? {
                on_test(outcome);
            }
        }
        Ok(())
    }

    /// Waits for one client and runs its test (`-1`). `None` if `stop` was set first.
    pub fn serve_one_until(&mut self, stop: &AtomicBool) -> io::Result<Option<ServerOutcome>> {
        Ok(self
            .serve_one_observed(stop, &mut Quiet)?
            .map(|r| r.map(|h| h.report)))
    }

    /// Waits for one client and runs its test, telling `obs` about each step. `None` if
    /// `stop` was set first or `--idle-timeout` passed without a client.
    pub fn serve_one_observed(
        &mut self,
        stop: &AtomicBool,
        obs: &mut dyn Observer,
    ) -> io::Result<Option<Result<HostReport, Error>>> {
        let since = Instant::now();
        let ctrl = loop {
            if stop.load(Ordering::Relaxed) {
                return Ok(None);
            }
            if self.cfg.idle_timeout.is_some_and(|t| since.elapsed() >= t) {
                return Ok(None);
            }
            self.drain_udp();
            match self.listener()?.accept() {
                Ok((s, _)) => break s,
                Err(e) if e.kind() == ErrorKind::WouldBlock => {
                    sys::wait_fd(
                        self.listener()?,
                        PollFlags::POLLIN,
                        Duration::from_millis(100),
                    );
                }
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        };
        if is_iperf2_client(&ctrl) {
            let peer = ctrl.peer_addr()?;
            serve_handed_over(ctrl);
            return Ok(Some(Err(Error::Iperf2Client(peer))));
        }
        Ok(Some(self.run_test(ctrl, stop, obs)))
    }

    /// Discards stray datagrams while idle so old UDP tests cannot leak into new ones.
    fn drain_udp(&self) {
        let mut b = [0u8; 2048];
        while self.udp.recv_from(&mut b).is_ok() {}
    }

    fn run_test(
        &mut self,
        ctrl: TcpStream,
        stop: &AtomicBool,
        obs: &mut dyn Observer,
    ) -> Result<HostReport, Error> {
        let (mut rx, mut tx) = (vec![0u8; MAX_JSON_LEN], vec![0u8; MAX_SERVER_OUTPUT]);
        let mut session = Session::server(&mut rx, &mut tx);
        session.set_watchdog(self.cfg.watchdog.as_micros().max(1) as Micros);
        session.set_interval(self.cfg.interval.as_micros() as Micros);
        session.set_review_params(true);
        session.set_supplies_output(true);
        session.accept_control(now_us());
        let _ = ctrl.set_nodelay(true);
        if let Some(t) = self.cfg.snd_timeout {
            let _ = socket2::SockRef::from(&ctrl).set_tcp_user_timeout(Some(t));
        }
        ctrl.set_nonblocking(true)?;
        let control = ControlInfo {
            local: ctrl.local_addr()?,
            peer: ctrl.peer_addr()?,
            mss: socket2::SockRef::from(&ctrl).mss().unwrap_or(0),
            cookie: Default::default(),
        };
        self.stats.open_controls.fetch_add(1, Ordering::Relaxed);
        let mut run = TestRun {
            ctrl: Control::new(ctrl),
            data: DataStreams::with_file(DEFAULT_TCP_BLOCK_LEN, self.cfg.file.clone()),
            pending: Vec::new(),
            setup: None,
            control,
            cpu: None,
            limit: RateLimit::default(),
            report: None,
        };
        let result = self.run_loop(&mut session, &mut run, stop, obs);
        let open = run.data.open_count();
        run.data.close_all();
        self.set_open(open, 0);
        drop(run.pending);
        if let Some(s) = run.ctrl.sock.take() {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
        if let Some(setup) = run.setup.take() {
            self.tear_down(&setup);
        }
        self.stats.open_controls.fetch_sub(1, Ordering::Relaxed);
        self.drain_udp();
        let outcome = match (result, session.phase(), run.report) {
            (Err(e), _, _) => Err(e),
            (Ok(()), Phase::Failed(f), _) => Err(Error::Test(f)),
            (Ok(()), Phase::Done, Some(mut r)) => {
                r.report = session.report();
                r.peer = session.peer_summary().cloned();
                Ok(r)
            }
            (Ok(()), _, _) => Err(Error::Test(Failure::PeerTerminated)),
        };
        match &outcome {
            Ok(_) => self.stats.tests_done.fetch_add(1, Ordering::Relaxed),
            Err(_) => self.stats.tests_failed.fetch_add(1, Ordering::Relaxed),
        };
        outcome
    }

    /// The event loop of one test.
    fn run_loop(
        &mut self,
        session: &mut Session,
        run: &mut TestRun,
        stop: &AtomicBool,
        obs: &mut dyn Observer,
    ) -> Result<(), Error> {
        let mut announced = false;
        let mut started = false;
        loop {
            run.ctrl.flush(session)?;
            if session.is_finished() || stop.load(Ordering::Relaxed) {
                break;
            }
            if !announced && session.phase() != Phase::Cookie {
                announced = true;
                run.control.cookie =
                    String::from_utf8_lossy(&session.cookie()[..COOKIE_SIZE - 1]).into_owned();
                obs.connected(&run.control);
            }
            if session.params_pending() {
                self.review(session, run, obs);
                continue;
            }
            if !started && session.phase() == Phase::Running {
                started = true;
                run.cpu = Some(CpuMeter::start());
                run.data.last_rx = Instant::now();
                obs.started(session.params(), &BufferSizes::default());
            }
            let mut extra = vec![self.listener()?.as_fd(), self.udp.as_fd()];
            extra.extend(run.pending.iter().map(|p| p.sock.as_fd()));
            let before = run.data.open_count();
            let ready = run.data.step(session, &run.ctrl, Some(&extra))?;
            if ready.extra[1] {
                self.read_udp(session, &mut run.data, run.control.local.ip(), obs);
            }
            let was_running = session.phase() == Phase::Running;
            if ready.ctrl {
                if let (true, Some(cpu)) = (was_running, &run.cpu) {
                    session.set_cpu_util(cpu.percent());
                }
                run.ctrl.read(session);
            }
            // A client that connects right after this test's IPERF_DONE waits in the
            // backlog for the next test instead of being told the server is busy.
            if ready.extra[0] && !session.is_finished() {
                self.accept_new(session, &mut run.pending);
            }
            let opts = run
                .setup
                .as_ref()
                .map(|s| s.opts.clone())
                .unwrap_or_default();
            self.read_pending(session, &mut run.data, &mut run.pending, &opts, obs)?;
            session.poll(now_us());
            while let Some(iv) = session.take_interval() {
                let hiv = run.data.sample(iv);
                run.limit
                    .add(&hiv, self.cfg.interval, self.cfg.bitrate_limit)?;
                obs.interval(&hiv);
            }
            if was_running && session.phase() == Phase::ExchangeResults {
                // TEST_END: iperf3 closes the streams and prints its summary now, before
                // the results exchange (so that is what --get-server-output carries).
                run.data.close_sockets();
                let rep = self.our_report(session, run);
                obs.finished(&rep);
                run.report = Some(rep);
            }
            if session.results_held() {
                let extra = match obs.server_output() {
                    Some(ServerOutput::Text(t)) => {
                        format!("\"server_output_text\":{}", json_string(&t))
                    }
                    Some(ServerOutput::Json(v)) => format!("\"server_output_json\":{v}"),
                    None => String::new(),
                };
                session.send_results(extra.as_bytes());
            }
            if session.phase() == Phase::Running
                && !session.params().reverse
                && run.data.last_rx.elapsed() > self.cfg.rcv_timeout
            {
                return Err(Error::Iperf {
                    code: 144,
                    errno: 0,
                });
            }
            // iperf3 closes the data streams at TEST_END.
            if !session.should_read()
                && session.phase() != Phase::CreateStreams
                && run.data.open_count() > 0
            {
                run.data.close_sockets();
            }
            let after = run.data.open_count();
            self.set_open(before, after);
        }
        run.ctrl.flush(session)?;
        Ok(())
    }

    /// The client's parameters are in: apply them, or refuse them as iperf3 would.
    fn review(&mut self, session: &mut Session, run: &mut TestRun, obs: &mut dyn Observer) {
        let text = TestText::from_params_json(session.last_json());
        let p = *session.params();
        obs.params(&p, &text);
        match self.set_up(&p, &text) {
            Ok(setup) => {
                run.data.set_payload(p.len as usize, p.repeating_payload);
                if p.zerocopy && p.protocol == linklab_perf::iperf::Protocol::Tcp {
                    let _ = run.data.enable_zerocopy();
                }
                run.data.udp = Some(self.udp.clone());
                run.setup = Some(setup);
                session.accept_params();
            }
            Err(Error::Iperf { code, errno }) => session.refuse_params(code, errno),
            Err(e) => {
                let errno = match &e {
                    Error::Io(io) => io.raw_os_error().unwrap_or(0),
                    _ => 0,
                };
                session.refuse_params(i_errno::STREAM_LISTEN, errno)
            }
        }
    }

    /// Our side of the test at TEST_END.
    fn our_report(&self, session: &mut Session, run: &TestRun) -> HostReport {
        let cpu = run.cpu.as_ref().map(CpuMeter::percent);
        if let Some(c) = cpu {
            session.set_cpu_util(c);
        }
        HostReport {
            report: session.report(),
            control: run.control.clone(),
            streams: run.data.infos(),
            tcp: run.data.tcp.clone(),
            cpu,
            peer: None,
            congestion_used: session.congestion_used().map(String::from),
            sender_has_retransmits: session.our_results().sender_has_retransmits == 1,
            buffers: BufferSizes::default(),
            server_output: None,
        }
    }

    fn set_open(&self, before: usize, after: usize) {
        if after > before {
            self.stats
                .open_streams
                .fetch_add(after - before, Ordering::Relaxed);
        } else {
            self.stats
                .open_streams
                .fetch_sub(before - after, Ordering::Relaxed);
        }
    }
}

/// The state of one test on the server.
struct TestRun {
    ctrl: Control,
    data: DataStreams,
    pending: Vec<Pending>,
    setup: Option<options::TestSetup>,
    control: ControlInfo,
    cpu: Option<CpuMeter>,
    limit: RateLimit,
    report: Option<HostReport>,
}

/// `--server-bitrate-limit`: the total bytes of the last intervals (iperf3's
/// `iperf_check_total_rate`).
#[derive(Default)]
struct RateLimit {
    bytes: std::collections::VecDeque<u64>,
}

impl RateLimit {
    /// Adds an interval; fails like iperf3 once the average over the limit's window is
    /// above the limit.
    fn add(
        &mut self,
        iv: &HostInterval,
        interval: Duration,
        limit: Option<(f64, f64)>,
    ) -> Result<(), Error> {
        let Some((bps, window_s)) = limit else {
            return Ok(());
        };
        let step = interval.as_secs_f64();
        if step <= 0.0 {
            return Ok(());
        }
        let n = if window_s <= step {
            1
        } else {
            (window_s / step).round() as usize
        };
        self.bytes
            .push_back(iv.interval.streams.iter().map(|s| s.bytes).sum());
        while self.bytes.len() > n {
            self.bytes.pop_front();
        }
        if self.bytes.len() < n {
            return Ok(());
        }
        let total: u64 = self.bytes.iter().sum();
        if total as f64 * 8.0 / (step * n as f64) > bps {
            return Err(Error::Iperf { code: 27, errno: 0 });
        }
        Ok(())
    }
}

/// `s` as a JSON string literal.
fn json_string(s: &str) -> String {
    serde_json::Value::String(s.into()).to_string()
}

/// True if a new control connection's first bytes are an iperf 2 client's (a test header or
/// the digit pattern) rather than an iperf3 cookie: peeks (leaves them unread) for up to
/// 2 s until they tell (an iperf3 client writes its cookie at once, an iperf 2 client its
/// header).
fn is_iperf2_client(ctrl: &TcpStream) -> bool {
    use linklab_perf::iperf2::detect::{classify, FirstBytes};
    let _ = ctrl.set_nonblocking(true);
    let since = Instant::now();
    let mut buf = [0u8; COOKIE_SIZE];
    while since.elapsed() < Duration::from_secs(2) {
        let n = match ctrl.peek(&mut buf) {
            Ok(0) => return false,
            Ok(n) => n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => 0,
            Err(_) => return false,
        };
        if n > 0 && n < COOKIE_SIZE {
            std::thread::sleep(Duration::from_millis(2));
        }
        match classify(&buf[..n]) {
            FirstBytes::Iperf2Header | FirstBytes::Iperf2Pattern => return true,
            FirstBytes::Iperf3Cookie if n == COOKIE_SIZE => return false,
            FirstBytes::Unknown => return false,
            _ => {}
        }
        sys::wait_fd(ctrl, PollFlags::POLLIN, Duration::from_millis(20));
    }
    false
}
