//! The HTML report: one self-contained file (inline CSS and SVG, no
//! network, no external assets) with each run's summary, its plots and its
//! details; several runs make a comparison report, their figures side by
//! side first. Light and dark follow the reader's preference, and it prints.

use maud::{DOCTYPE, Markup, PreEscaped, html};

use crate::document::RunDocument;
use crate::measure::metrics;
use crate::svg::{Figure, render};

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
svg.plot .value { font-size: 10px; }
svg.plot .plot-note { fill: var(--muted); font-size: 11px; }
.s0 { stroke: var(--s0); fill: var(--s0); } .s1 { stroke: var(--s1); fill: var(--s1); }
.s2 { stroke: var(--s2); fill: var(--s2); } .s3 { stroke: var(--s3); fill: var(--s3); }
.s4 { stroke: var(--s4); fill: var(--s4); } .s5 { stroke: var(--s5); fill: var(--s5); }
svg.plot .line.s0, svg.plot .line.s1, svg.plot .line.s2, svg.plot .line.s3, svg.plot .line.s4, svg.plot .line.s5 { fill: none; }
svg.plot .dot.clipped { fill: var(--bg); stroke-width: 1.2; }
@media print { body { max-width: none; color: #000; background: #fff; }
  :root { --fg: #000; --bg: #fff; --grid: #ccc; --axis: #000; }
  h2 { break-before: auto; } svg.plot { break-inside: avoid; } }
"#;

/// A test's figure as HTML: an inline SVG plot, or a note beside it.
fn figure(f: &Figure) -> Markup {
    match f {
        Figure::Chart(c) => match render(c) {
            Some(svg) => PreEscaped(svg),
            None => html! {},
        },
        Figure::Note(n) => html! { p.note { (n) } },
    }
}

fn when(unix: u64) -> String {
    crate::units::date_time(unix)
}

fn run_section(id: &str, doc: &RunDocument) -> Markup {
    let summary = super::summary(doc);
    let advice = doc.extras.advice.get().cloned().unwrap_or_default();
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
            @for f in doc.results.figures() { (figure(&f)) }
            @if let Some(l) = doc.extras.life.get() { @for f in l.figures() { (figure(&f)) } }
            @for n in doc.notes.iter().chain(doc.warnings.iter()) { p.note { "note: " (n.message) } }
        }
    }
}

/// A run as a column head: "run #3" for a stored run, the file's name for
/// a document read from a file.
fn run_name(id: &str) -> String {
    if id.starts_with('#') {
        format!("run {id}")
    } else {
        id.to_string()
    }
}

fn comparison(runs: &[(String, RunDocument)]) -> Markup {
    let per: Vec<_> = runs.iter().map(|(_, d)| d.metrics()).collect();
    let rows = metrics::compare(&per);
    let names: Vec<String> = runs.iter().map(|(id, _)| run_name(id)).collect();
    html! {
        h2 { "Side by side" }
        ul.runs {
            @for (id, d) in runs {
                li { (run_name(id)) ": " (d.command) " of " (crate::document::device::of(d).name) ", " (when(d.started_unix)) }
            }
        }
        p.muted { "Differences are relative to the first run; the better run on each figure is in bold." }
        table {
            tr {
                th { "figure" }
                @for (id, d) in runs { th.num { (run_name(id)) br; span.muted { (when(d.started_unix)) } } }
            }
            @for r in &rows {
                tr {
                    td { (r.name) }
                    @for (i, v) in r.values.iter().enumerate() {
                        td.num.best[r.best == Some(i)] {
                            @match v {
                                Some(v) => {
                                    (r.unit.show(*v))
                                    @if let (true, Some(x)) = (i > 0, r.relative[i]) { " (" (metrics::change(x)) ")" }
                                }
                                None if r.not_claimed.get(i).is_some_and(Option::is_some) => { "not claimed" }
                                None => { "-" }
                            }
                        }
                    }
                }
            }
        }
        @for line in metrics::not_claimed(&rows, &names) {
            p.note { (line) }
        }
    }
}

/// The HTML report: one self-contained page for one run or several (a
/// comparison side by side first).
pub struct Html;

impl super::Format for Html {
    fn render(&self, runs: &[(String, RunDocument)]) -> Result<String, super::FormatError> {
        Ok(report(runs))
    }
}

/// The whole report for one run or several (a comparison).
fn report(runs: &[(String, RunDocument)]) -> String {
    let title = match runs {
        [(id, d)] => format!("flashlab report: run {id}, {}", crate::document::device::of(d).name),
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A bench run of one test with this p99, started at `unix`.
    fn run(p99: u64, unix: u64) -> RunDocument {
        let mut d = RunDocument::new(
            crate::document::CommandName::Test(crate::measure::TestName::Bench),
            None,
        );
        d.started_unix = unix;
        d.results.bench.set(
            serde_json::from_value(serde_json::json!({"tests": [{"name": "randread 4 KiB Q1",
                "rw": "randread", "pattern": "random", "block_size": 4096, "queue_depth": 1, "requests": 10,
                "iops": 552.0, "bytes_per_sec": 2260992.0,
                "latency_ns": {"mean": 1.0, "p50": 1, "p90": 1, "p99": p99, "p999": 1, "max": 1},
                "timeline": []}], "classes": {}, "class_figures": {}}))
            .unwrap(),
        );
        d
    }

    #[test]
    fn comparison_cells_read_in_the_tools_units() {
        // A cell had read "757072 µs".
        use crate::measure::metrics::Unit;
        assert_eq!(Unit::Ns.show(757_072_000.0), "757.07 ms");
        assert_eq!(Unit::Ns.show(1_810_497.0), "1.81 ms");
        assert_eq!(Unit::BytesPerSec.show(22_630_000.0), "22.63 MB/s");
        assert_eq!(Unit::Bytes.show(4194304.0), "4 MiB");
        assert_eq!(Unit::Iops.show(552.4), "552", "the figure's name says IOPS");
    }

    #[test]
    fn comparison_columns_are_headed_by_run_and_date() {
        // The columns had been headed "#1" and "#2" alone.
        let runs = [
            ("#1".to_string(), run(757_072_000, 1_795_442_912)),
            ("card.json".to_string(), run(1_810_497, 0)),
        ];
        let page = comparison(&runs).into_string();
        assert!(
            page.contains(r#"<th class="num">run #1<br><span class="muted">2026-11-23 14:08 UTC</span></th>"#),
            "{page}"
        );
        assert!(page.contains(r#"<th class="num">card.json<br><span class="muted">1970-01-01 00:00 UTC</span></th>"#));
        assert!(page.contains("<li>run #1: bench of "), "{page}");
        assert!(
            page.contains(">757.07 ms<") && page.contains(">1.81 ms (1/418x)<"),
            "{page}"
        );
        assert!(!page.contains("µs"), "{page}");
    }
}
