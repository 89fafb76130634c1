//! Control messages: the cookie, state bytes, the parameter and results documents, and the
//! replies each role sends (iperf3's `iperf_handle_message_server` / `_client`).

use super::{server_error, Failure, Phase, Session};
use crate::iperf::errors::errno;
use crate::iperf::json::{JsonError, Params, Protocol};
use crate::iperf::wire::{
    state, ControlMsg, Expect, UdpHeader, COOKIE_SIZE, MAX_BLOCK_LEN, MAX_PARALLEL,
    MAX_UDP_BLOCK_LEN,
};
use crate::time::Micros;

impl<const S: usize> Session<'_, S> {
    /// Feeds bytes read from the control connection; returns how many were used. Call
    /// again with the rest while it makes progress (it stops after each message so the
    /// caller can act on a phase change, e.g. open streams).
    pub fn control_input(&mut self, data: &[u8], now: Micros) -> usize {
        self.now = now;
        if data.is_empty() || self.is_finished() || self.test.phase == Phase::Idle {
            return 0;
        }
        self.test.last_activity = now;
        let (used, msg) = match self.reader.push(data) {
            Ok(r) => r,
            Err(_) => {
                if !self.is_client() && self.test.phase == Phase::ParamExchange {
                    self.server_error(server_error::RECV_PARAMS, 0);
                }
                self.fail(Failure::BadJson(JsonError::Malformed));
                return data.len();
            }
        };
        if let Some(msg) = msg {
            if self.is_client() {
                #[cfg(feature = "iperf-host")]
                self.client_msg(msg, now);
            } else {
                self.server_msg(msg);
            }
        }
        used
    }

    /// The control connection closed (EOF or reset).
    pub fn control_closed(&mut self, now: Micros) {
        self.now = now;
        match self.test.phase {
            // The server has everything once results went out; a client that hangs up
            // instead of sending IPERF_DONE has still completed the test.
            Phase::Display if !self.is_client() => self.test.phase = Phase::Done,
            _ => self.fail(Failure::ControlClosed),
        }
    }

    /// Queues SERVER_ERROR with iperf3's `i_errno` `code` and an `errno`.
    fn server_error(&mut self, code: i32, errno: i32) {
        self.push_state(state::SERVER_ERROR);
        let mut b = [0u8; 8];
        b[..4].copy_from_slice(&code.to_be_bytes());
        b[4..].copy_from_slice(&errno.to_be_bytes());
        self.push_out(&b);
    }

    /// Server: true while the test's parameters wait for the adapter's verdict (see
    /// [`set_review_params`](Self::set_review_params)); [`params`](Self::params) holds them.
    pub fn params_pending(&self) -> bool {
        self.test.params_pending && !self.is_finished()
    }

    /// Server: the adapter can honour the parameters; the client may open its streams.
    pub fn accept_params(&mut self) {
        if self.params_pending() {
            self.test.params_pending = false;
            self.push_state(state::CREATE_STREAMS);
            self.test.phase = Phase::CreateStreams;
        }
    }

    /// Server: the adapter cannot honour the parameters: answer SERVER_ERROR with iperf3's
    /// `i_errno` and the `errno` of the refusal, as a stock server whose socket rejects an
    /// option does, and end the test.
    pub fn refuse_params(&mut self, i_errno: i32, errno: i32) {
        if self.params_pending() {
            self.test.params_pending = false;
            self.server_error(i_errno, errno);
            self.fail(Failure::Refused(i_errno, errno));
        }
    }

    /// Server: true while our results wait for the adapter's output (the client asked for
    /// it with `--get-server-output` and [`set_supplies_output`](Self::set_supplies_output)
    /// is on): call [`send_results`](Self::send_results).
    pub fn results_held(&self) -> bool {
        self.test.results_held && !self.is_finished()
    }

    /// Server: sends our results with `extra` appended to the document as raw object
    /// members (e.g. `"server_output_text":"..."`), then DISPLAY_RESULTS.
    pub fn send_results(&mut self, extra: &[u8]) {
        if !self.results_held() {
            return;
        }
        self.test.results_held = false;
        let ours = self.our_results();
        self.push_json(|b| {
            let n = ours.to_json(b)?;
            crate::iperf::json::append_members(b, n, extra)
        });
        self.push_state(state::DISPLAY_RESULTS);
        self.test.phase = Phase::Display;
    }

    fn server_msg(&mut self, msg: ControlMsg) {
        match (self.test.phase, msg) {
            (Phase::Cookie, ControlMsg::Cookie) => {
                let mut c = [0u8; COOKIE_SIZE];
                c.copy_from_slice(
                    self.reader
                        .payload()
                        .get(..COOKIE_SIZE)
                        .unwrap_or(&[0; COOKIE_SIZE]),
                );
                self.test.cookie = c;
                self.push_state(state::PARAM_EXCHANGE);
                self.reader.expect(Expect::Json);
                self.test.phase = Phase::ParamExchange;
            }
            (Phase::ParamExchange, ControlMsg::Json(_)) if !self.test.params_pending => {
                match Params::from_json(self.reader.payload()) {
                    Err(e) => {
                        self.server_error(server_error::RECV_PARAMS, 0);
                        self.fail(Failure::BadJson(e));
                    }
                    Ok(p) => match check_params(&p) {
                        Err((code, errno, why)) => {
                            self.server_error(code, errno);
                            self.fail(Failure::BadParams(why));
                        }
                        Ok(()) => {
                            self.test.params = p;
                            self.test.params_pending = true;
                            if !self.review_params {
                                self.accept_params();
                            }
                        }
                    },
                }
            }
            (Phase::Running, ControlMsg::State(state::TEST_END)) => {
                self.stop_clock();
                self.push_state(state::EXCHANGE_RESULTS);
                self.reader.expect(Expect::Json);
                self.test.phase = Phase::ExchangeResults;
            }
            (Phase::ExchangeResults, ControlMsg::Json(_)) if !self.test.results_held => {
                if self.take_peer_results() {
                    self.test.results_held = true;
                    if !(self.supplies_output && self.test.params.get_server_output) {
                        self.send_results(&[]);
                    }
                }
            }
            (Phase::Display, ControlMsg::State(state::IPERF_DONE)) => self.test.phase = Phase::Done,
            (_, ControlMsg::State(state::TEST_START)) => {}
            (_, ControlMsg::State(state::CLIENT_TERMINATE)) => self.fail(Failure::PeerTerminated),
            (_, ControlMsg::State(s)) => self.fail(Failure::UnexpectedState(s)),
            _ => self.fail(Failure::UnexpectedMessage),
        }
    }

    #[cfg(feature = "iperf-host")]
    fn client_msg(&mut self, msg: ControlMsg, now: Micros) {
        match (self.test.phase, msg) {
            (_, ControlMsg::State(state::ACCESS_DENIED)) => self.fail(Failure::AccessDenied),
            (_, ControlMsg::State(state::SERVER_ERROR)) => self.reader.expect(Expect::ErrorCodes),
            (_, ControlMsg::ErrorCodes(a, b)) => self.fail(Failure::ServerError(a, b)),
            (_, ControlMsg::State(state::SERVER_TERMINATE)) => self.fail(Failure::PeerTerminated),
            (Phase::ParamExchange, ControlMsg::State(state::PARAM_EXCHANGE)) => {
                let (p, text) = (self.test.params, self.strings);
                self.push_json(|b| p.to_json_with(&text, b));
            }
            (Phase::ParamExchange, ControlMsg::State(state::CREATE_STREAMS)) => {
                self.test.phase = Phase::CreateStreams;
            }
            (Phase::CreateStreams, ControlMsg::State(state::TEST_START)) => {
                self.start_clock(now);
                self.test.phase = Phase::Starting;
            }
            (Phase::Starting, ControlMsg::State(state::TEST_RUNNING)) => {
                self.test.phase = Phase::Running
            }
            (Phase::Running | Phase::Ending, ControlMsg::State(state::EXCHANGE_RESULTS)) => {
                self.stop_clock();
                let ours = self.our_results();
                self.push_json(|b| ours.to_json(b));
                self.reader.expect(Expect::Json);
                self.test.phase = Phase::ExchangeResults;
            }
            (Phase::ExchangeResults, ControlMsg::Json(_)) => {
                if self.take_peer_results() {
                    self.test.phase = Phase::Display;
                }
            }
            (Phase::Display, ControlMsg::State(state::DISPLAY_RESULTS)) => {
                self.push_state(state::IPERF_DONE);
                self.test.phase = Phase::Done;
            }
            (_, ControlMsg::State(s)) => self.fail(Failure::UnexpectedState(s)),
            _ => self.fail(Failure::UnexpectedMessage),
        }
    }
}

