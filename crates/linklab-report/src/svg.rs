//! Inline SVG charts: axes with round ticks and labels, lines, points, bars, markers, a legend,
//! and an optional second y axis. Every data element carries `class="data"`; every chart is an
//! `<svg data-chart="...">` so a headless browser can count what it drew.

use maud::{html, Markup, Render};

/// Formats a number compactly for tick labels and tables (no trailing zeros).
pub fn num(v: f64) -> String {
    let a = v.abs();
    let digits = if a == 0.0 || a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        // Three significant digits for small values: 0.125, 0.05, 0.0001.
        ((-a.log10()).ceil() as usize + 2).min(9)
    };
    let s = format!("{v:.digits$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// One axis: its label (with unit), range and ticks.
#[derive(Debug, Clone)]
pub struct Axis {
    /// Axis title, with the unit, e.g. `offered (Mbit/s)`.
    pub label: String,
    /// Lowest value shown.
    pub lo: f64,
    /// Highest value shown.
    pub hi: f64,
    /// Tick positions and their labels.
    pub ticks: Vec<(f64, String)>,
    /// Logarithmic scale (for quantities spanning decades, such as latency tails).
    pub log: bool,
}

impl Axis {
    /// An axis covering `lo..=hi`, widened to round tick values (about six ticks).
    pub fn new(label: &str, lo: f64, hi: f64) -> Axis {
        let (lo, hi) = if hi > lo {
            (lo, hi)
        } else if lo == 0.0 {
            (0.0, 1.0)
        } else {
            (lo - lo.abs() * 0.1, lo + lo.abs() * 0.1)
        };
        let step = nice_step((hi - lo) / 5.0);
        let lo = (lo / step).floor() * step;
        let hi = (hi / step).ceil() * step;
        let n = ((hi - lo) / step).round() as usize;
        let ticks = (0..=n)
            .map(|i| lo + step * i as f64)
            .map(|t| (t, num(t)))
            .collect();
        Axis {
            label: label.to_string(),
            lo,
            hi,
            ticks,
            log: false,
        }
    }

    /// A logarithmic axis covering `lo..=hi` (both > 0), widened to whole decades; ticks at
    /// 1, 2 and 5 times powers of ten (only powers of ten when it spans many decades).
    pub fn log(label: &str, lo: f64, hi: f64) -> Axis {
        let lo = if lo > 0.0 && lo.is_finite() { lo } else { 1e-3 };
        let hi = if hi > lo && hi.is_finite() {
            hi
        } else {
            lo * 10.0
        };
        let (d0, d1) = (lo.log10().floor() as i32, hi.log10().ceil() as i32);
        let d1 = d1.max(d0 + 1);
        let steps: &[f64] = if d1 - d0 > 3 {
            &[1.0]
        } else {
            &[1.0, 2.0, 5.0]
        };
        let mut ticks = Vec::new();
        for d in d0..=d1 {
            for &m in steps {
                let t = m * 10f64.powi(d);
                if t <= 10f64.powi(d1) * 1.0001 {
                    ticks.push((t, num(t)));
                }
            }
        }
        Axis {
            label: label.to_string(),
            lo: 10f64.powi(d0),
            hi: 10f64.powi(d1),
            ticks,
            log: true,
        }
    }

    /// An axis from 0 to the largest of `values` (at least `min_hi`).
    pub fn from_zero(label: &str, values: impl IntoIterator<Item = f64>, min_hi: f64) -> Axis {
        let hi = values
            .into_iter()
            .filter(|v| v.is_finite())
            .fold(min_hi, f64::max);
        Axis::new(label, 0.0, hi)
    }

    /// A categorical axis: one slot per name at positions 1, 2, ...
    pub fn categories(label: &str, names: &[String]) -> Axis {
        Axis {
            label: label.to_string(),
            lo: 0.5,
            hi: names.len() as f64 + 0.5,
            ticks: names
                .iter()
                .enumerate()
                .map(|(i, n)| ((i + 1) as f64, n.clone()))
                .collect(),
            log: false,
        }
    }

    fn frac(&self, v: f64) -> f64 {
        if self.log {
            if v <= 0.0 {
                return 0.0;
            }
            return ((v.ln() - self.lo.ln()) / (self.hi.ln() - self.lo.ln())).clamp(0.0, 1.0);
        }
        ((v - self.lo) / (self.hi - self.lo)).clamp(0.0, 1.0)
    }
}

/// A round step (1, 2, 2.5 or 5 times a power of ten) near `raw`.
fn nice_step(raw: f64) -> f64 {
    if !(raw.is_finite() && raw > 0.0) {
        return 1.0;
    }
    let mag = 10f64.powf(raw.log10().floor());
    let f = raw / mag;
    let nice = if f <= 1.0 {
        1.0
    } else if f <= 2.0 {
        2.0
    } else if f <= 2.5 {
        2.5
    } else if f <= 5.0 {
        5.0
    } else {
        10.0
    };
    nice * mag
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy)]
pub enum Mark {
    /// A polyline (dashed or solid).
    Line {
        /// Dashed stroke for references (ideal lines, equivalents).
        dashed: bool,
    },
    /// A polyline with a dot on every point.
    LinePoints,
    /// Dots of radius `r`.
    Points {
        /// Radius in pixels.
        r: f64,
    },
    /// Vertical bars of `width` data units centred on x.
    Bars {
        /// Bar width in x units.
        width: f64,
    },
    /// Vertical bars of log-uniform bins: the bar at geometric centre x spans
    /// `x / sqrt(ratio) ..= x * sqrt(ratio)` (for a logarithmic x axis).
    LogBars {
        /// Ratio between a bin's upper and lower edge.
        ratio: f64,
    },
}

