//! The fit that reads align's rows: every (page, erase block) hypothesis
//! scored against the median diffs, and the posterior of the best. Also
//! `import flashbench`'s reading of printed rows: one rule for both.

use super::MAX_CANDIDATE;

/// Prior against "a page step but no erase-block step", in score units (-2 ln
/// odds: 1 to 20). Every card has an erase block and its crossing stall is the
/// step flashbench -a is known for, while an invisible page step is ordinary
/// (pages of half a read block or less, page reads hidden behind the
/// transfer): so a lone step is read as the erase block. "No step at all"
/// keeps no penalty, so flat rows (a RAM disk, an SSD) still say so.
const LONE_PAGE_PENALTY: f64 = 6.0;
/// A step smaller than this (ns) is not a flash boundary, however steady: a
/// crossing costs at least a NAND page read (tens of microseconds: 25.9 us on
/// the HS400 eMMC of Wang's MMC software queue series, 686 us on the Kingston of Bradford's Flashbenching), while a loop
/// device shows 0.1-0.3 us steps at 4 KiB and 1 MiB from its own request
/// splitting.
const MIN_STEP_NS: f64 = 2_000.0;
/// Largest page the fit considers. NAND pages are a few KiB to tens of
/// KiB (the experts' readings in tests/fixtures/flashbench/README.md: 8
/// KiB read two at a time; the simulator's pages: 4-64 KiB), a few times
/// that where planes or dies are read together. Without a bound, a 2 MiB
/// AU's rows could be split into a "page" at 2 MiB and an "erase block" at
/// 6 MiB whenever the 3 x 2^n rows happened to read a few µs higher (one of
/// three imported -a runs of a generated card did, at confidence 0.9+).
pub(super) const MAX_PAGE: u64 = 1 << 20;
/// The smallest crossing cost worth looking for. A NAND page read takes
/// 25.9 us on the HS400 eMMC of Wang's MMC software queue series (the fastest part in docs/SOURCES.md), but a
/// host streaming the first page while the card loads the next hides most
/// of it: the sub-page rows of Bradford's Kingston show 11.8-19 us and the
/// simulator's slow hosts a few. "No step" is only as sure as the rows could
/// have shown a step this size: when the noise would hide it, "none" is a
/// guess and its confidence says so.
const SMALLEST_FLASH_STEP_NS: f64 = 5_000.0;
/// The most confidence "no step visible" may carry on something that may be
/// flash: every card has pages and erase blocks, so "none" is right only in
/// the sense that the reads do not show them.
const NONE_CAP: f64 = 0.2;

/// The posterior as a probability of being right. The fit's posterior is
/// honest when it is near certain, but below 0.9 it overstates: on generated
/// cards (examples/calibration.rs, seeds 1-4, 7, 11: jitter to 25%, outliers,
/// slow hosts) a size given at 0.5-0.9 was right about a third of the time.
/// The model comparison assumes the rows' errors are independent and normal,
/// which jitter and the host's own timing are not.
fn calibrated(p: f64) -> f64 {
    if p >= 0.9 { p } else { p * 0.5 }
}

/// (page, erase, score, fitted levels).
type Hypothesis = (Option<u64>, Option<u64>, f64, Vec<f64>);

/// One boundary's reading for the fit: (boundary, diff, its standard
/// error), in ns.
pub type Estimate = (u64, f64, f64);

/// The fit's answer: sizes, their calibrated confidences, the words for
/// them, and the fitted level (ns) of rows below the page, of page
/// boundaries and of erase-block boundaries.
pub struct Verdict {
    pub erase: Option<u64>,
    pub page: Option<u64>,
    pub erase_p: f64,
    pub page_p: f64,
    pub evidence: Vec<String>,
    pub levels: [f64; 3],
}

/// Which level a boundary `a` sits on under hypothesis (page, erase): 2 on
/// an erase-block boundary, 1 on a page boundary, else 0.
pub fn level_of(page: Option<u64>, erase: Option<u64>, a: u64) -> usize {
    if erase.is_some_and(|e| a.is_multiple_of(e)) {
        2
    } else if page.is_some_and(|p| a.is_multiple_of(p)) {
        1
    } else {
        0
    }
}

/// Fit every hypothesis to the median diffs and weigh them.
///
/// Hypothesis (P, E): a boundary `a` is an AU boundary when E divides it (for
/// odd multiples of `a`, E divides at most a third of them otherwise, which a
/// median ignores), a page boundary when P divides it. Levels: zero, page,
/// page + AU; each level's value is fitted (weighted mean). P = None means no
/// page step is visible below E. Score: chi-square plus a BIC penalty per
/// level; posteriors from exp(-score / 2).
/// Also `import flashbench`'s reading of printed rows, with standard
/// errors from the rows' own scatter: one rule for both.
pub fn fit(est: &[Estimate], block: u64) -> Verdict {
    fit_below(est, block, MAX_CANDIDATE)
}

