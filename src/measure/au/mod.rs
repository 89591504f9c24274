//! `au`: the erase size (allocation unit) from writes, for when align's
//! reads cannot show it (writing; probe runs it where it may write).
//!
//! align sees an AU boundary as a read that costs a little more where it
//! crosses one, tens of microseconds that a slow host buries. Writes see the
//! AU far more plainly: a card keeps r AUs open for random-order writes, and
//! two regions in one AU share one of those slots. So, with r found by the
//! slot probe (`measure::slot_writer`) on regions far apart, r - 1 of them are
//! written in random order together with two regions at A and A + S: while S
//! is less than the AU both lie in one AU and the set fits; from S = AU on
//! they are two AUs, one too many, and half the writes merge. The AU is the
//! smallest candidate S (2^n and 3 x 2^n) that overflows.

mod command;
mod show;

pub use command::Args;
pub use show::Presenter;

use serde::{Deserialize, Serialize};

use super::MeasureError;
use super::claim::{self, Claim};
use super::slot_writer::{MAX_SLOT_AUS, SlotWriter};
use crate::measure::registry::Settle;
use crate::safety::ranges::Range;
use crate::targets::{Target, TargetDescription};

/// Chunks written in each region, downwards (an even count: the round
/// starts again between visits, never inside one).
const POSITIONS: u64 = 16;
/// Smallest candidate: two regions' windows must not overlap.
const SMALLEST: u64 = 128 << 10;
/// Largest stride between the search regions, and so the largest AU found:
/// SD AUs stop at 64 MiB (SD spec 4.10.2, AU_SIZE), eMMC erase groups of
/// high-capacity parts run to a few times that.
const LARGEST: u64 = 256 << 20;
/// The regions and the pair sit within this many strides of the card.
const STRIDES: u64 = 40;

#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub size: u64,
    pub block: u64,
    /// The random-write limit if known (fat's or open-au's), tried first.
    pub random_aus: Option<u64>,
}

/// One candidate size and what the pair at that distance did.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub size_bytes: u64,
    pub overflows: bool,
    /// Share of the set's writes that merged.
    pub merging: f64,
    /// Decided by the rule, not a guess at the end of the sampling.
    pub clear: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuResult {
    /// Why this target cannot show flash behaviour; then no size is claimed.
    #[serde(default)]
    pub not_flash: Option<String>,
    /// Null where none is claimed.
    pub erase_size_bytes: Option<u64>,
    /// 0 where nothing is claimed.
    pub confidence: f64,
    /// Whether an erase block is claimed, and why not: the target is not
    /// flash, or the writes decided none (the notes say where they stopped).
    #[serde(flatten)]
    pub claim: Claim,
    /// The random-write limit the test worked with.
    pub random_aus: Option<u64>,
    pub stride_bytes: u64,
    pub candidates: Vec<Candidate>,
    pub notes: Vec<String>,
}

/// The write size: 4 KiB or one block where blocks are larger.
fn chunk(o: &Options) -> u64 {
    (4u64 << 10).max(o.block)
}

/// Distance between the search regions: a power of two up to [`LARGEST`],
/// with [`STRIDES`] of them on the card. Zero when the card is too small.
fn stride(o: &Options) -> u64 {
    let s = (o.size / STRIDES).min(LARGEST);
    if s < SMALLEST * 2 {
        0
    } else {
        1 << (63 - s.leading_zeros())
    }
}

/// The search regions: strides 1 to 33.
fn regions(o: &Options) -> Vec<u64> {
    (1..=MAX_SLOT_AUS + 1).map(|k| k * stride(o)).collect()
}

/// The pair's first region: a multiple of 3 strides, so of every candidate.
fn pair_base(o: &Options) -> u64 {
    36 * stride(o)
}

/// Candidates from [`SMALLEST`] to the stride: 2^n and 3 x 2^n, ascending.
fn candidates(o: &Options) -> Vec<u64> {
    let s = stride(o);
    let mut c: Vec<u64> = std::iter::successors(Some(SMALLEST), |x| Some(x * 2))
        .take_while(|x| *x <= s)
        .flat_map(|x| [x, 3 * x / 2])
        .filter(|x| *x >= SMALLEST && *x <= s)
        .collect();
    c.sort_unstable();
    c.dedup();
    c
}

