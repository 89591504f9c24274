//! probe's combined verdicts as data: what its one-screen summary prints,
//! in the run document under `summary`, so a script reads the erase block
//! probe settled on (from reads, writes or both) instead of re-deriving it
//! from align's and au's results.

use serde::{Deserialize, Serialize};

use super::bench::classes;
use super::capacity::{FakeKind, Verdict};
use super::claim::Claim;
use super::{CONFIDENT, Results, best_erase, best_page};

/// Where a combined size came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum From {
    /// align's reads alone.
    Reads,
    /// A writing test (au, page) alone, or over reads that said otherwise.
    Writes,
    /// Reads and writes agree.
    Both,
}

/// A size probe settled on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Size {
    /// Null when nothing showed one, or none is claimed.
    pub bytes: Option<u64>,
    /// 0 where nothing is claimed.
    pub confidence: f64,
    /// Below [`CONFIDENT`]: the text says "perhaps" or "unsure".
    pub unsure: bool,
    pub from: From,
    /// Whether a size is claimed at all (not on a target that is not
    /// flash), and why not.
    #[serde(flatten)]
    pub claim: Claim,
}

/// One order's open-AU limit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Limit {
    /// Null when no collapse was seen, or none is claimed.
    pub count: Option<u64>,
    /// Without a count: no collapse up to this many (the bound; a larger
    /// limit is not excluded). Null where nothing is claimed: a sweep that
    /// claims nothing may have seen a collapse that is not the card's.
    pub up_to: Option<u64>,
    /// 0 where nothing is claimed.
    pub confidence: f64,
    pub unsure: bool,
    /// Whether a limit (or "no limit up to") is claimed, and why not.
    #[serde(flatten)]
    pub claim: Claim,
    /// The step's device-time budget ended the sweep (seconds spent).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by_budget_s: Option<f64>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenAus {
    pub linear: Option<Limit>,
    pub random: Option<Limit>,
    /// The AU size the writes were counted in (`--erase-size`, or the
    /// erase block probe found).
    #[serde(default)]
    pub erase_size_bytes: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FatArea {
    /// AUs of `erase_size_bytes`.
    #[serde(default)]
    pub erase_size_bytes: u64,
    /// 0 for no area, and where none is claimed.
    pub aus: u64,
    pub bytes: u64,
    /// 0 where nothing is claimed.
    pub confidence: f64,
    pub unsure: bool,
    /// Whether an area (or "no area") is claimed, and why not.
    #[serde(flatten)]
    pub claim: Claim,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Capacity {
    pub verdict: Verdict,
    pub kind: Option<FakeKind>,
    pub announced_bytes: u64,
    pub usable_bytes: u64,
}

/// The `summary` of probe's run document: each verdict as the text
/// summary states it; a step that did not run is null.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub erase_block: Option<Size>,
    pub page: Option<Size>,
    pub open_aus: Option<OpenAus>,
    pub fat_area: Option<FatArea>,
    pub capacity: Option<Capacity>,
    /// The speed classes the card met here (measured, not certified):
    /// empty where those judged were all missed, null where none was
    /// judged (not a card, a short sample, no test that judges one).
    pub classes: Option<Vec<String>>,
}

/// Which side a combined verdict came from: the writes' value taken over
/// the reads' (or alone) is theirs; the same value from both is both.
fn from(reads: (Option<u64>, f64), writes: Option<(Option<u64>, f64)>, chosen: Option<u64>) -> From {
    match writes {
        Some((w, _)) if w.is_some() && w == chosen && reads.0 == chosen => From::Both,
        Some((w, _)) if w.is_some() && w == chosen => From::Writes,
        _ => From::Reads,
    }
}

fn size(reads: (Option<u64>, f64), writes: Option<(Option<u64>, f64)>, best: (Option<u64>, f64)) -> Size {
    Size {
        bytes: best.0,
        confidence: best.1,
        unsure: best.1 < CONFIDENT,
        from: from(reads, writes, best.0),
        claim: Claim::made(),
    }
}

/// A size the reads refused (align on a target that is not flash).
fn refused_size(claim: &Claim) -> Size {
    Size {
        bytes: None,
        confidence: 0.0,
        unsure: true,
        from: From::Reads,
        claim: claim.clone(),
    }
}

fn limit(s: &super::open_au::Sweep) -> Limit {
    let claimed = s.claim.claimed;
    Limit {
        count: s.max_open_aus,
        up_to: (claimed && s.max_open_aus.is_none()).then_some(s.tried_up_to),
        confidence: s.confidence,
        unsure: s.confidence < CONFIDENT,
        claim: s.claim.clone(),
        stopped_by_budget_s: s.stopped_by_budget_s,
    }
}

/// The summary of what `r` holds.
pub fn of(r: &Results) -> Summary {
    let align = r.align.get();
    let (erase_block, page) = match align {
        Some(a) if !a.claim.claimed => (Some(refused_size(&a.claim)), Some(refused_size(&a.claim))),
        Some(a) => {
            let reads = (a.erase_size_bytes, a.confidence);
            let writes = r.au.get().map(|w| (w.erase_size_bytes, w.confidence));
            let erase = size(reads, writes, best_erase(a, r.au.get()));
            let reads = (a.page_size_bytes, a.page_confidence);
            let writes = r.page.get().map(|w| (w.page_size_bytes, w.confidence));
            let page = size(reads, writes, best_page(a, r.page.get()));
            (Some(erase), Some(page))
        }
        _ => (None, None),
    };
    Summary {
        erase_block,
        page,
        open_aus: r.open_au.get().map(|o| OpenAus {
            linear: o.linear.as_ref().map(limit),
            random: o.random.as_ref().map(limit),
            erase_size_bytes: o.erase_size_bytes,
        }),
        fat_area: r.fat.get().map(|f| FatArea {
            erase_size_bytes: f.erase_size_bytes,
            aus: f.fat_area_aus,
            bytes: f.fat_area_aus * f.erase_size_bytes,
            confidence: f.confidence,
            unsure: f.confidence < CONFIDENT,
            claim: f.claim.clone(),
        }),
        capacity: r.capacity.get().map(|c| Capacity {
            verdict: c.verdict,
            kind: c.kind,
            announced_bytes: c.announced_bytes,
            usable_bytes: c.usable_bytes,
        }),
        classes: r
            .bench
            .get()
            .filter(|b| b.not_flash.is_none() && !b.classes.is_empty())
            .map(|b| classes::met(&b.classes)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_combined_size_says_where_it_came_from() {
        let four = Some(4u64 << 20);
        assert_eq!(from((four, 0.95), Some((four, 0.95)), four), From::Both);
        assert_eq!(from((None, 0.1), Some((four, 0.95)), four), From::Writes);
        assert_eq!(from((Some(8 << 20), 0.95), Some((four, 0.95)), four), From::Writes);
        assert_eq!(from((four, 0.95), Some((None, 0.1)), four), From::Reads);
        assert_eq!(from((four, 0.95), None, four), From::Reads);
    }
}
