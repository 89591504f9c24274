//! How exact and how calibrated the verdicts are on generated cards
//! (DESIGN.md's calibration promise), with more cards than CI runs:
//!
//!     cargo run --release --example calibration -- [CARDS] [SEED] 2>/dev/null
//!
//! Prints each wrong card's spec (to rerun it with `flashlab probe SPEC`),
//! then exact rates and accuracy per confidence bucket.

use flashlab::command::probe::probe_cards;
use flashlab::measure::confidence::Score;
use flashlab::sim::generate;

fn main() {
    let mut args = std::env::args().skip(1);
    let cards: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(300);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let work: Vec<_> = (0..cards).map(|_| generate::card(&mut rng)).collect();
    let results = probe_cards(&work, Default::default());
    let mut score = Score::default();
    for (spec, doc, truth) in &results {
        let doc = doc.as_ref().expect("probe runs");
        let wrong = score.add(&doc.results, truth);
        if !wrong.is_empty() {
            println!("{spec}: {}", wrong.join(", "));
        }
    }
    println!("{cards} cards, seed {seed}\n{}", score.show());
}
