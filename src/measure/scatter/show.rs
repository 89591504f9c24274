//! How scatter shows: a one-line summary, its map as a plot, its points
//! as CSV.

use std::fmt::Write;

use super::ScatterResult;
use crate::measure::median;
use crate::measure::registry::Registered;
use crate::svg::{Chart, Figure, Kind, Scale, Series};
use crate::units::{Iec, duration_ns};

pub struct Entry;

impl Registered for Entry {
    const COMMAND: &'static str = "scatter";
    type Output = ScatterResult;

    fn text(r: &ScatterResult, _device_s: f64, o: &mut String) {
        let lat: Vec<f64> = r.points.iter().map(|p| p.latency_ns as f64).collect();
        let max = r.points.iter().max_by_key(|p| p.latency_ns).map_or(0, |p| p.offset);
        let _ = writeln!(
            o,
            "{} reads of {} from {}: median {}, max {} at byte {max}; --csv or --json for every point",
            r.points.len(),
            Iec(r.block_size),
            r.offset_bytes,
            duration_ns(median(&lat)),
            duration_ns(lat.iter().copied().fold(0.0, f64::max))
        );
    }

    fn figures(s: &ScatterResult) -> Vec<Figure> {
        vec![Figure::Chart(Chart {
            title: format!("scatter: read time of each {} block", Iec(s.block_size)),
            x_label: "offset (MiB)".into(),
            y_label: "read time (µs)".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            kind: Kind::Points,
            series: vec![Series {
                label: "read".into(),
                points: s
                    .points
                    .iter()
                    .map(|p| (p.offset as f64, p.latency_ns as f64))
                    .collect(),
            }],
            x_fmt: crate::svg::mib,
            y_fmt: crate::svg::us,
            categories: vec![],
        })]
    }

    /// The points as CSV (offset_bytes,latency_ns), for plotting elsewhere.
    fn csv(r: &ScatterResult) -> Option<String> {
        let mut s = String::from("offset_bytes,latency_ns\n");
        for p in &r.points {
            s.push_str(&format!("{},{}\n", p.offset, p.latency_ns));
        }
        Some(s)
    }
}