fn place(o: &Options, region: u64, k: u64) -> u64 {
    region + (POSITIONS - 1 - k % POSITIONS) * chunk(o)
}

fn window(o: &Options, region: u64) -> Range {
    Range {
        offset: region,
        len: POSITIONS * chunk(o),
    }
}

pub fn plan(o: &Options, d: &TargetDescription) -> Result<Vec<Range>, MeasureError> {
    if stride(o) == 0 || !chunk(o).is_multiple_of(u64::from(d.logical_block_size.max(1))) {
        return Err(MeasureError::DoesNotFit {
            what: "au".into(),
            from: 0,
            need: STRIDES * SMALLEST * 2,
            size: o.size,
            fix: "the target is too small for au's regions; align (reads only) is what there is".into(),
        });
    }
    let base = pair_base(o);
    Ok(regions(o)
        .into_iter()
        .chain([base])
        .chain(candidates(o).into_iter().map(|s| base + s))
        .map(|r| window(o, r))
        .collect())
}

pub struct Au {
    pub options: Options,
    pub medium: super::Medium,
}

impl Au {
    /// The erase-size test by writes, over the whole of a target like `d`.
    pub fn over(d: &TargetDescription, medium: super::Medium) -> Au {
        Au {
            options: Options {
                size: d.size_bytes,
                block: u64::from(d.logical_block_size),
                random_aus: None,
            },
            medium,
        }
    }
}

impl super::Test for Au {
    const KEY: &'static str = "au";
    type Output = AuResult;
    fn plan(&self, d: &TargetDescription) -> Result<Vec<Range>, MeasureError> {
        plan(&self.options, d)
    }
    fn run(&self, cx: &mut super::Cx<'_>) -> Result<AuResult, MeasureError> {
        let mut r = run(cx.target, self.options, cx.progress, cx.budget_ns)?;
        r.not_flash = self.medium.not_flash.clone();
        r.settle();
        Ok(r)
    }
    fn record(out: &AuResult, results: &mut super::Results) {
        results.au.set(out.clone());
    }
}

impl Settle for AuResult {
    /// Claim no erase block on a target that is not flash, nor where the
    /// writes decided none (stopped by the budget, no random-write limit to
    /// work with, a pair that never overflowed), with no confidence: done
    /// as the test ends and on every document read back.
    fn settle(&mut self) {
        if !self.claim.claimed {
            return;
        }
        let why = match (&self.not_flash, self.erase_size_bytes) {
            (Some(why), _) => claim::not_flash(why),
            (None, None) => self
                .notes
                .last()
                .cloned()
                .unwrap_or_else(|| "no distance tried overflowed a random-write slot".into()),
            (None, Some(_)) => return,
        };
        self.erase_size_bytes = None;
        self.confidence = 0.0;
        self.claim = Claim::refused(why);
    }
}

