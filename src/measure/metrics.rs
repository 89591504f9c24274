//! The figures of a run that can be compared with another run's: each test
//! says which of its figures count (geometry, open AUs, the FAT area,
//! capacity, each bench test's speed and latency), and `results compare`
//! and the HTML report's comparison set them side by side here.

use serde::{Deserialize, Serialize};

use super::Results;

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

pub fn m(name: impl Into<String>, unit: Unit, better: Better, value: f64) -> Metric {
    Metric {
        name: name.into(),
        unit,
        better,
        value,
    }
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
pub fn compare(runs: &[&Results]) -> Vec<Row> {
    let per: Vec<Vec<Metric>> = runs.iter().map(|r| r.metrics()).collect();
    let docs = runs;
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
        let top = match r.better {
            _ if known.len() < 2 || all_same => None,
            Better::Higher => known.iter().max_by(|a, b| a.1.total_cmp(&b.1)).copied(),
            Better::Lower => known.iter().min_by(|a, b| a.1.total_cmp(&b.1)).copied(),
            Better::Neither => None,
        };
        // Two runs level at the top: neither is ahead (issue 26 saw a tie
        // for the largest capacity given to the last run, a damaged card).
        r.best = top
            .filter(|t| known.iter().filter(|k| k.1 == t.1).count() == 1)
            .map(|t| t.0);
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench_doc(iops: f64, p99: u64) -> Results {
        let mut d = Results::default();
        d.bench.set(
            serde_json::from_value(
                serde_json::json!({"tests": [{"name": "randread 4 KiB Q1", "rw": "randread",
                "pattern": "random", "block_size": 4096, "queue_depth": 1, "requests": 10,
                "iops": iops, "bytes_per_sec": iops * 4096.0,
                "latency_ns": {"mean": 1.0, "p50": 1, "p90": 1, "p99": p99, "p999": 1, "max": 1},
                "timeline": []}], "classes": {}, "class_figures": {}}),
            )
            .unwrap(),
        );
        d
    }

    #[test]
    fn the_better_run_is_named_per_figure_and_differences_are_relative_to_the_first() {
        let rows = compare(&[&bench_doc(1000.0, 500), &bench_doc(1500.0, 900)]);
        let iops = rows.iter().find(|r| r.name.ends_with("IOPS")).unwrap();
        assert_eq!(iops.values, [Some(1000.0), Some(1500.0)]);
        assert_eq!(iops.relative[1], Some(0.5));
        assert_eq!(iops.best, Some(1), "more IOPS is better");
        let p99 = rows.iter().find(|r| r.name.ends_with("p99")).unwrap();
        assert_eq!(p99.best, Some(0), "a lower p99 is better");
        let same = compare(&[&bench_doc(1000.0, 500), &bench_doc(1000.0, 500)]);
        assert!(same.iter().all(|r| r.best.is_none()), "no winner between equals");
        let three = compare(&[&bench_doc(100.0, 5), &bench_doc(50.0, 5), &bench_doc(100.0, 9)]);
        let iops = three.iter().find(|r| r.name.ends_with("IOPS")).unwrap();
        assert_eq!(iops.best, None, "two level at the top: no winner");
    }
}
