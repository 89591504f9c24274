//! `page`: the flash page size from writes, for when align's reads cannot
//! show it (writing; probe runs it where it may write).
//!
//! align finds the page as the smallest boundary where a read costs more: a
//! page read, some 50 us, which a slow host's transfer and jitter bury. A
//! write that straddles a page boundary programs two pages instead of one,
//! hundreds of microseconds more, and a two-block write transfers little. So
//! for each candidate size S (powers of two from two logical blocks up),
//! two-block writes centred on odd multiples of S are paired with writes of
//! the same size ending there: the first straddles a boundary exactly when
//! the page divides S. The page is the smallest S from which every larger
//! candidate shows that step too.
//!
//! A page smaller than two blocks cannot be told apart this way (no write
//! of whole blocks lies inside one page); neither can a card that programs
//! whole erase blocks per write. Then no size is claimed.

mod command;
mod show;

pub use command::Args;
pub use show::Presenter;

use serde::{Deserialize, Serialize};

use super::claim::{self, Claim};
use super::{MeasureError, median, robust_sigma};
use crate::measure::registry::Settle;
use crate::safety::ranges::Range;
use crate::targets::{Target, TargetDescription};

/// Largest page looked for, and the first candidate past the pages of the
/// cards flashlab knows (SD and eMMC NAND pages run 2-64 KiB; the boundary
/// past the largest is needed to see that its step continues).
const LARGEST: u64 = 256 << 10;
/// Pairs per candidate before the first look, and at most, while unsure.
const FIRST_PAIRS: usize = 16;
const MOST_PAIRS: usize = 256;
/// A step is clear at this many standard errors of its median difference.
const CLEAR_Z: f64 = 4.0;
/// Smallest step taken for a page: a straddling write costs at least one
/// more page read (the read-modify-write of a partial page) or program, and
/// NAND reads a page in 25 us or more (tR in ONFI-era datasheets, e.g.
/// Micron MT29F SLC 25 us) and programs it in 200 us or more; below this no
/// page shows, and sampling stops looking.
const MIN_STEP_NS: f64 = 10_000.0;
/// A step counts only at this share of the largest step seen: a page
/// boundary costs the same program whatever the candidate above it.
const SAME_STEP: f64 = 0.5;

#[derive(Debug, Clone, Copy)]
pub struct Options {
    /// The AU the writes go to (its first byte).
    pub at: u64,
    pub erase: u64,
    pub block: u64,
}

/// One candidate size: the straddling writes' extra cost over the ones
/// beside them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Candidate {
    pub size_bytes: u64,
    pub pairs: usize,
    pub step_ns: f64,
    /// Standard error of `step_ns` (robust spread of the differences).
    pub se_ns: f64,
    /// A clear step at this size, of the size the page's steps have.
    pub step: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageResult {
    /// Why this target cannot show flash behaviour; then no page is claimed.
    #[serde(default)]
    pub not_flash: Option<String>,
    /// Null where none is claimed.
    pub page_size_bytes: Option<u64>,
    /// 0 where nothing is claimed.
    pub confidence: f64,
    /// Whether a page is claimed, and why not: the target is not flash,
    /// no size stepped, or only the smallest did (a page of two blocks or
    /// less, or a smaller one, looks the same there).
    #[serde(flatten)]
    pub claim: Claim,
    pub write_bytes: u64,
    pub offset_bytes: u64,
    pub candidates: Vec<Candidate>,
    /// The step's device-time budget ended the sampling after this many
    /// seconds, some candidates still unclear: unsure.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by_budget_s: Option<f64>,
}

/// Candidate sizes: two blocks (at least 1 KiB) doubling up to [`LARGEST`]
/// or a quarter of the AU, whichever is smaller.
fn candidates(o: &Options) -> Vec<u64> {
    let first = (2 * o.block).max(1024);
    std::iter::successors(Some(first), |s| Some(s * 2))
        .take_while(|s| *s <= LARGEST.min(o.erase / 4))
        .collect()
}

