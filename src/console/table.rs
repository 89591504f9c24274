//! The one table renderer: every terminal table goes through here so they all look
//! alike and degrade the same way when stdout is not a terminal.

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{ColumnConstraint, ContentArrangement, Table, Width};

/// A two-column "field: value" table.
pub fn key_values<K: AsRef<str>, V: AsRef<str>>(rows: &[(K, V)]) -> String {
    let rows: Vec<Vec<&str>> = rows.iter().map(|(k, v)| vec![k.as_ref(), v.as_ref()]).collect();
    layout(None, &rows)
}

/// A table with a header row.
pub fn grid<S: AsRef<str>>(header: &[&str], rows: &[Vec<S>]) -> String {
    let rows: Vec<Vec<&str>> = rows.iter().map(|r| r.iter().map(AsRef::as_ref).collect()).collect();
    layout(Some(header), &rows)
}

/// A table with a header row and one row for each item, in order: what
/// most tables are, a list of results with a cell for each figure.
pub fn grid_of<T, S: AsRef<str>>(
    header: &[&str],
    items: impl IntoIterator<Item = T>,
    row: impl FnMut(T) -> Vec<S>,
) -> String {
    let rows: Vec<Vec<S>> = items.into_iter().map(row).collect();
    grid(header, &rows)
}

/// A table too wide for the width as several, one under another: each
/// with the first `keep` columns (what names a row) and as many of the
/// rest as fit beside them, in order. Records had put a comparison of 8
/// runs on 279 lines.
pub fn grid_split<S: AsRef<str>>(header: &[&str], rows: &[Vec<S>], keep: usize) -> String {
    let columns = header.len().max(rows.iter().map(Vec::len).max().unwrap_or(0));
    let keep = keep.min(columns);
    let render = |cols: &[usize]| -> String {
        let pick = |cells: &[&str]| -> Vec<String> {
            cols.iter()
                .map(|&c| cells.get(c).copied().unwrap_or("").to_string())
                .collect()
        };
        let head = pick(header);
        let head: Vec<&str> = head.iter().map(String::as_str).collect();
        let body: Vec<Vec<String>> = rows
            .iter()
            .map(|r| pick(&r.iter().map(AsRef::as_ref).collect::<Vec<&str>>()))
            .collect();
        grid(&head, &body)
    };
    // Measured as drawn, not reckoned: the table's own layout gives a
    // column more than its longest word where it can.
    let fits = |table: &str| table.starts_with('┌') && table.lines().all(|l| l.chars().count() <= super::width());
    let mut tables: Vec<String> = Vec::new();
    let mut block: Vec<usize> = (0..keep).collect();
    let mut drawn = String::new();
    for i in keep..columns {
        block.push(i);
        let wider = render(&block);
        if block.len() > keep + 1 && !fits(&wider) {
            tables.push(std::mem::take(&mut drawn));
            block = (0..keep).chain([i]).collect();
            drawn = render(&block);
        } else {
            drawn = wider;
        }
    }
    if block.len() > keep || tables.is_empty() {
        tables.push(if drawn.is_empty() { render(&block) } else { drawn });
    }
    tables.join("\n")
}

/// The narrowest each column can be: its longest word.
fn least(header: Option<&[&str]>, rows: &[Vec<&str>]) -> Vec<usize> {
    let columns = header
        .map_or(0, <[&str]>::len)
        .max(rows.iter().map(Vec::len).max().unwrap_or(0));
    let longest = |i: usize| {
        header
            .and_then(|h| h.get(i))
            .into_iter()
            .chain(rows.iter().filter_map(|r| r.get(i)))
            .flat_map(|c| c.split_whitespace())
            .map(|w| w.chars().count())
            .max()
            .unwrap_or(0)
    };
    (0..columns).map(longest).collect()
}

/// Each column pads a space either side; the border takes two.
fn fits_width(least: &[usize]) -> bool {
    least.iter().map(|w| w + 2).sum::<usize>() + 2 <= super::width()
}

