//! How scatter shows: a one-line summary, its map as a plot, its points
//! as CSV.

use std::fmt::Write;

use super::ScatterResult;
use crate::measure::median;
use crate::measure::registry::Registered;
use crate::svg::{Chart, Figure, Kind, Quantity, Scale, Series};
use crate::units::{Iec, duration_ns};

pub struct Presenter;

impl Registered for Presenter {
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
            x_label: "offset".into(),
            y_label: "read time".into(),
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
            x_unit: Quantity::Bytes,
            y_unit: Quantity::Ns,
            // One slow read (a 360 ms merge on a real card) would flatten
            // the other two thousand into a line at the bottom.
            clip_y: Some(0.999),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_slow_read_is_clipped_off_the_map_and_the_plot_says_so() {
        // One 360 ms read flattened two thousand of about 0.5 ms.
        let points: Vec<serde_json::Value> = (0..2048u64)
            .map(
                |i| serde_json::json!({"offset": i * 4096, "latency_ns": if i == 700 { 360_000_000 } else { 531_497 }}),
            )
            .collect();
        let s: ScatterResult = serde_json::from_value(serde_json::json!({"offset_bytes": 0,
            "length_bytes": 8388608, "block_size": 4096, "points": points}))
        .unwrap();
        let [Figure::Chart(c)] = &Presenter::figures(&s)[..] else {
            panic!("one chart")
        };
        let svg = crate::svg::render(c).unwrap();
        assert!(
            svg.contains("y axis clipped at p99.9 = 531 µs: 1 point above, up to 360 ms"),
            "{svg}"
        );
        assert!(svg.contains(">read time (µs)</text>") && svg.contains(">offset (MiB)</text>"));
        assert!(
            svg.contains(">600</text>") && svg.contains(">8</text>"),
            "µs to 600, MiB to 8"
        );
    }
}
