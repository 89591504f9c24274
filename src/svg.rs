//! Inline SVG plots, hand-written (a plotting crate would be heavier than
//! these few hundred lines): lines, points, bars and steps on linear,
//! log2 or log10 axes, each axis labelled with its unit. Colours come from
//! CSS classes (`s0`..`s5`), so the page's light, dark and print styles
//! apply to them.

use std::fmt::Write;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    Linear,
    /// Sizes: ticks at powers of two.
    Log2,
    /// Latencies: ticks at powers of ten.
    Log10,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    Line,
    Points,
    /// One bar per x (categories: x is the index).
    Bars,
}

pub struct Series {
    pub label: String,
    pub points: Vec<(f64, f64)>,
}

pub struct Chart {
    pub title: String,
    pub x_label: String,
    pub y_label: String,
    pub x_scale: Scale,
    pub y_scale: Scale,
    pub kind: Kind,
    pub series: Vec<Series>,
    pub x_fmt: fn(f64) -> String,
    pub y_fmt: fn(f64) -> String,
    /// Bars: the category names, by index.
    pub categories: Vec<String>,
}

/// What a test contributes to a report: its plots, and notes beside them.
pub enum Figure {
    Chart(Chart),
    Note(String),
}

/// Tick labels: mebibytes, one decimal below ten.
pub fn mib(v: f64) -> String {
    let m = v / (1 << 20) as f64;
    if m >= 10.0 || m.fract() == 0.0 {
        format!("{m:.0}")
    } else {
        format!("{m:.1}")
    }
}

/// Tick labels: a plain number, two decimals below a hundred.
pub fn num(v: f64) -> String {
    if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

/// Tick labels: a size in IEC units.
pub fn size(v: f64) -> String {
    crate::units::Iec(v.max(0.0) as u64).to_string()
}

/// Tick labels: nanoseconds shown as microseconds.
pub fn us(v: f64) -> String {
    let u = v / 1e3;
    if u >= 100.0 {
        format!("{u:.0}")
    } else if u >= 1.0 {
        format!("{u:.1}")
    } else {
        format!("{u:.2}")
    }
}

const W: f64 = 640.0;
/// Height of the plot area itself; margins are added for the title, the
/// legend and the (rotated, for bars) x labels.
const PLOT_H: f64 = 202.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 16.0;
/// Most series drawn in their own colour; more share the last.
const COLOURS: usize = 6;

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

/// Tick values (in data units) across [lo, hi] (in axis units).
fn ticks(scale: Scale, lo: f64, hi: f64) -> Vec<f64> {
    match scale {
        Scale::Log2 | Scale::Log10 => {
            let base: f64 = if scale == Scale::Log2 { 2.0 } else { 10.0 };
            let (a, b) = (lo.floor() as i32, hi.ceil() as i32);
            let step = ((b - a) / 8).max(1);
            (a..=b).step_by(step as usize).map(|e| base.powi(e)).collect()
        }
        Scale::Linear => {
            let span = (hi - lo).max(f64::EPSILON);
            let raw = span / 5.0;
            let mag = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0]
                .iter()
                .map(|m| m * mag)
                .find(|s| span / s <= 6.0)
                .unwrap_or(10.0 * mag);
            let mut v = (lo / step).floor() * step;
            let mut out = Vec::new();
            while v <= hi + step * 1e-9 && out.len() < 12 {
                if v >= lo - step * 1e-9 {
                    out.push(v);
                }
                v += step;
            }
            out
        }
    }
}