/// The `k`th pair's boundary for candidate `s`: odd multiples of `s`,
/// spread over the AU and round again.
fn boundary(o: &Options, s: u64, k: usize) -> u64 {
    let odd = (o.erase / s) / 2;
    o.at + (2 * (k as u64 % odd.max(1)) + 1) * s
}

pub fn plan(o: &Options, d: &TargetDescription) -> Result<Vec<Range>, MeasureError> {
    super::check_plan(o.erase, 2 * o.block, 1, 1)?;
    super::check_blocks(o.erase, o.block, d)?;
    if candidates(o).len() < 2 {
        return Err(MeasureError::Bad {
            why: format!(
                "a region of {} leaves no two page sizes to compare (the largest is a quarter of it)",
                crate::units::Iec(o.erase)
            ),
            fix: "give --erase-size of at least 8 times two blocks (for example 1M), or leave it out".into(),
        });
    }
    if o.at + o.erase > d.size_bytes || !o.at.is_multiple_of(o.erase) {
        return Err(MeasureError::DoesNotFit {
            what: "page".into(),
            from: o.at,
            need: o.erase,
            size: d.size_bytes,
            fix: "use a smaller --erase-size".into(),
        });
    }
    // Every write lies in [boundary - 2 blocks, boundary + 1 block): those
    // neighbourhoods are declared, not the whole AU, whose originals the
    // journal would otherwise read first (128 MiB over a slow host took a
    // minute).
    let sizes = candidates(o);
    Ok(sizes
        .iter()
        .flat_map(|&s| (0..MOST_PAIRS.min(((o.erase / s) / 2).max(1) as usize)).map(move |k| boundary(o, s, k)))
        .map(|x| Range {
            offset: x - 2 * o.block,
            len: 3 * o.block,
        })
        .collect())
}

pub struct Page {
    pub options: Options,
    pub medium: super::Medium,
}

impl super::Test for Page {
    const KEY: &'static str = "page";
    type Output = PageResult;
    fn plan(&self, d: &TargetDescription) -> Result<Vec<Range>, MeasureError> {
        plan(&self.options, d)
    }
    fn run(&self, cx: &mut super::Cx<'_>) -> Result<PageResult, MeasureError> {
        let mut r = run(cx.target, self.options, cx.progress, cx.budget_ns)?;
        r.not_flash = self.medium.not_flash.clone();
        r.settle();
        Ok(r)
    }
    fn record(out: &PageResult, results: &mut super::Results) {
        results.page.set(out.clone());
    }
}

impl Settle for PageResult {
    /// Claim no page on a target that is not flash, nor where no size was
    /// told (see [`PageResult::claim`]), with no confidence: done as the
    /// test ends and on every document read back.
    fn settle(&mut self) {
        if !self.claim.claimed {
            return;
        }
        let why = match (&self.not_flash, self.page_size_bytes, self.stopped_by_budget_s) {
            (Some(why), ..) => claim::not_flash(why),
            (None, Some(_), _) => return,
            (None, None, Some(secs)) => claim::out_of_budget(secs, "no size clear yet"),
            (None, None, None) if self.candidates.first().is_some_and(|c| c.step) => {
                "the smallest size already steps: a page of two blocks or less, or a smaller one, looks the same".into()
            }
            (None, None, None) => "no size shows a second page programmed".into(),
        };
        self.page_size_bytes = None;
        self.confidence = 0.0;
        self.claim = Claim::refused(why);
    }
}

/// Where align saw no erase block, the page test writes in a region of
/// this size (a typical SD AU: the SD Physical Layer spec's AU_SIZE for
/// cards of 8 to 32 GB) at the end of the card.
pub const DEFAULT_REGION: u64 = 4 << 20;

