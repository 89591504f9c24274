//! How fat shows: each AU's writes and the verdict, the FAT-area line of
//! probe's summary, its plot, and the area as a comparable figure.

use std::fmt::Write;

use super::{AuRow, FatResult, Method};
use crate::console::{table, wrap};
use crate::measure::Results;
use crate::measure::metrics::{Better, Metric, MetricId, Unit, m, refused};
use crate::measure::registry::Registered;
use crate::measure::{CONFIDENT, show};
use crate::svg::{Chart, Figure, Kind, Quantity, Scale, Series, value_label};
use crate::units::{Iec, duration_ns, mb_per_s};

pub struct Presenter;

impl Registered for Presenter {
    const COMMAND: &'static str = "fat";
    type Output = FatResult;

    fn text(r: &FatResult, device_s: f64, o: &mut String) {
        let label = |a: &AuRow| -> String {
            if a.in_area {
                "FAT area".into()
            } else if a.fast {
                "fast (not counted)".into()
            } else {
                String::new()
            }
        };
        let slots = r.method == Method::Slots;
        let mut rows: Vec<Vec<String>> = r
            .aus
            .iter()
            .map(|a| {
                let mut row = vec![a.au.to_string(), duration_ns(a.median_ns)];
                if slots {
                    row.push(a.merging.map_or(String::new(), |m| format!("{:.0}%", m * 100.0)));
                } else {
                    row.push(mb_per_s(a.bytes_per_sec));
                }
                row.push(label(a));
                row
            })
            .collect();
        // A control the run never measured (its budget ended first) has
        // no row: a 0 ns one would read as measured.
        if slots {
            if let Some(n) = r.random_aus {
                let text = format!(
                    "Each AU was written in random order ({} writes) beside {n} ordinary AU{}, as many as the \
                     card keeps open for random writes. An AU of the FAT area leaves them room; an ordinary AU \
                     is one too many, and writes start to merge whole AUs.",
                    Iec(r.chunk_bytes),
                    if n == 1 { "" } else { "s" },
                );
                let _ = writeln!(o, "{}", wrap(&text, "", ""));
            }
            if let Some(ns) = r.overflows_ns {
                rows.push(vec![
                    format!("{} (control)", r.reference_au),
                    duration_ns(ns),
                    String::new(),
                    "ordinary".into(),
                ]);
            }
            if !rows.is_empty() {
                let _ = writeln!(o, "{}", table::grid(&["AU", "typical write", "merging", ""], &rows));
            }
        } else {
            if r.reference_median_ns > 0.0 {
                rows.push(vec![
                    format!("{} (reference)", r.reference_au),
                    duration_ns(r.reference_median_ns),
                    mb_per_s(r.chunk_bytes as f64 * 1e9 / r.reference_median_ns),
                    String::new(),
                ]);
            }
            if !rows.is_empty() {
                let _ = writeln!(o, "{}", table::grid(&["AU", "median write", "rate", ""], &rows));
            }
        }
        show::notes(o, &r.notes);
        let verdict = match (r.claim.text(), r.fat_area_aus) {
            (Some(refused), _) => format!("FAT-optimised area {refused}"),
            (None, 0) => format!("no FAT-optimised area ({:.2} sure there is none)", r.confidence),
            (None, n) => format!(
                "FAT-optimised area: {n} AU{} of {} (confidence {:.2})",
                if n == 1 { "" } else { "s" },
                Iec(r.erase_size_bytes),
                r.confidence
            ),
        };
        show::closing(o, &verdict, device_s);
    }

    fn summary(f: &FatResult, all: &Results) -> Vec<(crate::measure::topic::Topic, String)> {
        if let Some(refused) = f.claim.short_text() {
            return vec![(crate::measure::topic::Topic::FatArea, refused)];
        }
        let area = match f.fat_area_aus {
            0 => "none: the first AUs are ordinary".to_string(),
            n => format!(
                "{} ({})",
                crate::units::count(n, "AU", "AUs"),
                Iec(n * f.erase_size_bytes)
            ),
        };
        vec![(
            crate::measure::topic::Topic::FatArea,
            format!(
                "{area}{}{}",
                if f.confidence >= CONFIDENT { "" } else { " (unsure)" },
                crate::measure::align::counted_in(all, f.erase_size_bytes)
            ),
        )]
    }

