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
use crate::units::{Iec, duration_ns};

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

pub struct Presenter;

impl Registered for Presenter {
    const COMMAND: &'static str = "align";
    type Output = AlignResult;

    fn text(r: &AlignResult, device_s: f64, o: &mut String) {
        let header = ["boundary", "pre", "on", "post", "diff", "spread", "samples"];
        let steps = table::grid_of(&header, &r.rows, |row| {
            vec![
                Iec(row.boundary_bytes).to_string(),
                duration_ns(row.pre_ns),
                duration_ns(row.on_ns),
                duration_ns(row.post_ns),
                duration_ns(row.diff_ns),
                duration_ns(row.diff_spread_ns),
                row.samples.to_string(),
            ]
        });
        let _ = writeln!(o, "{steps}");
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
