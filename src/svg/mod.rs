//! Inline SVG plots, hand-written (a plotting crate would be heavier than
//! these few hundred lines): lines, points and bars on linear, log2 or
//! log10 axes. Colours come from CSS classes (`s0`..`s5`), so the page's
//! light, dark and print styles apply to them.
//!
//! Each axis knows what its numbers are ([`Quantity`]): ticks then fall on
//! round values (1-2-5 steps, powers of two for sizes), a linear axis
//! names one unit chosen for its range and gives its labels as many
//! decimals as the step needs, and a log axis labels each tick with its
//! own unit (ticks "0, 0.00, 0.00, 0.01" on a slow card, "1.9,
//! 3.8, 5.7 MiB" on offsets, "10000" µs on latencies).

mod axis;
mod label;

pub use label::value_label;

use std::fmt::Write;

use self::axis::{Axis, axis, clip_limit, clip_note, to_axis};

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Sizes: ticks at powers of two.
    Log2,
    /// Latencies: ticks at powers of ten (and 2 and 5 times them over a
    /// few decades).
    Log10,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Line,
    Points,
    /// One bar per x (categories: x is the index).
    Bars,
}

/// What an axis's numbers are: it decides where the ticks go and how they
/// read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// A number in the unit named ("MB/s", "s", "%"; "" for none).
    Number(&'static str),
    /// Whole things (AUs): steps of at least one.
    Count,
    /// Bytes: steps and ticks at powers of two, in IEC units.
    Bytes,
    /// Nanoseconds: shown in ns, µs, ms or s, as the range needs.
    Ns,
}

pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

pub struct Chart {
    pub title: String,
    /// What the axis measures, without its unit: the unit is added from
    /// the quantity and the range ("offset" becomes "offset (MiB)").
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    pub kind: Kind,
    pub series: Vec<Series>,
    pub x_unit: Quantity,
    pub y_unit: Quantity,
    /// Stop the y axis at this quantile of the values (0.999: p99.9) when
    /// the largest is more than twice it, so one outlier does not flatten
    /// the rest; the points above sit on the top edge, hollow, and a note
    /// under the plot says so.
    pub clip_y: Option<f64>,
    /// Bars: the category names, by index.
    pub categories: Vec<String>,
}

/// What a test contributes to a report: its plots, and notes beside them.
pub enum Figure {
    Chart(Chart),
    Note(String),
}

const W: f64 = 640.0;
/// Height of the plot area itself; margins are added for the title, the
/// legend, the (rotated, for bars) x labels and a note.
const PLOT_H: f64 = 202.0;
const LEFT: f64 = 70.0;
/// Room right of the plot for half a tick label centred on its edge
/// ("256 MiB").
const RIGHT: f64 = 28.0;
/// Most series drawn in their own colour; more share the last.
const COLOURS: usize = 6;
/// Bars carry their value above them up to this many categories (wider
/// than a label like "22.6 MB/s"); past it the labels would collide.
const LABELLED_BARS: usize = 8;

fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Where the plot area lies and how data (in axis units) maps onto it.
struct Frame {
    top: f64,
    x0: f64,
    x1: f64,
    y0: f64,
    y1: f64,
}

impl Frame {
    fn px(&self, v: f64) -> f64 {
        LEFT + (v - self.x0) / (self.x1 - self.x0) * (W - LEFT - RIGHT)
    }
    fn py(&self, v: f64) -> f64 {
        self.top + PLOT_H - (v - self.y0) / (self.y1 - self.y0) * PLOT_H
    }
    fn bottom(&self) -> f64 {
        self.top + PLOT_H
    }
}

/// A point as drawn: in axis units, and whether its y was cut to the clip.
struct Mark {
    x: f64,
    y: f64,
    clipped: bool,
    /// The value itself, for a label.
    value: f64,
}

