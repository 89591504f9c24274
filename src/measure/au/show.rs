//! How au shows: the distances tried and its verdict. Its erase block
//! joins align's in probe's summary (`align/show.rs`).

use std::fmt::Write;

use super::AuResult;
use crate::console::{table, wrap};
use crate::measure::registry::Registered;
use crate::measure::{CONFIDENT, show};
use crate::units::Iec;

pub struct Presenter;

impl Registered for Presenter {
    const COMMAND: &'static str = "au";
    type Output = AuResult;

    fn text(r: &AuResult, device_s: f64, o: &mut String) {
        if let Some(n) = r.random_aus {
            let text = format!(
                "The card keeps {n} AU{} open for random writes. Two regions written in random order \
                 beside {} other AU{} share one of those while they lie in one AU; a distance of one AU or \
                 more makes them two, one too many, and writes start to merge.",
                if n == 1 { "" } else { "s" },
                n - 1,
                if n == 2 { "" } else { "s" },
            );
            let _ = writeln!(o, "{}", wrap(&text, "", ""));
        }
        if !r.candidates.is_empty() {
            let pairs = table::grid_of(&["distance", "merging", "regions in"], &r.candidates, |c| {
                vec![
                    Iec(c.size_bytes).to_string(),
                    format!("{:.0}%", c.merging * 100.0),
                    if c.overflows { "two AUs".into() } else { "one AU".into() },
                ]
            });
            let _ = writeln!(o, "{pairs}");
        }
        show::notes(o, &r.notes);
        let v = match (r.claim.short_text(), r.erase_size_bytes) {
            // The whole reason is the last note, shown above.
            (Some(refused), _) => format!("erase block {refused}"),
            (None, Some(e)) if r.confidence >= CONFIDENT => {
                format!("erase block {} (confidence {:.2})", Iec(e), r.confidence)
            }
            (None, Some(e)) => format!(
                "erase block perhaps {} (unsure: confidence {:.2})",
                Iec(e),
                r.confidence
            ),
            (None, None) => "no erase block from writes".to_string(),
        };
        show::closing(o, &v, device_s);
    }
}