impl Page {
    /// The page test in the last whole AU (`erase` bytes) of a target like
    /// `d`: away from the FAT area and from every AU open-au and fat write
    /// (open-au's last AU has a gap after it). Its writes leave that AU
    /// open for random writes on the card, and probe's next steps run on
    /// the same card: at the middle, on a card of 100 AUs, it was one of
    /// open-au's, which then counted one AU too many in order at
    /// confidence 0.95 (the property tests' hard family, 8 cards in 60).
    pub fn at_end(d: &TargetDescription, erase: u64, medium: super::Medium) -> Page {
        Page {
            options: Options {
                at: (d.size_bytes / erase.max(1)).saturating_sub(1) * erase,
                erase,
                block: u64::from(d.logical_block_size),
            },
            medium,
        }
    }
}

/// A candidate's step from its pairs (straddle minus beside, in ns).
fn summarise(size: u64, diffs: &[f64]) -> Candidate {
    let n = diffs.len().max(1) as f64;
    let se = 1.2533 * robust_sigma(diffs) / n.sqrt();
    Candidate {
        size_bytes: size,
        pairs: diffs.len(),
        step_ns: median(diffs),
        se_ns: se,
        step: false,
    }
}

/// The sampling, until every candidate is clear, or [`MOST_PAIRS`] pairs,
/// or `budget_ns` of device time (then the answer is unsure).
pub fn run(
    t: &mut dyn Target,
    o: Options,
    progress: &dyn super::Progress,
    budget_ns: u64,
) -> Result<PageResult, MeasureError> {
    let w = 2 * o.block;
    let started = t.device_time_ns();
    let sizes = candidates(&o);
    let mut diffs: Vec<Vec<f64>> = vec![Vec::new(); sizes.len()];
    // Interleaved rounds over all candidates, so drift and background work
    // fall on every candidate alike; candidates still unclear get more.
    let mut round = FIRST_PAIRS;
    loop {
        for (i, &s) in sizes.iter().enumerate() {
            let have = diffs[i].len();
            if have >= round {
                continue;
            }
            // Each written with the bytes it holds (`rewrite`): the
            // timing is the same, and nothing is written back.
            let offsets: Vec<u64> = (have..round)
                .flat_map(|k| {
                    let x = boundary(&o, s, k);
                    // The straddling write and the one ending at the
                    // boundary, in alternating order.
                    let (straddle, beside) = (x - o.block, x - w);
                    if k % 2 == 0 {
                        [straddle, beside]
                    } else {
                        [beside, straddle]
                    }
                })
                .collect();
            let done = super::rewrite(t, &offsets, w)?;
            for (j, pair) in done.chunks(2).enumerate() {
                let k = have + j;
                let (a, b) = (pair[0], pair[1]);
                diffs[i].push(if k.is_multiple_of(2) { a - b } else { b - a });
            }
        }
        let cands: Vec<Candidate> = sizes.iter().zip(&diffs).map(|(&s, d)| summarise(s, d)).collect();
        // Clear: a step, or clearly less than half the largest step and
        // than any page program (no page boundary there).
        let biggest = cands.iter().map(|c| c.step_ns).fold(0.0, f64::max);
        let unclear = cands.iter().any(|c| {
            let step = c.step_ns > CLEAR_Z * c.se_ns && c.step_ns >= MIN_STEP_NS;
            let none = c.step_ns + CLEAR_Z * c.se_ns < (SAME_STEP * biggest).max(MIN_STEP_NS);
            !step && !none && c.pairs < MOST_PAIRS
        });
        if !unclear || round >= MOST_PAIRS {
            return Ok(decide(o, w, cands));
        }
        let spent = t.device_time_ns().saturating_sub(started);
        if spent >= budget_ns {
            let mut r = decide(o, w, cands);
            r.confidence = r.confidence.min(0.3);
            r.stopped_by_budget_s = Some(spent as f64 / 1e9);
            return Ok(r);
        }
        // It usually stops sooner than the most it may take: on an
        // emulated demo card the bar's ETA at its rate so far had said
        // 39 s at 12% of a step of 6 s.
        progress.timed(spent, super::doubling_left(spent, round, MOST_PAIRS));
        round = (round * 2).min(MOST_PAIRS);
    }
}

