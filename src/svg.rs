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

use std::fmt::Write;

use crate::units::Iec;

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

/// How many decimals show `v` exactly (to a millionth), at most 15: 2
/// takes none, 0.5 one, 0.25 two, 0.002 three. Labels of multiples of a
/// step given this many decimals all differ.
fn decimals(v: f64) -> usize {
    if v == 0.0 {
        return 0;
    }
    (0..15)
        .find(|&d| {
            let s = v.abs() * 10f64.powi(d as i32);
            s.round() >= 1.0 && (s - s.round()).abs() <= 1e-6 * s
        })
        .unwrap_or(15)
}

/// A number with just the decimals it needs: 2, 0.5, 0.001.
fn plain(v: f64) -> String {
    format!("{v:.*}", decimals(v))
}

/// Three significant digits, for a value written beside its mark: 22.6,
/// 0.0108, 381.
fn sig3(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v:.0}");
    }
    let d = (2 - v.abs().log10().floor() as i32).clamp(0, 9) as usize;
    format!("{v:.d$}")
}

/// The unit a duration reads best in: the largest of s, ms and µs it
/// reaches, else ns; as (nanoseconds per unit, name).
fn ns_unit(ns: f64) -> (f64, &'static str) {
    [(1e9, "s"), (1e6, "ms"), (1e3, "µs")]
        .into_iter()
        .find(|&(d, _)| ns.abs() >= d * (1.0 - 1e-9))
        .unwrap_or((1.0, "ns"))
}

/// The IEC unit a size reads best in, as (bytes per unit, name).
fn iec_unit(bytes: f64) -> (f64, &'static str) {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let i = (1..UNITS.len())
        .take_while(|&i| bytes.abs() >= 1024f64.powi(i as i32))
        .last()
        .unwrap_or(0);
    (1024f64.powi(i as i32), UNITS[i])
}

/// A value written beside its mark or in a note: three significant
/// digits and its unit ("22.6 MB/s", "381 ms", "4 MiB").
pub fn value_label(q: Quantity, v: f64) -> String {
    match q {
        Quantity::Number("") => sig3(v),
        Quantity::Number("%") => format!("{}%", sig3(v)),
        Quantity::Number(u) => format!("{} {u}", sig3(v)),
        Quantity::Count => format!("{v:.0}"),
        Quantity::Bytes => Iec(v.max(0.0).round() as u64).to_string(),
        Quantity::Ns => {
            let (d, u) = ns_unit(v);
            format!("{} {u}", sig3(v / d))
        }
    }
}

/// An axis ready to draw: its extent in axis units (the logarithm of the
/// value on a log scale), its ticks there with their labels, and its title
/// with the unit.
#[derive(Debug, Clone, PartialEq)]
struct Axis {
    lo: f64,
    hi: f64,
    ticks: Vec<(f64, String)>,
    title: String,
}

/// The axis for these values, None when there is none to draw: linear
/// ones by [`linear_axis`], log ones (positive values only) by
/// [`log_axis`].
fn axis(scale: Scale, q: Quantity, label: &str, values: &[f64], from_zero: bool) -> Option<Axis> {
    let usable = values
        .iter()
        .copied()
        .filter(|v| v.is_finite() && (scale == Scale::Linear || *v > 0.0));
    let (lo, hi) = usable.fold((f64::INFINITY, f64::NEG_INFINITY), |(a, b), v| (a.min(v), b.max(v)));
    if !lo.is_finite() {
        return None;
    }
    Some(match scale {
        Scale::Linear => linear_axis(q, label, lo, hi, from_zero),
        Scale::Log2 | Scale::Log10 => log_axis(scale, q, label, lo, hi),
    })
}

