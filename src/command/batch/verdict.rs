//! A row's verdict and the rule that decided it, from what the device's
//! run measured and the batch's medians. Fake capacity or lost data FAIL;
//! a claimed class its figures missed, or speeds far below the batch's,
//! are SUSPECT; the rest PASS.

use crate::document::batch::{Medians, RowVerdict};
use crate::measure::bench::BenchResult;
use crate::measure::bench::classes::SdClass;
use crate::measure::capacity::fill::FillResult;
use crate::measure::capacity::{CapacityResult, Verdict};
use crate::units::Iec;

/// Below this share of the batch's median a card's speed is an outlier.
/// flashlab's own rule, not a published one: a half is far past the
/// run-to-run spread of one card (a few percent in `bench`'s repeat test)
/// and near the gap between neighbouring speed classes (C6 to C10).
pub const OUTLIER_SHARE: f64 = 0.5;

/// The batch needs this many measured rows before a median means anything.
pub const MEDIAN_ROWS: usize = 3;

/// What a row's verdict is read from.
pub struct Measured<'a> {
    pub capacity: Option<&'a CapacityResult>,
    pub bench: Option<&'a BenchResult>,
    pub read_mb_s: Option<f64>,
    pub write_mb_s: Option<f64>,
    /// The classes the card claims, and who says so ("its SSR", "--claims").
    pub claims: &'a [SdClass],
    pub claimed_by: &'a str,
    /// A test that failed, in words.
    pub failed: Option<&'a str>,
    /// The full write-and-verify (`--destructive`).
    pub fill: Option<&'a FillResult>,
}

/// The verdict and why.
pub fn judge(m: &Measured<'_>, medians: &Medians) -> (RowVerdict, String) {
    if let Some(f) = m.fill.filter(|f| f.bad_bytes() > 0) {
        let foreign = match f.foreign_bytes {
            0 => String::new(),
            n => format!("; {} came back from other addresses (a wrap)", Iec(n)),
        };
        return (
            RowVerdict::Fail,
            format!(
                "every block written and read back: {} of {} did not read back as written, the first at byte {}{foreign}",
                Iec(f.bad_bytes()),
                Iec(f.verified_bytes),
                f.first_bad_offset.unwrap_or(0)
            ),
        );
    }
    if let Some(c) = m.capacity {
        if c.verdict == Verdict::Fake {
            let kind = c.kind.map_or("fake".to_string(), |k| format!("fake ({})", k.as_str()));
            return (
                RowVerdict::Fail,
                format!(
                    "{kind}: {} usable of {} announced",
                    Iec(c.usable_bytes),
                    Iec(c.announced_bytes)
                ),
            );
        }
        if c.verdict == Verdict::Damaged || !c.bad_regions.is_empty() {
            let lost: u64 = c.bad_regions.iter().map(|r| r.len).sum();
            return (
                RowVerdict::Fail,
                format!(
                    "damaged: {} in {} region(s) lost data or refused I/O",
                    Iec(lost),
                    c.bad_regions.len()
                ),
            );
        }
    }
    if let Some(why) = m.failed {
        return (RowVerdict::Fail, why.to_string());
    }
    if let Some(b) = m.bench {
        let missed: Vec<String> = m
            .claims
            .iter()
            .filter(|c| b.classes.get(c) == Some(&false))
            .map(|c| c.to_string())
            .collect();
        if !missed.is_empty() {
            let write = m
                .write_mb_s
                .map_or(String::new(), |w| format!("; sequential write {w:.1} MB/s"));
            return (
                RowVerdict::Suspect,
                format!(
                    "claims {} ({}) but missed it here{write}",
                    missed.join(", "),
                    m.claimed_by
                ),
            );
        }
    }
    for (what, got, median) in [
        ("write", m.write_mb_s, medians.write_mb_s),
        ("read", m.read_mb_s, medians.read_mb_s),
    ] {
        if let (Some(got), Some(median)) = (got, median)
            && got < OUTLIER_SHARE * median
        {
            return (
                RowVerdict::Suspect,
                format!(
                    "{what} {got:.1} MB/s is {:.2}x the batch's median {median:.1} MB/s",
                    got / median
                ),
            );
        }
    }
    let mut said = Vec::new();
    if let Some(c) = m.capacity {
        said.push(format!("genuine {}", Iec(c.usable_bytes)));
    }
    match m.fill {
        Some(f) if f.complete => said.push(format!("every block of {} written and read back", Iec(f.size_bytes))),
        Some(f) => said.push(format!(
            "the first {} of {} written and read back (the budget ended)",
            Iec(f.verified_bytes),
            Iec(f.size_bytes)
        )),
        None => {}
    }
    if !m.claims.is_empty() && m.bench.is_some() {
        let met: Vec<String> = m.claims.iter().map(|c| c.to_string()).collect();
        said.push(format!("meets {}", met.join(", ")));
    }
    if said.is_empty() {
        said.push("nothing failed".into());
    }
    (RowVerdict::Pass, said.join("; "))
}

/// The median of the figures measured, where at least [`MEDIAN_ROWS`] were.
pub fn median(mut xs: Vec<f64>) -> Option<f64> {
    xs.retain(|x| x.is_finite() && *x > 0.0);
    if xs.len() < MEDIAN_ROWS {
        return None;
    }
    xs.sort_by(f64::total_cmp);
    let n = xs.len();
    Some(if n % 2 == 1 {
        xs[n / 2]
    } else {
        (xs[n / 2 - 1] + xs[n / 2]) / 2.0
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn none<'a>() -> Measured<'a> {
        Measured {
            capacity: None,
            bench: None,
            read_mb_s: None,
            write_mb_s: None,
            claims: &[],
            claimed_by: "",
            failed: None,
            fill: None,
        }
    }

    #[test]
    fn a_median_needs_three_figures() {
        assert_eq!(median(vec![1.0, 2.0]), None);
        assert_eq!(median(vec![3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(vec![4.0, 1.0, 2.0, 3.0, f64::NAN]), Some(2.5));
    }

    #[test]
    fn a_slow_card_is_suspect_against_the_median_and_a_fast_one_passes() {
        let medians = Medians {
            read_mb_s: Some(20.0),
            write_mb_s: Some(10.0),
        };
        let slow = Measured {
            write_mb_s: Some(3.0),
            read_mb_s: Some(19.0),
            ..none()
        };
        let (v, why) = judge(&slow, &medians);
        assert_eq!(v, RowVerdict::Suspect);
        assert_eq!(why, "write 3.0 MB/s is 0.30x the batch's median 10.0 MB/s");
        let fine = Measured {
            write_mb_s: Some(5.0),
            read_mb_s: Some(10.0),
            ..none()
        };
        assert_eq!(
            judge(&fine, &medians).0,
            RowVerdict::Pass,
            "half the median is not below it"
        );
        assert_eq!(
            judge(&none(), &Medians::default()),
            (RowVerdict::Pass, "nothing failed".to_string())
        );
    }

    #[test]
    fn a_failed_test_fails_the_row() {
        let m = Measured {
            failed: Some("bench failed: I/O error"),
            ..none()
        };
        assert_eq!(
            judge(&m, &Medians::default()),
            (RowVerdict::Fail, "bench failed: I/O error".to_string())
        );
    }
}
