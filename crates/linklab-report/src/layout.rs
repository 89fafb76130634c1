//! The HTML page around the sections: styles, header, the check script; and the fact box the
//! sections share.
//!
//! The script runs once the page has laid out: for every chart it counts the data elements the
//! browser actually drew (non-empty bounding box) and writes the count into `data-drawn`, so a
//! headless browser's `--dump-dom` shows whether each chart has data on screen.

use maud::{html, Markup, PreEscaped, DOCTYPE};

const STYLE: &str = r#"
:root { --ink: #1f2937; --muted: #6b7280; --line: #e5e7eb; --card: #fff; --bg: #f3f4f6; }
* { box-sizing: border-box; }
body { margin: 0; background: var(--bg); color: var(--ink);
       font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
header { background: #111827; color: #f9fafb; padding: 18px 32px; }
header h1 { margin: 0; font-size: 22px; font-weight: 650; letter-spacing: .2px; }
header p { margin: 4px 0 0; color: #9ca3af; font-size: 13px; }
main { max-width: 1200px; margin: 0 auto; padding: 20px 24px 48px; }
section.card { background: var(--card); border-radius: 10px; box-shadow: 0 1px 3px rgba(0,0,0,.08);
               padding: 18px 22px 22px; margin: 0 0 22px; }
section.card h2 { margin: 0 0 2px; font-size: 18px; }
.source { color: var(--muted); font-size: 12.5px; margin: 0 0 14px; font-family: ui-monospace, monospace; }
h3 { font-size: 15px; margin: 20px 0 8px; }
.facts { display: flex; flex-wrap: wrap; gap: 10px; margin: 8px 0 14px; }
.fact { background: #f9fafb; border: 1px solid var(--line); border-radius: 8px; padding: 8px 14px; min-width: 150px; }
.fact b { display: block; font-size: 18px; font-weight: 650; }
.fact span { color: var(--muted); font-size: 12px; }
.fact.good b { color: #15803d; } .fact.bad b { color: #c2410c; }
.charts { display: flex; flex-wrap: wrap; gap: 14px; }
table { border-collapse: collapse; font-size: 13px; margin: 6px 0 4px; }
th, td { padding: 4px 10px; text-align: right; border-bottom: 1px solid var(--line); white-space: nowrap; }
th { background: #f9fafb; font-weight: 600; color: #374151; }
th.group { text-align: center; border-bottom: 1px solid #d1d5db; }
td.l, th.l { text-align: left; }
tr.refined td { color: var(--muted); font-style: italic; }
td.warn { color: #b91c1c; font-weight: 600; }
td.ok { color: #15803d; }
tr.sender td { background: #fffbeb; }
td.sender { color: #b45309; font-weight: 600; }
.tablewrap { overflow-x: auto; }
.tables { display: flex; flex-wrap: wrap; gap: 6px 28px; align-items: flex-start; }
.note { color: var(--muted); font-size: 12.5px; margin: 4px 0; }
svg.chart { flex-shrink: 0; background: #fff; border: 1px solid var(--line); border-radius: 8px; }
svg .title { font-size: 14.5px; font-weight: 600; fill: #111827; }
svg .subtitle { font-size: 12px; fill: var(--muted); }
svg .tick { font-size: 11px; fill: #4b5563; }
svg .label { font-size: 12.5px; fill: #374151; }
svg .grid { stroke: #eef0f3; }
svg .frame { fill: none; stroke: #9ca3af; }
svg .marker { stroke-width: 1.6; stroke-dasharray: 5 3; }
svg .marker-label { font-size: 12px; font-weight: 600; }
svg .legend { fill: #fff; fill-opacity: .92; stroke: #d1d5db; }
svg .legend-text { font-size: 12px; fill: #374151; }
"#;

const CHECK_SCRIPT: &str = r#"
for (const svg of document.querySelectorAll('svg[data-chart]')) {
  let drawn = 0;
  for (const el of svg.querySelectorAll('.data')) {
    const b = el.getBBox();
    if (b.width > 0 || b.height > 0) drawn++;
  }
  svg.setAttribute('data-drawn', String(drawn));
}
"#;

/// One key figure in a box: its value large, what it is below.
pub(crate) fn fact(class: &str, value: &str, what: &str) -> Markup {
    html! {
        div class={ "fact " (class) } {
            b { (value) }
            span { (what) }
        }
    }
}

/// The whole page around `body` (the sections): the styles, the header naming `sources` (the
/// input files, or a store) and when it was `generated`, and the check script at the end.
pub fn frame(body: Markup, sources: &[String], generated: &str) -> String {
    let page = html! {
        (DOCTYPE) "\n"
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                title { "linklab report" }
                style { (PreEscaped(STYLE)) }
            }
            body {
                "\n"
                header {
                    h1 { "linklab report" }
                    p { (sources.join(", ")) " · generated " (generated) }
                }
                "\n"
                main {
                    "\n"
                    (body)
                }
                "\n"
                script { (PreEscaped(CHECK_SCRIPT)) }
                "\n"
            }
        }
        "\n"
    };
    page.into_string()
}
