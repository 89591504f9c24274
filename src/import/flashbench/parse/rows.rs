//! The rows of a table on one line's tokens: `-a` rows, rows of rates,
//! scatter points, and the rows of a table of several cards read by the
//! column each cell stands in.

use super::tokens::{Unit, broken_rate, broken_size, rate, size, time};
use super::{AlignRow, ColumnTable, Diff, MAX_SIZE, RateRow};

/// What one line holds.
pub(super) enum Item {
    Align(AlignRow),
    /// An align row cut off before its diff.
    AlignCut,
    Rates(RateRow),
    Scatter(f64, f64),
}

/// What reading one row from a token on gave.
enum Read {
    /// A row, and the token after it.
    Row(Item, usize),
    /// The line ends mid-row: an align row cut off before its diff.
    Cut,
    /// No row starts there: prose when nothing came before it on the line,
    /// else this error.
    Not(String),
    /// A row that does not read, wherever it starts: a rate flashbench
    /// cannot print ("nanM/s", "-5M/s"), which prose does not hold either.
    Bad(String),
}

/// The rows on one line's tokens (several where an archive collapsed the
/// breaks). Empty when the line is prose. An error when a row starts but
/// does not read; `Ok` with `AlignCut` last when the line ends mid-row.
pub(super) fn rows(line_no: usize, toks: &[String]) -> Result<Vec<Item>, String> {
    let mut out = Vec::new();
    let mut i = 0;
    // Scatter: exactly two plain numbers.
    if toks.len() == 2
        && let (Ok(a), Ok(b)) = (toks[0].parse::<f64>(), toks[1].parse::<f64>())
        && a.is_finite()
        && b.is_finite()
        && a >= 0.0
        && b >= 0.0
        && toks[0].contains('.')
    {
        return Ok(vec![Item::Scatter(a, b)]);
    }
    while i < toks.len() {
        let read = if toks[i] == "align" {
            align_row(line_no, toks, i)?
        } else if let Some(chunk) = size(&toks[i]) {
            rate_row(line_no, toks, i, chunk)
        } else if broken_size(&toks[i]) && toks.get(i + 1).is_some_and(|t| rate(t).is_some() || broken_rate(t)) {
            Read::Bad(format!("'{}' is not a size flashbench prints: 1 B to 1 PiB", toks[i]))
        } else {
            Read::Not(format!("'{}' is not a size or 'align'", toks[i]))
        };
        match read {
            Read::Row(item, next) => {
                out.push(item);
                i = next;
            }
            Read::Cut => {
                out.push(Item::AlignCut);
                return Ok(out);
            }
            Read::Not(why) => return if out.is_empty() { Ok(out) } else { Err(why) },
            Read::Bad(why) => return Err(why),
        }
    }
    Ok(out)
}

