//! `import flashbench`: where the output came from, the verdicts read from
//! it as probe's summary states them, the evidence, and the notes on how
//! it was read and where flashbench's own output misleads.

use std::fmt::Write;

use crate::console::wrap;
use crate::document::{NoteKind, RunDocument};

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
    for e in evidence {
        let _ = writeln!(o, "{}", wrap(e, "  - ", "    "));
    }
    for n in doc.notes.iter().filter(|n| n.kind == NoteKind::Import) {
        let _ = writeln!(o, "{}", wrap(&n.message, "note: ", "      "));
    }
}
