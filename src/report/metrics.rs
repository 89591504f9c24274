//! The figures of a run that can be compared with another run's: geometry,
//! open AUs, the FAT area, capacity, and each bench test's speed and
//! latency. `results compare` and the HTML report's comparison both read
//! them from here.

use serde::{Deserialize, Serialize};

use crate::document::RunDocument;
use crate::measure::bench::BenchResult;
use crate::measure::capacity::CapacityResult;
use crate::measure::{align::AlignResult, fat::FatResult, open_au::OpenAuResult};

/// Which way is better for a figure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Better {
    Higher,
    Lower,
    /// A property, not a score (an erase size is neither good nor bad).
    Neither,
}

/// What a figure's number counts, for output.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Bytes,
    BytesPerSec,
    Iops,
    Ns,
    Count,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Metric {
    pub name: String,
    pub unit: Unit,
    pub better: Better,
    pub value: f64,
}

fn m(name: impl Into<String>, unit: Unit, better: Better, value: f64) -> Metric {
    Metric {
        name: name.into(),
        unit,
        better,
        value,
    }
}

/// A run's comparable figures, in a fixed order; only what was measured
/// (and, for verdicts, claimed with confidence).
pub fn of(doc: &RunDocument) -> Vec<Metric> {
    let mut out = Vec::new();
    if let Some(a) = doc.get::<AlignResult>("align") {
        let au = doc.get::<crate::measure::au::AuResult>("au");
        let (e, c) = crate::measure::au::best(&a, au.as_ref());
        if let (Some(e), true) = (e, c >= crate::measure::CONFIDENT) {
            out.push(m("erase block", Unit::Bytes, Better::Neither, e as f64));
        }
        let page = doc.get::<crate::measure::page::PageResult>("page");
        if let (Some(p), c) = crate::measure::page::best(&a, page.as_ref())
            && c >= crate::measure::CONFIDENT
        {
            out.push(m("page", Unit::Bytes, Better::Neither, p as f64));
        }
    }
    if let Some(r) = doc.get::<OpenAuResult>("open_au") {
        for (name, s) in [("open AUs in order", &r.linear), ("open AUs random", &r.random)] {
            if let Some(n) = s
                .as_ref()
                .filter(|s| s.confidence >= crate::measure::CONFIDENT)
                .and_then(|s| s.max_open_aus)
            {
                out.push(m(name, Unit::Count, Better::Higher, n as f64));
            }
        }
    }
    if let Some(f) = doc.get::<FatResult>("fat")
        && f.not_flash.is_none()
        && f.confidence >= crate::measure::CONFIDENT
    {
        out.push(m("FAT area", Unit::Count, Better::Higher, f.fat_area_aus as f64));
    }
    if let Some(c) = doc.get::<CapacityResult>("capacity") {
        out.push(m("usable capacity", Unit::Bytes, Better::Higher, c.usable_bytes as f64));
    }
    if let Some(b) = doc.get::<BenchResult>("bench") {
        for t in &b.tests {
            out.push(m(format!("{} IOPS", t.name), Unit::Iops, Better::Higher, t.iops));
            out.push(m(
                format!("{} rate", t.name),
                Unit::BytesPerSec,
                Better::Higher,
                t.bytes_per_sec,
            ));
            out.push(m(
                format!("{} p99", t.name),
                Unit::Ns,
                Better::Lower,
                t.latency_ns.p99 as f64,
            ));
        }
    }
    out
}

/// One row of a comparison: a figure across runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    pub name: String,
    pub unit: Unit,
    pub better: Better,
    /// Per run, in the order given; None where a run lacks the figure.
    pub values: Vec<Option<f64>>,
    /// Per run: relative to the first run's value (0.10 = 10% more).
    pub relative: Vec<Option<f64>>,
    /// Index of the better run, where the figure is a score and differs.
    pub best: Option<usize>,
}

/// Side by side: every figure any run has, in first-seen order.
pub fn compare(docs: &[RunDocument]) -> Vec<Row> {
    let per: Vec<Vec<Metric>> = docs.iter().map(of).collect();
    let mut rows: Vec<Row> = Vec::new();
    for (i, ms) in per.iter().enumerate() {
        for x in ms {
            let row = match rows.iter_mut().position(|r| r.name == x.name) {
                Some(k) => &mut rows[k],
                None => {
                    rows.push(Row {
                        name: x.name.clone(),
                        unit: x.unit,
                        better: x.better,
                        values: vec![None; docs.len()],
                        relative: vec![None; docs.len()],
                        best: None,
                    });
                    rows.last_mut().expect("just pushed")
                }
            };
            row.values[i] = Some(x.value);
        }
    }
    for r in &mut rows {
        let base = r.values[0];
        r.relative = r
            .values
            .iter()
            .map(|v| match (base, v) {
                (Some(b), Some(v)) if b != 0.0 => Some(v / b - 1.0),
                _ => None,
            })
            .collect();
        let known: Vec<(usize, f64)> = r
            .values
            .iter()
            .enumerate()
            .filter_map(|(i, v)| Some((i, (*v)?)))
            .collect();
        let all_same = known.windows(2).all(|w| w[0].1 == w[1].1);
        r.best = match r.better {
            _ if known.len() < 2 || all_same => None,
            Better::Higher => known.iter().max_by(|a, b| a.1.total_cmp(&b.1)).map(|x| x.0),
            Better::Lower => known.iter().min_by(|a, b| a.1.total_cmp(&b.1)).map(|x| x.0),
            Better::Neither => None,
        };
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench_doc(iops: f64, p99: u64) -> RunDocument {
        let mut d = RunDocument::new("bench", None);
        d.put(
            "bench",
            &serde_json::json!({"tests": [{"name": "randread 4 KiB Q1", "rw": "randread",
                "pattern": "random", "block_size": 4096, "queue_depth": 1, "requests": 10,
                "iops": iops, "bytes_per_sec": iops * 4096.0,
                "latency_ns": {"mean": 1.0, "p50": 1, "p90": 1, "p99": p99, "p999": 1, "max": 1},
                "timeline": []}]}),
        );
        d
    }

    #[test]
    fn the_better_run_is_named_per_figure_and_differences_are_relative_to_the_first() {
        let rows = compare(&[bench_doc(1000.0, 500), bench_doc(1500.0, 900)]);
        let iops = rows.iter().find(|r| r.name.ends_with("IOPS")).unwrap();
        assert_eq!(iops.values, [Some(1000.0), Some(1500.0)]);
        assert_eq!(iops.relative[1], Some(0.5));
        assert_eq!(iops.best, Some(1), "more IOPS is better");
        let p99 = rows.iter().find(|r| r.name.ends_with("p99")).unwrap();
        assert_eq!(p99.best, Some(0), "a lower p99 is better");
        let same = compare(&[bench_doc(1000.0, 500), bench_doc(1000.0, 500)]);
        assert!(same.iter().all(|r| r.best.is_none()), "no winner between equals");
    }
}
