//! How fat shows: each AU's writes and the verdict, the FAT-area line of
//! probe's summary, its plot, and the area as a comparable figure.

use std::fmt::Write;

use super::{AuRow, FatResult, Method};
use crate::console::{table, wrap};
use crate::measure::metrics::{Better, Metric, Unit, m};
use crate::measure::registry::{Registered, Results};
use crate::measure::{CONFIDENT, show};
use crate::svg::{Chart, Figure, Kind, Scale, Series};
use crate::units::{Iec, duration_ns, mb_per_s};

pub struct Entry;

impl Registered for Entry {
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
        if slots {
            let n = r.random_aus.unwrap_or(0);
            let text = format!(
                "Each AU was written in random order ({} writes) beside {n} ordinary AU{}, as many as the card \
                 keeps open for random writes. An AU of the FAT area leaves them room; an ordinary AU is one \
                 too many, and writes start to merge whole AUs.",
                Iec(r.chunk_bytes),
                if n == 1 { "" } else { "s" },
            );
            let _ = writeln!(o, "{}", wrap(&text, "", ""));
            rows.push(vec![
                format!("{} (control)", r.reference_au),
                duration_ns(r.overflows_ns.unwrap_or(0.0)),
                String::new(),
                "ordinary".into(),
            ]);
            let _ = writeln!(o, "{}", table::grid(&["AU", "typical write", "merging", ""], &rows));
        } else {
            rows.push(vec![
                format!("{} (reference)", r.reference_au),
                duration_ns(r.reference_median_ns),
                mb_per_s(r.chunk_bytes as f64 * 1e9 / r.reference_median_ns.max(1.0)),
                String::new(),
            ]);
            let _ = writeln!(o, "{}", table::grid(&["AU", "median write", "rate", ""], &rows));
        }
        show::notes(o, &r.notes);
        let verdict = match (&r.not_flash, r.fat_area_aus) {
            (Some(why), _) => format!("no FAT area claimed: the target is {why}"),
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

    fn summary(all: &Results) -> Vec<(&'static str, String)> {
        let Some(f) = all.fat.get() else {
            return Vec::new();
        };
        let area = match f.fat_area_aus {
            0 => "none: the first AUs are ordinary".to_string(),
            n => format!(
                "{} ({})",
                crate::units::count(n, "AU", "AUs"),
                Iec(n * f.erase_size_bytes)
            ),
        };
        vec![(
            "FAT area",
            format!(
                "{area}{}{}",
                if f.confidence >= CONFIDENT { "" } else { " (unsure)" },
                crate::measure::summary::counted_in(all, f.erase_size_bytes)
            ),
        )]
    }

    fn figures(f: &FatResult) -> Vec<Figure> {
        vec![Figure::Chart(Chart {
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
            x_fmt: crate::svg::num,
            y_fmt: crate::svg::num,
        })]
    }

    /// The area, where claimed with confidence on something that may be
    /// flash.
    fn metrics(all: &Results) -> Vec<Metric> {
        match all.fat.get() {
            Some(f) if f.not_flash.is_none() && f.confidence >= CONFIDENT => {
                vec![m("FAT area", Unit::Count, Better::Higher, f.fat_area_aus as f64)]
            }
            _ => Vec::new(),
        }
    }
}
