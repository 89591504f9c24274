//! `probe`: the device and its verdicts on one screen, then advice.

use std::fmt::Write;

use crate::console::wrap;
use crate::document::RunDocument;

pub fn probe(o: &mut String, doc: &RunDocument) {
    let spec = doc.target.as_ref().map_or("", |t| t.spec.as_str());
    let _ = writeln!(o, "{spec}");
    // The one-screen summary first; the details (each step's own output)
    // are the individual commands' and the HTML report's.
    for (label, value) in crate::format::summary(doc) {
        let head = format!("  {label:<12} ");
        let _ = writeln!(o, "{}", wrap(&value, &head, &" ".repeat(head.len())));
    }
    for s in doc.extras.skipped.get().into_iter().flatten() {
        let _ = writeln!(o, "{}", wrap(s, "  skipped      ", "               "));
    }
    advice(o, doc);
    let sim = doc
        .target
        .as_ref()
        .is_some_and(|t| t.kind == crate::targets::TargetKind::Sim);
    let line = format!(
        "{:.1} device-seconds of I/O{}",
        doc.device_time_s.unwrap_or(0.0),
        if sim {
            " (simulated: the run itself took far less)"
        } else {
            ""
        }
    );
    let _ = writeln!(o, "{}", wrap(&line, "", ""));
}

/// The advice drawn from a run's confident verdicts (probe's, an
/// import's), one item a line.
pub(super) fn advice(o: &mut String, doc: &RunDocument) {
    let advice = doc.extras.advice.get().map_or(&[][..], Vec::as_slice);
    if !advice.is_empty() {
        let _ = writeln!(o, "advice:");
        for a in advice {
            let _ = writeln!(o, "{}", wrap(&a.text, "  - ", "    "));
            if let Some(c) = &a.command {
                let _ = writeln!(o, "    {c}");
            }
        }
    }
}
