//! How bench shows: its table and class verdicts, probe's classes and
//! speeds lines, its plots, and each test's speed and p99 as comparable
//! figures.

use std::fmt::Write;

use super::classes::{self, Figure as ClassFigure, SdClass};
use super::{BenchResult, BenchTest, FLOOR_REQUESTS, Rw};
use crate::console::{table, wrap};
use crate::measure::Results;
use crate::measure::claim::not_claimed;
use crate::measure::metrics::{BenchFigure, Better, Metric, MetricId, Unit, m, refused};
use crate::measure::registry::Registered;
use crate::svg::{Chart, Figure, Kind, Quantity, Scale, Series};
use crate::units::{duration_ns, mb_per_s};

pub struct Presenter;

impl Registered for Presenter {
    const COMMAND: &'static str = "bench";
    type Output = BenchResult;

    fn text(r: &BenchResult, device_s: f64, o: &mut String) {
        tests_text(r, device_s, o);
        if !r.classes.is_empty() {
            classes_text(r, o);
        }
    }

    fn summary(b: &BenchResult, _: &Results) -> Vec<(crate::measure::topic::Topic, String)> {
        let mut out = Vec::new();
        if let Some(why) = &b.not_flash {
            out.push((
                crate::measure::topic::Topic::Classes,
                format!("none judged: the target is {why}"),
            ));
        } else {
            // A class a short sample kept from judging is not claimed, and
            // not "none met".
            let lost =
                classes::unjudged(&b.tests, &b.classes).map(|l| format!("short sample: {}", l.samples.join(", ")));
            match (b.classes.is_empty(), lost) {
                (true, Some(why)) => out.push((crate::measure::topic::Topic::Classes, not_claimed(&why))),
                (false, Some(why)) => out.push((
                    crate::measure::topic::Topic::Classes,
                    format!("{}; others {}", classes_met(b), not_claimed(&why)),
                )),
                (false, None) => out.push((crate::measure::topic::Topic::Classes, classes_met(b))),
                (true, None) => {}
            }
        }
        if let Some(s) = speeds(b) {
            out.push((crate::measure::topic::Topic::Speeds, s));
        }
        out
    }

    fn figures(b: &BenchResult) -> Vec<Figure> {
        vec![
            Figure::Chart(throughput_by_test(b)),
            Figure::Chart(latency_distribution(b)),
            Figure::Chart(Chart {
                title: "bench: throughput over time".into(),
                x_label: "device time".into(),
                y_label: "throughput".into(),
                x_scale: Scale::Linear,
                y_scale: Scale::Linear,
                kind: Kind::Line,
                series: per_test(b, |t| {
                    t.timeline.iter().map(|p| (p.t_s, p.bytes_per_sec / 1e6)).collect()
                }),
                x_unit: Quantity::Number("s"),
                y_unit: Quantity::Number("MB/s"),
                clip_y: None,
                categories: vec![],
            }),
        ]
    }

    /// Each test's IOPS, rate and p99 ("not claimed" where a test is a
    /// short sample), then each SD class judged, met or not.
    fn metrics(b: &BenchResult, _: &Results) -> Vec<Metric> {
        let classes = b.classes.iter().map(|(class, met)| {
            m(
                MetricId::Class {
                    class: class.as_str().to_string(),
                },
                Unit::Met,
                Better::Higher,
                if *met { 1.0 } else { 0.0 },
            )
        });
        b.tests
            .iter()
            .flat_map(|t| {
                let short = t.short();
                let figure = |figure: BenchFigure, unit: Unit, better: Better, v: f64| {
                    let id = MetricId::Bench {
                        test: t.name.clone(),
                        figure,
                        sequential: !t.rw.random(),
                    };
                    match &short {
                        Some(why) => refused(id, unit, better, why),
                        None => m(id, unit, better, v),
                    }
                };
                [
                    figure(BenchFigure::Iops, Unit::Iops, Better::Higher, t.iops),
                    figure(BenchFigure::Rate, Unit::BytesPerSec, Better::Higher, t.bytes_per_sec),
                    figure(BenchFigure::P99, Unit::Ns, Better::Lower, t.latency_ns.p99 as f64),
                ]
            })
            .chain(classes)
            .collect()
    }
}

