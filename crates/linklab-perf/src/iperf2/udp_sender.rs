//! The sending side of an iperf 2 UDP flow, sans-IO ([`UdpSender`]): datagrams of `-l`
//! bytes paced at `-b`, each starting with the datagram header (id from 1, the send time)
//! and, from a client, its test header; after `-t`/`-n` the FIN — the next id negated —
//! and, when a report is awaited, a repeat every 10 ms (each with the id one further, as
//! 2.1.8's `AwaitServerFinPacket` does) until a report arrives or 200 tries (2 s) pass.
//! Used by the client, by the server for UDP `-R` (no report awaited) and for a UDP
//! `-r`/`-d` connect-back.

use super::pattern;
use super::request::{Amount, HeaderStyle, TestRequest};
use super::wire::ack::HeaderAck;
use super::wire::datagram::DatagramFormat;
use super::wire::header::TCP_LEN as TCP_HEADER_LEN;
use super::wire::report::{ReportInfo, V1_LEN as REPORT_V1_LEN};
use super::wire::{ServerReport, UdpDatagram, MIN_UDP_LEN};
use crate::time::Micros;

/// Largest UDP payload over IPv4.
pub const MAX_UDP_LEN: usize = 65_507;
/// Time between FIN repeats (2.1.8's `RETRYTIMER`).
pub const FIN_RETRY_US: Micros = 10_000;
/// FIN repeats before giving up (2.1.8's `RETRYCOUNT`: 2 s of 10 ms).
pub const FIN_RETRIES: u32 = 200;

/// What happens after the last data datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum FinMode {
    /// Send the FIN, repeat it every 10 ms until the server's report arrives (200 tries).
    AwaitReport,
    /// Send one FIN and stop (`--no-udp-fin`, a server's `-R` flow).
    Once,
}

/// How a [`UdpSender`] sends.
#[derive(Clone, Copy, Debug)]
pub struct UdpSenderConfig {
    /// Datagram length (`-l`), clamped to 18 ..= 65507.
    pub len: usize,
    /// Rate in bit/s (`-b`); 0 sends as fast as the host takes datagrams.
    pub rate_bps: u64,
    /// `-t` or `-n`.
    pub amount: Amount,
    /// Longest a timed flow runs, whatever `amount` says.
    pub max_us: Micros,
    /// The test header every datagram carries (a client); `None` for a server's flow.
    pub header: Option<(TestRequest, HeaderStyle)>,
    /// The datagram header's length (16, or 12 for a 2.0.9 peer).
    pub format: DatagramFormat,
    /// After the data.
    pub fin: FinMode,
    /// Added to `now` to stamp datagrams with the wall clock (the host's
    /// `UNIX time − now`; 0 if `now` already is wall time or no wall time is known).
    pub wall_offset_us: i64,
}

/// Where a sender is.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum UdpSendPhase {
    /// Sending data.
    Sending,
    /// Data done; sending the FIN (and waiting for the report).
    Fin,
    /// Over: the report came, or the tries ran out, or no report was awaited.
    Done,
}

/// One UDP flow's sender.
#[derive(Clone, Copy, Debug)]
pub struct UdpSender {
    cfg: UdpSenderConfig,
    phase: UdpSendPhase,
    start: Option<Micros>,
    end_at: Option<Micros>,
    /// Id of the last data datagram sent (0 before the first).
    last_id: i64,
    bytes: u64,
    fin_sent: u32,
    next_fin: Micros,
    end_us: Option<Micros>,
    report: Option<ReportInfo>,
}

impl UdpSender {
    /// A sender; its clock starts at the first [`next_datagram`](Self::next_datagram).
    pub fn new(mut cfg: UdpSenderConfig) -> Self {
        cfg.len = cfg.len.clamp(MIN_UDP_LEN, MAX_UDP_LEN);
        if let Amount::Time(_) = cfg.amount {
            let t = cfg
                .amount
                .time_us()
                .unwrap_or(0)
                .min(cfg.max_us.max(10_000));
            cfg.amount = Amount::from_us(t);
        }
        Self {
            cfg,
            phase: UdpSendPhase::Sending,
            start: None,
            end_at: None,
            last_id: 0,
            bytes: 0,
            fin_sent: 0,
            next_fin: 0,
            end_us: None,
            report: None,
        }
    }

