//! Whether a verdict was claimed at all. A test can measure and still claim
//! nothing: the target is not flash (a file, a loop device, memory), the
//! step's budget or the region it writes ended it before an answer, or
//! nothing the method reads showed. Such a verdict is *refused*, which is
//! not the same as a measured "no limit up to N" or "no FAT area": the
//! JSON says `claimed: false` with `not_claimed` (why), its confidence is 0
//! (it claims nothing to be sure of), and every output says "not claimed
//! (why)" where it would have shown the verdict.

use serde::{Deserialize, Serialize};

/// Flattened into each verdict that can be refused: `claimed` and
/// `not_claimed` sit beside its value and `confidence`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    /// False where the run claims nothing (then the verdict's value is
    /// null or 0 and its `confidence` 0). Runs stored before this field
    /// read as claimed, and are settled by what they hold (see
    /// `Results::settle`).
    #[serde(default = "claimed")]
    pub claimed: bool,
    /// Why nothing was claimed; null where the verdict was claimed.
    #[serde(default)]
    pub not_claimed: Option<String>,
}

fn claimed() -> bool {
    true
}

impl Default for Claim {
    fn default() -> Self {
        Claim::made()
    }
}

impl Claim {
    /// A verdict stated (with its own confidence, sure or not).
    pub fn made() -> Claim {
        Claim {
            claimed: true,
            not_claimed: None,
        }
    }

    /// Nothing claimed, and why.
    pub fn refused(why: impl Into<String>) -> Claim {
        Claim {
            claimed: false,
            not_claimed: Some(why.into()),
        }
    }

    /// Why nothing was claimed; None where something was.
    pub fn why(&self) -> Option<&str> {
        if self.claimed {
            None
        } else {
            Some(self.not_claimed.as_deref().unwrap_or("no reason recorded"))
        }
    }

    /// "not claimed (why)" in a test's own output; None where claimed.
    pub fn text(&self) -> Option<String> {
        self.why().map(not_claimed)
    }

    /// The same, the reason cut to its first clause, for one-line places
    /// (the summary, `results list`).
    pub fn short_text(&self) -> Option<String> {
        self.why().map(|w| not_claimed(short(w)))
    }
}

/// The one wording of a refusal.
pub fn not_claimed(why: &str) -> String {
    format!("not claimed ({why})")
}

/// A reason's first clause: up to its first ": ", "; " or " (" (the rest
/// explains it).
pub fn short(why: &str) -> &str {
    // "unsure: stopped after N device-seconds" is one clause, headed by
    // the word the budget's notes have always begun with.
    let from = if why.starts_with(UNSURE) { UNSURE.len() } else { 0 };
    let end = [": ", "; ", " ("]
        .into_iter()
        .filter_map(|sep| why[from..].find(sep))
        .min()
        .map_or(why.len(), |i| from + i);
    &why[..end]
}

const UNSURE: &str = "unsure: ";

/// The reason where the medium cannot show flash (`Medium::not_flash`).
pub fn not_flash(why: &str) -> String {
    format!("the target is {why}")
}

/// The reason where the step's device-time budget ended it first, and
/// what it had seen by then.
pub fn out_of_budget(secs: f64, saw: &str) -> String {
    format!("{}: {saw}; {MORE}", stopped(secs))
}

/// The same where what it saw is told elsewhere (the rows above it).
pub fn budget_ended(secs: f64) -> String {
    format!("{}; {MORE}", stopped(secs))
}

/// What gives a step its answer where its budget ended it first.
const MORE: &str = "--budget SECONDS gives it more";

/// How a step the budget ended says so, in notes and refusals alike;
/// under ten seconds to a tenth (a half-second budget had read "stopped
/// after 1 device-seconds", and a millisecond one "after 0").
pub fn stopped(secs: f64) -> String {
    let shown = if secs < 10.0 {
        format!("{secs:.1}")
    } else {
        format!("{secs:.0}")
    };
    format!("{UNSURE}stopped after {shown} device-seconds by the step's budget")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_says_why_and_an_old_run_reads_as_claimed() {
        let c = Claim::refused(not_flash(
            "a loop device over the file /x.img: the file's filesystem sets its timing",
        ));
        assert_eq!(
            c.short_text().unwrap(),
            "not claimed (the target is a loop device over the file /x.img)"
        );
        assert!(c.text().unwrap().ends_with("sets its timing)"));
        let budget = Claim::refused(out_of_budget(90.4, "no collapse up to 5 open AUs"));
        assert_eq!(
            budget.short_text().unwrap(),
            "not claimed (unsure: stopped after 90 device-seconds by the step's budget)"
        );
        assert_eq!(
            Claim::refused(budget_ended(6.2)).short_text().unwrap(),
            "not claimed (unsure: stopped after 6.2 device-seconds by the step's budget)"
        );
        assert_eq!(Claim::made().text(), None);
        let old: Claim = serde_json::from_str("{}").unwrap();
        assert_eq!(old, Claim::made());
        let v = serde_json::to_value(Claim::refused("x")).unwrap();
        assert_eq!(v, serde_json::json!({"claimed": false, "not_claimed": "x"}));
    }
}
