//! Numbers as a plot writes them: with just the decimals they need, with
//! three significant digits beside a mark, in the unit that reads best.

use super::Quantity;
use crate::units::Iec;

/// How many decimals show `v` exactly (to a millionth), at most 15: 2
/// takes none, 0.5 one, 0.25 two, 0.002 three. Labels of multiples of a
/// step given this many decimals all differ.
pub(super) fn decimals(v: f64) -> usize {
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
pub(super) fn plain(v: f64) -> String {
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
pub(super) fn ns_unit(ns: f64) -> (f64, &'static str) {
    [(1e9, "s"), (1e6, "ms"), (1e3, "µs")]
        .into_iter()
        .find(|&(d, _)| ns.abs() >= d * (1.0 - 1e-9))
        .unwrap_or((1.0, "ns"))
}

/// The IEC unit a size reads best in, as (bytes per unit, name).
pub(super) fn iec_unit(bytes: f64) -> (f64, &'static str) {
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
