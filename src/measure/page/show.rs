//! How page shows: the extra cost at each boundary and its verdict. Its
//! page joins align's in probe's summary (`align/show.rs`).

use std::fmt::Write;

use super::PageResult;
use crate::console::{table, wrap};
use crate::measure::registry::Registered;
use crate::measure::{CONFIDENT, show};
use crate::units::{Iec, duration_ns};

pub struct Presenter;

impl Registered for Presenter {
    const COMMAND: &'static str = "page";
    type Output = PageResult;

    fn text(r: &PageResult, device_s: f64, o: &mut String) {
        let text = format!(
            "{} writes straddling each multiple of a size, against {} writes ending there: where the page \
             divides the size, the straddling write programs a second page.",
            Iec(r.write_bytes),
            Iec(r.write_bytes)
        );
        let _ = writeln!(o, "{}", wrap(&text, "", ""));
        let steps = table::grid_of(&["boundary", "extra cost", "pairs", ""], &r.candidates, |c| {
            vec![
                Iec(c.size_bytes).to_string(),
                format!(
                    "{}{} ± {}",
                    if c.step_ns < 0.0 { "-" } else { "" },
                    duration_ns(c.step_ns.abs()),
                    duration_ns(c.se_ns)
                ),
                c.pairs.to_string(),
                if c.step { "step".into() } else { String::new() },
            ]
        });
        let _ = writeln!(o, "{steps}");
        let verdict = match (r.claim.text(), r.page_size_bytes) {
            (Some(refused), _) => format!("page {refused}"),
            (None, Some(p)) if r.confidence >= CONFIDENT => {
                format!("page {} (confidence {:.2})", Iec(p), r.confidence)
            }
            (None, Some(p)) => format!("page perhaps {} (unsure: confidence {:.2})", Iec(p), r.confidence),
            (None, None) => "no page size from writes".into(),
        };
        show::closing(o, &verdict, device_s);
    }
}
