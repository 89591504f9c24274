//! How well `import flashbench` reads cards whose truth is known: the
//! flashbench family of generated cards (src/sim/generate.rs), each printed
//! as a user's flashbench session ([`super::render`]) and read back. The
//! property test and `examples/flashbench_import.rs` share it.

use super::judge;
use super::render::{UserRuns, render};
use crate::measure::confidence::Score;
use crate::measure::{CONFIDENT, Results};
use crate::sim::generate::{self, Family, Truth};

/// One card's session: what it is and what flashbench printed.
pub struct Trial {
    pub spec: String,
    pub truth: Truth,
    pub text: String,
    /// The session gave --open-au a wrong --erasesize (twice the AU).
    pub wrong_erasesize: bool,
}

/// What a user runs on a card: three -a runs (1 KiB reads, or two
/// sectors), a run below, at and past each open-AU limit, and find-fat.
fn session(truth: &Truth, rng: &mut u64, wrong_erasesize: bool) -> UserRuns {
    let around = |n: u64| (n.saturating_sub(1).max(1)..=n + 1).collect::<Vec<u64>>();
    UserRuns {
        align_runs: 3,
        align_block: (2 * u64::from(truth.sector)).max(1024),
        threes: !truth.au.is_power_of_two() || crate::random::xorshift(rng).is_multiple_of(3),
        erasesize: if wrong_erasesize { 2 * truth.au } else { truth.au },
        blocksize: (16u64 << 10).min(truth.au / 4),
        linear: around(truth.linear),
        random: around(truth.random),
        find_fat: true,
    }
}

/// `n` cards of the flashbench family from `seed`, every `wrong`-th with a
/// wrong --erasesize (0: none), rendered on all cores.
pub fn trials(n: usize, seed: u64, wrong: usize) -> Vec<Trial> {
    let mut rng = seed.max(1);
    let plans: Vec<(crate::sim::SimTarget, String, Truth, UserRuns, bool)> = (0..n)
        .map(|i| {
            let (t, spec, truth) = generate::card_of(Family::Flashbench, &mut rng);
            let w = wrong > 0 && i % wrong == wrong - 1;
            let s = session(&truth, &mut rng, w);
            (t, spec, truth, s, w)
        })
        .collect();
    generate::on_every_core(plans, |(mut t, spec, truth, s, w)| Trial {
        text: render(&mut t, &s),
        spec,
        truth,
        wrong_erasesize: w,
    })
}

/// The reading of the trials.
#[derive(Debug, Default)]
pub struct Outcome {
    pub cards: usize,
    pub score: Score,
    pub exact_au: usize,
    pub exact_linear: usize,
    pub exact_random: usize,
    /// Cards with a wrong --erasesize whose open-AU limits were confident.
    pub wrong_erasesize_confident: usize,
    /// ... and confidently wrong: a limit that is not the card's, or a
    /// lower bound above it. (In order, units of two AUs collapse at the
    /// card's own count: each round still writes one AU per unit.)
    pub wrong_erasesize_confident_wrong: Vec<String>,
    pub wrong_erasesize_cards: usize,
    /// Cards whose -a runs, each imported alone, gave confident erase
    /// blocks that differ.
    pub split_align: usize,
    /// Every confident wrong verdict, with the card's spec.
    pub confident_wrong: Vec<String>,
    /// Every open-AU limit not read exactly: the card, the truth, what was
    /// said and how sure.
    pub open_au_misses: Vec<String>,
}

/// The judged sweep in order (`random` false) or in random order.
fn sweep_of(j: &judge::Judged, random: bool) -> Option<&crate::measure::open_au::Sweep> {
    j.open_au
        .as_ref()
        .and_then(|x| if random { x.random.as_ref() } else { x.linear.as_ref() })
}

/// One open-AU limit against the card's truth, for the lists of misses.
fn said(spec: &str, random: bool, truth: u64, s: Option<&crate::measure::open_au::Sweep>) -> String {
    format!(
        "{spec}: {} truth {truth}, said {:?} (tried {:?}, at most {:?}, confidence {:.2})",
        if random { "random" } else { "linear" },
        s.and_then(|s| s.max_open_aus),
        s.map(|s| s.tried_up_to),
        s.and_then(|s| s.at_most),
        s.map_or(0.0, |s| s.confidence)
    )
}