/// The chart as an `<svg class="plot">` element; None when it has no data.
pub fn render(c: &Chart) -> Option<String> {
    let bars = c.kind == Kind::Bars;
    let ys: Vec<f64> = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1)).collect();
    let limit = c.clip_y.and_then(|q| clip_limit(&ys, q));
    let mut shown: Vec<f64> = ys.iter().map(|&y| limit.map_or(y, |l| y.min(l))).collect();
    if bars && c.categories.len() <= LABELLED_BARS {
        // Room above the tallest bar for its value.
        let tallest = shown.iter().copied().fold(0.0, f64::max);
        shown.push(tallest * 1.12);
    }
    let y_axis = axis(c.y_scale, c.y_unit, &c.y_label, &shown, true)?;
    let x_axis = if bars {
        let n = c.categories.len().max(1) as f64;
        Axis {
            lo: -0.5,
            hi: n - 0.5,
            ticks: Vec::new(),
            title: c.x_label.clone(),
        }
    } else {
        let xs: Vec<f64> = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0)).collect();
        axis(c.x_scale, c.x_unit, &c.x_label, &xs, false)?
    };
    let note = limit.map(|l| clip_note(c.clip_y.unwrap_or(1.0), c.y_unit, l, &ys));
    // Title row, then a legend row when there are several series; below,
    // room for tick labels (rotated category names need more), the axis
    // label and the note.
    let legend = c.series.len() > 1;
    let top = if legend { 50.0 } else { 34.0 };
    let bottom = if bars { 110.0 } else { 64.0 };
    let h = top + PLOT_H + bottom + if note.is_some() { 18.0 } else { 0.0 };
    let f = Frame {
        top,
        x0: x_axis.lo,
        x1: x_axis.hi,
        y0: y_axis.lo,
        y1: y_axis.hi,
    };
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg class="plot" viewBox="0 0 {W} {h}" role="img" aria-label="{t}" xmlns="http://www.w3.org/2000/svg"><title>{t}</title><text class="plot-title" x="{LEFT}" y="20">{t}</text>"#,
        t = esc(&c.title)
    );
    grid(&mut o, &f, &x_axis, &y_axis);
    if bars {
        categories(&mut o, &f, &c.categories);
    }
    labels(&mut o, &f, &x_axis.title, &y_axis.title, top + PLOT_H + bottom - 8.0);
    if let Some(n) = &note {
        let _ = write!(
            o,
            r#"<text class="plot-note" x="{LEFT}" y="{:.1}">{}</text>"#,
            h - 8.0,
            esc(n)
        );
    }
    let marks: Vec<Vec<Mark>> = c.series.iter().map(|s| marks(c, s, limit)).collect();
    match c.kind {
        Kind::Line | Kind::Points => dots(&mut o, &f, c, &marks),
        Kind::Bars => bar_marks(&mut o, &f, c, &marks),
    }
    if legend {
        legend_row(&mut o, &c.series);
    }
    o.push_str("</svg>");
    Some(o)
}

/// A series' points in axis units, y cut to the clip where there is one;
/// points a log axis cannot show are left out.
fn marks(c: &Chart, s: &Series, limit: Option<f64>) -> Vec<Mark> {
    let bars = c.kind == Kind::Bars;
    s.points
        .iter()
        .filter_map(|&(x, y)| {
            let clipped = limit.is_some_and(|l| y > l);
            let shown = if clipped { limit.unwrap_or(y) } else { y };
            Some(Mark {
                x: if bars { Some(x) } else { to_axis(c.x_scale, x) }?,
                y: to_axis(c.y_scale, shown)?,
                clipped,
                value: y,
            })
        })
        .collect()
}

/// Grid lines with their tick labels: y ticks on the left, x ticks below.
fn grid(o: &mut String, f: &Frame, x: &Axis, y: &Axis) {
    for (a, label) in &y.ticks {
        let py = f.py(*a);
        let _ = write!(
            o,
            r#"<line class="grid" x1="{LEFT}" x2="{}" y1="{py:.1}" y2="{py:.1}"/><text class="tick" x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            W - RIGHT,
            LEFT - 6.0,
            py + 4.0,
            esc(label)
        );
    }
    for (a, label) in &x.ticks {
        let px = f.px(*a);
        let _ = write!(
            o,
            r#"<line class="grid" x1="{px:.1}" x2="{px:.1}" y1="{}" y2="{:.1}"/><text class="tick" x="{px:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            f.top,
            f.bottom(),
            f.bottom() + 16.0,
            esc(label)
        );
    }
}

/// Bar charts' category names under the bars, slanted; every few of
/// them when there are many.
fn categories(o: &mut String, f: &Frame, names: &[String]) {
    let every = names.len().div_ceil(12).max(1);
    let y = f.bottom() + 14.0;
    for (i, name) in names.iter().enumerate().step_by(every) {
        let x = f.px(i as f64);
        let _ = write!(
            o,
            r#"<text class="tick" x="{x:.1}" y="{y:.1}" text-anchor="end" transform="rotate(-30 {x:.1} {y:.1})">{}</text>"#,
            esc(name)
        );
    }
}