/// Where a chart's plot area lies in its SVG, and how values map onto it.
#[derive(Clone, Copy)]
struct Plot<'c> {
    /// The horizontal axis.
    x: &'c Axis,
    left: f64,
    top: f64,
    /// The plot area's width and height.
    pw: f64,
    ph: f64,
}

impl Plot<'_> {
    /// Where `v` lies across.
    fn px(&self, v: f64) -> f64 {
        self.left + self.x.frac(v) * self.pw
    }

    /// Where `v` of axis `a` lies down.
    fn py(&self, a: &Axis, v: f64) -> f64 {
        self.top + (1.0 - a.frac(v)) * self.ph
    }
}

/// One data series.
#[derive(Debug, Clone)]
pub struct Series {
    /// Legend text.
    pub name: String,
    /// CSS colour.
    pub color: &'static str,
    /// How it is drawn.
    pub mark: Mark,
    /// Plotted against the second (right) y axis.
    pub right: bool,
    /// `(x, y)` points in data units.
    pub points: Vec<(f64, f64)>,
}

/// A labelled vertical marker line (knee, collapse, percentiles).
#[derive(Debug, Clone)]
pub struct VLine {
    /// Position in x units.
    pub x: f64,
    /// Text drawn at the top of the line.
    pub label: String,
    /// CSS colour.
    pub color: &'static str,
}

/// A chart; [`Chart::render`] makes the SVG.
#[derive(Debug, Clone)]
pub struct Chart {
    /// Value of `data-chart`, names the chart for checks.
    pub id: String,
    /// Title drawn above the plot.
    pub title: String,
    /// A smaller second line under the title (may be empty).
    pub subtitle: String,
    /// Pixel size.
    pub width: f64,
    /// Pixel size.
    pub height: f64,
    /// Horizontal axis.
    pub x: Axis,
    /// Left vertical axis.
    pub y: Axis,
    /// Right vertical axis, for series with `right`.
    pub y2: Option<Axis>,
    /// Data.
    pub series: Vec<Series>,
    /// Markers.
    pub vlines: Vec<VLine>,
    /// Draw a legend row (above the plot) for the named series.
    pub legend: bool,
}

impl Chart {
    /// A chart of the given size with no data yet.
    pub fn new(id: &str, title: &str, width: f64, height: f64, x: Axis, y: Axis) -> Chart {
        Chart {
            id: id.to_string(),
            title: title.to_string(),
            subtitle: String::new(),
            width,
            height,
            x,
            y,
            y2: None,
            series: Vec::new(),
            vlines: Vec::new(),
            legend: true,
        }
    }

