//! `results list`, `results compare` and `results import` as text.

use std::fmt::Write;

use crate::console::table;
use crate::document::bodies::{Comparison, ImportResult, Listing};
use crate::measure::metrics::Unit;
use crate::units::{Iec, date_time, duration_ns};

pub fn list(o: &mut String, l: &Listing) {
    if l.runs.is_empty() {
        // (`--device nothing` had said "no runs yet" beside 14 runs)
        let line = match (&l.device_filter, &l.batch_filter) {
            _ if l.label_filter.is_some() => format!(
                "no run in {} has a label containing '{}' (`flashlab results list` lists them all)",
                l.store,
                l.label_filter.as_deref().unwrap_or_default()
            ),
            (_, Some(b)) => format!(
                "no run in {} belongs to batch {b} (`flashlab results list` lists them all)",
                l.store
            ),
            (Some(d), None) => format!(
                "no run in {} has a device or target containing '{d}' (`flashlab results list` lists them all)",
                l.store
            ),
            (None, None) => format!("no runs in {} yet", l.store),
        };
        let _ = writeln!(o, "{}", crate::console::wrap(&line, "", ""));
        return;
    }
    let runs = table::grid_of(&["id", "when (UTC)", "command", "card", "found"], &l.runs, |r| {
        vec![
            r.id.to_string(),
            date_time(r.started_unix).trim_end_matches(" UTC").to_string(),
            r.command.to_string(),
            card(r),
            r.verdict.clone(),
        ]
    });
    let _ = writeln!(o, "{runs}");
    let line = format!(
        "{} run{} in {}; `flashlab results show ID`, `flashlab results compare ID ID`, `flashlab report ID`",
        l.runs.len(),
        if l.runs.len() == 1 { "" } else { "s" },
        l.store
    );
    let _ = writeln!(o, "{}", crate::console::wrap(&line, "", ""));
}

/// Which card a run was made on, as a person tells cards apart: the label
/// given to the run, the target as given (sim overrides and paths show),
/// and the card's own name where the target does not already say it (a
/// model and serial, or a CID's: eight cards through one reader are all
/// /dev/sdX by path).
fn card(r: &crate::document::bodies::RunRow) -> String {
    let mut parts: Vec<String> = Vec::new();
    if let Some(l) = &r.label {
        parts.push(format!("\"{l}\""));
    }
    parts.push(r.target.clone());
    if !r.device.is_empty() && !r.device.starts_with(&r.target) {
        parts.push(r.device.clone());
    }
    parts.join(" ")
}

fn show(unit: Unit, v: f64) -> String {
    match unit {
        Unit::Bytes => Iec(v.max(0.0) as u64).to_string(),
        Unit::BytesPerSec => crate::units::mb_per_s(v),
        Unit::Iops => format!("{v:.0}"),
        Unit::Ns => duration_ns(v),
        Unit::Count => format!("{v:.0}"),
        Unit::Ratio => format!("{v:.2}"),
        Unit::Years => crate::units::years(v),
    }
}

pub fn compare(o: &mut String, c: &Comparison) {
    // A column is headed by the run's id; a file named by a long path gets
    // a letter instead (A, B, ...), given with the path on its line above
    // (three long paths had spread the table over 146 lines).
    let labels: Vec<String> = c
        .runs
        .iter()
        .enumerate()
        .map(|(i, r)| {
            if r.id.starts_with('#') || r.id.chars().count() <= 12 {
                r.id.clone()
            } else {
                char::from(b'A' + (i % 26) as u8).to_string()
            }
        })
        .collect();
    for (r, label) in c.runs.iter().zip(&labels) {
        let of = if r.target.is_empty() || r.device.starts_with(&r.target) {
            String::new()
        } else {
            format!(" of {}", r.target)
        };
        let name = if *label == r.id {
            label.clone()
        } else {
            format!("{label} ({})", r.id)
        };
        let line = format!(
            "{name}: {}{of} on {}: {}",
            r.command,
            date_time(r.started_unix),
            r.device
        );
        let _ = writeln!(o, "{}", crate::console::wrap(&line, "", "    "));
    }
    // Each run's column is headed by its label and when it ran: the day if
    // the runs span days, else the time ("#1" and "#2" alone told nothing).
    let when: Vec<String> = c.runs.iter().map(|r| date_time(r.started_unix)).collect();
    let same_day = when.windows(2).all(|w| w[0].get(..10) == w[1].get(..10));
    let mut header: Vec<String> = vec!["figure".into()];
    header.extend(labels.iter().zip(&when).map(|(l, w)| {
        let part = if same_day { w.get(11..16) } else { w.get(..10) };
        format!("{l}\n{}", part.unwrap_or(""))
    }));
    header.push("better".into());
    // Figures the same in every run go on one line under the table, and a
    // rate beside its own IOPS (the same figure times the block) is left
    // to the JSON (two runs of one card had taken 26 lines).
    let same = |r: &&crate::measure::metrics::Row| r.values.iter().all(|v| v.is_some() && *v == r.values[0]);
    let ids: Vec<&crate::measure::metrics::MetricId> = c.rows.iter().filter_map(|r| r.id.as_ref()).collect();
    let derived = |r: &&crate::measure::metrics::Row| r.id.as_ref().is_some_and(|id| id.restates(&ids));
    let rows: Vec<Vec<String>> = c
        .rows
        .iter()
        .filter(|r| !same(r) && !derived(r))
        .map(|r| {
            let mut row = vec![r.name.clone()];
            for (i, v) in r.values.iter().enumerate() {
                row.push(match (v, r.relative[i]) {
                    (Some(v), Some(x)) if i > 0 => format!("{} ({:+.0}%)", show(r.unit, *v), x * 100.0),
                    (Some(v), _) => show(r.unit, *v),
                    // Measured, no value claimed: why, under the table.
                    (None, _) if r.not_claimed.get(i).is_some_and(Option::is_some) => "not claimed".into(),
                    (None, _) => "-".into(),
                });
            }
            row.push(r.best.map_or(String::new(), |b| labels[b].clone()));
            row
        })
        .collect();
    let head: Vec<&str> = header.iter().map(String::as_str).collect();
    if !rows.is_empty() {
        let _ = writeln!(o, "{}", table::grid(&head, &rows));
    }
    for line in crate::measure::metrics::not_claimed(&c.rows, &labels) {
        let _ = writeln!(o, "{}", crate::console::wrap(&line, "", "    "));
    }
    let equal: Vec<String> = c
        .rows
        .iter()
        .filter(|r| same(r) && !derived(r))
        .map(|r| format!("{} {}", r.name, r.values[0].map_or(String::new(), |v| show(r.unit, v))))
        .collect();
    if !equal.is_empty() {
        // Wrapped between figures, never inside one (a unit separator holds
        // each together through the wrap).
        let glued: Vec<String> = equal.iter().map(|e| e.replace(' ', "\u{1f}")).collect();
        let text = crate::console::wrap(&format!("the same in every run: {}", glued.join(", ")), "", "  ");
        let _ = writeln!(o, "{}", text.replace('\u{1f}', " "));
    }
    let _ = writeln!(
        o,
        "{}",
        crate::console::wrap(
            "differences are relative to the first run; \"better\" names the run ahead on a score; --json has \
             every figure",
            "",
            ""
        )
    );
}

pub fn import(o: &mut String, r: &ImportResult) {
    if r.duplicate {
        let _ = writeln!(o, "already stored as run {}: not stored again", r.id);
    } else {
        let _ = writeln!(o, "stored as run {}", r.id);
    }
}
