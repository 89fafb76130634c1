//! The probe page's HTTP and TCP tables: each path with its status line, announced length,
//! state, rate (none unless downloaded whole and checked), samples and content check; each
//! TCP test with the iperf and mode that measured it.

use maud::{html, Markup};

use linklab_results::probe::{HttpDownload, PathState, ProbeReport};
use linklab_results::units::format_rate;

/// The HTTP downloads table, when any path was asked.
pub fn http(r: &ProbeReport) -> Markup {
    if r.http.is_empty() {
        return html! {};
    }
    html! {
        h3 { "HTTP downloads" }
        table {
            tr {
                th class="l" { "path" } th class="l" { "status line" } th { "announced (bytes)" }
                th { "body (bytes)" } th { "downloads" } th { "time (s)" } th { "rate (median)" }
                th class="l" { "samples (downloads each)" } th class="l" { "complete" }
                th class="l" { "content" }
            }
            @for h in &r.http {
                (http_row(h))
                @if let Some(reason) = &h.reason {
                    tr { td {} td class="l" colspan="9" { (reason) } }
                }
            }
        }
    }
}

/// One path's row: its status line, lengths, rate (none unless downloaded whole and checked),
/// samples and content check.
fn http_row(h: &HttpDownload) -> Markup {
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
    html! {
        tr data-path=(h.path) data-state=(path_word(h.state)) {
            td class="l" { (h.path) }
            td class={ "l " (if h.state == PathState::Done { "ok" } else { "warn" }) } { (status) }
            td { (h.content_length.map_or("–".into(), |n| n.to_string())) }
            td { (h.body.value) }
            td { (h.downloads) }
            td { (format_args!("{:.3}", h.time.value)) }
            td { (rate) }
            td class="l" { @if samples.is_empty() { "–" } @else { (samples) } }
            td class="l" {
                @if h.complete { "yes" } @else { "cut short by the budget (not counted)" }
            }
            td class={ "l " (if content.contains("WRONG") { "warn" } else { "ok" }) } { (content) }
        }
    }
}

/// The TCP tests table, when any test ran: each with the iperf and mode that measured it.
pub fn tcp(r: &ProbeReport) -> Markup {
    if r.tcp.is_empty() {
        return html! {};
    }
    html! {
        h3 { "TCP tests" }
        table {
            tr {
                th class="l" { "direction" } th class="l" { "measured by" } th { "streams" }
                th { "round" } th { "time (s)" } th { "sent" } th { "received" }
                th { "retransmits" }
            }
            @for t in &r.tcp {
                @let to_device = t.direction == "to_device";
                tr data-iperf=(t.iperf) {
                    td class="l" { (if to_device { "to the device" } else { "from the device" }) }
                    td class="l" {
                        (t.via.as_deref().unwrap_or(if to_device { "iperf3" } else { "iperf3 -R" }))
                    }
                    td { (t.streams) }
                    td { (t.round) }
                    td { (format_args!("{:.2}", t.time.value)) }
                    td { (format_rate(t.sent.value)) }
                    td { (format_rate(t.received.value)) }
                    td { (t.retransmits.map_or("–".into(), |n| n.to_string())) }
                }
            }
        }
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