    /// No plot where nothing was measured (a budget that ended first): an
    /// empty chart, captioned as if AUs were written, had drawn in reports.
    fn figures(f: &FatResult) -> Vec<Figure> {
        let c = chart(f);
        if c.series.iter().all(|s| s.points.is_empty()) {
            return Vec::new();
        }
        vec![Figure::Chart(c), Figure::Note(caption(f))]
    }

    /// The area, where claimed with confidence; "not claimed" where the
    /// run claimed nothing.
    fn metrics(f: &FatResult, _: &Results) -> Vec<Metric> {
        match f.claim.why() {
            Some(why) => vec![refused(MetricId::FatArea, Unit::Count, Better::Higher, why)],
            None if f.confidence >= CONFIDENT => {
                vec![m(MetricId::FatArea, Unit::Count, Better::Higher, f.fat_area_aus as f64)]
            }
            None => Vec::new(),
        }
    }
}

/// The controls every AU is measured against, as (bar name, typical
/// write): the slot method's two sets of ordinary AUs (as many as the card
/// keeps open, then one more), or the latency method's reference AU;
/// find-fat's table has none apart from its own AUs.
fn controls(f: &FatResult) -> Vec<(String, f64)> {
    match (f.method, f.random_aus) {
        (Method::Slots, Some(n)) => [(n, "fit", f.fits_ns), (n + 1, "merge", f.overflows_ns)]
            .into_iter()
            .filter_map(|(k, what, ns)| Some((format!("{k} ordinary AUs ({what})"), ns?)))
            .collect(),
        (Method::Slots, None) | (Method::FindFat, _) => Vec::new(),
        (Method::Latency, _) if f.reference_median_ns > 0.0 => {
            vec![(format!("AU {} (reference)", f.reference_au), f.reference_median_ns)]
        }
        (Method::Latency, _) => Vec::new(),
    }
}

/// Each AU's typical write beside its controls, as bars of time: with
/// one AU examined (a card with no FAT area stops at the first) a bar of
/// speed alone said nothing (one lone bar, its ticks "0.00").
fn chart(f: &FatResult) -> Chart {
    let aus = f.aus.iter().map(|a| (format!("AU {}", a.au), a.median_ns));
    let controls = controls(f);
    let n = f.aus.len();
    Chart {
        title: format!(
            "fat: {} random writes in each leading AU, beside controls ({} AUs)",
            Iec(f.chunk_bytes),
            Iec(f.erase_size_bytes)
        ),
        x_label: "AU from the start, then the controls".into(),
        y_label: "typical write".into(),
        x_scale: Scale::Linear,
        y_scale: Scale::Linear,
        kind: Kind::Bars,
        categories: aus.clone().chain(controls.iter().cloned()).map(|c| c.0).collect(),
        series: vec![
            Series {
                label: "leading AUs".into(),
                points: aus.enumerate().map(|(i, a)| (i as f64, a.1)).collect(),
            },
            Series {
                label: "controls".into(),
                points: controls
                    .iter()
                    .enumerate()
                    .map(|(i, c)| ((n + i) as f64, c.1))
                    .collect(),
            },
        ],
        x_unit: Quantity::Count,
        y_unit: Quantity::Ns,
        clip_y: None,
    }
}