/// A table whose cells wrap only between words, so a key, a path or a
/// command is never cut in two ("partial_page_writ|e_ns",
/// "cali|bration/...csv", a journal path split four ways); where the
/// longest words of its columns do not fit side by side in the
/// [`width`](super::width), one record after another instead.
fn layout(header: Option<&[&str]>, rows: &[Vec<&str>]) -> String {
    let least = least(header, rows);
    let width = super::width();
    if !fits_width(&least) {
        return records(header, rows);
    }
    let mut table = Table::new();
    table
        .load_style(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic)
        .set_width(u16::try_from(width).unwrap_or(u16::MAX));
    if let Some(h) = header {
        table.set_header(h.to_vec());
    }
    for row in rows {
        table.add_row(row.clone());
    }
    // comfy-table counts a column's padding in its width: the longest
    // word and a space either side ("sim:cf-simpletech-o|em" without them).
    for (i, w) in least.iter().enumerate() {
        if let Some(c) = table.column_mut(i) {
            c.set_constraint(ColumnConstraint::LowerBoundary(Width::Fixed(
                u16::try_from(*w + 2).unwrap_or(u16::MAX),
            )));
        }
    }
    table.to_string()
}

/// Rows as records: each cell on a line of its own after its column's
/// name (or the row's first cell when there is no header), prose wrapped
/// under it, a blank line between rows.
fn records(header: Option<&[&str]>, rows: &[Vec<&str>]) -> String {
    let mut out = String::new();
    for (n, row) in rows.iter().enumerate() {
        if n > 0 {
            out.push('\n');
        }
        match header {
            Some(h) => {
                let name = h.iter().map(|x| x.chars().count()).max().unwrap_or(0);
                for (i, cell) in row.iter().enumerate() {
                    let label = format!("{:<name$}  ", h.get(i).copied().unwrap_or(""));
                    out.push_str(&super::wrap(cell, &label, &" ".repeat(label.chars().count())));
                    out.push('\n');
                }
            }
            None => {
                let label = format!("{}:", row.first().copied().unwrap_or(""));
                out.push_str(&label);
                out.push('\n');
                for cell in row.iter().skip(1) {
                    out.push_str(&super::wrap(cell, "  ", "  "));
                    out.push('\n');
                }
            }
        }
    }
    out.trim_end_matches('\n').to_string()
}

/// Every field of a JSON object as rows (arrays joined, null as "-", nested
/// objects flattened as `outer.inner`): how registers and other result objects are
/// shown without a hand-written view each.
pub fn json_fields(value: &serde_json::Value) -> String {
    let mut rows = Vec::new();
    flatten("", value, &mut rows);
    key_values(&rows)
}

fn flatten(prefix: &str, value: &serde_json::Value, rows: &mut Vec<(String, String)>) {
    use serde_json::Value;
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                let key = if prefix.is_empty() {
                    k.clone()
                } else {
                    format!("{prefix}.{k}")
                };
                flatten(&key, v, rows);
            }
        }
        Value::Array(items) if items.iter().all(|i| !i.is_object()) => {
            let text = items.iter().map(scalar).collect::<Vec<_>>().join(", ");
            rows.push((prefix.to_string(), if text.is_empty() { "-".into() } else { text }));
        }
        Value::Array(items) => {
            for (i, item) in items.iter().enumerate() {
                flatten(&format!("{prefix}[{i}]"), item, rows);
            }
        }
        other @ (Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_)) => {
            rows.push((prefix.to_string(), scalar(other)))
        }
    }
}

fn scalar(value: &serde_json::Value) -> String {
    match value {
        serde_json::Value::Null => "-".into(),
        serde_json::Value::String(s) => s.clone(),
        other @ (serde_json::Value::Bool(_)
        | serde_json::Value::Number(_)
        | serde_json::Value::Array(_)
        | serde_json::Value::Object(_)) => other.to_string(),
    }
}