/// [`fit`] with no erase block above `largest` (an imported table's top
/// row alone is no level).
pub fn fit_below(est: &[Estimate], block: u64, largest: u64) -> Verdict {
    fit_with(est, block, largest, true)
}

/// [`fit_below`]; with `rescale`, once more with every standard error
/// widened by the best fit's overdispersion where its rows scatter more
/// about their levels than their standard errors say (chi-square per
/// degree of freedom above 1, the quasi-likelihood correction). A noisy
/// host's rows are not independent and normal: on the generator's hard
/// family, rows at 4, 8, 12 and 24 MiB of a 4 MiB-AU card read 48, 29, 71
/// and 35 µs with standard errors of 10, and a step to 66 µs at 16 MiB
/// came out as a 16 MiB erase block at confidence 1.00.
fn fit_with(est: &[Estimate], block: u64, largest: u64, rescale: bool) -> Verdict {
    let powers: Vec<u64> = est
        .iter()
        .map(|e| e.0)
        .filter(|a| a.is_power_of_two() && *a >= block)
        .collect();
    let hyps = hypotheses(est, &powers, largest);
    let best = hyps
        .iter()
        .min_by(|a, b| a.2.total_cmp(&b.2))
        .cloned()
        .unwrap_or((None, None, 0.0, vec![0.0; 3]));
    if rescale
        && best.1.is_some()
        && let Some(phi) = overdispersion(est, &best)
    {
        let wider: Vec<Estimate> = est.iter().map(|&(a, m, se)| (a, m, se * phi.sqrt())).collect();
        return fit_with(&wider, block, largest, false);
    }
    let (erase_p, page_p) = confidences(est, &hyps, &best, &powers);
    let (p, e, _, level) = best;
    Verdict {
        erase: e,
        page: p,
        erase_p: calibrated(erase_p),
        page_p: calibrated(page_p),
        evidence: evidence(p, e, &level, block),
        levels: [level[0], level[1], level[2]],
    }
}

/// A hypothesis's score (BIC-like: chi-square plus a term per level
/// used), each level's weighted mean, and its standard error (infinite
/// where no row has it).
fn score(est: &[Estimate], p: Option<u64>, e: Option<u64>) -> (f64, Vec<f64>, Vec<f64>) {
    let n = est.len() as f64;
    let mut sum = [0.0; 3];
    let mut w = [0.0; 3];
    for &(a, m, se) in est {
        let l = level_of(p, e, a);
        sum[l] += m / (se * se);
        w[l] += 1.0 / (se * se);
    }
    let level: Vec<f64> = (0..3).map(|l| if w[l] > 0.0 { sum[l] / w[l] } else { 0.0 }).collect();
    let chi: f64 = est
        .iter()
        .map(|&(a, m, se)| ((m - level[level_of(p, e, a)]) / se).powi(2))
        .sum();
    let used = w.iter().filter(|&&x| x > 0.0).count() as f64;
    let level_se: Vec<f64> = w
        .iter()
        .map(|&w| if w > 0.0 { w.sqrt().recip() } else { f64::INFINITY })
        .collect();
    (chi + used * n.ln(), level, level_se)
}

/// Every (page, erase block) the rows allow, scored: pages among the
/// power-of-two rows, erase blocks among the rows up to `largest`, each
/// kept only where its levels rise.
fn hypotheses(est: &[Estimate], powers: &[u64], largest: u64) -> Vec<Hypothesis> {
    let mut hyps: Vec<Hypothesis> = Vec::new();
    let mut erase_opts: Vec<Option<u64>> = vec![None];
    // No erase block above the largest candidate (rows of flashbench's, up
    // to a seventh of the device, still take part as multiples).
    erase_opts.extend(
        est.iter()
            .map(|e| e.0)
            .filter(|&a| a <= largest.min(MAX_CANDIDATE))
            .map(Some),
    );
    for &e in &erase_opts {
        let mut page_opts: Vec<Option<u64>> = vec![None];
        page_opts.extend(
            powers
                .iter()
                .filter(|&&p| p <= MAX_PAGE && e.is_none_or(|e| p < e && e.is_multiple_of(p)))
                .map(|&p| Some(p)),
        );
        for p in page_opts {
            let (mut s, level, se) = score(est, p, e);
            if p.is_some() && e.is_none() {
                s += LONE_PAGE_PENALTY;
            }
            // A step must go up, by more than twice its standard error and
            // more than MIN_STEP_NS, with rows on both sides: levels that
            // fall or merely tie are not a page or AU boundary (a tie would
            // let every larger "erase block" claim the same rows).
            let step = |hi: usize, lo: usize| level[hi] - level[lo] > (2.0 * se[hi].hypot(se[lo])).max(MIN_STEP_NS);
            let below = if p.is_some() && se[1].is_finite() { 1 } else { 0 };
            let rises = (p.is_none() || step(1, 0)) && (e.is_none() || step(2, below));
            if rises {
                hyps.push((p, e, s, level));
            }
        }
    }
    hyps
}

