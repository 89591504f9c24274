//! How open-au shows: each sweep's table and verdict, the open-AU line of
//! probe's summary, its plots, and the limits as comparable figures.

use std::fmt::Write;

use super::{OpenAuResult, Sweep};
use crate::console::table;
use crate::measure::metrics::{Better, Metric, Unit, m};
use crate::measure::registry::{Registered, Results};
use crate::measure::{CONFIDENT, show};
use crate::svg::{Chart, Figure, Kind, Quantity, Scale, Series};
use crate::units::{Iec, mb_per_s};

pub struct Entry;

impl Registered for Entry {
    const COMMAND: &'static str = "open-au";
    type Output = OpenAuResult;

    fn text(r: &OpenAuResult, device_s: f64, o: &mut String) {
        let (erase, chunk) = (r.erase_size_bytes, r.chunk_bytes);
        for (name, sweep) in [("linear", &r.linear), ("random", &r.random)] {
            let Some(sw) = sweep else { continue };
            let rows: Vec<Vec<String>> = sw
                .runs
                .iter()
                .flat_map(|run| {
                    run.levels.iter().map(move |l| {
                        vec![
                            run.open_aus.to_string(),
                            Iec(l.chunk_bytes).to_string(),
                            mb_per_s(l.bytes_per_sec),
                            l.writes.to_string(),
                            // A count stops as soon as it has collapsed.
                            if l.collapsed { "collapsed".into() } else { String::new() },
                        ]
                    })
                })
                .collect();
            let _ = writeln!(o, "{name}:");
            let _ = writeln!(
                o,
                "{}",
                table::grid(&["open AUs", "chunk", "rate", "writes", ""], &rows)
            );
            let noted = r.notes.iter().any(|n| n.starts_with(name));
            let sure = if noted {
                format!("confidence {:.2}, see the note", sw.confidence)
            } else if sw.confidence >= CONFIDENT {
                format!("confidence {:.2}", sw.confidence)
            } else if let Some(secs) = sw.stopped_by_budget_s {
                format!("unsure: stopped after {secs:.0} device-seconds, the step's budget")
            } else {
                format!("unsure: confidence {:.2}", sw.confidence)
            };
            let _ = match sw.max_open_aus {
                Some(n) => writeln!(
                    o,
                    "{name}: {n} open AU{} (writes collapse at {}; {sure})",
                    if n == 1 { "" } else { "s" },
                    n + 1
                ),
                None if r.not_flash.is_some() => writeln!(o, "{name}: no open-AU limit claimed"),
                None if sw.at_most.is_some() => writeln!(
                    o,
                    "{name}: at most {} open AUs (collapse at {}; {sure})",
                    sw.at_most.unwrap_or(0),
                    sw.at_most.unwrap_or(0) + 1
                ),
                None => writeln!(o, "{name}: no collapse up to {} open AUs ({sure})", sw.tried_up_to),
            };
        }
        show::notes(o, &r.notes);
        let _ = writeln!(
            o,
            "erase size {}, chunk {}; {device_s:.1} device-seconds",
            Iec(erase),
            Iec(chunk)
        );
    }

    fn summary(all: &Results) -> Vec<(&'static str, String)> {
        let Some(r) = all.open_au.get() else {
            return Vec::new();
        };
        let show = |s: &Option<Sweep>| match s {
            Some(s) => {
                let unsure = if s.confidence >= CONFIDENT { "" } else { " (unsure)" };
                match (s.max_open_aus, s.at_most) {
                    (Some(n), _) => format!("{n}{unsure}"),
                    (None, Some(m)) if s.tried_up_to > 0 => format!("{} to {m}{unsure}", s.tried_up_to),
                    (None, Some(m)) => format!("at most {m}{unsure}"),
                    (None, None) => format!("no limit up to {}{unsure}", s.tried_up_to),
                }
            }
            None => "-".to_string(),
        };
        vec![(
            "open AUs",
            format!(
                "{} in order, {} random{}",
                show(&r.linear),
                show(&r.random),
                crate::measure::summary::counted_in(all, r.erase_size_bytes)
            ),
        )]
    }

    fn figures(r: &OpenAuResult) -> Vec<Figure> {
        let series: Vec<Series> = [("in order", &r.linear), ("random", &r.random)]
            .into_iter()
            .filter_map(|(name, s)| {
                let s = s.as_ref()?;
                // By count: the sweep tried them out of order (doubling,
                // then bisection).
                let mut points: Vec<(f64, f64)> = s
                    .runs
                    .iter()
                    .filter(|run| !run.confirmation)
                    .filter_map(|run| {
                        let l = run
                            .levels
                            .iter()
                            .find(|l| l.chunk_bytes == r.chunk_bytes)
                            .or(run.levels.first())?;
                        Some((run.open_aus as f64, l.bytes_per_sec / 1e6))
                    })
                    .collect();
                points.sort_by(|a, b| a.0.total_cmp(&b.0));
                points.dedup_by(|a, b| a.0 == b.0);
                Some(Series {
                    label: name.into(),
                    points,
                })
            })
            .collect();
        let mut out = vec![Figure::Chart(Chart {
            title: format!(
                "open-au: write speed by number of open AUs ({} chunks)",
                Iec(r.chunk_bytes)
            ),
            x_label: "AUs written in turn".into(),
            y_label: "write speed".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            kind: Kind::Line,
            series,
            x_unit: Quantity::Count,
            y_unit: Quantity::Number("MB/s"),
            clip_y: None,
            categories: vec![],
        })];
        out.extend(r.notes.iter().map(|n| Figure::Note(format!("open-au: {n}"))));
        // --full: every chunk size at each count.
        let by_chunk: Vec<Series> = [("in order", &r.linear), ("random", &r.random)]
            .into_iter()
            .filter_map(|(name, s)| Some((name, s.as_ref()?)))
            .flat_map(|(name, s)| {
                s.runs.iter().filter(|run| run.levels.len() > 1).map(move |run| Series {
                    label: format!("{} {name}", run.open_aus),
                    points: run
                        .levels
                        .iter()
                        .map(|l| (l.chunk_bytes as f64, l.bytes_per_sec / 1e6))
                        .collect(),
                })
            })
            .collect();
        if !by_chunk.is_empty() {
            out.push(Figure::Chart(Chart {
                title: "open-au: write speed by chunk size, for each number of open AUs".into(),
                x_label: "chunk".into(),
                y_label: "write speed".into(),
                x_scale: Scale::Log2,
                y_scale: Scale::Linear,
                kind: Kind::Line,
                series: by_chunk,
                x_unit: Quantity::Bytes,
                y_unit: Quantity::Number("MB/s"),
                clip_y: None,
                categories: vec![],
            }));
        }
        out
    }

    /// Each order's limit, where claimed with confidence.
    fn metrics(all: &Results) -> Vec<Metric> {
        let Some(r) = all.open_au.get() else {
            return Vec::new();
        };
        [("open AUs in order", &r.linear), ("open AUs random", &r.random)]
            .into_iter()
            .filter_map(|(name, s)| {
                let n = s.as_ref().filter(|s| s.confidence >= CONFIDENT)?.max_open_aus?;
                Some(m(name, Unit::Count, Better::Higher, n as f64))
            })
            .collect()
    }
}