/// The step between linear ticks, three to six across the span: 1, 2 or
/// 5 times a power of ten, a power of two for bytes (so offsets read 2,
/// 4, 6 MiB, not 1.9, 3.8, 5.7), at least one for counts.
fn linear_step(q: Quantity, span: f64) -> f64 {
    let span = span.max(f64::MIN_POSITIVE);
    if q == Quantity::Bytes {
        return 2f64.powf((span / 6.0).log2().ceil()).max(1.0);
    }
    let mag = 10f64.powf((span / 6.0).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .into_iter()
        .map(|m| m * mag)
        .find(|s| span / s <= 6.0 + 1e-9)
        .unwrap_or(10.0 * mag);
    if q == Quantity::Count { step.max(1.0) } else { step }
}

/// The unit a linear axis's labels share, chosen from its largest tick:
/// (value per unit, name).
fn linear_unit(q: Quantity, largest: f64) -> (f64, &'static str) {
    match q {
        Quantity::Number(u) => (1.0, u),
        Quantity::Count => (1.0, ""),
        Quantity::Bytes => iec_unit(largest),
        Quantity::Ns => ns_unit(largest),
    }
}

/// A linear axis: a y axis (`from_zero`) from zero to the first tick at or
/// above the largest value, so its top line is labelled; an x axis padded
/// a twentieth each side, so no mark sits on the frame. The labels share
/// one unit, named in the title, with the decimals the step needs.
fn linear_axis(q: Quantity, label: &str, lo: f64, hi: f64, from_zero: bool) -> Axis {
    let (mut lo, mut hi) = if from_zero {
        (lo.min(0.0), hi.max(0.0))
    } else {
        (lo, hi)
    };
    if hi - lo < 1e-12 {
        let pad = hi.abs().max(1.0) * 0.1;
        if !(from_zero && lo == 0.0) {
            lo -= pad;
        }
        hi += pad;
    }
    if !from_zero {
        let pad = (hi - lo) * 0.05;
        (lo, hi) = (lo - pad, hi + pad);
    }
    let step = linear_step(q, hi - lo);
    if from_zero {
        lo = (lo / step + 1e-9).floor() * step;
        hi = (hi / step - 1e-9).ceil() * step;
    }
    let (mut first, mut last) = ((lo / step - 1e-9).ceil() as i64, (hi / step + 1e-9).floor() as i64);
    if last <= first {
        // Whole steps (a byte, one AU) wider than the data: out to the
        // ticks either side, so the axis still has two labels.
        first = (lo / step + 1e-9).floor() as i64;
        last = ((hi / step - 1e-9).ceil() as i64).max(first + 1);
        (lo, hi) = (first as f64 * step, last as f64 * step);
    }
    let values: Vec<f64> = (first..=last).map(|k| k as f64 * step).collect();
    let largest = values.iter().fold(0f64, |m, v| m.max(v.abs()));
    let (per, unit) = linear_unit(q, largest);
    let d = decimals(step / per);
    let ticks = values
        .into_iter()
        .map(|v| {
            (
                v,
                if v == 0.0 {
                    "0".into()
                } else {
                    format!("{:.d$}", v / per)
                },
            )
        })
        .collect();
    let title = if unit.is_empty() {
        label.to_string()
    } else {
        format!("{label} ({unit})")
    };
    Axis { lo, hi, ticks, title }
}

/// A log axis's ticks (values), from the one at or below `lo` to the one
/// at or above `hi`, so the axis is labelled from its first tick to its
/// last: powers of two (every few over a wide span); powers of ten, with 2
/// and 5 times them over three decades or less.
fn log_ticks(scale: Scale, lo: f64, hi: f64) -> Vec<f64> {
    let base: f64 = if scale == Scale::Log2 { 2.0 } else { 10.0 };
    let log = |v: f64| v.log(base);
    let (mut a, mut b) = ((log(lo) + 1e-9).floor() as i32, (log(hi) - 1e-9).ceil() as i32);
    if a == b {
        (a, b) = (a - 1, b + 1);
    }
    if scale == Scale::Log10 && b - a <= 3 {
        let all: Vec<f64> = (a..b)
            .flat_map(|e| [1.0, 2.0, 5.0].map(|m| m * 10f64.powi(e)))
            .chain([10f64.powi(b)])
            .collect();
        let near = |x: f64, v: f64| (x - v).abs() <= 1e-9 * v;
        let first = all.iter().rposition(|&x| x <= lo || near(x, lo)).unwrap_or(0);
        let last = all
            .iter()
            .position(|&x| x >= hi || near(x, hi))
            .unwrap_or(all.len() - 1);
        let (first, last) = if first == last {
            (first.saturating_sub(1), (last + 1).min(all.len() - 1))
        } else {
            (first, last)
        };
        return all[first..=last].to_vec();
    }
    let span = (b - a).unsigned_abs();
    let step = span.div_ceil(8).max(1);
    let n = span.div_ceil(step);
    (0..=n).map(|i| base.powi(a + (i * step) as i32)).collect()
}

/// A log axis: ticks by [`log_ticks`], each labelled with its own unit
/// ("512 KiB", "2 ms"), since one unit cannot suit several decades.
fn log_axis(scale: Scale, q: Quantity, label: &str, lo: f64, hi: f64) -> Axis {
    let values = log_ticks(scale, lo, hi);
    let to = |v: f64| to_axis(scale, v).unwrap_or(0.0);
    let ticks: Vec<(f64, String)> = values
        .iter()
        .map(|&v| {
            let text = match q {
                Quantity::Bytes => Iec(v.round() as u64).to_string(),
                Quantity::Ns => {
                    let (per, unit) = ns_unit(v);
                    format!("{} {unit}", plain(v / per))
                }
                Quantity::Number(_) | Quantity::Count => plain(v),
            };
            (to(v), text)
        })
        .collect();
    let title = match q {
        Quantity::Bytes => format!("{label} (bytes, log scale)"),
        Quantity::Number(u) if !u.is_empty() => format!("{label} ({u}, log scale)"),
        Quantity::Number(_) | Quantity::Count | Quantity::Ns => format!("{label} (log scale)"),
    };
    Axis {
        lo: ticks[0].0,
        hi: ticks[ticks.len() - 1].0,
        ticks,
        title,
    }
}

/// Where a y axis stops short of its outliers: the `q` quantile of the
/// values, when the largest is more than twice it (otherwise nothing
/// needs clipping: None).
fn clip_limit(values: &[f64], q: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let k = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1)) - 1;
    let (limit, max) = (*v.get(k)?, *v.last()?);
    (limit > 0.0 && max > 2.0 * limit).then_some(limit)
}

