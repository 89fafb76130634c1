//! The probe page's HTTP and TCP tables: each path with its status line, announced length,
//! state, rate (none unless downloaded whole and checked), samples and content check; each
//! TCP test with the iperf and mode that measured it.

use std::fmt::Write as _;

use super::svg::esc;
use linklab_results::probe::{PathState, ProbeReport};
use linklab_results::units::format_rate;

/// The HTTP downloads table, when any path was asked.
pub fn http(s: &mut String, r: &ProbeReport) {
    if !r.http.is_empty() {
        s.push_str(r#"<h3>HTTP downloads</h3><table><tr><th class="l">path</th><th class="l">status line</th><th>announced (bytes)</th><th>body (bytes)</th><th>downloads</th><th>time (s)</th><th>rate (median)</th><th class="l">samples (downloads each)</th><th class="l">complete</th><th class="l">content</th></tr>"#);
        for h in &r.http {
            let samples = h
                .samples
                .iter()
                .map(|x| format!("{} ({})", format_rate(x.rate.value), x.downloads))
                .collect::<Vec<_>>()
                .join(", ");
            let status = h
                .status_line
                .clone()
                .unwrap_or_else(|| h.status.map_or("–".into(), |c| c.to_string()));
            let rate = match (&h.rate, h.state) {
                (Some(q), PathState::Done) => format_rate(q.value),
                (_, PathState::Done) => "–".into(),
                (_, other) => format!("none: {}", path_word(other)),
            };
            let content = match (h.crc_ok, h.index_bytes_ok) {
                (Some(false), _) => "CRC32 WRONG",
                (_, Some(false)) => "byte i = i & 0xff: WRONG",
                (Some(true), _) => "CRC32 ok",
                (_, Some(true)) => "byte i = i & 0xff: ok",
                _ => "–",
            };
            let _ = write!(
                s,
                r#"<tr data-path="{}" data-state="{}"><td class="l">{}</td><td class="l {}">{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.3}</td><td>{}</td><td class="l">{}</td><td class="l">{}</td><td class="l {}">{}</td></tr>"#,
                esc(&h.path),
                path_word(h.state),
                esc(&h.path),
                if h.state == PathState::Done {
                    "ok"
                } else {
                    "warn"
                },
                esc(&status),
                h.content_length.map_or("–".into(), |n| n.to_string()),
                h.body.value,
                h.downloads,
                h.time.value,
                esc(&rate),
                if samples.is_empty() {
                    "–".into()
                } else {
                    samples
                },
                if h.complete {
                    "yes"
                } else {
                    "cut short by the budget (not counted)"
                },
                if content.contains("WRONG") {
                    "warn"
                } else {
                    "ok"
                },
                content
            );
            if let Some(reason) = &h.reason {
                let _ = write!(
                    s,
                    r#"<tr><td></td><td class="l" colspan="9">{}</td></tr>"#,
                    esc(reason)
                );
            }
        }
        s.push_str("</table>");
    }
}

/// The TCP tests table, when any test ran.
pub fn tcp(s: &mut String, r: &ProbeReport) {
    if !r.tcp.is_empty() {
        s.push_str(r#"<h3>TCP tests</h3><table><tr><th class="l">direction</th><th class="l">measured by</th><th>streams</th><th>round</th><th>time (s)</th><th>sent</th><th>received</th><th>retransmits</th></tr>"#);
        for t in &r.tcp {
            let _ = write!(
                s,
                r#"<tr data-iperf="{}"><td class="l">{}</td><td class="l">{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td></tr>"#,
                esc(&t.iperf),
                if t.direction == "to_device" {
                    "to the device"
                } else {
                    "from the device"
                },
                esc(t.via.as_deref().unwrap_or(if t.direction == "to_device" {
                    "iperf3"
                } else {
                    "iperf3 -R"
                })),
                t.streams,
                t.round,
                t.time.value,
                format_rate(t.sent.value),
                format_rate(t.received.value),
                t.retransmits.map_or("–".into(), |n| n.to_string())
            );
        }
        s.push_str("</table>");
    }
}

/// An HTTP path's state on the page.
fn path_word(state: PathState) -> &'static str {
    match state {
        PathState::Done => "done",
        PathState::Absent => "absent",
        PathState::Failed => "failed",
        PathState::OutOfTime => "out of time",
    }
}