/// The page: the smallest candidate from which every larger one shows a
/// clear step of the page's size, with none below.
fn decide(o: Options, w: u64, mut cands: Vec<Candidate>) -> PageResult {
    let biggest = cands.iter().map(|c| c.step_ns).fold(0.0, f64::max);
    for c in &mut cands {
        c.step = c.step_ns > CLEAR_Z * c.se_ns && c.step_ns >= (SAME_STEP * biggest).max(MIN_STEP_NS);
    }
    // Steps from some index to the end, none before it.
    let first = cands.iter().position(|c| c.step);
    let tail_all = first.is_some_and(|f| cands[f..].iter().all(|c| c.step));
    // A clear absence below the first step: those candidates are near zero.
    let below_clear = first.is_some_and(|f| {
        cands[..f]
            .iter()
            .all(|c| c.step_ns.abs() < SAME_STEP * biggest && c.step_ns <= CLEAR_Z * c.se_ns)
    });
    let (page, confidence) = match first {
        // A step at the smallest candidate may be a smaller page's: the
        // page is at most that size, not known.
        Some(0) => (None, 0.3),
        Some(f) if tail_all && below_clear && cands.len() - f >= 2 => (Some(cands[f].size_bytes), 0.95),
        Some(f) if tail_all && below_clear => (Some(cands[f].size_bytes), 0.5),
        Some(f) => (Some(cands[f].size_bytes), 0.3),
        None => (None, 0.3),
    };
    PageResult {
        not_flash: None,
        page_size_bytes: page,
        confidence,
        claim: Claim::made(),
        write_bytes: w,
        offset_bytes: o.at,
        candidates: cands,
        stopped_by_budget_s: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;
    use crate::sim::profiles::build;

    fn page_of(spec: &[(&str, &str)]) -> PageResult {
        page_on("demo", spec)
    }

    fn page_on(profile: &str, spec: &[(&str, &str)]) -> PageResult {
        let mut p = build(profile).unwrap();
        for (k, v) in spec {
            p.set(k, v).unwrap();
        }
        let o = Options {
            at: 8 * p.au_size,
            erase: p.au_size,
            block: u64::from(p.sector_size),
        };
        let page = Page {
            options: o,
            medium: Default::default(),
        };
        crate::measure::run_alone(&page, &mut SimTarget::new("demo", p)).unwrap()
    }

    #[test]
    fn straddling_writes_find_the_page_on_a_slow_noisy_host() {
        for page in ["4096", "16384", "65536"] {
            let r = page_of(&[
                ("page_size", page),
                ("host", "at91-mci"),
                ("max_blocks_per_cmd", "64"),
                ("jitter", "0.25"),
                ("outlier_fraction", "0.02"),
                ("outlier_factor", "30"),
            ]);
            assert_eq!(
                r.page_size_bytes,
                Some(page.parse().unwrap()),
                "{page}: {:#?}",
                r.candidates
            );
            assert_eq!(r.confidence, 0.95);
        }
    }

    /// Behind a host of single-sector commands (cf-simpletech-oem: 2 KiB
    /// pages, 512-byte sectors, a 1.8 ms partial-page merge) each half of
    /// a two-block write is a command of its own, and where they fall in
    /// the page costs differently: a page of four blocks steps at two
    /// blocks too, and a step there tells nothing. Claiming two blocks
    /// there took probe's open-au on that card to a confident "at least
    /// 32" where it keeps 1.
    #[test]
    fn a_step_at_two_blocks_is_no_page_of_two_blocks() {
        let r = page_on("cf-simpletech-oem", &[]);
        assert!(r.candidates[0].step, "{:#?}", r.candidates);
        assert_ne!(r.page_size_bytes, Some(1024), "{:#?}", r.candidates);
    }

    #[test]
    fn a_page_no_larger_than_two_blocks_is_not_claimed() {
        let r = page_of(&[("page_size", "4096"), ("sector_size", "4096")]);
        assert_eq!(r.page_size_bytes, None, "{:#?}", r.candidates);
        assert_eq!(r.confidence, 0.0, "nothing claimed, nothing to be sure of");
        assert!(!r.claim.claimed);
        assert_eq!(r.claim.why(), Some("no size shows a second page programmed"));
    }
}
