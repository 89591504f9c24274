//! `results list`, `results compare` and `results import` as text.

use std::fmt::Write;

use crate::console::table;
use crate::document::bodies::{Comparison, ImportResult, Listing};
use crate::measure::metrics::Unit;
use crate::units::{Iec, date_time, duration_ns};

pub fn list(o: &mut String, l: &Listing) {
    if l.runs.is_empty() {
        let _ = writeln!(o, "no runs in {} yet", l.store);
        return;
    }
    let rows: Vec<Vec<String>> = l
        .runs
        .iter()
        .map(|r| {
            vec![
                r.id.to_string(),
                date_time(r.started_unix),
                r.command.clone(),
                if r.device.is_empty() {
                    r.target.clone()
                } else {
                    r.device.clone()
                },
            ]
        })
        .collect();
    let _ = writeln!(o, "{}", table::grid(&["id", "when", "command", "device"], &rows));
    let _ = writeln!(
        o,
        "{} run{} in {}; `flashlab results show ID`, `results compare ID ID`, `report ID -o FILE.html`",
        l.runs.len(),
        if l.runs.len() == 1 { "" } else { "s" },
        l.store
    );
}

fn show(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Bytes => Iec(v.max(0.0) as u64).to_string(),
        Unit::BytesPerSec => crate::units::mb_per_s(v),
        Unit::Iops => format!("{v:.0}"),
        Unit::Ns => duration_ns(v),
        Unit::Count => format!("{v:.0}"),
    }
}

pub fn compare(o: &mut String, c: &Comparison) {
    for r in &c.runs {
        let _ = writeln!(
            o,
            "{}: {} of {}, {}",
            r.id,
            r.command,
            r.device,
            date_time(r.started_unix)
        );
    }
    let mut header: Vec<String> = vec!["figure".into()];
    header.extend(c.runs.iter().map(|r| r.id.clone()));
    header.push("better".into());
    let rows: Vec<Vec<String>> = c
        .rows
        .iter()
        .map(|r| {
            let mut row = vec![r.name.clone()];
            for (i, v) in r.values.iter().enumerate() {
                row.push(match (v, r.relative[i]) {
                    (Some(v), Some(x)) if i > 0 => format!("{} ({:+.0}%)", show(r.unit, *v), x * 100.0),
                    (Some(v), _) => show(r.unit, *v),
                    (None, _) => "-".into(),
                });
            }
            row.push(r.best.map_or(String::new(), |b| c.runs[b].id.clone()));
            row
        })
        .collect();
    let head: Vec<&str> = header.iter().map(String::as_str).collect();
    let _ = writeln!(o, "{}", table::grid(&head, &rows));
    let _ = writeln!(
        o,
        "differences are relative to the first run; \"better\" names the run ahead on a score"
    );
}

pub fn import(o: &mut String, r: &ImportResult) {
    if r.duplicate {
        let _ = writeln!(o, "already stored as run {}: not stored again", r.id);
    } else {
        let _ = writeln!(o, "stored as run {}", r.id);
    }
}
