//! How align shows: its table of boundaries and verdict, the erase-block
//! line of probe's summary (with au's and page's writes), its plot, and
//! the erase block and page as comparable figures.
//!
//! Its reads combined with those writes come from measure's own file
//! ([`best_erase`], [`best_page`]), which knows every test: page's steps
//! run align, so align's folder naming page's result would make the two
//! folders use each other.

use std::fmt::Write;

use super::AlignResult;
use crate::console::{table, wrap};
use crate::measure::Results;
use crate::measure::metrics::{Better, Metric, MetricId, Unit, m, refused};
use crate::measure::registry::Registered;
use crate::measure::{CONFIDENT, best_erase, best_page, show};
use crate::svg::{Chart, Figure, Kind, Quantity, Scale, Series};
use crate::units::{Iec, durations_ns};

/// For a summary line of a test that counted in AUs of `erase` (open-au,
/// fat): where that is not the erase block this summary line shows
/// (`--erase-size` given, or the geometry changed its mind), say so (with
/// `--erase-size 3M` the summary had said "erase block 4 MiB" over counts
/// made in 3 MiB AUs).
pub fn counted_in(all: &Results, erase: u64) -> String {
    let Some(a) = all.align.get().filter(|a| a.claim.claimed) else {
        return String::new();
    };
    match best_erase(a, all.au.get()).0 {
        Some(e) if e != erase => format!(" (counted in AUs of {}, not the {} erase block)", Iec(erase), Iec(e)),
        Some(_) => String::new(),
        None => format!(" (counted in AUs of {})", Iec(erase)),
    }
}

/// align's table of boundaries: each time column in one unit, from its
/// largest magnitude (a negative diff of a few µs had read "-4459 ns"
/// beside "34.5 µs").
fn steps(r: &AlignResult) -> String {
    let column = |f: fn(&super::Row) -> f64| durations_ns(&r.rows.iter().map(f).collect::<Vec<_>>());
    let times = [
        column(|x| x.pre_ns),
        column(|x| x.on_ns),
        column(|x| x.post_ns),
        column(|x| x.diff_ns),
        column(|x| x.diff_spread_ns),
    ];
    let header = ["boundary", "pre", "on", "post", "diff", "spread", "samples"];
    table::grid_of(&header, r.rows.iter().enumerate(), |(i, row)| {
        let mut cells = vec![Iec(row.boundary_bytes).to_string()];
        cells.extend(times.iter().map(|c| c[i].clone()));
        cells.push(row.samples.to_string());
        cells
    })
}

pub struct Presenter;

impl Registered for Presenter {
    const COMMAND: &'static str = "align";
    type Output = AlignResult;

    fn text(r: &AlignResult, device_s: f64, o: &mut String) {
        let _ = writeln!(o, "{}", steps(r));
        for e in &r.evidence {
            let _ = writeln!(o, "{}", wrap(e, "  ", "  "));
        }
        for x in &r.references {
            let verdict = match x.agrees {
                Some(true) => "agrees",
                Some(false) => "differs",
                None => "not compared",
            };
            let _ = writeln!(o, "  {}: {} ({verdict})", x.source, Iec(x.bytes));
        }
        if let Some(refused) = r.claim.text() {
            show::closing(o, &format!("erase block and page {refused}"), device_s);
            return;
        }
        let line = format!(
            "{}, {}",
            show::verdict("erase block", r.erase_size_bytes, r.confidence),
            show::verdict("page", r.page_size_bytes, r.page_confidence),
        );
        show::closing(o, &line, device_s);
    }

    /// The erase block and page as probe states them: reads and writes
    /// together (au's and page's results, where they ran).
    fn summary(a: &AlignResult, all: &Results) -> Vec<(crate::measure::topic::Topic, String)> {
        if let Some(refused) = a.claim.short_text() {
            return vec![(crate::measure::topic::Topic::Geometry, refused)];
        }
        let (e, c) = best_erase(a, all.au.get());
        let erase = match e {
            Some(e) if c >= CONFIDENT => format!("{} (the allocation unit, AU; confidence {c:.2})", Iec(e)),
            Some(e) => format!("perhaps {} (unsure: confidence {c:.2})", Iec(e)),
            None => format!("not visible (confidence {c:.2})"),
        };
        let (p, pc) = best_page(a, all.page.get());
        let page = match p {
            Some(p) if pc >= CONFIDENT => Iec(p).to_string(),
            Some(p) => format!("perhaps {} (unsure)", Iec(p)),
            None => "not visible".into(),
        };
        vec![(
            crate::measure::topic::Topic::EraseBlock,
            format!("{erase}, page {page}"),
        )]
    }

    fn figures(a: &AlignResult) -> Vec<Figure> {
        vec![Figure::Chart(Chart {
            title: "align: read time crossing each boundary, minus not crossing".into(),
            x_label: "boundary".into(),
            y_label: "extra read time".into(),
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
            x_unit: Quantity::Bytes,
            y_unit: Quantity::Ns,
            clip_y: None,
            categories: vec![],
        })]
    }

    /// The erase block and page, where claimed with confidence.
    fn metrics(a: &AlignResult, all: &Results) -> Vec<Metric> {
        if let Some(why) = a.claim.why() {
            return [MetricId::EraseBlock, MetricId::Page]
                .map(|id| refused(id, Unit::Bytes, Better::Neither, why))
                .into();
        }
        let mut out = Vec::new();
        let (e, c) = best_erase(a, all.au.get());
        if let (Some(e), true) = (e, c >= CONFIDENT) {
            out.push(m(MetricId::EraseBlock, Unit::Bytes, Better::Neither, e as f64));
        }
        if let (Some(p), c) = best_page(a, all.page.get())
            && c >= CONFIDENT
        {
            out.push(m(MetricId::Page, Unit::Bytes, Better::Neither, p as f64));
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::super::Row;
    use super::*;

    fn row(boundary_bytes: u64, pre_ns: f64, on_ns: f64, diff_ns: f64) -> Row {
        Row {
            boundary_bytes,
            pre_ns,
            on_ns,
            post_ns: pre_ns,
            diff_ns,
            diff_spread_ns: 900.0,
            samples: 8,
        }
    }

    #[test]
    fn each_time_column_reads_in_one_unit() {
        let r = AlignResult {
            block_size: 1024,
            rows: vec![
                row(8 << 20, 1_680_000.0, 1_714_500.0, 34_500.0),
                row(4 << 20, 1_684_459.0, 1_680_000.0, -4_459.0),
                row(2 << 20, 980_000.0, 980_000.0, 0.0),
            ],
            erase_size_bytes: None,
            page_size_bytes: None,
            confidence: 0.0,
            page_confidence: 0.0,
            evidence: Vec::new(),
            references: Vec::new(),
            not_flash: None,
            claim: Default::default(),
        };
        let cells: Vec<Vec<String>> = steps(&r)
            .lines()
            .filter(|l| l.starts_with('│'))
            .map(|l| {
                l.trim_matches('│')
                    .split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(String::from)
                    .collect()
            })
            .collect();
        assert_eq!(
            cells,
            [
                ["boundary", "pre", "on", "post", "diff", "spread", "samples"],
                ["8 MiB", "1.68 ms", "1.71 ms", "1.68 ms", "34.5 µs", "900 ns", "8"],
                ["4 MiB", "1.68 ms", "1.68 ms", "1.68 ms", "-4.5 µs", "900 ns", "8"],
                ["2 MiB", "0.98 ms", "0.98 ms", "0.98 ms", "0.0 µs", "900 ns", "8"],
            ]
        );
    }
}