/// What the bars show and how to read them, under the plot.
fn caption(f: &FatResult) -> String {
    let write = Iec(f.chunk_bytes);
    match (f.method, f.random_aus, f.fits_ns, f.overflows_ns) {
        (Method::Slots, Some(n), Some(fits), Some(over)) => format!(
            "fat: each leading AU was written in random order ({write} writes) beside {n} ordinary AUs. \
             Controls: {n} ordinary AUs fit the card's random-write slots ({}); {} are one too many and \
             merge ({}). An AU of the FAT area writes like the first control, an ordinary AU like the second.",
            value_label(Quantity::Ns, fits),
            n + 1,
            value_label(Quantity::Ns, over)
        ),
        (Method::Slots, ..) => format!(
            "fat: each leading AU's typical {write} random write, written in random order beside ordinary AUs; \
             an AU of the FAT area does not make them merge."
        ),
        (Method::Latency, ..) => format!(
            "fat: the median of the same {write} random writes in each leading AU and in AU {}, an ordinary \
             AU past them ({}). The FAT area is the run of leading AUs clearly faster than it.",
            f.reference_au,
            value_label(Quantity::Ns, f.reference_median_ns)
        ),
        (Method::FindFat, ..) => format!(
            "fat (flashbench --find-fat, imported): each AU's time per {write} write, written in order. The \
             FAT area is the run of leading AUs clearly faster than the back half of the table."
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kingston() -> FatResult {
        serde_json::from_value(serde_json::json!({"erase_size_bytes": 4194304, "fat_area_aus": 0,
            "confidence": 0.95, "chunk_bytes": 4096, "reference_au": 15, "reference_median_ns": 380628497.0,
            "aus": [{"au": 0, "median_ns": 380628497.0, "bytes_per_sec": 10761.1, "fast": false,
            "in_area": false, "merging": 0.5}], "method": "slots", "random_aus": 3, "fits_ns": 10378497.0,
            "overflows_ns": 380628497.0}))
        .unwrap()
    }

    #[test]
    fn one_au_is_plotted_beside_the_controls_it_is_judged_by() {
        // kingston's plot had been one lone bar of 0.01 MB/s.
        let f = kingston();
        let c = chart(&f);
        assert_eq!(c.categories, ["AU 0", "3 ordinary AUs (fit)", "4 ordinary AUs (merge)"]);
        assert_eq!(c.series[0].points, [(0.0, 380628497.0)]);
        assert_eq!(c.series[1].points, [(1.0, 10378497.0), (2.0, 380628497.0)]);
        assert_eq!(c.y_unit, Quantity::Ns);
        let svg = crate::svg::render(&c).unwrap();
        assert!(
            svg.contains(">381 ms</text>") && svg.contains(">10.4 ms</text>"),
            "values on the bars"
        );
        assert!(svg.contains(">typical write (ms)</text>"));
        let note = caption(&f);
        assert!(
            note.contains(
                "3 ordinary AUs fit the card's random-write slots (10.4 ms); 4 are one too many and merge (381 ms)"
            ),
            "{note}"
        );
    }

    /// A run whose budget ended before any control was measured shows no
    /// control row (it had shown "0 ns", as if measured) and no count of
    /// ordinary AUs it never found.
    #[test]
    fn controls_never_measured_have_no_row() {
        let f = FatResult {
            aus: Vec::new(),
            random_aus: None,
            fits_ns: None,
            overflows_ns: None,
            ..kingston()
        };
        let mut o = String::new();
        <Presenter as Registered>::text(&f, 1000.0, &mut o);
        assert!(
            !o.contains("(control)") && !o.contains("0 ns") && !o.contains("beside"),
            "{o}"
        );
        assert!(<Presenter as Registered>::figures(&f).is_empty(), "no plot of nothing");
        let mut o = String::new();
        <Presenter as Registered>::text(&kingston(), 1000.0, &mut o);
        assert!(o.contains("15 (control)") && o.contains("beside 3 ordinary AUs"), "{o}");
        let latency = FatResult {
            method: Method::Latency,
            random_aus: None,
            reference_median_ns: 0.0,
            aus: Vec::new(),
            ..kingston()
        };
        let mut o = String::new();
        <Presenter as Registered>::text(&latency, 1000.0, &mut o);
        assert!(!o.contains("(reference)"), "{o}");
        assert!(<Presenter as Registered>::figures(&latency).is_empty());
        assert_eq!(<Presenter as Registered>::figures(&kingston()).len(), 2);
    }

    #[test]
    fn the_latency_method_is_plotted_beside_its_reference_au() {
        let f = FatResult {
            method: Method::Latency,
            random_aus: None,
            reference_median_ns: 2e6,
            ..kingston()
        };
        assert_eq!(chart(&f).categories, ["AU 0", "AU 15 (reference)"]);
        assert!(
            caption(&f).contains("in AU 15, an ordinary AU past them (2.00 ms)"),
            "{}",
            caption(&f)
        );
        let imported = FatResult {
            method: Method::FindFat,
            ..f
        };
        assert_eq!(chart(&imported).categories, ["AU 0"], "find-fat's table has no control");
    }
}
