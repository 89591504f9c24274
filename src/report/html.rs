//! The HTML report: one self-contained file (inline CSS and SVG, no
//! network, no external assets) with each run's summary, its plots and its
//! details; several runs make a comparison report, their figures side by
//! side first. Light and dark follow the reader's preference, and it prints.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use super::metrics::{self, Unit};
use super::svg::{Chart, Kind, Scale, Series, render};
use crate::document::RunDocument;
use crate::measure::bench::BenchResult;
use crate::measure::{align::AlignResult, fat::FatResult, open_au::OpenAuResult, scatter::ScatterResult};
use crate::units::Iec;

const STYLE: &str = r#"
:root { --fg: #1d1d1f; --bg: #ffffff; --muted: #666; --grid: #e3e3e3; --axis: #444;
  --s0: #1f77b4; --s1: #d62728; --s2: #2ca02c; --s3: #9467bd; --s4: #ff7f0e; --s5: #8c564b; }
@media (prefers-color-scheme: dark) {
  :root { --fg: #e8e8e8; --bg: #16181c; --muted: #a0a0a0; --grid: #33363c; --axis: #c8c8c8;
    --s0: #5aa9e6; --s1: #ff6b6b; --s2: #6bd46b; --s3: #c39bf0; --s4: #ffb347; --s5: #d9a07c; } }
body { font: 15px/1.45 system-ui, sans-serif; color: var(--fg); background: var(--bg);
  max-width: 60rem; margin: 1.5rem auto; padding: 0 1rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; border-bottom: 1px solid var(--grid); }
h3 { font-size: 1rem; margin-bottom: 0.2rem; }
table { border-collapse: collapse; margin: 0.5rem 0; }
td, th { padding: 0.15rem 0.8rem 0.15rem 0; text-align: left; vertical-align: top; }
th { color: var(--muted); font-weight: 600; }
.num { text-align: right; font-variant-numeric: tabular-nums; }
.best { font-weight: 700; }
.muted, .note { color: var(--muted); }
svg.plot { width: 100%; max-width: 640px; height: auto; display: block; margin: 0.5rem 0 1rem; }
svg.plot text { fill: var(--fg); font-size: 11px; }
svg.plot .plot-title { font-size: 13px; font-weight: 600; }
svg.plot .axis-label { font-size: 12px; }
svg.plot .grid { stroke: var(--grid); stroke-width: 1; }
svg.plot .axis { stroke: var(--axis); stroke-width: 1.2; }
svg.plot .line { fill: none; stroke-width: 1.8; }
.s0 { stroke: var(--s0); fill: var(--s0); } .s1 { stroke: var(--s1); fill: var(--s1); }
.s2 { stroke: var(--s2); fill: var(--s2); } .s3 { stroke: var(--s3); fill: var(--s3); }
.s4 { stroke: var(--s4); fill: var(--s4); } .s5 { stroke: var(--s5); fill: var(--s5); }
svg.plot .line.s0, svg.plot .line.s1, svg.plot .line.s2, svg.plot .line.s3, svg.plot .line.s4, svg.plot .line.s5 { fill: none; }
@media print { body { max-width: none; color: #000; background: #fff; }
  :root { --fg: #000; --bg: #fff; --grid: #ccc; --axis: #000; }
  h2 { break-before: auto; } svg.plot { break-inside: avoid; } }
"#;

fn mib(v: f64) -> String {
    let m = v / (1 << 20) as f64;
    if m >= 10.0 || m.fract() == 0.0 {
        format!("{m:.0}")
    } else {
        format!("{m:.1}")
    }
}

fn num(v: f64) -> String {
    if v.abs() >= 100.0 || v.fract() == 0.0 {
        format!("{v:.0}")
    } else {
        format!("{v:.2}")
    }
}

fn size(v: f64) -> String {
    Iec(v.max(0.0) as u64).to_string()
}

fn us(v: f64) -> String {
    let u = v / 1e3;
    if u >= 100.0 {
        format!("{u:.0}")
    } else if u >= 1.0 {
        format!("{u:.1}")
    } else {
        format!("{u:.2}")
    }
}

fn plot(c: Chart) -> Markup {
    match render(&c) {
        Some(svg) => PreEscaped(svg),
        None => html! {},
    }
}

/// Every plot a run's results allow, in reading order.
pub fn plots(doc: &RunDocument) -> Vec<Markup> {
    let mut out = Vec::new();
    if let Some(a) = doc.get::<AlignResult>("align") {
        out.push(plot(Chart {
            title: "align: read time crossing each boundary, minus not crossing".into(),
            x_label: "boundary (bytes, log scale)".into(),
            y_label: "extra read time (µs)".into(),
            x_scale: Scale::Log2,
            y_scale: Scale::Linear,
            kind: Kind::Line,
            // 2^n and 3 x 2^n boundaries apart: joined in one line, a
            // 3 x 2^n row between two 2^n rows looks like noise.
            series: [("2^n boundaries", true), ("3 x 2^n boundaries", false)]
                .into_iter()
                .map(|(label, pow2)| Series {
                    label: label.into(),
                    points: a
                        .rows
                        .iter()
                        .filter(|r| r.boundary_bytes.is_power_of_two() == pow2)
                        .map(|r| (r.boundary_bytes as f64, r.diff_ns))
                        .collect(),
                })
                .filter(|s| !s.points.is_empty())
                .collect(),
            x_fmt: &size,
            y_fmt: &us,
            categories: vec![],
        }));
    }
    if let Some(r) = doc.get::<OpenAuResult>("open_au") {
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
        let notes = r.notes.clone();
        out.push(plot(Chart {
            title: format!(
                "open-au: write speed by number of open AUs ({} chunks)",
                Iec(r.chunk_bytes)
            ),
            x_label: "AUs written in turn".into(),
            y_label: "write speed (MB/s)".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            kind: Kind::Line,
            series,
            x_fmt: &num,
            y_fmt: &num,
            categories: vec![],
        }));
        out.push(html! { @for n in &notes { p.note { "open-au: " (n) } } });
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
            out.push(plot(Chart {
                title: "open-au: write speed by chunk size, for each number of open AUs".into(),
                x_label: "chunk (bytes, log scale)".into(),
                y_label: "write speed (MB/s)".into(),
                x_scale: Scale::Log2,
                y_scale: Scale::Linear,
                kind: Kind::Line,
                series: by_chunk,
                x_fmt: &size,
                y_fmt: &num,
                categories: vec![],
            }));
        }
    }
    if let Some(f) = doc.get::<FatResult>("fat") {
        out.push(plot(Chart {
            title: format!("fat: small random writes by AU ({} AUs)", Iec(f.erase_size_bytes)),
            x_label: "AU from the start".into(),
            y_label: "write speed (MB/s)".into(),
            x_scale: Scale::Linear,
            y_scale: Scale::Linear,
            kind: Kind::Bars,
            categories: f.aus.iter().map(|a| a.au.to_string()).collect(),
            series: vec![Series {
                label: "AU".into(),
                points: f
                    .aus
                    .iter()
                    .enumerate()
                    .map(|(i, a)| (i as f64, a.bytes_per_sec / 1e6))
                    .collect(),
            }],
            x_fmt: &num,
            y_fmt: &num,
        }));
    }
    if let Some(s) = doc.get::<ScatterResult>("scatter") {
        out.push(plot(Chart {
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
            x_fmt: &mib,
            y_fmt: &us,
            categories: vec![],
        }));
    }
    if let Some(b) = doc.get::<BenchResult>("bench") {
        out.extend(bench_plots(&b));
    }
    out
}

fn bench_plots(b: &BenchResult) -> Vec<Markup> {
    let names: Vec<String> = b.tests.iter().map(|t| t.name.clone()).collect();
    let mut out = vec![plot(Chart {
        title: "bench: throughput by test (block size, queue depth)".into(),
        x_label: "test".into(),
        y_label: "throughput (MB/s)".into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        kind: Kind::Bars,
        categories: names,
        series: vec![Series {
            label: "MB/s".into(),
            points: b
                .tests
                .iter()
                .enumerate()
                .map(|(i, t)| (i as f64, t.bytes_per_sec / 1e6))
                .collect(),
        }],
        x_fmt: &num,
        y_fmt: &num,
    })];
    out.push(plot(Chart {
        title: "bench: latency distribution (share of requests at or below)".into(),
        x_label: "latency (µs, log scale)".into(),
        y_label: "share of requests".into(),
        x_scale: Scale::Log10,
        y_scale: Scale::Linear,
        kind: Kind::Line,
        series: b
            .tests
            .iter()
            .map(|t| {
                let l = &t.latency_ns;
                Series {
                    label: t.name.clone(),
                    points: vec![
                        (l.p50 as f64, 0.5),
                        (l.p90 as f64, 0.9),
                        (l.p99 as f64, 0.99),
                        (l.p999 as f64, 0.999),
                        (l.max as f64, 1.0),
                    ],
                }
            })
            .collect(),
        x_fmt: &us,
        y_fmt: &num,
        categories: vec![],
    }));
    out.push(plot(Chart {
        title: "bench: throughput over time".into(),
        x_label: "device time (s)".into(),
        y_label: "throughput (MB/s)".into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        kind: Kind::Line,
        series: b
            .tests
            .iter()
            .map(|t| Series {
                label: t.name.clone(),
                points: t.timeline.iter().map(|p| (p.t_s, p.bytes_per_sec / 1e6)).collect(),
            })
            .collect(),
        x_fmt: &num,
        y_fmt: &num,
        categories: vec![],
    }));
    out
}

fn when(unix: u64) -> String {
    crate::units::date_time(unix)
}

fn run_section(id: &str, doc: &RunDocument) -> Markup {
    let summary = super::summary::lines(doc);
    let advice = doc
        .get::<Vec<crate::measure::advice::Advice>>("advice")
        .unwrap_or_default();
    html! {
        section.run {
            h2 { "Run " (id) ": " (doc.command) " on " (doc.target.as_ref().map_or("", |t| t.spec.as_str())) }
            p.muted {
                (when(doc.started_unix)) " · flashlab " (doc.flashlab_version) " · host " (doc.host.hostname)
                " (" (doc.host.kernel) ")"
                @if let Some(s) = doc.device_time_s { " · " (format!("{s:.1}")) " device-seconds (time the device spent on the run's I/O)" }
            }
            table.summary {
                @for (k, v) in &summary { tr { th { (k) } td { (v) } } }
            }
            @if !advice.is_empty() {
                h3 { "Advice" }
                ul { @for a in &advice { li { (a.text) } } }
            }
            @for p in plots(doc) { (p) }
            @for n in doc.notes.iter().chain(doc.warnings.iter()) { p.note { "note: " (n.message) } }
        }
    }
}

fn comparison(runs: &[(String, RunDocument)]) -> Markup {
    let docs: Vec<RunDocument> = runs.iter().map(|(_, d)| d.clone()).collect();
    let rows = metrics::compare(&docs);
    let show = |unit: Unit, v: f64| match unit {
        Unit::Bytes => Iec(v as u64).to_string(),
        Unit::BytesPerSec => format!("{:.1} MB/s", v / 1e6),
        Unit::Iops => format!("{v:.0}"),
        Unit::Ns => format!("{} µs", us(v)),
        Unit::Count => format!("{v:.0}"),
    };
    html! {
        h2 { "Side by side" }
        p.muted { "Differences are relative to the first run; the better run on each figure is in bold." }
        table {
            tr { th { "figure" } @for (id, _) in runs { th.num { (id) } } }
            @for r in &rows {
                tr {
                    td { (r.name) }
                    @for (i, v) in r.values.iter().enumerate() {
                        td.num.best[r.best == Some(i)] {
                            @match v {
                                Some(v) => {
                                    (show(r.unit, *v))
                                    @if let (true, Some(x)) = (i > 0, r.relative[i]) { " (" (format!("{:+.0}%", x * 100.0)) ")" }
                                }
                                None => { "-" }
                            }
                        }
                    }
                }
            }
        }
    }
}

/// The whole report for one run or several (a comparison).
pub fn report(runs: &[(String, RunDocument)]) -> String {
    let title = match runs {
        [(id, d)] => format!("flashlab report: run {id}, {}", crate::store::device_key::of(d).name),
        _ => format!("flashlab comparison of {} runs", runs.len()),
    };
    let page = html! {
        (DOCTYPE)
        html lang="en" {
            head {
                meta charset="utf-8";
                meta name="viewport" content="width=device-width, initial-scale=1";
                meta name="color-scheme" content="light dark";
                title { (title) }
                style { (PreEscaped(STYLE)) }
            }
            body {
                h1 { (title) }
                p.muted { "Made by flashlab " (env!("CARGO_PKG_VERSION")) ". Verdicts say how sure they are; class verdicts are measured here, not certified." }
                @if runs.len() > 1 { (comparison(runs)) }
                @for (id, d) in runs { (run_section(id, d)) }
            }
        }
    };
    page.into_string()
}
