//! The figures of a run that can be compared with another run's: each test
//! says which of its figures count (geometry, open AUs, the FAT area,
//! capacity, each bench test's speed and latency), and `results compare`
//! and the HTML report's comparison set them side by side here.

use serde::{Deserialize, Serialize};

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
    /// One figure over another (write amplification).
    Ratio,
    Years,
    /// A verdict met (1) or not (0): an SD class, judged "-style".
    Met,
}

impl Unit {
    /// A figure as the rest of the tool writes it (a comparison cell had
    /// read "757072 µs" where `bench` says 757.07 ms): one way for the text
    /// and the HTML comparison.
    pub fn show(self, v: f64) -> String {
        use crate::units::{Iec, duration_ns, mb_per_s};
        match self {
            Unit::Bytes => Iec(v.max(0.0) as u64).to_string(),
            Unit::BytesPerSec => mb_per_s(v),
            Unit::Iops | Unit::Count => format!("{v:.0}"),
            Unit::Ns => duration_ns(v),
            Unit::Ratio => format!("{v:.2}"),
            Unit::Years => crate::units::years(v),
            Unit::Met => if v > 0.0 { "met" } else { "not met" }.into(),
        }
    }
}

impl Unit {
    /// A column of figures in one unit, chosen by its largest value ("ms"
    /// for 170.8 µs beside 757.07 ms reads 0.17 and 757.07): the unit for
    /// the column's head ("" where the figure's name says it), then each
    /// value without it.
    pub fn column(self, values: &[f64]) -> (&'static str, Vec<String>) {
        let top = values.iter().fold(0.0f64, |a, v| a.max(v.abs()));
        let scaled = |unit: &'static str, by: f64| (unit, values.iter().map(|v| decimals(v / by)).collect());
        match self {
            Unit::Bytes => {
                const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
                let mut k = 0;
                while k + 1 < UNITS.len() && top >= 1024f64.powi(k as i32 + 1) {
                    k += 1;
                }
                scaled(UNITS[k], 1024f64.powi(k as i32))
            }
            Unit::BytesPerSec => scaled("MB/s", 1e6),
            Unit::Ns if top >= 1e9 => scaled("s", 1e9),
            Unit::Ns if top >= 1e6 => scaled("ms", 1e6),
            Unit::Ns if top >= 1e3 => scaled("µs", 1e3),
            Unit::Ns => scaled("ns", 1.0),
            Unit::Iops | Unit::Count | Unit::Ratio | Unit::Years | Unit::Met => {
                ("", values.iter().map(|v| self.show(*v)).collect())
            }
        }
    }
}

