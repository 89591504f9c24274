//! `results list`, `results compare` and `results import` as text.

use std::fmt::Write;

use crate::console::table;
use crate::document::bodies::{Comparison, ImportResult, Listing};
use crate::measure::metrics::{MetricId, Row, Unit, change};
use crate::units::date_time;

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
    let db = &l.db_option;
    let line = format!(
        "{} run{} in {}; `flashlab results show ID{db}`, `flashlab results compare ID ID{db}`, `flashlab report \
         ID{db}`",
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

/// The text of one comparison: each run on a line, then its figures.
struct Compare<'a> {
    c: &'a Comparison,
    /// Each run's column or row name: its id, or a letter for a file named
    /// by a long path.
    labels: Vec<String>,
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
    let x = Compare { c, labels };
    x.runs(o);
    let rows = x.differing();
    let (header, body) = x.figures_by_row(&rows);
    let header: Vec<&str> = header.iter().map(String::as_str).collect();
    if !body.is_empty() {
        // A figure a line, or a run a row: six runs' figures had each
        // wrapped onto three lines.
        let by_figure = table::grid(&header, &body);
        let one_line_each = body.len() + 5;
        let table = if by_figure.lines().count() <= one_line_each {
            by_figure
        } else {
            x.runs_by_row(&rows)
        };
        let _ = writeln!(o, "{table}");
    }
    x.after(o);
}

/// A column head on lines of about ten columns, broken between words: a
/// table lays a head out on one line as long as it can, and nine heads of
/// 25 columns had pushed a table of many runs past the width.
fn short_lines(head: &str) -> String {
    let mut lines: Vec<String> = Vec::new();
    for word in head.split_whitespace() {
        match lines.last_mut() {
            Some(l) if l.chars().count() + 1 + word.chars().count() <= 10 => {
                l.push(' ');
                l.push_str(word);
            }
            _ => lines.push(word.to_string()),
        }
    }
    lines.join("\n")
}

/// Figures the same in every run go on one line under the table, a figure
/// that restates another (a random test's rate, a sequential test's IOPS)
/// is left to the JSON (two runs of one card had taken 26 lines), and the
/// SD classes are one row of their own.
fn same(r: &Row) -> bool {
    r.values.iter().all(|v| v.is_some() && *v == r.values[0])
}

