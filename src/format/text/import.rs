//! `import flashbench`: where the output came from, the verdicts read from
//! it as probe's summary states them, the evidence, and the notes on how
//! it was read and where flashbench's own output misleads.

use std::fmt::Write;

use crate::console::wrap;
use crate::document::{NoteKind, RunDocument};
use crate::measure::open_au::{Run, Sweep};
use crate::units::{Iec, mb_per_s};

pub fn import(o: &mut String, doc: &RunDocument) {
    if let Some(src) = doc.extras.import.get() {
        let mut kinds: Vec<(String, usize)> = Vec::new();
        for t in &src.tables {
            match kinds.iter_mut().find(|k| k.0 == t.kind) {
                Some(k) => k.1 += 1,
                None => kinds.push((t.kind.clone(), 1)),
            }
        }
        // One table is its kind alone ("1 table: columns", not "1 table:
        // 1 columns"); several are counted by kind.
        let list: Vec<String> = match kinds.as_slice() {
            [(k, 1)] => vec![k.clone()],
            many => many.iter().map(|(k, n)| format!("{n} {k}")).collect(),
        };
        let line = format!(
            "{} output: {}{} ({} table{}: {})",
            src.tool,
            src.inputs.join(" "),
            src.column.as_ref().map_or(String::new(), |c| format!(", column {c}")),
            src.tables.len(),
            if src.tables.len() == 1 { "" } else { "s" },
            list.join(", ")
        );
        let _ = writeln!(o, "{}", wrap(&line, "", "  "));
    }
    for (label, value) in crate::format::summary(doc) {
        let head = format!("  {label:<12} ");
        let _ = writeln!(o, "{}", wrap(&value, &head, &" ".repeat(head.len())));
    }
    let mut evidence: Vec<&String> = Vec::new();
    if let Some(a) = doc.results.align.get() {
        evidence.extend(&a.evidence);
    }
    if let Some(f) = doc.results.fat.get() {
        evidence.extend(&f.notes);
    }
    let mut evidence: Vec<String> = evidence.into_iter().cloned().collect();
    if let Some(r) = doc.results.open_au.get() {
        evidence.extend(
            [("in order", &r.linear), ("random", &r.random)]
                .into_iter()
                .filter_map(|(order, s)| s.as_ref().map(|s| open_au_reason(order, s))),
        );
    }
    for e in evidence {
        let _ = writeln!(o, "{}", wrap(&e, "  - ", "    "));
    }
    for n in doc.notes.iter().filter(|n| n.kind == NoteKind::Import) {
        let _ = writeln!(o, "{}", wrap(&n.message, "note: ", "      "));
    }
    super::probe::advice(o, doc);
}

/// Why an order's open-AU limit reads as it does: the counts whose rates
/// held, the first whose small writes collapsed (the smallest chunk both
/// wrote, before and after), and the confidence.
fn open_au_reason(order: &str, s: &Sweep) -> String {
    // Above a limit, a run that did not plainly collapse is no evidence.
    let limit = s.max_open_aus.unwrap_or(u64::MAX);
    let fine: Vec<&Run> = s.runs.iter().filter(|r| !r.collapsed && r.open_aus <= limit).collect();
    let collapsed = s.runs.iter().filter(|r| r.collapsed).min_by_key(|r| r.open_aus);
    let held = match fine.as_slice() {
        [] => String::new(),
        [one] => format!(
            "at {} AU{} the rates held",
            one.open_aus,
            if one.open_aus == 1 { "" } else { "s" }
        ),
        [init @ .., last] => format!(
            "at {} and {} AUs the rates held",
            init.iter()
                .map(|r| r.open_aus.to_string())
                .collect::<Vec<_>>()
                .join(", "),
            last.open_aus
        ),
    };
    let fell = collapsed.map(|c| {
        let last = fine
            .iter()
            .filter(|f| f.open_aus < c.open_aus)
            .max_by_key(|f| f.open_aus);
        let both = last.and_then(|f| {
            c.levels
                .iter()
                .rev()
                .find_map(|l| f.levels.iter().find(|x| x.chunk_bytes == l.chunk_bytes).map(|x| (x, l)))
        });
        match both {
            Some((before, after)) => format!(
                "at {} they collapsed ({} writes: {} at {}, {} at {})",
                c.open_aus,
                Iec(after.chunk_bytes),
                mb_per_s(before.bytes_per_sec),
                last.map_or(0, |f| f.open_aus),
                mb_per_s(after.bytes_per_sec),
                c.open_aus
            ),
            None => format!("at {} they collapsed", c.open_aus),
        }
    });
    let runs = [held, fell.unwrap_or_default()]
        .into_iter()
        .filter(|p| !p.is_empty())
        .collect::<Vec<_>>()
        .join("; ");
    let sure = if s.confidence >= crate::measure::CONFIDENT {
        format!("confidence {:.2}", s.confidence)
    } else {
        format!("unsure: confidence {:.2}", s.confidence)
    };
    format!("{order}: {runs}; {sure}")
}