/// A figure with two decimals at most, three significant digits below 1,
/// and no zero it does not need ("4", "29.72", "0.00391": a 4 MiB fake in
/// a column of GiB is not "0").
fn decimals(v: f64) -> String {
    let places = if v == 0.0 || v.abs() >= 1.0 {
        2
    } else {
        (2.0 - v.abs().log10().floor()).clamp(2.0, 12.0) as usize
    };
    let s = format!("{v:.places$}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A figure's change from the first run's, for people: a percentage while
/// it reads as one, a ratio past ten times either way ("+114436%" is
/// "1,145x"; "-99%" of a figure 193 times smaller is "1/193x").
pub fn change(relative: f64) -> String {
    let ratio = relative + 1.0;
    if ratio >= 10.0 {
        format!("{}x", grouped(ratio.round()))
    } else if ratio > 0.0 && ratio <= 0.1 {
        format!("1/{}x", grouped((1.0 / ratio).round()))
    } else {
        format!("{:+.0}%", relative * 100.0)
    }
}

/// A whole number with thousands grouped by commas ("1,145").
fn grouped(n: f64) -> String {
    let digits = format!("{n:.0}");
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// What a figure is, whatever its label says: runs pair their figures by
/// it, so relabelling a figure keeps comparisons, and a rate is told from
/// the IOPS it restates by what it is, not by the words of its name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum MetricId {
    EraseBlock,
    Page,
    OpenAusInOrder,
    OpenAusRandom,
    FatArea,
    UsableCapacity,
    /// blocksize's read rate at one request size.
    ReadRateAt {
        block_bytes: u64,
    },
    /// A figure of one bench test, named as bench names it ("read 1 MiB Q1").
    Bench {
        test: String,
        figure: BenchFigure,
        /// The test reads or writes in order: its rate is the figure (MB/s),
        /// and its IOPS restate it. Runs compared before this read as
        /// random tests.
        #[serde(default)]
        sequential: bool,
    },
    /// An SD class judged from a bench preset's figures ("A1", "C10"), as
    /// the class is written.
    Class {
        class: String,
    },
    /// `life`: flash bytes over host bytes, flash bytes a day, median years.
    Amplification,
    FlashBytesPerDay,
    LifeYears,
}

/// The figures of one bench test.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BenchFigure {
    Iops,
    /// Bytes a second: the IOPS times the block, for sequential tests.
    Rate,
    P99,
}

impl MetricId {
    /// The figure's label in comparisons.
    pub fn label(&self) -> String {
        match self {
            MetricId::EraseBlock => "erase block".into(),
            MetricId::Page => "page".into(),
            MetricId::OpenAusInOrder => "open AUs in order".into(),
            MetricId::OpenAusRandom => "open AUs random".into(),
            MetricId::FatArea => "FAT area (AUs)".into(),
            MetricId::UsableCapacity => "usable capacity".into(),
            MetricId::ReadRateAt { block_bytes } => format!("read rate at {}", crate::units::Iec(*block_bytes)),
            MetricId::Class { class } => format!("{class}-style"),
            MetricId::Bench { test, figure, .. } => format!(
                "{test} {}",
                match figure {
                    BenchFigure::Iops => "IOPS",
                    BenchFigure::Rate => "rate",
                    BenchFigure::P99 => "p99",
                }
            ),
            MetricId::Amplification => "write amplification".into(),
            MetricId::FlashBytesPerDay => "flash written a day".into(),
            MetricId::LifeYears => "life (P50)".into(),
        }
    }

    /// A figure that only restates another of the comparison: a random
    /// test's rate is its IOPS times the block, and a sequential test's
    /// IOPS its rate over the block (a sequential test reads as MB/s).
    pub fn restates(&self, others: &[&MetricId]) -> bool {
        match self {
            MetricId::Bench {
                test,
                figure: figure @ (BenchFigure::Rate | BenchFigure::Iops),
                sequential,
            } => {
                let kept = if *sequential {
                    BenchFigure::Rate
                } else {
                    BenchFigure::Iops
                };
                *figure != kept
                    && others.iter().any(|o| {
                        **o == MetricId::Bench {
                            test: test.clone(),
                            figure: kept,
                            sequential: *sequential,
                        }
                    })
            }
            MetricId::Bench { .. }
            | MetricId::Class { .. }
            | MetricId::EraseBlock
            | MetricId::Page
            | MetricId::OpenAusInOrder
            | MetricId::OpenAusRandom
            | MetricId::FatArea
            | MetricId::UsableCapacity
            | MetricId::ReadRateAt { .. }
            | MetricId::Amplification
            | MetricId::FlashBytesPerDay
            | MetricId::LifeYears => false,
        }
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Metric {
    pub id: MetricId,
    /// The label, `id`'s.
    pub name: String,
    pub unit: Unit,
    pub better: Better,
    pub value: f64,
    /// The run measured this figure but claims no value for it (a verdict
    /// refused, a short sample): why. `value` then means nothing.
    pub not_claimed: Option<String>,
}

pub fn m(id: MetricId, unit: Unit, better: Better, value: f64) -> Metric {
    Metric {
        name: id.label(),
        id,
        unit,
        better,
        value,
        not_claimed: None,
    }
}

/// A figure the run measured but claims no value for, and why: compared,
/// it shows as "not claimed" where another run has a value.
pub fn refused(id: MetricId, unit: Unit, better: Better, why: &str) -> Metric {
    Metric {
        not_claimed: Some(why.to_string()),
        ..m(id, unit, better, 0.0)
    }
}

/// One row of a comparison: a figure across runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Row {
    /// What the figure is; runs compared before it read as None.
    #[serde(default)]
    pub id: Option<MetricId>,
    pub name: String,
    pub unit: Unit,
    pub better: Better,
    /// Per run, in the order given; None where a run lacks the figure or
    /// claims no value for it.
    pub values: Vec<Option<f64>>,
    /// Per run: why it claims no value where it measured the figure (a
    /// verdict refused, a short sample); None elsewhere. Runs compared
    /// before this field read as all None.
    #[serde(default)]
    pub not_claimed: Vec<Option<String>>,
    /// Per run: relative to the first run's value (0.10 = 10% more).
    pub relative: Vec<Option<f64>>,
    /// Index of the better run, where the figure is a score and differs.
    pub best: Option<usize>,
}

/// Side by side: every figure any run has (each run's [`Metric`]s), in
/// first-seen order.
pub fn compare(per: &[Vec<Metric>]) -> Vec<Row> {
    let docs = per;
    let mut rows: Vec<Row> = Vec::new();
    for (i, ms) in per.iter().enumerate() {
        for x in ms {
            let row = match rows.iter_mut().position(|r| r.id.as_ref() == Some(&x.id)) {
                Some(k) => &mut rows[k],
                None => {
                    rows.push(Row {
                        id: Some(x.id.clone()),
                        name: x.name.clone(),
                        unit: x.unit,
                        better: x.better,
                        values: vec![None; docs.len()],
                        not_claimed: vec![None; docs.len()],
                        relative: vec![None; docs.len()],
                        best: None,
                    });
                    rows.last_mut().expect("just pushed")
                }
            };
            match &x.not_claimed {
                None => row.values[i] = Some(x.value),
                Some(why) => row.not_claimed[i] = Some(why.clone()),
            }
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
        // Two runs level at the top: neither is ahead (a tie for the
        // largest capacity had been given to the last run, a damaged card).
        r.best = top
            .filter(|t| known.iter().filter(|k| k.1 == t.1).count() == 1)
            .map(|t| t.0);
    }
    rows
}

/// Why each run claims no value where a comparison says "not claimed":
/// one line per run (`labels`, in order) and reason, naming the figures.
pub fn not_claimed(rows: &[Row], labels: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for (i, label) in labels.iter().enumerate() {
        let mut reasons: Vec<(&str, Vec<&str>)> = Vec::new();
        for r in rows {
            let Some(Some(why)) = r.not_claimed.get(i) else {
                continue;
            };
            match reasons.iter_mut().find(|(w, _)| w == why) {
                Some((_, names)) => names.push(&r.name),
                None => reasons.push((why, vec![&r.name])),
            }
        }
        for (why, names) in reasons {
            out.push(format!("{label}: {} not claimed ({why})", names.join(", ")));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Results;

    /// Side by side, from each run's results.
    fn compare(runs: &[&Results]) -> Vec<Row> {
        super::compare(&runs.iter().map(|r| r.metrics()).collect::<Vec<_>>())
    }

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

    /// A figure a run measured but does not claim (a short sample here)
    /// has no value, never wins, and says why.
    #[test]
    fn a_figure_not_claimed_shows_why_and_never_wins() {
        let mut short = bench_doc(9000.0, 100);
        short.bench.get_mut().unwrap().tests[0].short_sample = true;
        let rows = compare(&[&bench_doc(1000.0, 500), &short]);
        let iops = rows.iter().find(|r| r.name.ends_with("IOPS")).unwrap();
        assert_eq!(iops.values, [Some(1000.0), None]);
        let why = iops.not_claimed[1].as_deref().unwrap();
        assert!(why.starts_with("short sample: 10 requests, "), "{why}");
        assert_eq!(iops.best, None, "a short sample is no score");
        let lines = not_claimed(&rows, &["#1".into(), "#2".into()]);
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(
            lines[0].starts_with("#2: randread 4 KiB Q1 IOPS, randread 4 KiB Q1 rate, randread 4 KiB Q1 p99 not claimed (short sample: 10 requests, "),
            "{}",
            lines[0]
        );
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

    #[test]
    fn a_change_past_ten_times_is_a_ratio() {
        assert_eq!(change(0.5), "+50%");
        assert_eq!(change(-0.77), "-77%");
        assert_eq!(change(8.0), "+800%");
        assert_eq!(change(1144.36), "1,145x");
        assert_eq!(change(4.0 / 771.0 - 1.0), "1/193x");
        assert_eq!(change(-1.0), "-100%", "a figure gone to 0 has no ratio");
        assert_eq!(Unit::Met.show(1.0), "met");
        assert_eq!(Unit::Met.show(0.0), "not met");
        let (unit, cells) = Unit::Ns.column(&[170_800.0, 757_072_000.0]);
        assert_eq!((unit, cells), ("ms", vec!["0.171".to_string(), "757.07".to_string()]));
        let (unit, cells) = Unit::Bytes.column(&[3.64 * (1u64 << 30) as f64, (4u64 << 20) as f64]);
        assert_eq!((unit, cells), ("GiB", vec!["3.64".to_string(), "0.00391".to_string()]));
    }

    #[test]
    fn a_rate_restates_its_own_tests_iops_only() {
        let bench = |test: &str, figure, sequential| MetricId::Bench {
            test: test.into(),
            figure,
            sequential,
        };
        let iops = bench("randread 4 KiB Q1", BenchFigure::Iops, false);
        let other = bench("randwrite 4 KiB Q1", BenchFigure::Iops, false);
        let rate = bench("randread 4 KiB Q1", BenchFigure::Rate, false);
        assert!(rate.restates(&[&iops]));
        assert!(!rate.restates(&[&other]));
        assert!(!iops.restates(&[&iops, &rate]));
        // In order, the rate is the figure and the IOPS restate it.
        let seq_iops = bench("read 1 MiB Q1", BenchFigure::Iops, true);
        let seq_rate = bench("read 1 MiB Q1", BenchFigure::Rate, true);
        assert!(seq_iops.restates(&[&seq_rate]));
        assert!(!seq_rate.restates(&[&seq_iops, &seq_rate]));
        assert_eq!(seq_rate.label(), "read 1 MiB Q1 rate");
        assert_eq!(
            MetricId::ReadRateAt { block_bytes: 4 << 20 }.label(),
            "read rate at 4 MiB"
        );
    }
}