/// Each test's row, the reason for every short sample, then what the
/// figures mean and the notes: a step of its own because every bench has
/// it, where the classes below come only from a preset that judges them.
fn tests_text(r: &BenchResult, device_s: f64, o: &mut String) {
    let tests = table::grid_of(&["test", "IOPS", "rate", "p50", "p99", "max"], &r.tests, |t| {
        let l = &t.latency_ns;
        vec![
            // A short sample's figures are its own, not the card's.
            if t.short_sample {
                format!("{} *", t.name)
            } else {
                t.name.clone()
            },
            format!("{:.0}", t.iops),
            mb_per_s(t.bytes_per_sec),
            duration_ns(l.p50 as f64),
            duration_ns(l.p99 as f64),
            duration_ns(l.max as f64),
        ]
    });
    let _ = writeln!(o, "{tests}");
    for t in &r.tests {
        if let Some(short) = t.short() {
            let line = format!(
                "{}: {short} (a figure needs {FLOOR_REQUESTS} requests and a device-second; --size, the area or \
                 the step's budget ended it first)",
                t.name
            );
            let _ = writeln!(o, "{}", wrap(&line, "* ", "  "));
        }
    }
    let line = format!(
        "latency per request, from submission to completion; {device_s:.1} device-seconds (--json and \
         `flashlab report` have mean, p90, p99.9 and throughput over time)"
    );
    let _ = writeln!(o, "{}", wrap(&line, "", ""));
    if let Some(why) = &r.not_flash {
        let _ = writeln!(
            o,
            "{}",
            wrap(&format!("no SD class verdicts: the target is {why}"), "", "")
        );
    }
    for n in &r.notes {
        let _ = writeln!(o, "{}", wrap(n, "note: ", "      "));
    }
}

/// The SD classes judged, each with what it needs and what was measured:
/// a step of its own because it chooses which classes to show (with -v,
/// every one).
fn classes_text(r: &BenchResult, o: &mut String) {
    let _ = writeln!(o, "{}", wrap(&format!("SD classes, {}:", classes::CAVEAT), "", ""));
    let num = |v: f64| {
        if v >= 100.0 || v.fract() == 0.0 {
            format!("{v:.0}")
        } else {
            format!("{v:.1}")
        }
    };
    // Each family's best class met and first missed (C10 and no C
    // above it, say); -v lists all thirteen (all of them had made
    // bench's text 35 lines).
    let judged: Vec<(SdClass, bool)> = classes::names()
        .filter_map(|name| Some((name, *r.classes.get(&name)?)))
        .collect();
    let all = crate::console::stdio::verbose();
    let shown = |name: SdClass| {
        all || {
            let mine: Vec<&(SdClass, bool)> = judged.iter().filter(|j| j.0.family() == name.family()).collect();
            let best = mine.iter().rev().find(|j| j.1).map(|j| j.0);
            let missed = mine.iter().find(|j| !j.1).map(|j| j.0);
            best == Some(name) || missed == Some(name)
        }
    };
    let figures: Vec<_> = classes::names()
        .filter(|&name| shown(name))
        .filter_map(|name| Some((r.class_figures.get(&name)?, r.classes.get(&name)?)))
        .collect();
    let met = table::grid_of(
        &["class", "met", "needs (read / write)", "measured"],
        &figures,
        |&(f, met)| {
            let iops: Vec<&ClassFigure> = f.figures.iter().filter(|x| x.what.is_iops()).collect();
            let mb = f.figures.iter().find(|x| !x.what.is_iops());
            let side = |pick: &dyn Fn(&ClassFigure) -> f64| {
                let mut parts = Vec::new();
                if !iops.is_empty() {
                    let v: Vec<String> = iops.iter().map(|x| num(pick(x))).collect();
                    parts.push(format!("{} IOPS", v.join(" / ")));
                }
                if let Some(m) = mb {
                    parts.push(format!("{} MB/s", num(pick(m))));
                }
                parts.join(", ")
            };
            vec![
                f.label.clone(),
                if *met { "yes" } else { "no" }.to_string(),
                side(&|x| x.needed),
                side(&|x| x.measured),
            ]
        },
    );
    let _ = writeln!(o, "{met}");
    let _ = writeln!(
        o,
        "{}",
        wrap(
            &format!(
                "(IOPS: random 4 KiB; MB/s: the slowest stretch of the longest sequential write{})",
                if all || figures.len() == judged.len() {
                    ""
                } else {
                    "; each family's best met and first missed, -v lists every class"
                }
            ),
            "",
            " "
        )
    );
}

