//! `life --card`: a simulated card as given, or a stored probe of a real
//! card made a card model. The probe's geometry (erase block, page, open
//! AUs in order and at random, FAT area) sets the model's; its timing is
//! `sim:demo`'s, since a probe measures no program or erase time (the
//! counts life reports do not depend on it, its latency does). A verdict
//! the probe was unsure of, or did not reach, is a range: the card is
//! replayed at both ends, so the answer widens as far as the probe left
//! it open.

use std::path::Path;

use crate::args::Card;
use crate::error::{CliError, CliResult};
use crate::measure::summary::{Limit, Size, Summary};
use crate::units::Iec;

/// A card to replay on: its name in the answer, and its parameters.
pub type Model = (String, crate::sim::params::Params);

/// The card (or, for an unsure probe, the cards) `card` names.
pub fn models(card: &Card, runs: Option<&Path>) -> CliResult<Vec<Model>> {
    match card {
        Card::Sim(s) => Ok(vec![(s.spec(), (*s.params).clone())]),
        Card::Run(id) => from_run(*id, runs),
    }
}

const HINT: &str = "give a run of `flashlab probe` on the card, with --write so that its erase block and open AUs \
                    are measured (`flashlab results list`), or a sim: card";

/// A size the probe claims and is sure of.
fn sure_size(s: &Option<Size>) -> Option<u64> {
    s.as_ref()
        .filter(|s| s.claim.claimed && !s.unsure)
        .and_then(|s| s.bytes)
}

/// An open-AU limit as a range: a sure count is itself; "no collapse up
/// to N" is N (the card keeps at least that many, and no more is known);
/// an unsure count runs from 1 to it; none measured, from 1 to `otherwise`.
fn limit(l: &Option<Limit>, otherwise: u64) -> (u64, u64) {
    match l {
        Some(l) if l.claim.claimed && !l.unsure => match (l.count, l.up_to) {
            (Some(n), _) | (None, Some(n)) => (n, n),
            (None, None) => (1, otherwise),
        },
        Some(l) if l.claim.claimed => (1, l.count.unwrap_or(otherwise).max(1)),
        _ => (1, otherwise),
    }
}

fn from_run(id: i64, runs: Option<&Path>) -> CliResult<Vec<Model>> {
    let doc = super::results::show(super::results::Stored::Local(runs), id)?;
    let Some(s) = doc.extras.summary.get() else {
        return Err(CliError::usage(format!("run {id} is not a probe (it is `{}`)", doc.command)).hint(HINT));
    };
    let Some(au) = sure_size(&s.erase_block) else {
        return Err(CliError::usage(format!("run {id} did not measure an erase block it is sure of")).hint(HINT));
    };
    let Some(size) = doc.target.as_ref().map(|t| t.size_bytes).filter(|&n| n > 0) else {
        return Err(CliError::usage(format!("run {id} does not say the card's size")).hint(HINT));
    };
    let base = crate::sim::profiles::build("demo").map_err(|e| CliError::failed(e.to_string()))?;
    let ends = ends(s, &base);
    let sure = ends[0] == ends[1];
    let mut out = Vec::new();
    for (k, end) in ends.iter().enumerate().take(if sure { 1 } else { 2 }) {
        let (page, linear, random, fat) = *end;
        let overrides: Vec<(String, String)> = [
            ("capacity", size),
            ("au_size", au),
            ("page_size", page),
            ("open_aus_linear", linear),
            ("open_aus_random", random),
            ("fat_area_aus", fat),
        ]
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect();
        let params = crate::sim::params_from_spec("demo", &overrides).map_err(|e| {
            CliError::usage(format!("run {id}'s geometry makes no card: {e}"))
                .hint("probe the card again with --write; its verdicts do not fit together")
        })?;
        let which = match (sure, k) {
            (true, _) => "",
            (false, 0) => ", its unsure verdicts at their worst",
            (false, _) => ", its unsure verdicts at their best",
        };
        let name = format!(
            "run {id} (AU {}, page {}, {linear} open in order, {random} random, FAT area {fat} AUs{which})",
            Iec(au),
            Iec(page)
        );
        out.push((name, params));
    }
    Ok(out)
}

/// (page, open in order, open at random, FAT AUs) at the worst end (the
/// larger page: more partial pages; fewer open AUs; no FAT area) and the
/// best.
fn ends(s: &Summary, base: &crate::sim::params::Params) -> [(u64, u64, u64, u64); 2] {
    let page = sure_size(&s.page);
    // A page the probe did not settle: from 4 KiB (the smallest a card
    // programs, SD's 512-byte blocks aside) to the base card's.
    let (page_worst, page_best) = page.map_or((base.page_size.max(4096), 4096), |p| (p, p));
    let open = s.open_aus.as_ref();
    let linear = limit(&open.and_then(|o| o.linear.clone()), base.open_aus_linear);
    let random = limit(&open.and_then(|o| o.random.clone()), base.open_aus_random);
    let fat = match &s.fat_area {
        Some(f) if f.claim.claimed && !f.unsure => (f.aus, f.aus),
        _ => (0, base.fat_area_aus),
    };
    [
        (page_worst, linear.0, random.0, fat.0),
        (page_best, linear.1, random.1, fat.1),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::claim::Claim;

    fn seen(count: Option<u64>, up_to: Option<u64>, unsure: bool, claim: Claim) -> Option<Limit> {
        Some(Limit {
            count,
            up_to,
            confidence: if unsure { 0.5 } else { 0.95 },
            unsure,
            claim,
            stopped_by_budget_s: None,
        })
    }

    /// A sure count is itself; "none up to N" is N; an unsure count or
    /// none runs from 1 to the count or the base card's.
    #[test]
    fn an_open_au_verdict_becomes_a_range_as_far_as_it_is_unsure() {
        assert_eq!(limit(&seen(Some(3), None, false, Claim::made()), 6), (3, 3));
        assert_eq!(limit(&seen(None, Some(24), false, Claim::made()), 6), (24, 24));
        assert_eq!(limit(&seen(Some(5), None, true, Claim::made()), 6), (1, 5));
        assert_eq!(limit(&seen(None, None, true, Claim::made()), 6), (1, 6));
        assert_eq!(limit(&None, 6), (1, 6));
        let refused = seen(Some(3), None, false, Claim::refused("a loop device"));
        assert_eq!(limit(&refused, 6), (1, 6));
    }
}