/// The axis lines and the axes' titles (x at `x_label_y`).
fn labels(o: &mut String, f: &Frame, x_title: &str, y_title: &str, x_label_y: f64) {
    let mid = f.top + PLOT_H / 2.0;
    let _ = write!(
        o,
        r#"<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{}" y2="{b:.1}"/><line class="axis" x1="{LEFT}" x2="{r}" y1="{b:.1}" y2="{b:.1}"/><text class="axis-label" x="{:.1}" y="{x_label_y:.1}" text-anchor="middle">{}</text><text class="axis-label" x="14" y="{mid:.1}" text-anchor="middle" transform="rotate(-90 14 {mid:.1})">{}</text>"#,
        f.top,
        LEFT + (W - LEFT - RIGHT) / 2.0,
        esc(x_title),
        esc(y_title),
        b = f.bottom(),
        r = W - RIGHT,
    );
}

/// Lines and points; clipped points hollow. A chart of one point alone
/// labels it with its value, or it would say nothing.
fn dots(o: &mut String, f: &Frame, c: &Chart, marks: &[Vec<Mark>]) {
    let (line, r) = if c.kind == Kind::Line {
        (true, 2.5)
    } else {
        (false, 1.6)
    };
    for (k, ms) in marks.iter().enumerate() {
        let class = format!("s{}", k.min(COLOURS - 1));
        // Clipped points on the top edge, whatever tick is there.
        let y = |m: &Mark| f.py(if m.clipped { f.y1 } else { m.y });
        if line {
            let d: Vec<String> = ms.iter().map(|m| format!("{:.1},{:.1}", f.px(m.x), y(m))).collect();
            let _ = write!(o, r#"<polyline class="line {class}" points="{}"/>"#, d.join(" "));
        }
        for m in ms {
            let (hollow, r) = if m.clipped { (" clipped", 3.0) } else { ("", r) };
            let _ = write!(
                o,
                r#"<circle class="dot {class}{hollow}" cx="{:.1}" cy="{:.1}" r="{r}"/>"#,
                f.px(m.x),
                y(m)
            );
        }
    }
    if let [m] = marks.iter().flatten().collect::<Vec<_>>()[..] {
        value_text(o, f.px(m.x), f.py(m.y) - 8.0, &value_label(c.y_unit, m.value));
    }
}

/// Bars: in each category, one bar per series that has a value there,
/// side by side; each with its value above it while they are few.
fn bar_marks(o: &mut String, f: &Frame, c: &Chart, marks: &[Vec<Mark>]) {
    let n = c.categories.len().max(1);
    let width = (W - LEFT - RIGHT) / n as f64 * 0.8;
    let base = f.py(f.y0.max(0.0).min(f.y1));
    for i in 0..n {
        let here: Vec<(usize, &Mark)> = marks
            .iter()
            .enumerate()
            .filter_map(|(k, ms)| Some((k, ms.iter().find(|m| m.x == i as f64)?)))
            .collect();
        let slot = width / here.len().max(1) as f64;
        for (j, (k, m)) in here.iter().enumerate() {
            let left = f.px(i as f64) - width / 2.0 + slot * j as f64;
            let top = f.py(m.y).min(base);
            let _ = write!(
                o,
                r#"<rect class="bar s{}" x="{left:.1}" y="{top:.1}" width="{:.1}" height="{:.1}"/>"#,
                (*k).min(COLOURS - 1),
                slot.max(1.0),
                (base - f.py(m.y)).abs()
            );
            if n <= LABELLED_BARS {
                value_text(o, left + slot / 2.0, top - 4.0, &value_label(c.y_unit, m.value));
            }
        }
    }
}

fn value_text(o: &mut String, x: f64, y: f64, text: &str) {
    let _ = write!(
        o,
        r#"<text class="value" x="{x:.1}" y="{y:.1}" text-anchor="middle">{}</text>"#,
        esc(text)
    );
}

/// The legend row under the title, when there is more than one series.
fn legend_row(o: &mut String, series: &[Series]) {
    let mut x = LEFT;
    for (k, s) in series.iter().enumerate() {
        let class = format!("s{}", k.min(COLOURS - 1));
        let _ = write!(
            o,
            r#"<rect class="bar {class}" x="{x:.1}" y="30" width="10" height="10"/><text class="legend" x="{:.1}" y="39">{}</text>"#,
            x + 14.0,
            esc(&s.label)
        );
        x += 24.0 + 6.5 * s.label.chars().count() as f64;
    }
}

#[cfg(test)]
mod tests;
