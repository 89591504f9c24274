//! What the tests' own `show.rs` files share: a size verdict worded by its
//! confidence, and a verdict line with the run's device time.

use std::fmt::Write;

use crate::console::wrap;
use crate::units::Iec;

/// A size verdict worded by its confidence: a size stated plainly when
/// confident, marked unsure below that, and "none" with how sure of none.
pub fn verdict(what: &str, v: Option<u64>, p: f64) -> String {
    match v {
        Some(b) if p >= super::CONFIDENT => format!("{what} {} (confidence {p:.2})", Iec(b)),
        Some(b) => format!("{what} perhaps {} (unsure: confidence {p:.2})", Iec(b)),
        None => format!("no {what} step visible in the reads (confidence {p:.2}: flash has one, the reads hide it)"),
    }
}

/// A test's closing line: its verdict, then the device time it took,
/// wrapped to the terminal.
pub fn closing(o: &mut String, verdict: &str, device_s: f64) {
    let line = format!("{verdict}; {device_s:.1} device-seconds");
    let _ = writeln!(o, "{}", wrap(&line, "", ""));
}

/// Notes, each wrapped under a `note:` head.
pub fn notes(o: &mut String, notes: &[String]) {
    for n in notes {
        let _ = writeln!(o, "{}", wrap(n, "note: ", "      "));
    }
}