/// Checks parameters against what any of our servers supports; on error gives the
/// SERVER_ERROR codes (`i_errno`, `errno`) and why.
fn check_params(p: &Params) -> Result<(), (i32, i32, &'static str)> {
    if p.sctp {
        // What a stock server on a host without SCTP answers.
        return Err((
            server_error::STREAM_LISTEN,
            errno::EPROTONOSUPPORT,
            "SCTP is not supported",
        ));
    }
    if p.parallel == 0 || usize::from(p.parallel) > MAX_PARALLEL {
        return Err((
            server_error::NUM_STREAMS,
            0,
            "parallel streams must be 1..=8",
        ));
    }
    let len = p.len as usize;
    let (ok, code) = match p.protocol {
        Protocol::Tcp => ((1..=MAX_BLOCK_LEN).contains(&len), server_error::BLOCK_SIZE),
        Protocol::Udp => (
            (UdpHeader::len(p.udp_counters_64bit)..=MAX_UDP_BLOCK_LEN).contains(&len),
            server_error::UDP_BLOCK_SIZE,
        ),
    };
    if !ok {
        return Err((code, 0, "block length out of range"));
    }
    Ok(())
}

/// Checks client parameters before a test (same limits the server applies).
pub fn validate_params(p: &Params) -> Result<(), &'static str> {
    check_params(p).map_err(|(_, _, why)| why)
}