    /// The plot area's place in the SVG: below the title, the subtitle and the legend row;
    /// room for the tick labels on the left, the second axis on the right, the x axis below.
    fn plot(&self) -> (Plot<'_>, f64) {
        let mut top = 34.0;
        if !self.subtitle.is_empty() {
            top += 16.0;
        }
        let legend_y = top + 6.0;
        if self.shows_legend() {
            top += 22.0;
        }
        let (left, right, bottom) = (66.0, if self.y2.is_some() { 66.0 } else { 22.0 }, 50.0);
        let plot = Plot {
            x: &self.x,
            left,
            top,
            pw: self.width - left - right,
            ph: self.height - top - bottom,
        };
        (plot, legend_y)
    }

    /// The series the legend names (those with a name).
    fn named(&self) -> impl Iterator<Item = &Series> {
        self.series.iter().filter(|x| !x.name.is_empty())
    }

    /// Whether the legend row is drawn: asked for, and some series has a name.
    fn shows_legend(&self) -> bool {
        self.legend && self.named().next().is_some()
    }

    /// The grid, the ticks, the frame and the axis labels.
    fn axes(&self, p: &Plot) -> Markup {
        let Plot {
            left, top, pw, ph, ..
        } = *p;
        let (w, h) = (self.width, self.height);
        let max_x_ticks = (pw / 46.0).max(2.0) as usize;
        let every = self.x.ticks.len().div_ceil(max_x_ticks).max(1);
        html! {
            @for (t, label) in &self.y.ticks {
                @let y = p.py(&self.y, *t);
                line class="grid" x1=(left) x2=(left + pw) y1=(f1(y)) y2=(f1(y)) {}
                text class="tick" x=(left - 6.0) y=(f1(y + 4.0)) text-anchor="end" { (label) }
            }
            @if let Some(a2) = &self.y2 {
                @for (t, label) in &a2.ticks {
                    text class="tick right" x=(left + pw + 6.0) y=(f1(p.py(a2, *t) + 4.0)) { (label) }
                }
            }
            @for (t, label) in self.x.ticks.iter().step_by(every) {
                @let x = f1(p.px(*t));
                line class="grid" x1=(x) x2=(x) y1=(top) y2=(top + ph) {}
                text class="tick" x=(x) y=(top + ph + 16.0) text-anchor="middle" { (label) }
            }
            rect class="frame" x=(left) y=(top) width=(pw) height=(ph) {}
            // Axis labels.
            text class="label" x=(f1(left + pw / 2.0)) y=(h - 10.0) text-anchor="middle" {
                (self.x.label)
            }
            text class="label" transform={ "translate(16 " (f1(top + ph / 2.0)) ") rotate(-90)" }
                text-anchor="middle" { (self.y.label) }
            @if let Some(a2) = &self.y2 {
                text class="label"
                    transform={ "translate(" (f1(w - 14.0)) " " (f1(top + ph / 2.0)) ") rotate(90)" }
                    text-anchor="middle" { (a2.label) }
            }
        }
    }

    /// Every series: bars, lines, points.
    fn data(&self, p: &Plot) -> Markup {
        html! {
            @for series in &self.series {
                (self.series(series, p))
            }
        }
    }

    /// One series, drawn as its mark says; each data element titled `name: x → y`.
    fn series(&self, series: &Series, p: &Plot) -> Markup {
        let axis = if series.right {
            self.y2.as_ref().unwrap_or(&self.y)
        } else {
            &self.y
        };
        let c = series.color;
        let name = &series.name;
        let dash = matches!(series.mark, Mark::Line { dashed: true }).then_some("6 4");
        match series.mark {
            Mark::Bars { .. } | Mark::LogBars { .. } => {
                let base = p.py(axis, axis.lo.max(0.0));
                html! {
                    @for &(x, y) in &series.points {
                        @let (x0, x1) = match series.mark {
                            Mark::LogBars { ratio } => {
                                (p.px(x / ratio.sqrt()), p.px(x * ratio.sqrt()))
                            }
                            Mark::Bars { width } => (p.px(x - width / 2.0), p.px(x + width / 2.0)),
                            _ => unreachable!("bars only"),
                        };
                        @let yt = p.py(axis, y);
                        rect class="data" x=(f1(x0 + 0.5)) y=(f1(yt))
                            width=(f1((x1 - x0 - 1.0).max(1.0))) height=(f1((base - yt).max(0.0)))
                            fill=(c) {
                            title { (name) ": " (num(x)) " → " (num(y)) }
                        }
                    }
                }
            }
            Mark::Line { .. } | Mark::LinePoints => {
                let d: String = series
                    .points
                    .iter()
                    .enumerate()
                    .map(|(i, &(x, y))| {
                        format!(
                            "{}{:.1},{:.1}",
                            if i == 0 { 'M' } else { 'L' },
                            p.px(x),
                            p.py(axis, y)
                        )
                    })
                    .collect();
                html! {
                    @if !series.points.is_empty() {
                        path class="data" d=(d) stroke=(c) stroke-dasharray=[dash] fill="none"
                            stroke-width="2.2" {}
                    }
                    @if matches!(series.mark, Mark::LinePoints) {
                        @for &(x, y) in &series.points {
                            circle class="data" cx=(f1(p.px(x))) cy=(f1(p.py(axis, y))) r="3.2"
                                fill=(c) {
                                title { (name) ": " (num(x)) " → " (num(y)) }
                            }
                        }
                    }
                }
            }
            Mark::Points { r } => html! {
                @for &(x, y) in &series.points {
                    circle class="data" cx=(f1(p.px(x))) cy=(f1(p.py(axis, y))) r=(r) fill=(c)
                        stroke="#fff" stroke-width="1.5" {
                        title { (name) ": " (num(x)) " → " (num(y)) }
                    }
                }
            },
        }
    }