/// The `align` row at token `i`.
fn align_row(line_no: usize, toks: &[String], i: usize) -> Result<Read, String> {
    let Some(b) = toks.get(i + 1) else {
        return Ok(Read::Not("the row ends after 'align'".into()));
    };
    let Ok(boundary) = b.parse::<u64>() else {
        // "align" in prose.
        return Ok(Read::Not(format!("'{b}' is not a boundary in bytes")));
    };
    if toks.get(i + 2).is_some_and(|w| w != "pre") {
        return Ok(Read::Not(format!("expected 'pre' after 'align {boundary}'")));
    }
    if boundary == 0 || boundary > MAX_SIZE {
        return Err(format!("boundary {boundary} is not a size flashbench prints"));
    }
    let mut vals = [(0.0, Unit::Printed); 4];
    for (k, word) in ["pre", "on", "post", "diff"].iter().enumerate() {
        let at = i + 2 + 2 * k;
        match (toks.get(at), toks.get(at + 1)) {
            (None, _) | (Some(_), None) if at + 1 >= toks.len() => {
                return Ok(Read::Cut);
            }
            (Some(w), Some(v)) if w == word => match time(v) {
                Some(t) if *word == "diff" || (t.1 != Unit::None && t.0 >= 0.0) => vals[k] = t,
                _ => return Err(format!("the {word} time '{v}' is not a time")),
            },
            (Some(w), _) => return Err(format!("expected '{word}', found '{w}'")),
            (None, _) => return Err(format!("expected '{word}'")),
        }
    }
    let (pre, on, post) = (vals[0].0, vals[1].0, vals[2].0);
    let recomputed = on - (pre + post) / 2.0;
    let (diff_ns, diff) = if vals[3].1 != Unit::None {
        (vals[3].0, Diff::Printed)
    } else {
        // No unit: flashbench's ns branch, cut to 7 characters. Where
        // ten times the value fits pre/on/post better, a digit was lost.
        let v = vals[3].0;
        if (v * 10.0 - recomputed).abs() < (v - recomputed).abs() {
            (recomputed, Diff::Recomputed)
        } else {
            (v, Diff::NoUnit)
        }
    };
    let micro_cut = ["pre", "on", "post", "diff"]
        .into_iter()
        .zip(vals)
        .filter(|(_, v)| v.1 == Unit::MicroCut)
        .map(|(w, _)| w)
        .collect();
    let row = AlignRow {
        line: line_no,
        boundary,
        pre_ns: pre,
        on_ns: on,
        post_ns: post,
        diff_ns,
        diff,
        micro_cut,
    };
    Ok(Read::Row(Item::Align(row), i + 10))
}

/// The row of rates at token `i`, whose size is `chunk`.
fn rate_row(line_no: usize, toks: &[String], i: usize, chunk: u64) -> Read {
    let mut rates = Vec::new();
    let mut j = i + 1;
    while j < toks.len() {
        let t = toks[j].as_str();
        if let Some(r) = rate(t) {
            rates.push(Some(r));
        } else if t.starts_with("(cut") || t == "-" {
            rates.push(None);
        } else {
            break;
        }
        j += 1;
    }
    if let Some(t) = toks.get(j).filter(|t| broken_rate(t)) {
        return Read::Bad(format!(
            "'{t}' is not a rate: a size over a time is a finite number of 0 or more"
        ));
    }
    if rates.is_empty() {
        return Read::Not(format!("'{}' has no rate after it", toks[i]));
    }
    if j < toks.len() && size(&toks[j]).is_none() {
        // Prose after a row-like start ("4MiB of data was ..."):
        // only a row when nothing else follows.
        return Read::Not(format!("'{}' is not a rate", toks[j]));
    }
    Read::Row(
        Item::Rates(RateRow {
            line: line_no,
            chunk,
            rates,
        }),
        j,
    )
}

/// A column header: "Size" and at least two names.
pub(super) fn header(toks: &[String]) -> Option<Vec<String>> {
    (toks.len() >= 3 && toks[0].eq_ignore_ascii_case("size") && toks[1..].iter().all(|t| size(t).is_none()))
        .then(|| toks[1..].to_vec())
}

/// The words of a line with the character column each starts at.
pub(super) fn positioned(line: &str) -> Vec<(usize, String)> {
    let mut out = Vec::new();
    let mut start = None;
    let mut word = String::new();
    for (col, c) in line.chars().chain(std::iter::once(' ')).enumerate() {
        if c.is_whitespace() {
            if let Some(s) = start.take() {
                out.push((s, std::mem::take(&mut word)));
            }
        } else {
            start.get_or_insert(col);
            word.push(c);
        }
    }
    out
}

/// A row of a table of several cards: each cell under the nearest name.
pub(super) fn column_row(no: usize, line: &str, t: &ColumnTable) -> Option<RateRow> {
    let words = positioned(line);
    let chunk = size(&words.first()?.1)?;
    let mut rates = vec![None; t.names.len()];
    for (col, w) in &words[1..] {
        let k = (0..t.names.len()).min_by_key(|&k| t.name_columns[k].abs_diff(*col))?;
        rates[k] = rate(w);
    }
    Some(RateRow { line: no, chunk, rates })
}