/// The note under a clipped plot: where it is clipped, how many points lie
/// above and how far they go.
fn clip_note(q: f64, unit: Quantity, limit: f64, values: &[f64]) -> String {
    let above = values.iter().filter(|&&v| v > limit).count();
    let max = values.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "y axis clipped at p{} = {}: {} above, up to {} (hollow, on the top edge)",
        plain(q * 100.0),
        value_label(unit, limit),
        crate::units::count(above as u64, "point", "points"),
        value_label(unit, max)
    )
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

fn to_axis(scale: Scale, v: f64) -> Option<f64> {
    match scale {
        Scale::Linear => Some(v),
        Scale::Log2 if v > 0.0 => Some(v.log2()),
        Scale::Log10 if v > 0.0 => Some(v.log10()),
        Scale::Log2 | Scale::Log10 => None,
    }
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
mod tests {
    use super::*;

    fn labels(a: &Axis) -> Vec<&str> {
        a.ticks.iter().map(|t| t.1.as_str()).collect()
    }

    fn chart(kind: Kind, series: Vec<Series>) -> Chart {
        Chart {
            title: "t <1>".into(),
            x_label: "size".into(),
            y_label: "rate".into(),
            x_scale: Scale::Log2,
            y_scale: Scale::Linear,
            kind,
            series,
            x_unit: Quantity::Bytes,
            y_unit: Quantity::Number("MB/s"),
            clip_y: None,
            categories: vec![],
        }
    }

    fn one(points: Vec<(f64, f64)>) -> Vec<Series> {
        vec![Series {
            label: "a".into(),
            points,
        }]
    }

    #[test]
    fn a_chart_has_its_title_axis_labels_ticks_and_one_mark_per_point() {
        let c = chart(Kind::Line, one(vec![(4096.0, 1.0), (8192.0, 2.0), (16384.0, 4.0)]));
        let s = render(&c).unwrap();
        assert!(s.starts_with("<svg class=\"plot\"") && s.ends_with("</svg>"));
        assert!(s.contains("t &lt;1&gt;"), "escaped");
        assert!(s.contains(">size (bytes, log scale)</text>") && s.contains(">rate (MB/s)</text>"));
        assert_eq!(s.matches("<circle").count(), 3);
        assert!(
            s.contains(">4 KiB</text>") && s.contains(">16 KiB</text>"),
            "powers of two on a log2 axis"
        );
        let empty = Chart { series: vec![], ..c };
        assert!(render(&empty).is_none(), "no data, no plot");
    }

    #[test]
    fn a_slow_cards_speeds_get_ticks_with_the_decimals_their_step_needs() {
        // Kingston's FAT plot read "0, 0.00, 0.00, 0.01".
        let a = linear_axis(Quantity::Number("MB/s"), "write speed", 0.0, 0.0108, true);
        assert_eq!(labels(&a), ["0", "0.002", "0.004", "0.006", "0.008", "0.010", "0.012"]);
        assert_eq!(a.title, "write speed (MB/s)");
        assert_eq!((a.lo, a.hi), (0.0, 0.012), "from zero to a labelled top");
        let a = linear_axis(Quantity::Number("MB/s"), "rate", 0.0, 22.6, true);
        assert_eq!(labels(&a), ["0", "5", "10", "15", "20", "25"]);
    }

    #[test]
    fn byte_axes_tick_at_powers_of_two_in_one_unit() {
        // Offsets read "1.9, 3.8, 5.7 MiB" (1-2-5 steps in bytes).
        let a = linear_axis(Quantity::Bytes, "offset", 0.0, (8 << 20) as f64 - 4096.0, false);
        assert_eq!(labels(&a), ["0", "2", "4", "6", "8"]);
        assert_eq!(a.title, "offset (MiB)");
        let a = linear_axis(Quantity::Bytes, "offset", 0.0, (3 << 20) as f64, true);
        assert_eq!(labels(&a), ["0", "0.5", "1.0", "1.5", "2.0", "2.5", "3.0"]);
        let a = linear_axis(Quantity::Bytes, "offset", 0.0, (3u64 << 30) as f64, true);
        assert_eq!(labels(&a), ["0", "0.5", "1.0", "1.5", "2.0", "2.5", "3.0"]);
        assert_eq!(a.title, "offset (GiB)");
    }

    #[test]
    fn time_axes_take_the_unit_their_range_needs() {
        let a = linear_axis(Quantity::Ns, "read time", 0.0, 1.81e6, true);
        assert_eq!(labels(&a), ["0", "0.5", "1.0", "1.5", "2.0"]);
        assert_eq!(a.title, "read time (ms)");
        let a = linear_axis(Quantity::Ns, "read time", 0.0, 640e3, true);
        assert_eq!(labels(&a), ["0", "200", "400", "600", "800"]);
        assert_eq!(a.title, "read time (µs)");
        let a = linear_axis(Quantity::Count, "AUs", 1.0, 4.0, false);
        assert_eq!(labels(&a), ["1", "2", "3", "4"], "no half AUs");
    }

    #[test]
    fn tick_labels_differ_for_any_range() {
        let quantities = [Quantity::Number("MB/s"), Quantity::Count, Quantity::Bytes, Quantity::Ns];
        for e in -6..13 {
            for m in [1.0, 1.3, 2.7, 7.9] {
                let hi = m * 10f64.powi(e);
                for (lo, from_zero) in [(0.0, true), (hi * 0.9, false), (hi * 0.999, false)] {
                    for q in quantities {
                        let a = linear_axis(q, "v", lo, hi, from_zero);
                        let l = labels(&a);
                        let mut d = l.clone();
                        d.dedup();
                        assert_eq!(d, l, "{q:?} {lo}..{hi}: {l:?}");
                        assert!(l.len() >= 2, "{q:?} {lo}..{hi}: {l:?}");
                    }
                    for scale in [Scale::Log2, Scale::Log10] {
                        let l: Vec<String> = log_axis(scale, Quantity::Ns, "v", hi.max(1.0), hi.max(1.0) * 3.0)
                            .ticks
                            .into_iter()
                            .map(|t| t.1)
                            .collect();
                        let mut d = l.clone();
                        d.dedup();
                        assert_eq!(d, l);
                    }
                }
            }
        }
    }

    #[test]
    fn a_log_axis_is_labelled_from_its_first_tick_to_its_last() {
        // The latency distribution began at an unlabelled 1.8 ms
        // and labelled 10000 and 100000 µs.
        let a = log_axis(Scale::Log10, Quantity::Ns, "latency", 1.8e6, 47e6);
        assert_eq!(labels(&a), ["1 ms", "2 ms", "5 ms", "10 ms", "20 ms", "50 ms"]);
        assert_eq!((a.lo, a.hi), (6.0, 50e6f64.log10()), "ends on ticks");
        assert_eq!(a.title, "latency (log scale)");
        let a = log_axis(Scale::Log10, Quantity::Ns, "latency", 900.0, 2e9);
        assert_eq!(
            labels(&a),
            [
                "100 ns", "1 µs", "10 µs", "100 µs", "1 ms", "10 ms", "100 ms", "1 s", "10 s"
            ]
        );
        let a = log_axis(Scale::Log2, Quantity::Bytes, "boundary", 1024.0, (64 << 20) as f64);
        assert_eq!(labels(&a)[..3], ["1 KiB", "4 KiB", "16 KiB"]);
        assert_eq!(labels(&a).last(), Some(&"64 MiB"));
        let a = log_axis(Scale::Log2, Quantity::Bytes, "size", 4096.0, 4096.0);
        assert_eq!(labels(&a), ["2 KiB", "4 KiB", "8 KiB"], "one value: a tick each side");
    }

    #[test]
    fn an_outlier_is_clipped_at_the_quantile_and_the_plot_says_so() {
        let mut ys = vec![531e3; 2047];
        ys.push(360e6);
        assert_eq!(clip_limit(&ys, 0.999), Some(531e3));
        assert_eq!(clip_limit(&ys[..2047], 0.999), None, "nothing to clip");
        assert_eq!(
            clip_note(0.999, Quantity::Ns, 531e3, &ys),
            "y axis clipped at p99.9 = 531 µs: 1 point above, up to 360 ms (hollow, on the top edge)"
        );
        let points: Vec<(f64, f64)> = ys.iter().enumerate().map(|(i, &y)| (i as f64 * 4096.0, y)).collect();
        let c = Chart {
            x_scale: Scale::Linear,
            y_unit: Quantity::Ns,
            clip_y: Some(0.999),
            ..chart(Kind::Points, one(points))
        };
        let s = render(&c).unwrap();
        assert!(s.contains("class=\"plot-note\"") && s.contains("clipped at p99.9 = 531 µs"));
        assert_eq!(s.matches("clipped\"").count(), 1, "one hollow point");
        let hollow = &s[s.find("clipped\"").unwrap()..];
        assert!(
            hollow[..40].contains("cy=\"34.0\""),
            "on the top edge: {}",
            &hollow[..40]
        );
        assert!(
            s.contains(">rate (µs)</text>") && s.contains(">600</text>"),
            "µs up to 600"
        );
        assert!(!s.contains(">360000</text>"), "not stretched to the outlier");
    }

    #[test]
    fn few_bars_and_a_lone_point_carry_their_values() {
        let c = Chart {
            categories: vec!["AU 0".into(), "control".into()],
            y_unit: Quantity::Ns,
            ..chart(
                Kind::Bars,
                vec![
                    Series {
                        label: "AU".into(),
                        points: vec![(0.0, 380.6e6)],
                    },
                    Series {
                        label: "control".into(),
                        points: vec![(1.0, 10.4e6)],
                    },
                ],
            )
        };
        let s = render(&c).unwrap();
        assert!(s.contains(">381 ms</text>") && s.contains(">10.4 ms</text>"));
        // Each bar alone in its category takes the category's whole width.
        assert_eq!(s.matches("width=\"216.8\"").count(), 2, "{s}");
        let lone = chart(Kind::Line, one(vec![(4096.0, 22.63)]));
        assert!(render(&lone).unwrap().contains(">22.6 MB/s</text>"));
    }

    #[test]
    fn values_beside_marks_read_with_three_digits_and_a_unit() {
        assert_eq!(value_label(Quantity::Number("MB/s"), 22.63), "22.6 MB/s");
        assert_eq!(value_label(Quantity::Number("MB/s"), 0.010761), "0.0108 MB/s");
        assert_eq!(value_label(Quantity::Ns, 380_628_497.0), "381 ms");
        assert_eq!(value_label(Quantity::Ns, 531_497.0), "531 µs");
        assert_eq!(value_label(Quantity::Number("%"), 99.9), "99.9%");
        assert_eq!(value_label(Quantity::Bytes, 4194304.0), "4 MiB");
    }
}