/// The application class met (A2 over A1), the best speed, UHS and video
/// classes met, as "A1-style, C10, U3, V30 (measured, not certified)".
fn classes_met(b: &BenchResult) -> String {
    let found = classes::met(&b.classes);
    if found.is_empty() {
        "none met (measured, not certified)".into()
    } else {
        let styled: Vec<String> = found.iter().map(|c| format!("{c}-style")).collect();
        // "(not certified)": the four classes and "measured, not
        // certified" did not fit one 80-column line.
        format!("{} (not certified)", styled.join(", "))
    }
}

/// Sequential read and write, random 4 KiB read and write at queue depth
/// one: the figures a buyer compares, as "read 99.6, write 39.2 MB/s; 4K
/// random read 5857, write 874 IOPS" (one line of an 80-column summary).
/// A short sample is no such figure: it is left out, and named.
fn speeds(b: &BenchResult) -> Option<String> {
    let mut short = Vec::new();
    let mut pick = |t: Option<&super::BenchTest>| match t {
        Some(t) if t.short_sample => {
            short.push(t.name.clone());
            None
        }
        t => t.map(|t| (t.bytes_per_sec, t.iops)),
    };
    let mut seq = Vec::new();
    for (rw, what) in [(Rw::Read, "read"), (Rw::Write, "write")] {
        if let Some((rate, _)) = pick(b.tests.iter().find(|t| t.rw == rw)) {
            seq.push(format!("{what} {:.1}", rate / 1e6));
        }
    }
    let mut random = Vec::new();
    for (rw, what) in [(Rw::RandRead, "read"), (Rw::RandWrite, "write")] {
        if let Some((_, iops)) = pick(b.tests.iter().find(|t| t.rw == rw && t.block_size == 4096)) {
            random.push(format!("{what} {:.0}", iops));
        }
    }
    let mut parts = Vec::new();
    if !seq.is_empty() {
        parts.push(format!("{} MB/s", seq.join(", ")));
    }
    if !random.is_empty() {
        parts.push(format!("4K random {} IOPS", random.join(", ")));
    }
    let short = short.join(", ");
    match (parts.is_empty(), short.is_empty()) {
        (true, true) => None,
        (true, false) => Some(not_claimed(&format!("short samples: {short}"))),
        (false, true) => Some(parts.join("; ")),
        (false, false) => Some(format!("{} (short samples left out: {short})", parts.join("; "))),
    }
}

/// A line for each test, named as the test, of the points `points` draws
/// from it.
fn per_test(b: &BenchResult, points: impl Fn(&BenchTest) -> Vec<(f64, f64)>) -> Vec<Series> {
    b.tests
        .iter()
        .map(|t| Series {
            label: t.name.clone(),
            points: points(t),
        })
        .collect()
}

/// Each test's throughput as a bar, its value on it.
fn throughput_by_test(b: &BenchResult) -> Chart {
    Chart {
        title: "bench: throughput by test (block size, queue depth)".into(),
        x_label: "test".into(),
        y_label: "throughput".into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        kind: Kind::Bars,
        categories: b
            .tests
            .iter()
            .map(|t| {
                if t.short_sample {
                    format!("{} (short sample)", t.name)
                } else {
                    t.name.clone()
                }
            })
            .collect(),
        series: vec![Series {
            label: "MB/s".into(),
            points: b
                .tests
                .iter()
                .enumerate()
                .map(|(i, t)| (i as f64, t.bytes_per_sec / 1e6))
                .collect(),
        }],
        x_unit: Quantity::Count,
        y_unit: Quantity::Number("MB/s"),
        clip_y: None,
    }
}