/// How much more the rows scatter about the best fit's levels than their
/// standard errors say (chi-square per degree of freedom), where above 1.
fn overdispersion(est: &[Estimate], best: &Hypothesis) -> Option<f64> {
    let (p, e, _, level) = best;
    let chi: f64 = est
        .iter()
        .map(|&(a, m, se)| ((m - level[level_of(*p, *e, a)]) / se).powi(2))
        .sum();
    let used = 1.0 + f64::from(u8::from(p.is_some())) + f64::from(u8::from(e.is_some()));
    let phi = chi / (est.len() as f64 - used).max(1.0);
    (phi > 1.0).then_some(phi)
}

/// The best fit's erase block and page confidences: each hypothesis
/// weighted by its score, and "none" capped by how large a step the rows
/// could have shown.
fn confidences(est: &[Estimate], hyps: &[Hypothesis], best: &Hypothesis, powers: &[u64]) -> (f64, f64) {
    let weight = |s: f64| (-(s - best.2) / 2.0).exp();
    let total: f64 = hyps.iter().map(|h| weight(h.2)).sum();
    let erase_p = hyps.iter().filter(|h| h.1 == best.1).map(|h| weight(h.2)).sum::<f64>() / total;
    let page_p = hyps.iter().filter(|h| h.0 == best.0).map(|h| weight(h.2)).sum::<f64>() / total;
    let (p, e) = (best.0, best.1);
    // What the rows could have shown: a step between two groups of rows is
    // seen at about three standard errors of their difference. The smallest
    // such step among the groups a hypothesis would split decides how sure
    // "no step" can be.
    let pooled_se = |keep: &dyn Fn(u64) -> bool| -> f64 {
        let w: f64 = est.iter().filter(|r| keep(r.0)).map(|r| 1.0 / (r.2 * r.2)).sum();
        if w > 0.0 { w.sqrt().recip() } else { f64::INFINITY }
    };
    let detectable = |split: u64| -> f64 { 3.0 * pooled_se(&|a| a >= split).hypot(pooled_se(&|a| a < split)) };
    let sure_of_none = |candidates: &[u64]| -> f64 {
        let best_power = candidates.iter().map(|&c| detectable(c)).fold(f64::INFINITY, f64::min);
        (SMALLEST_FLASH_STEP_NS / best_power).min(1.0)
    };
    // Every flash card has pages and erase blocks: "none" can only mean none
    // visible, and is capped accordingly (on generated cards a hidden page
    // is the usual reason, on slow hosts whose transfers cover the page
    // read).
    let erase_p = if e.is_none() {
        (erase_p * sure_of_none(&est.iter().map(|r| r.0).collect::<Vec<_>>())).min(NONE_CAP)
    } else {
        erase_p
    };
    let page_p = if p.is_none() {
        let below: Vec<u64> = powers.iter().copied().filter(|&x| e.is_none_or(|e| x < e)).collect();
        if below.is_empty() {
            page_p
        } else {
            page_p * sure_of_none(&below)
        }
        .min(NONE_CAP)
    } else {
        page_p
    };
    (erase_p, page_p)
}

/// The fit in words: each step and its size, or why none shows.
fn evidence(p: Option<u64>, e: Option<u64>, level: &[f64], block: u64) -> Vec<String> {
    let mut evidence = Vec::new();
    let us = |ns: f64| format!("{:.1} µs", ns / 1e3);
    if let Some(p) = p {
        evidence.push(format!(
            "crossing a {} boundary costs {} more than reading beside it (below it: {})",
            crate::units::Iec(p),
            us(level[1] - level[0]),
            us(level[0])
        ));
    }
    if let Some(e) = e {
        let below = if p.is_some() { level[1] } else { level[0] };
        evidence.push(format!(
            "from {} on, crossing costs {} more again: the erase block",
            crate::units::Iec(e),
            us(level[2] - below)
        ));
    }
    if e.is_some() && p.is_none() {
        evidence.push(format!(
            "no step below the erase block: pages are at most {} or their reads hide behind the transfer",
            crate::units::Iec(block / 2)
        ));
    }
    if e.is_none() {
        evidence.push("no step at any boundary: the erase block size is not visible to reads".into());
    }
    evidence
}
