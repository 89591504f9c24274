//! `batch`: one table of every device, then the counts.

use std::fmt::Write;

use crate::document::batch::{Batch, Row, RowVerdict};
use crate::units::Iec;

pub fn batch(o: &mut String, b: &Batch) {
    // One line a device and its reason under it, not a bordered grid: a
    // grid of identity names and reasons took five lines a card at 80
    // columns.
    // The slot whole, so it copies in one piece ("alias.i…" did not).
    let w = b.rows.iter().map(|r| r.slot.chars().count()).max().unwrap_or(0).max(8);
    let _ = writeln!(
        o,
        "{:<w$} {:<18} {:<18} {:>11}  verdict",
        "slot", "card", "size", "MB/s r/w"
    );
    for r in &b.rows {
        let c = cells(r);
        let _ = writeln!(o, "{:<w$} {:<18} {:<18} {:>11}  {}", c[0], c[1], c[2], c[3], c[4]);
        let _ = writeln!(o, "{}", crate::console::wrap(&c[5], "  ", "  "));
    }
    let counts: Vec<String> = [
        RowVerdict::Pass,
        RowVerdict::Fail,
        RowVerdict::Suspect,
        RowVerdict::Removed,
        RowVerdict::Skipped,
    ]
    .iter()
    .filter_map(|v| {
        let n = b.rows.iter().filter(|r| r.verdict == *v).count();
        (n > 0).then(|| format!("{n} {}", v.as_str()))
    })
    .collect();
    let line = format!(
        "batch {}: {} device{}, {} in {:.0} s",
        b.id,
        b.rows.len(),
        if b.rows.len() == 1 { "" } else { "s" },
        counts.join(", "),
        b.wall_s
    );
    let _ = writeln!(o, "{}", crate::console::wrap(&line, "", ""));
    if b.rows.iter().any(|r| r.run_id.is_some()) {
        let line = format!("each device's run is stored: `flashlab results list --batch {}`", b.id);
        let _ = writeln!(o, "{}", crate::console::wrap(&line, "", ""));
    }
}

/// One row's cells: the card by its label, else by who it says it is
/// (its name before the size), cut to its column.
fn cells(r: &Row) -> Vec<String> {
    let card = match (&r.label, r.identity.name.is_empty()) {
        (Some(l), _) => l.clone(),
        (None, false) => r.identity.name.split(',').next().unwrap_or("").to_string(),
        (None, true) => r.device.clone(),
    };
    let cut = |s: String, n: usize| {
        if s.chars().count() > n {
            let mut c: String = s.chars().take(n - 1).collect();
            c.push('…');
            c
        } else {
            s
        }
    };
    // A row skipped before its device was opened knows no size.
    let size = match r.usable_bytes {
        Some(u) if u != r.announced_bytes => format!("{} of {}", Iec(u), Iec(r.announced_bytes)),
        None if r.announced_bytes == 0 => "-".to_string(),
        _ => Iec(r.announced_bytes).to_string(),
    };
    let speed = |x: Option<f64>| x.map_or("-".to_string(), |v| format!("{v:.1}"));
    let mut why = r.why.clone();
    if let Some(back) = &r.restored {
        why.push_str(&format!("; {back}"));
    }
    if let Some(slot) = &r.same_content_as {
        why.push_str(&format!(
            "; it holds what the card in {slot} held (moved here, or a copy)"
        ));
    }
    if let Some(id) = r.run_id {
        why.push_str(&format!(" (run {id})"));
    }
    vec![
        r.slot.clone(),
        cut(card, 18),
        cut(size, 18),
        format!("{}/{}", speed(r.read_mb_s), speed(r.write_mb_s)),
        r.verdict.as_str().to_string(),
        why,
    ]
}