impl Compare<'_> {
    fn runs(&self, o: &mut String) {
        for (r, label) in self.c.runs.iter().zip(&self.labels) {
            let of = if r.target.is_empty() || r.device.starts_with(&r.target) {
                String::new()
            } else {
                format!(" of {}", r.target)
            };
            let name = match (&r.label, *label == r.id) {
                (Some(l), true) => format!("{label} \"{l}\""),
                (Some(l), false) => format!("{label} \"{l}\" ({})", r.id),
                (None, true) => label.clone(),
                (None, false) => format!("{label} ({})", r.id),
            };
            let line = format!(
                "{name}: {}{of} on {}: {}",
                r.command,
                date_time(r.started_unix),
                r.device
            );
            let _ = writeln!(o, "{}", crate::console::wrap(&line, "", "    "));
        }
    }

    fn derived(&self, r: &Row) -> bool {
        let ids: Vec<&MetricId> = self.c.rows.iter().filter_map(|r| r.id.as_ref()).collect();
        r.id.as_ref().is_some_and(|id| id.restates(&ids))
    }

    /// The figures that differ between the runs, SD classes aside.
    fn differing(&self) -> Vec<&Row> {
        self.c
            .rows
            .iter()
            .filter(|r| !same(r) && !self.derived(r) && r.unit != Unit::Met)
            .collect()
    }

    /// Each run's SD classes met ("A1 C10 U3"; "-" where none was judged),
    /// and whether every run's are the same. None where no run judged one.
    fn classes(&self) -> Option<(Vec<String>, bool)> {
        let judged: Vec<&Row> = self.c.rows.iter().filter(|r| r.unit == Unit::Met).collect();
        if judged.is_empty() {
            return None;
        }
        let per: Vec<String> = (0..self.c.runs.len())
            .map(|i| {
                let met: Vec<&str> = judged
                    .iter()
                    .filter(|r| r.values[i] == Some(1.0))
                    .filter_map(|r| match &r.id {
                        Some(MetricId::Class { class }) => Some(class.as_str()),
                        _ => None,
                    })
                    .collect();
                // The highest met of each family (C, U, V, A): C10 says
                // C2 to C6 were met too.
                let mut top: Vec<&str> = Vec::new();
                for class in met {
                    let family = class.get(..1);
                    match top.iter_mut().find(|t| t.get(..1) == family) {
                        Some(t) => *t = class,
                        None => top.push(class),
                    }
                }
                let met = top;
                let any = judged.iter().any(|r| r.values[i].is_some());
                match (any, met.is_empty()) {
                    (false, _) => "-".to_string(),
                    (true, true) => "none".to_string(),
                    (true, false) => met.join(" "),
                }
            })
            .collect();
        let same = per.windows(2).all(|w| w[0] == w[1]);
        Some((per, same))
    }

    /// A run's value of a figure, as a cell: the value, or why there is none.
    fn missing(r: &Row, i: usize) -> String {
        if r.not_claimed.get(i).is_some_and(Option::is_some) {
            "not claimed".into()
        } else {
            "-".into()
        }
    }

    /// A figure a row, a run a column, with each change from the first
    /// run: for a few runs. Each run's column is headed by its label and
    /// when it ran: the day if the runs span days, else the time ("#1" and
    /// "#2" alone told nothing).
    fn figures_by_row(&self, rows: &[&Row]) -> (Vec<String>, Vec<Vec<String>>) {
        let when: Vec<String> = self.c.runs.iter().map(|r| date_time(r.started_unix)).collect();
        let same_day = when.windows(2).all(|w| w[0].get(..10) == w[1].get(..10));
        let mut header: Vec<String> = vec!["figure".into()];
        header.extend(self.labels.iter().zip(&when).map(|(l, w)| {
            let part = if same_day { w.get(11..16) } else { w.get(..10) };
            format!("{l}\n{}", part.unwrap_or(""))
        }));
        header.push("better".into());
        let mut body: Vec<Vec<String>> = rows
            .iter()
            .map(|r| {
                let mut row = vec![r.name.clone()];
                for (i, v) in r.values.iter().enumerate() {
                    row.push(match (v, r.relative[i]) {
                        (Some(v), Some(x)) if i > 0 => format!("{} ({})", r.unit.show(*v), change(x)),
                        (Some(v), _) => r.unit.show(*v),
                        (None, _) => Self::missing(r, i),
                    });
                }
                row.push(r.best.map_or(String::new(), |b| self.labels[b].clone()));
                row
            })
            .collect();
        if let Some((per, false)) = self.classes() {
            body.push([vec!["SD classes met".to_string()], per, vec![String::new()]].concat());
        }
        (header, body)
    }

    /// A run a row, a figure a column in one unit, and which run is better
    /// on each in the last row: for many runs, whose columns of figures
    /// would not fit side by side. Columns that do not fit beside the
    /// rest continue in a table below, each row named again.
    fn runs_by_row(&self, rows: &[&Row]) -> String {
        let mut header: Vec<String> = vec!["run".into()];
        let mut columns: Vec<Vec<String>> = Vec::new();
        let mut better: Vec<String> = vec!["better".into()];
        for r in rows {
            let known: Vec<f64> = r.values.iter().flatten().copied().collect();
            let (unit, cells) = r.unit.column(&known);
            let mut cells = cells.into_iter();
            columns.push(
                r.values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| match v {
                        Some(_) => cells.next().unwrap_or_default(),
                        None => Self::missing(r, i),
                    })
                    .collect(),
            );
            let head = if unit.is_empty() {
                r.name.clone()
            } else {
                format!("{} ({unit})", r.name)
            };
            header.push(short_lines(&head));
            better.push(r.best.map_or(String::new(), |b| self.labels[b].clone()));
        }
        if let Some((per, false)) = self.classes() {
            header.push("SD classes met".into());
            columns.push(per);
            better.push(String::new());
        }
        let mut body: Vec<Vec<String>> = self
            .labels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                let mut row = vec![l.clone()];
                row.extend(columns.iter().map(|c| c[i].clone()));
                row
            })
            .collect();
        if better.iter().skip(1).any(|b| !b.is_empty()) {
            body.push(better);
        }
        let head: Vec<&str> = header.iter().map(String::as_str).collect();
        table::grid_split(&head, &body, 1)
    }

    /// Why figures are not claimed, what is the same in every run, and how
    /// to read the table.
    fn after(&self, o: &mut String) {
        for line in crate::measure::metrics::not_claimed(&self.c.rows, &self.labels) {
            let _ = writeln!(o, "{}", crate::console::wrap(&line, "", "    "));
        }
        let mut equal: Vec<String> = self
            .c
            .rows
            .iter()
            .filter(|r| same(r) && !self.derived(r) && r.unit != Unit::Met)
            .map(|r| format!("{} {}", r.name, r.values[0].map_or(String::new(), |v| r.unit.show(v))))
            .collect();
        if let Some((per, true)) = self.classes() {
            equal.push(format!("SD classes met {}", per[0]));
        }
        if !equal.is_empty() {
            // Wrapped between figures, never inside one (a unit separator
            // holds each together through the wrap).
            let glued: Vec<String> = equal.iter().map(|e| e.replace(' ', "\u{1f}")).collect();
            let text = crate::console::wrap(&format!("the same in every run: {}", glued.join(", ")), "", "  ");
            let _ = writeln!(o, "{}", text.replace('\u{1f}', " "));
        }
        let _ = writeln!(
            o,
            "{}",
            crate::console::wrap(
                "differences are relative to the first run; \"better\" names the run ahead on a score; --json \
                 has every figure",
                "",
                ""
            )
        );
    }
}

pub fn import(o: &mut String, r: &ImportResult) {
    let id = r.id;
    let (place, db) = match &r.named_store {
        Some((store, db)) => (format!(" in {store}"), db.as_str()),
        None => (String::new(), ""),
    };
    let said = if r.duplicate {
        format!("already stored as run {id}{place}: not stored again")
    } else {
        format!("stored as run {id}{place}")
    };
    let line = format!("{said} {}", crate::places::run_commands(id, db));
    let _ = writeln!(o, "{}", crate::console::wrap(&line, "", ""));
}
