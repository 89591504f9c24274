//! The one table renderer: every terminal table goes through here so they all look
//! alike and degrade the same way when stdout is not a terminal.

use comfy_table::presets::UTF8_BORDERS_ONLY;
use comfy_table::{ContentArrangement, Table};

/// A two-column "field: value" table.
pub fn key_values<K: AsRef<str>, V: AsRef<str>>(rows: &[(K, V)]) -> String {
    let mut table = base();
    for (k, v) in rows {
        table.add_row(vec![k.as_ref(), v.as_ref()]);
    }
    table.to_string()
}

/// A table with a header row.
pub fn grid<S: AsRef<str>>(header: &[&str], rows: &[Vec<S>]) -> String {
    let mut table = base();
    table.set_header(header.to_vec());
    for row in rows {
        table.add_row(row.iter().map(|c| c.as_ref()).collect::<Vec<_>>());
    }
    table.to_string()
}

/// Width a table keeps to when stdout is not a terminal (a pipe, a file):
/// $COLUMNS if set, else 80, so `flashlab sim list | less` stays readable.
const PIPED_WIDTH: u16 = 80;

fn base() -> Table {
    use std::io::IsTerminal;
    let mut table = Table::new();
    table
        .load_style(UTF8_BORDERS_ONLY)
        .set_content_arrangement(ContentArrangement::Dynamic);
    if !std::io::stdout().is_terminal() {
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.parse::<u16>().ok())
            .filter(|w| *w >= 40)
            .unwrap_or(PIPED_WIDTH);
        table.set_width(width);
    }
    table
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