/// The search within `budget_ns` of device time.
pub fn run(
    t: &mut dyn Target,
    o: Options,
    progress: &dyn super::Progress,
    budget_ns: u64,
) -> Result<AuResult, MeasureError> {
    let regions = regions(&o);
    let base = pair_base(&o);
    let place = |region: u64, k: u64| place(&o, region, k);
    let started = t.device_time_ns();
    let mut w = SlotWriter::new(t, &place, chunk(&o), regions[0])?
        .with_budget(started, budget_ns)
        .cautious();
    let mut out = AuResult {
        not_flash: None,
        erase_size_bytes: None,
        confidence: 0.3,
        claim: Claim::made(),
        random_aus: None,
        stride_bytes: stride(&o),
        candidates: Vec::new(),
        notes: Vec::new(),
    };
    let r = match w.limit(t, &regions, o.random_aus)? {
        Ok(r) => r,
        Err(stop) => {
            out.notes.push(w.explain(&stop));
            return Ok(out);
        }
    };
    out.random_aus = Some(r as u64);
    let limit_clear = [r, r + 1].iter().all(|n| w.seen.get(n).is_some_and(|d| d.clear));
    let others = &regions[..r - 1];
    let pair = |s: u64| others.iter().copied().chain([base, base + s]).collect::<Vec<u64>>();
    let cands = candidates(&o);
    let mut tried: Vec<Option<Candidate>> = vec![None; cands.len()];
    let mut decide = |w: &mut SlotWriter, t: &mut dyn Target, i: usize| -> Result<Option<bool>, MeasureError> {
        let Some(d) = w.decide(t, &pair(cands[i]))? else {
            return Ok(None);
        };
        tried[i] = Some(Candidate {
            size_bytes: cands[i],
            overflows: d.overflows,
            merging: d.share.slow,
            clear: d.clear,
        });
        Ok(Some(d.overflows))
    };
    // The largest candidate must overflow (the pair a stride apart is two
    // AUs); then bisection for the smallest that does.
    let last = cands.len() - 1;
    match decide(&mut w, t, last)? {
        None => {
            out.notes.push(w.why_stopped(r + 1));
            return Ok(out);
        }
        Some(false) => {
            out.notes.push(format!(
                "two regions {} apart still shared a random-write slot: the AU is larger",
                crate::units::Iec(cands[last])
            ));
            out.candidates = tried.into_iter().flatten().collect();
            return Ok(out);
        }
        Some(true) => {}
    }
    let (mut lo, mut hi) = (None::<usize>, last);
    while hi > lo.map_or(0, |l| l + 1) {
        // Progress: how far the bisection has closed in on the AU.
        progress.advance(
            (cands.len() - (hi - lo.map_or(0, |l| l + 1))) as u64,
            cands.len() as u64,
        );
        let m = lo.map_or(0, |l| l + 1) + (hi - lo.map_or(0, |l| l + 1)) / 2;
        match decide(&mut w, t, m)? {
            None => {
                out.notes.push(w.why_stopped(r + 1));
                return Ok(out);
            }
            Some(true) => hi = m,
            Some(false) => lo = Some(m),
        }
    }
    // Confirmation: the boundary once more on both sides, each on its own.
    let mut confirmed = true;
    for (i, want) in [(lo, false), (Some(hi), true)] {
        if let Some(i) = i {
            match w.decide(t, &pair(cands[i]))? {
                Some(d) => confirmed &= d.overflows == want,
                None => confirmed = false,
            }
        }
    }
    let clear = limit_clear && tried.iter().flatten().all(|c| c.clear);
    out.candidates = tried.into_iter().flatten().collect();
    out.erase_size_bytes = Some(cands[hi]);
    out.confidence = match (lo, confirmed, clear) {
        // The smallest candidate already overflowed: the AU is that or less.
        (None, _, _) => 0.3,
        (_, false, _) => 0.3,
        (_, true, false) => 0.5,
        (_, true, true) => 0.95,
    };
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;
    use crate::sim::profiles::build;

    fn au_of(spec: &[(&str, &str)]) -> AuResult {
        let mut p = build("demo").unwrap();
        for (k, v) in spec {
            p.set(k, v).unwrap();
        }
        let o = Options {
            size: p.capacity,
            block: u64::from(p.sector_size),
            random_aus: None,
        };
        let au = Au {
            options: o,
            medium: Default::default(),
        };
        crate::measure::run_alone(&au, &mut SimTarget::new("demo", p)).unwrap()
    }

    #[test]
    fn slot_sharing_finds_the_au_where_reads_cannot() {
        for (au, cap) in [("1M", "2G"), ("3M", "4G"), ("4M", "8G"), ("12M", "8G")] {
            let r = au_of(&[
                ("au_size", au),
                ("capacity", cap),
                ("page_size", "16K"),
                ("open_aus_random", "4"),
                ("host", "at91-mci"),
                ("max_blocks_per_cmd", "64"),
                ("jitter", "0.25"),
                ("outlier_fraction", "0.02"),
                ("outlier_factor", "30"),
            ]);
            let want = crate::units::parse_size(au).unwrap();
            assert_eq!(
                r.erase_size_bytes,
                Some(want),
                "{au}: {:#?} {:?}",
                r.candidates,
                r.notes
            );
            assert_eq!(r.confidence, 0.95, "{au}");
            assert_eq!(r.random_aus, Some(4), "{au}: the card keeps 4 random-write AUs");
        }
    }
}