/// Read each trial back and score it against its truth.
pub fn assess(trials: &[Trial]) -> Outcome {
    let mut o = Outcome::default();
    for t in trials {
        let Ok(parsed) = super::parse(&t.text) else {
            o.confident_wrong.push(format!("{}: does not parse", t.spec));
            continue;
        };
        let j = judge::judge_one(&parsed);
        let mut r = Results::default();
        if let Some(a) = j.align.clone() {
            r.align.set(a);
        }
        if let Some(a) = j.open_au.clone() {
            r.open_au.set(a);
        }
        if t.wrong_erasesize {
            o.wrong_erasesize_cards += 1;
            let confident = [false, true]
                .into_iter()
                .filter_map(|random| sweep_of(&j, random))
                .any(|s| s.confidence >= CONFIDENT);
            o.wrong_erasesize_confident += usize::from(confident);
            for (random, truth) in [(false, t.truth.linear), (true, t.truth.random)] {
                if let Some(s) = sweep_of(&j, random).filter(|s| s.confidence >= CONFIDENT) {
                    let wrong = match s.max_open_aus {
                        Some(n) => n != truth,
                        None => s.tried_up_to > truth || s.at_most.is_some_and(|m| m < truth),
                    };
                    if wrong {
                        o.wrong_erasesize_confident_wrong
                            .push(said(&t.spec, random, truth, Some(s)));
                    }
                }
            }
            continue;
        }
        o.cards += 1;
        let wrong = o.score.add(&r, &t.truth);
        // FAT is not scored: flashbench's find-fat writes in order, which
        // the model's FAT area does not change.
        let a = j.align.as_ref();
        o.exact_au += usize::from(a.and_then(|a| a.erase_size_bytes) == Some(t.truth.au));
        let limit = |random: bool| sweep_of(&j, random).and_then(|s| s.max_open_aus);
        o.exact_linear += usize::from(limit(false) == Some(t.truth.linear));
        o.exact_random += usize::from(limit(true) == Some(t.truth.random));
        for (random, truth) in [(false, t.truth.linear), (true, t.truth.random)] {
            if limit(random) != Some(truth) {
                o.open_au_misses
                    .push(said(&t.spec, random, truth, sweep_of(&j, random)));
            }
        }
        for w in wrong.iter().filter(|w| !w.starts_with("FAT")) {
            let conf: f64 = w
                .rsplit('(')
                .next()
                .and_then(|c| c.trim_end_matches(')').parse().ok())
                .unwrap_or(0.0);
            if conf >= CONFIDENT {
                o.confident_wrong.push(format!("{}: {w}", t.spec));
            }
        }
        // Each -a run alone.
        let mut said = Vec::new();
        for run in &parsed.align {
            let one = super::Parsed {
                align: vec![run.clone()],
                ..super::Parsed::default()
            };
            let j = judge::judge_one(&one);
            if let Some(a) = j.align.filter(|a| a.confidence >= CONFIDENT) {
                said.push(a.erase_size_bytes);
            }
        }
        said.dedup();
        if said.len() > 1 {
            o.split_align += 1;
            o.confident_wrong
                .push(format!("{}: -a runs alone say {said:?}", t.spec));
        }
    }
    o
}

#[cfg(test)]
mod tests {
    /// 60 cards of the flashbench family. examples/flashbench_import.rs
    /// runs 200 per seed; the judge's thresholds were chosen on seeds 1, 7,
    /// 3 and 20261124 and checked on seeds 11-14 and 21-28, which chose
    /// nothing, and 31-44 after the last change:
    ///
    /// | seeds | erase block | open AUs in order | random | confident wrong |
    /// |---|---|---|---|---|
    /// | 1, 7, 3, 20261124 | 97.2-99.4% | 98.3-100% | 95.0-97.8% | 0 of 540 each |
    /// | 11-14, 21-28, 31-44 | 97.2-100% | 97.8-99.4% | 94.4-98.9% | 0 or 1 of 540 |
    ///
    /// Over all 30 seeds (5,400 cards): 98.5%, 99.1% and 96.5%; one seed
    /// (24) under 95% random. No card's -a runs alone confidently differ.
    /// Random misses are mostly behind the at91-mci host (2 MB/s), where
    /// flashbench's random pattern one AU past the limit merges only every
    /// few rounds and the host hides most of it: those limits are
    /// "unsure", never confidently wrong. Floors sit under what the seeds
    /// gave.
    #[test]
    fn flashbench_sessions_of_generated_cards_read_back() {
        let t = super::trials(66, 20261124, 11);
        let o = super::assess(&t);
        let rate = |k: usize| k as f64 / o.cards as f64;
        assert!(o.cards >= 60);
        assert!(rate(o.exact_au) >= 0.93, "erase block {}/{}", o.exact_au, o.cards);
        eprintln!(
            "erase block {}/{n}, linear {}/{n}, random {}/{n}",
            o.exact_au,
            o.exact_linear,
            o.exact_random,
            n = o.cards
        );
        assert!(rate(o.exact_linear) >= 0.93, "linear {}/{}", o.exact_linear, o.cards);
        assert!(rate(o.exact_random) >= 0.9, "random {}/{}", o.exact_random, o.cards);
        assert!(
            o.confident_wrong.len() as f64 <= 0.01 * (3 * o.cards) as f64,
            "{:#?}",
            o.confident_wrong
        );
        assert_eq!(o.split_align, 0, "three -a runs of one card never confidently differ");
        assert!(o.wrong_erasesize_cards > 0);
    }
}
