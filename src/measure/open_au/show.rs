//! How open-au shows: each sweep's table and verdict, the open-AU line of
//! probe's summary, its plots, and the limits as comparable figures.

use std::fmt::Write;

use super::{OpenAuResult, Sweep};
use crate::console::{table, wrap};
use crate::measure::Results;
use crate::measure::metrics::{Better, Metric, MetricId, Unit, m, refused};
use crate::measure::registry::Registered;
use crate::measure::{CONFIDENT, show};
use crate::svg::{Chart, Figure, Kind, Quantity, Scale, Series};
use crate::units::{Iec, mb_per_s};

pub struct Presenter;

impl Registered for Presenter {
    const COMMAND: &'static str = "open-au";
    type Output = OpenAuResult;

    fn text(r: &OpenAuResult, device_s: f64, o: &mut String) {
        let (erase, chunk) = (r.erase_size_bytes, r.chunk_bytes);
        for (name, sweep) in [("linear", &r.linear), ("random", &r.random)] {
            let Some(sw) = sweep else { continue };
            let levels = sw.runs.iter().flat_map(|run| run.levels.iter().map(move |l| (run, l)));
            let rates = table::grid_of(&["open AUs", "chunk", "rate", "writes", ""], levels, |(run, l)| {
                vec![
                    run.open_aus.to_string(),
                    Iec(l.chunk_bytes).to_string(),
                    mb_per_s(l.bytes_per_sec),
                    l.writes.to_string(),
                    // A count stops as soon as it has collapsed.
                    if l.collapsed { "collapsed".into() } else { String::new() },
                ]
            });
            let _ = writeln!(o, "{name}:");
            let _ = writeln!(o, "{rates}");
            let noted = r.notes.iter().any(|n| n.starts_with(name));
            let sure = if noted {
                format!("confidence {:.2}, see the note", sw.confidence)
            } else if sw.confidence >= CONFIDENT {
                format!("confidence {:.2}", sw.confidence)
            } else {
                format!("unsure: confidence {:.2}", sw.confidence)
            };
            let line = match (sw.claim.text(), sw.max_open_aus, sw.at_most) {
                // A collapse in the rows above is not claimed as a limit.
                (Some(refused), ..) => format!("{name}: open-AU limit {refused}"),
                (None, Some(n), _) => format!(
                    "{name}: {n} open AU{} (writes collapse at {}; {sure})",
                    if n == 1 { "" } else { "s" },
                    n + 1
                ),
                (None, None, Some(m)) => format!("{name}: at most {m} open AUs (collapse at {}; {sure})", m + 1),
                (None, None, None) => format!("{name}: no collapse up to {} open AUs ({sure})", sw.tried_up_to),
            };
            let _ = writeln!(o, "{}", wrap(&line, "", "  "));
        }
        show::notes(o, &r.notes);
        let _ = writeln!(
            o,
            "erase size {}, chunk {}; {device_s:.1} device-seconds",
            Iec(erase),
            Iec(chunk)
        );
    }

    fn summary(r: &OpenAuResult, all: &Results) -> Vec<(crate::measure::topic::Topic, String)> {
        // Each order's verdict, or Err(why nothing is claimed). "No limit
        // up to N" only where the sweep reached N and saw no collapse.
        let show = |s: &Option<Sweep>| -> Result<Option<String>, String> {
            let Some(s) = s else { return Ok(None) };
            if let Some(refused) = s.claim.short_text() {
                return Err(refused);
            }
            let unsure = if s.confidence >= CONFIDENT { "" } else { " (unsure)" };
            Ok(Some(match (s.max_open_aus, s.at_most) {
                (Some(n), _) => format!("{n}{unsure}"),
                (None, Some(m)) if s.tried_up_to > 0 => format!("{} to {m}{unsure}", s.tried_up_to),
                (None, Some(m)) => format!("at most {m}{unsure}"),
                // No count read as fine nor as collapsed (an imported run
                // whose rates show neither): nothing to bound.
                (None, None) if s.tried_up_to == 0 => "unclear".to_string(),
                (None, None) => format!("no limit up to {}{unsure}", s.tried_up_to),
            }))
        };
        let line = match (show(&r.linear), show(&r.random)) {
            (Err(a), Err(b)) if a == b => a,
            (linear, random) => {
                // An order not measured says so in words, not "-".
                let part = |v: Result<Option<String>, String>, order: &str| match v {
                    Ok(Some(v)) => format!("{v} {order}"),
                    Ok(None) => format!("{order} not measured"),
                    Err(refused) => format!("{order} {refused}"),
                };
                format!(
                    "{}, {}{}",
                    part(linear, "in order"),
                    part(random, "random"),
                    crate::measure::align::counted_in(all, r.erase_size_bytes)
                )
            }
        };
        vec![(crate::measure::topic::Topic::OpenAus, line)]
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

    /// Each order's limit, where claimed with confidence; "not claimed"
    /// where the run claimed nothing.
    fn metrics(r: &OpenAuResult, _: &Results) -> Vec<Metric> {
        [
            (MetricId::OpenAusInOrder, &r.linear),
            (MetricId::OpenAusRandom, &r.random),
        ]
        .into_iter()
        .filter_map(|(id, s)| {
            let s = s.as_ref()?;
            if let Some(why) = s.claim.why() {
                return Some(refused(id, Unit::Count, Better::Higher, why));
            }
            let n = Some(s).filter(|s| s.confidence >= CONFIDENT)?.max_open_aus?;
            Some(m(id, Unit::Count, Better::Higher, n as f64))
        })
        .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::claim::Claim;

    fn results(linear: Claim, random: Claim) -> Results {
        let sweep = |claim: Claim| super::super::Sweep {
            max_open_aus: claim.claimed.then_some(6),
            tried_up_to: 7,
            runs: Vec::new(),
            confidence: if claim.claimed { 0.95 } else { 0.0 },
            claim,
            stopped_by_budget_s: None,
            at_most: None,
        };
        let mut r = Results::default();
        r.open_au.set(OpenAuResult {
            not_flash: None,
            erase_size_bytes: 4 << 20,
            chunk_bytes: 16 << 10,
            linear: Some(sweep(linear)),
            random: Some(sweep(random)),
            notes: Vec::new(),
        });
        r
    }

    /// "No limit up to N" only where the sweep saw none; a refusal says
    /// why, once where both orders share it.
    #[test]
    fn the_summary_says_not_claimed_where_nothing_was() {
        let loop_device = "the target is a loop device over the file /x.img: the file's filesystem sets its timing";
        let both = results(Claim::refused(loop_device), Claim::refused(loop_device));
        assert_eq!(
            Presenter::summary(both.open_au.get().unwrap(), &both),
            [(
                crate::measure::topic::Topic::OpenAus,
                "not claimed (the target is a loop device over the file /x.img)".to_string()
            )]
        );
        let random = results(
            Claim::made(),
            Claim::refused("unsure: stopped after 90 device-seconds by the step's budget: ..."),
        );
        assert_eq!(
            Presenter::summary(random.open_au.get().unwrap(), &random)[0].1,
            "6 in order, random not claimed (unsure: stopped after 90 device-seconds by the step's budget)"
        );
        let metrics = Presenter::metrics(both.open_au.get().unwrap(), &both);
        assert_eq!(metrics.len(), 2);
        assert!(metrics.iter().all(|m| m.not_claimed.as_deref() == Some(loop_device)));
    }
}
