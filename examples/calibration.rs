//! How exact and how calibrated the verdicts are on generated cards
//! (DESIGN.md's calibration promise), with more cards than CI runs:
//!
//!     cargo run --release --example calibration -- [CARDS] [SEED] 2>/dev/null
//!
//! Prints each wrong card's spec (to rerun it with `flashlab probe SPEC`),
//! then exact rates and accuracy per confidence bucket.

use flashlab::measure::confidence::Score;
use flashlab::sim::generate;
use flashlab::{command::probe::probe_with, runner::Runner};

fn main() {
    let mut args = std::env::args().skip(1);
    let cards: usize = args.next().and_then(|a| a.parse().ok()).unwrap_or(300);
    let seed: u64 = args.next().and_then(|a| a.parse().ok()).unwrap_or(1);
    let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let work: Vec<_> = (0..cards).map(|_| generate::card(&mut rng)).collect();
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    let chunk = cards.div_ceil(threads).max(1);
    let results: Vec<Vec<(String, flashlab::document::RunDocument, generate::Truth)>> = std::thread::scope(|s| {
        let handles: Vec<_> = work
            .chunks(chunk)
            .map(|part| {
                s.spawn(move || {
                    part.iter()
                        .map(|(t, spec, truth)| {
                            let card = flashlab::sim::SimTarget::new(spec, t.params.clone());
                            let doc =
                                probe_with(Runner::for_sim("probe", card), Default::default()).expect("probe runs");
                            (spec.clone(), doc, truth.clone())
                        })
                        .collect()
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().expect("worker")).collect()
    });
    let mut score = Score::default();
    for (spec, doc, truth) in results.iter().flatten() {
        let wrong = score.add(&doc.results, truth);
        if !wrong.is_empty() {
            println!("{spec}: {}", wrong.join(", "));
        }
    }
    println!("{cards} cards, seed {seed}\n{}", score.show());
}