/// Data range in axis units, padded; the y axis of a linear chart starts
/// at zero (throughput, counts).
fn range(scale: Scale, values: impl Iterator<Item = f64>, from_zero: bool) -> Option<(f64, f64)> {
    let (mut lo, mut hi) = (f64::INFINITY, f64::NEG_INFINITY);
    for v in values.filter_map(|v| to_axis(scale, v)).filter(|v| v.is_finite()) {
        lo = lo.min(v);
        hi = hi.max(v);
    }
    if !lo.is_finite() {
        return None;
    }
    if from_zero && scale == Scale::Linear {
        lo = lo.min(0.0);
    }
    if hi - lo < 1e-12 {
        let pad = if scale == Scale::Linear {
            hi.abs().max(1.0) * 0.1
        } else {
            0.5
        };
        lo -= pad;
        hi += pad;
    }
    if scale == Scale::Linear && !from_zero {
        let pad = (hi - lo) * 0.05;
        lo -= pad;
        hi += pad;
    } else if scale == Scale::Linear {
        hi += (hi - lo) * 0.05;
    }
    Some((lo, hi))
}

/// The chart as an `<svg class="plot">` element; None when it has no data.
pub fn render(c: &Chart) -> Option<String> {
    let bars = c.kind == Kind::Bars;
    let xs = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.0));
    let ys = c.series.iter().flat_map(|s| s.points.iter().map(|p| p.1));
    let (x0, x1) = if bars {
        (-0.5, c.categories.len().max(1) as f64 - 0.5)
    } else {
        range(c.x_scale, xs, false)?
    };
    let (y0, y1) = range(c.y_scale, ys, true)?;
    // Title row, then a legend row when there are several series; below,
    // room for tick labels (rotated category names need more) and the label.
    let legend = c.series.len() > 1;
    let top = if legend { 50.0 } else { 34.0 };
    let bottom = if bars { 110.0 } else { 64.0 };
    let h = top + PLOT_H + bottom;
    let pw = W - LEFT - RIGHT;
    let ph = PLOT_H;
    let px = |v: f64| LEFT + (v - x0) / (x1 - x0) * pw;
    let py = |v: f64| top + ph - (v - y0) / (y1 - y0) * ph;
    let mut o = String::new();
    let _ = write!(
        o,
        r#"<svg class="plot" viewBox="0 0 {W} {h}" role="img" aria-label="{t}" xmlns="http://www.w3.org/2000/svg"><title>{t}</title>"#,
        t = esc(&c.title)
    );
    let _ = write!(
        o,
        r#"<text class="plot-title" x="{LEFT}" y="20">{}</text>"#,
        esc(&c.title)
    );
    // Grid and y ticks.
    for t in ticks(c.y_scale, y0, y1) {
        let Some(a) = to_axis(c.y_scale, t) else { continue };
        if a < y0 - 1e-9 || a > y1 + 1e-9 {
            continue;
        }
        let y = py(a);
        let _ = write!(
            o,
            r#"<line class="grid" x1="{LEFT}" x2="{}" y1="{y:.1}" y2="{y:.1}"/><text class="tick" x="{}" y="{:.1}" text-anchor="end">{}</text>"#,
            W - RIGHT,
            LEFT - 6.0,
            y + 4.0,
            esc(&(c.y_fmt)(t))
        );
    }
    // x ticks: categories for bars, values otherwise.
    if bars {
        let every = c.categories.len().div_ceil(12).max(1);
        for (i, name) in c.categories.iter().enumerate().step_by(every) {
            let x = px(i as f64);
            let _ = write!(
                o,
                r#"<text class="tick" x="{x:.1}" y="{:.1}" text-anchor="end" transform="rotate(-30 {x:.1} {:.1})">{}</text>"#,
                top + ph + 14.0,
                top + ph + 14.0,
                esc(name)
            );
        }
    } else {
        for t in ticks(c.x_scale, x0, x1) {
            let Some(a) = to_axis(c.x_scale, t) else { continue };
            if a < x0 - 1e-9 || a > x1 + 1e-9 {
                continue;
            }
            let x = px(a);
            let _ = write!(
                o,
                r#"<line class="grid" x1="{x:.1}" x2="{x:.1}" y1="{top}" y2="{:.1}"/><text class="tick" x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
                top + ph,
                top + ph + 16.0,
                esc(&(c.x_fmt)(t))
            );
        }
    }
    // Axes and their labels.
    let _ = write!(
        o,
        r#"<line class="axis" x1="{LEFT}" x2="{LEFT}" y1="{top}" y2="{b:.1}"/><line class="axis" x1="{LEFT}" x2="{r}" y1="{b:.1}" y2="{b:.1}"/>"#,
        b = top + ph,
        r = W - RIGHT
    );
    let _ = write!(
        o,
        r#"<text class="axis-label" x="{:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
        LEFT + pw / 2.0,
        h - 8.0,
        esc(&c.x_label)
    );
    let _ = write!(
        o,
        r#"<text class="axis-label" x="14" y="{:.1}" text-anchor="middle" transform="rotate(-90 14 {:.1})">{}</text>"#,
        top + ph / 2.0,
        top + ph / 2.0,
        esc(&c.y_label)
    );
    // Data.
    let n = c.series.len().max(1);
    for (k, s) in c.series.iter().enumerate() {
        let class = format!("s{}", k.min(COLOURS - 1));
        let pts: Vec<(f64, f64)> = s
            .points
            .iter()
            .filter_map(|&(x, y)| {
                let xa = if bars { Some(x) } else { to_axis(c.x_scale, x) }?;
                Some((xa, to_axis(c.y_scale, y)?))
            })
            .collect();
        match c.kind {
            Kind::Line => {
                let d: Vec<String> = pts.iter().map(|&(x, y)| format!("{:.1},{:.1}", px(x), py(y))).collect();
                let _ = write!(o, r#"<polyline class="line {class}" points="{}"/>"#, d.join(" "));
                for &(x, y) in &pts {
                    let _ = write!(
                        o,
                        r#"<circle class="dot {class}" cx="{:.1}" cy="{:.1}" r="2.5"/>"#,
                        px(x),
                        py(y)
                    );
                }
            }
            Kind::Points => {
                for &(x, y) in &pts {
                    let _ = write!(
                        o,
                        r#"<circle class="dot {class}" cx="{:.1}" cy="{:.1}" r="1.6"/>"#,
                        px(x),
                        py(y)
                    );
                }
            }
            Kind::Bars => {
                let slot = pw / (x1 - x0) * 0.8 / n as f64;
                let base = py(y0.max(0.0).min(y1));
                for &(x, y) in &pts {
                    let left = px(x) - slot * n as f64 / 2.0 + slot * k as f64;
                    let top = py(y).min(base);
                    let _ = write!(
                        o,
                        r#"<rect class="bar {class}" x="{left:.1}" y="{top:.1}" width="{:.1}" height="{:.1}"/>"#,
                        slot.max(1.0),
                        (base - py(y)).abs()
                    );
                }
            }
        }
    }
    // Legend, when there is more than one series.
    if legend {
        let mut x = LEFT;
        for (k, s) in c.series.iter().enumerate() {
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
    o.push_str("</svg>");
    Some(o)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_chart_has_its_title_axis_labels_ticks_and_one_mark_per_point() {
        let c = Chart {
            title: "t <1>".into(),
            x_label: "size (KiB)".into(),
            y_label: "rate (MB/s)".into(),
            x_scale: Scale::Log2,
            y_scale: Scale::Linear,
            kind: Kind::Line,
            series: vec![Series {
                label: "a".into(),
                points: vec![(4.0, 1.0), (8.0, 2.0), (16.0, 4.0)],
            }],
            x_fmt: num,
            y_fmt: num,
            categories: vec![],
        };
        let s = render(&c).unwrap();
        assert!(s.starts_with("<svg class=\"plot\"") && s.ends_with("</svg>"));
        assert!(s.contains("t &lt;1&gt;"), "escaped");
        assert!(s.contains(">size (KiB)</text>") && s.contains(">rate (MB/s)</text>"));
        assert_eq!(s.matches("<circle").count(), 3);
        assert!(
            s.contains(">4</text>") && s.contains(">16</text>"),
            "powers of two on a log2 axis"
        );
        let empty = Chart { series: vec![], ..c };
        assert!(render(&empty).is_none(), "no data, no plot");
    }
}