/// Each test's latency distribution: the share of its requests that took
/// at most so long, from the fastest to the slowest, on a log axis (a
/// card's reads and its writes lie decades apart).
fn latency_distribution(b: &BenchResult) -> Chart {
    Chart {
        title: "bench: latency distribution (share of requests at or below)".into(),
        x_label: "latency".into(),
        y_label: "share of requests".into(),
        x_scale: Scale::Log10,
        y_scale: Scale::Linear,
        kind: Kind::Line,
        series: per_test(b, |t| {
            t.latency_ns
                .curve()
                .into_iter()
                .map(|(ns, q)| (ns, q * 100.0))
                .collect()
        }),
        x_unit: Quantity::Ns,
        y_unit: Quantity::Number("%"),
        clip_y: None,
        categories: vec![],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bench result of one test, its latency as stored (with or without
    /// the distribution).
    fn result(latency: serde_json::Value) -> BenchResult {
        serde_json::from_value(
            serde_json::json!({"tests": [{"name": "randwrite 4 KiB Q1", "rw": "randwrite",
            "pattern": "random", "block_size": 4096, "queue_depth": 1, "requests": 10, "iops": 4.0,
            "bytes_per_sec": 16384.0, "latency_ns": latency, "timeline": []}], "classes": {}, "class_figures": {}}),
        )
        .unwrap()
    }

    fn curve(b: &BenchResult) -> Vec<(f64, f64)> {
        let c = latency_distribution(b);
        assert_eq!(
            (c.x_scale, c.x_unit, c.y_unit),
            (Scale::Log10, Quantity::Ns, Quantity::Number("%"))
        );
        c.series.into_iter().next().unwrap().points
    }

    #[test]
    fn the_latency_plot_draws_the_kept_distribution_from_fastest_to_slowest() {
        let distribution: Vec<serde_json::Value> = crate::measure::bench::result::DISTRIBUTION_SHARES
            .iter()
            .enumerate()
            .map(|(i, s)| serde_json::json!({"share": s, "ns": 5_000_000 + i as u64 * 1_000_000}))
            .collect();
        let b = result(serde_json::json!({"mean": 1.0, "p50": 16_000_000, "p90": 24_000_000,
            "p99": 26_000_000, "p999": 27_000_000, "max": 700_000_000, "distribution": distribution}));
        let points = curve(&b);
        assert_eq!(points.len(), 25, "24 shares and the slowest request");
        assert_eq!(points[0], (5e6, 0.0), "from the fastest request");
        assert_eq!(points[11], (16e6, 50.0), "the median");
        assert_eq!(points[24], (700e6, 100.0), "to the slowest");
    }

    /// A short sample is no headline: probe's speeds leave it out and name
    /// it, and a run of nothing else claims no speed.
    #[test]
    fn the_speeds_line_leaves_short_samples_out() {
        let mut b = result(serde_json::json!({"mean": 1.0, "p50": 1, "p90": 1, "p99": 1, "p999": 1, "max": 1}));
        let mut read = b.tests[0].clone();
        read.name = "read 1 MiB Q1".into();
        read.rw = Rw::Read;
        read.block_size = 1 << 20;
        read.bytes_per_sec = 99.6e6;
        b.tests.push(read);
        assert_eq!(speeds(&b).unwrap(), "read 99.6 MB/s; 4K random write 4 IOPS");
        b.tests[0].short_sample = true;
        assert_eq!(
            speeds(&b).unwrap(),
            "read 99.6 MB/s (short samples left out: randwrite 4 KiB Q1)"
        );
        b.tests[1].short_sample = true;
        assert_eq!(
            speeds(&b).unwrap(),
            "not claimed (short samples: read 1 MiB Q1, randwrite 4 KiB Q1)"
        );
    }

    #[test]
    fn a_run_stored_before_the_distribution_still_plots_its_percentiles() {
        let b = result(serde_json::json!({"mean": 1.0, "p50": 16_000_000, "p90": 24_000_000,
            "p99": 26_000_000, "p999": 27_000_000, "max": 700_000_000}));
        assert_eq!(
            curve(&b),
            [(16e6, 50.0), (24e6, 90.0), (26e6, 99.0), (27e6, 99.9), (700e6, 100.0)]
        );
        let bars = throughput_by_test(&b);
        assert_eq!(bars.categories, ["randwrite 4 KiB Q1"]);
        assert_eq!(bars.series[0].points, [(0.0, 0.016384)], "MB/s");
    }
}