    /// Where the sender is.
    pub fn phase(&self) -> UdpSendPhase {
        self.phase
    }

    /// The configuration (length clamped, time capped).
    pub fn config(&self) -> &UdpSenderConfig {
        &self.cfg
    }

    /// Data datagrams sent (the FIN not included).
    pub fn datagrams(&self) -> u64 {
        self.last_id.max(0) as u64
    }

    /// Data bytes sent (the FIN not included).
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Bytes a receiver counts: the data and the first FIN (a full datagram; repeats of
    /// the FIN are not counted by a receiver).
    pub fn bytes_with_fin(&self) -> u64 {
        self.bytes + u64::from(self.fin_sent.min(1)) * self.cfg.len as u64
    }

    /// When the first datagram went out.
    pub fn started_at(&self) -> Option<Micros> {
        self.start
    }

    /// When the data ended (the FIN's time).
    pub fn ended_at(&self) -> Option<Micros> {
        self.end_us
    }

    /// FIN datagrams sent.
    pub fn fins_sent(&self) -> u32 {
        self.fin_sent
    }

    /// The server's report, once it came.
    pub fn report(&self) -> Option<&ReportInfo> {
        self.report.as_ref()
    }

    /// Stops sending now (the next datagram is the FIN).
    pub fn stop(&mut self, now: Micros) {
        if self.phase == UdpSendPhase::Sending {
            self.enter_fin(now);
        }
    }

    fn enter_fin(&mut self, now: Micros) {
        self.phase = UdpSendPhase::Fin;
        self.end_us = Some(now);
        self.next_fin = now;
    }

    fn data_done(&self, now: Micros) -> bool {
        match self.cfg.amount {
            Amount::Bytes(n) => self.bytes >= n,
            Amount::Time(_) => self.end_at.is_some_and(|e| now >= e),
        }
    }

    /// Checks the clock: the end of the data, FIN tries running out.
    pub fn poll(&mut self, now: Micros) {
        if self.phase == UdpSendPhase::Sending && self.start.is_some() && self.data_done(now) {
            self.enter_fin(now);
        }
        if self.phase == UdpSendPhase::Fin {
            let out_of_tries = match self.cfg.fin {
                FinMode::Once => self.fin_sent >= 1,
                FinMode::AwaitReport => self.fin_sent > FIN_RETRIES && now >= self.next_fin,
            };
            if out_of_tries {
                self.phase = UdpSendPhase::Done;
            }
        }
    }

    /// Writes the next datagram due into `buf` (at least the configured length) and returns
    /// its length; `None` if none is due now (paced, waiting for the report, done).
    pub fn next_datagram(&mut self, now: Micros, buf: &mut [u8]) -> Option<usize> {
        if self.start.is_none() {
            self.start = Some(now);
            self.end_at = self.cfg.amount.time_us().map(|t| now.saturating_add(t));
        }
        self.poll(now);
        let id = match self.phase {
            UdpSendPhase::Done => return None,
            UdpSendPhase::Sending => {
                if !self.may_send(now) {
                    return None;
                }
                self.last_id + 1
            }
            UdpSendPhase::Fin => {
                if now < self.next_fin {
                    return None;
                }
                -(self.last_id + 1 + i64::from(self.fin_sent))
            }
        };
        let at = self.cfg.format.header_len();
        let len = match self.cfg.amount {
            // -n: the last datagram carries what is left, as 2.1.8's last write does (but
            // never less than the headers it must carry).
            Amount::Bytes(n) if id > 0 => {
                let min = at + self.cfg.header.map_or(0, |_| TCP_HEADER_LEN);
                let left = n.saturating_sub(self.bytes).max(min as u64);
                self.cfg
                    .len
                    .min(usize::try_from(left).unwrap_or(usize::MAX))
            }
            _ => self.cfg.len,
        };
        let out = buf.get_mut(..len)?;
        if let Some(payload) = out.get_mut(at..) {
            match self.cfg.header {
                // 2.1.8 sends zeros after its header (its buffer's unused header space).
                Some((req, style)) => {
                    payload.fill(0);
                    req.write(style, payload);
                }
                None => pattern::fill(payload, 0),
            }
        }
        let mut d = UdpDatagram::new_unchecked(&mut out[..]);
        d.set_seq(id);
        let wall = (now as i64).saturating_add(self.cfg.wall_offset_us).max(0) as u64;
        d.set_sent_us(wall);
        if self.cfg.format == DatagramFormat::Legacy {
            // No id2 in a 12-byte header: those 4 bytes are the client header's.
            if let (Some((req, style)), Some(p)) = (self.cfg.header, out.get_mut(at..)) {
                req.write(style, p);
            }
        }
        if id > 0 {
            self.last_id = id;
            self.bytes = self.bytes.saturating_add(len as u64);
        } else {
            self.fin_sent += 1;
            self.next_fin = now.saturating_add(FIN_RETRY_US);
        }
        Some(len)
    }

    /// True if pacing allows the next data datagram now.
    fn may_send(&self, now: Micros) -> bool {
        if self.cfg.rate_bps == 0 {
            return true;
        }
        let elapsed = u128::from(now.saturating_sub(self.start.unwrap_or(now)));
        let bits_per_datagram = 8 * self.cfg.len as u128;
        let due = elapsed * u128::from(self.cfg.rate_bps) / (bits_per_datagram * 1_000_000) + 1;
        due > self.last_id.max(0) as u128
    }

    /// A datagram came from the server. While waiting after the FIN, anything but a stale
    /// 28-byte header ack that holds a report (16 + 40 bytes at least) is the report, as
    /// 2.1.8 takes it. Returns true if it was taken as the report.
    pub fn on_datagram(&mut self, data: &[u8], _now: Micros) -> bool {
        if self.phase != UdpSendPhase::Fin || self.cfg.fin != FinMode::AwaitReport {
            return false;
        }
        if data.len() == super::wire::ack::LEN
            && HeaderAck::new_checked(data).is_ok_and(|a| a.is_valid())
        {
            return false;
        }
        let at = self.cfg.format.header_len();
        if data.len() < at + REPORT_V1_LEN {
            return false;
        }
        let Some(view) = data
            .get(at..)
            .and_then(|b| ServerReport::new_checked(b).ok())
        else {
            return false;
        };
        self.report = Some(view.info());
        self.phase = UdpSendPhase::Done;
        true
    }

    /// When the sender next wants to run: the next paced datagram, the end of the data,
    /// the next FIN try.
    pub fn poll_at(&self, now: Micros) -> Option<Micros> {
        match self.phase {
            UdpSendPhase::Done => None,
            UdpSendPhase::Fin => Some(self.next_fin),
            UdpSendPhase::Sending => {
                let Some(start) = self.start else {
                    return Some(now);
                };
                let next = if self.cfg.rate_bps == 0 {
                    now
                } else {
                    let bits = 8 * self.cfg.len as u128 * (self.last_id.max(0) as u128);
                    let t = bits * 1_000_000 / u128::from(self.cfg.rate_bps);
                    start.saturating_add(u64::try_from(t).unwrap_or(u64::MAX))
                };
                Some(self.end_at.map_or(next, |e| e.min(next)))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::iperf2::request::{Mode, Protocol};
    use crate::iperf2::wire::report::DATAGRAM_LEN;

    fn cfg(amount: Amount, rate_bps: u64, fin: FinMode) -> UdpSenderConfig {
        UdpSenderConfig {
            len: 100,
            rate_bps,
            amount,
            max_us: 60_000_000,
            header: None,
            format: DatagramFormat::Current,
            fin,
            wall_offset_us: 0,
        }
    }

    #[test]
    fn ids_fin_and_retries_as_2_1_8() {
        let mut s = UdpSender::new(cfg(Amount::Bytes(300), 0, FinMode::AwaitReport));
        let mut b = [0u8; 100];
        let mut ids = [0i64; 6];
        for (i, id) in ids.iter_mut().enumerate() {
            let now = i as u64 * FIN_RETRY_US;
            s.next_datagram(now, &mut b).unwrap();
            *id = UdpDatagram::new_checked(&b[..]).unwrap().seq(true);
        }
        // Three data datagrams, the FIN -(3+1), then repeats one further each.
        assert_eq!(ids, [1, 2, 3, -4, -5, -6]);
        assert_eq!((s.datagrams(), s.bytes()), (3, 300));
        // Not due again before 10 ms.
        assert_eq!(s.next_datagram(50_001, &mut b), None);
        // A stale header ack is not the report; a report is.
        assert!(!s.on_datagram(&crate::iperf2::wire::ack::ack_bytes(), 60_000));
        let mut r = [0u8; DATAGRAM_LEN];
        r[16] = 0x88;
        r[16 + 31] = 3;
        assert!(s.on_datagram(&r, 60_000));
        assert_eq!(s.phase(), UdpSendPhase::Done);
        assert_eq!(s.report().unwrap().datagrams, 3);
        // A report flood after that changes nothing.
        r[16 + 31] = 9;
        assert!(!s.on_datagram(&r, 60_001));
        assert_eq!(s.report().unwrap().datagrams, 3);
    }

    #[test]
    fn gives_up_after_200_tries() {
        let mut s = UdpSender::new(cfg(Amount::Bytes(100), 0, FinMode::AwaitReport));
        let mut b = [0u8; 100];
        let mut now = 0;
        let mut sent = 0;
        while s.phase() != UdpSendPhase::Done && now < 10_000_000 {
            if s.next_datagram(now, &mut b).is_some() {
                sent += 1;
            }
            now = s.poll_at(now).unwrap_or(now);
        }
        // One data datagram, the FIN and 200 repeats, over 2 s.
        assert_eq!(sent, 1 + 1 + 200);
        assert!((2_000_000..2_100_000).contains(&now));
    }

    #[test]
    fn paced_at_the_rate() {
        // 100-byte datagrams at 80 kbit/s: one per 10 ms, for 1 s, then one FIN.
        let mut s = UdpSender::new(cfg(Amount::Time(100), 80_000, FinMode::Once));
        let mut b = [0u8; 100];
        let mut now = 0;
        let mut last = (0, 0);
        while s.phase() != UdpSendPhase::Done {
            if s.next_datagram(now, &mut b).is_some() {
                last = (UdpDatagram::new_checked(&b[..]).unwrap().seq(true), now);
            }
            s.poll(now);
            match s.poll_at(now) {
                Some(t) => now = t,
                None => break,
            }
        }
        assert_eq!(s.datagrams(), 100);
        assert_eq!(last, (-101, 1_000_000));
        assert_eq!(s.fins_sent(), 1);
    }

    #[test]
    fn client_header_in_every_datagram() {
        let req = TestRequest {
            mode: Mode::Normal,
            ..TestRequest::plain(Protocol::Udp)
        };
        let mut c = cfg(Amount::Bytes(200), 0, FinMode::Once);
        c.header = Some((req, HeaderStyle::V21));
        let mut s = UdpSender::new(c);
        let mut b = [0u8; 100];
        s.next_datagram(5, &mut b).unwrap();
        let got = TestRequest::from_udp_datagram(&b, DatagramFormat::Current);
        assert!(got.seqno_64);
        assert_eq!(&b[16..20], &0x4801_0098u32.to_be_bytes());
        // Zeros follow the header, as 2.1.8 sends them.
        assert_eq!(b[76], 0);
    }
}