    /// The vertical markers, each labelled on a row of its own.
    fn markers(&self, p: &Plot) -> Markup {
        let Plot {
            left, top, pw, ph, ..
        } = *p;
        html! {
            @for (i, m) in self.vlines.iter().enumerate() {
                @let x = p.px(m.x);
                // The label beside its line, on the left of it near the right edge.
                @let (anchor, dx) = if x > left + pw * 0.7 { ("end", -5.0) } else { ("start", 5.0) };
                line class="marker" x1=(f1(x)) x2=(f1(x)) y1=(top) y2=(top + ph) stroke=(m.color) {}
                text class="marker-label" x=(f1(x + dx)) y=(f1(top + 14.0 + 15.0 * i as f64))
                    text-anchor=(anchor) fill=(m.color) { (m.label) }
            }
        }
    }

    /// The legend: one row above the plot, never over the data; each name after a short
    /// stroke of its series' colour, the next one a name's width further on.
    fn legend(&self, p: &Plot, legend_y: f64) -> Markup {
        let starts = self.named().scan(p.left, |lx, series| {
            let at = *lx;
            *lx += 23.0 + series.name.chars().count() as f64 * 6.8 + 18.0;
            Some((at, series))
        });
        html! {
            @for (lx, series) in starts {
                @let dash = matches!(series.mark, Mark::Line { dashed: true }).then_some("6 4");
                @let thick = match series.mark {
                    Mark::Bars { .. } | Mark::LogBars { .. } | Mark::Points { .. } => 8,
                    _ => 3,
                };
                line x1=(f1(lx)) x2=(f1(lx + 18.0)) y1=(f1(legend_y - 4.0)) y2=(f1(legend_y - 4.0))
                    stroke=(series.color) stroke-width=(thick) stroke-dasharray=[dash] {}
                text class="legend-text" x=(f1(lx + 23.0)) y=(f1(legend_y)) { (series.name) }
            }
        }
    }
}

/// The SVG element: `<svg class="chart" data-chart=ID data-points=N ...>`, the title, the
/// axes, the data (each element `class="data"`), the markers and the legend.
impl Render for Chart {
    fn render(&self) -> Markup {
        let (w, h) = (self.width, self.height);
        let (p, legend_y) = self.plot();
        let points: usize = self.series.iter().map(|x| x.points.len()).sum();
        html! {
            svg class="chart" data-chart=(self.id) data-points=(points)
                xmlns="http://www.w3.org/2000/svg" width=(w) height=(h)
                viewBox={ "0 0 " (w) " " (h) } role="img" aria-label=(self.title) {
                text class="title" x="14" y="22" { (self.title) }
                @if !self.subtitle.is_empty() {
                    text class="subtitle" x="14" y="40" { (self.subtitle) }
                }
                (self.axes(&p))
                (self.data(&p))
                (self.markers(&p))
                // Legend: one row above the plot, never over the data.
                @if self.shows_legend() {
                    (self.legend(&p, legend_y))
                }
            }
        }
    }
}

/// A coordinate with one decimal, as the SVG's positions are written.
fn f1(v: f64) -> String {
    format!("{v:.1}")
}

#[cfg(test)]
mod tests;
