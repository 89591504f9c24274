//! The axes of a plot: where the ticks fall for what the numbers are,
//! how they are labelled, and where a y axis stops short of outliers.

use super::label::{decimals, iec_unit, ns_unit, plain, value_label};
use super::{Quantity, Scale};
use crate::units::Iec;

/// An axis ready to draw: its extent in axis units (the logarithm of the
/// value on a log scale), its ticks there with their labels, and its title
/// with the unit.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Axis {
    pub(super) lo: f64,
    pub(super) hi: f64,
    pub(super) ticks: Vec<(f64, String)>,
    pub(super) title: String,
}

/// The axis for these values, None when there is none to draw: linear
/// ones by [`linear_axis`], log ones (positive values only) by
/// [`log_axis`].
pub(super) fn axis(scale: Scale, q: Quantity, label: &str, values: &[f64], from_zero: bool) -> Option<Axis> {
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
pub(super) fn linear_axis(q: Quantity, label: &str, lo: f64, hi: f64, from_zero: bool) -> Axis {
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
pub(super) fn log_axis(scale: Scale, q: Quantity, label: &str, lo: f64, hi: f64) -> Axis {
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
pub(super) fn clip_limit(values: &[f64], q: f64) -> Option<f64> {
    let mut v: Vec<f64> = values.iter().copied().filter(|x| x.is_finite()).collect();
    v.sort_by(f64::total_cmp);
    let k = ((q * v.len() as f64).ceil() as usize).clamp(1, v.len().max(1)) - 1;
    let (limit, max) = (*v.get(k)?, *v.last()?);
    (limit > 0.0 && max > 2.0 * limit).then_some(limit)
}

/// The note under a clipped plot: where it is clipped, how many points lie
/// above and how far they go.
pub(super) fn clip_note(q: f64, unit: Quantity, limit: f64, values: &[f64]) -> String {
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

pub(super) fn to_axis(scale: Scale, v: f64) -> Option<f64> {
    match scale {
        Scale::Linear => Some(v),
        Scale::Log2 if v > 0.0 => Some(v.log2()),
        Scale::Log10 if v > 0.0 => Some(v.log10()),
        Scale::Log2 | Scale::Log10 => None,
    }
}
