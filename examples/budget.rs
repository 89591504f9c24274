//! Device time and accuracy of probe on generated cards (docs/DESIGN.md,
//! "Device time"): every step's device time (median, 95th percentile, max)
//! and the verdicts' exact rates, on the hard family (large AUs with 4 KiB
//! pages, 96-AU cards, slow hosts) or the calibration family:
//!
//!     cargo run --release --example budget -- [CARDS] [SEED...] [--calibration] [--worst STEP] 2>/dev/null
//!
//! Prints each card over 10 device-minutes or with a wrong verdict (its
//! spec reruns it with `flashlab probe SPEC`), then the table. With
//! `--unsure` it also prints each in-order, random or FAT verdict under
//! 0.9, with why and the card's spec. With `--steps` it prints each
//! card's device time by step. With
//! `--specs` it prints the cards' specs alone, one a line, and probes
//! nothing (scripts/probe-vs-emulate.sh emulates them).

use std::collections::BTreeMap;

use flashlab::command::probe::probe_cards;
use flashlab::measure::confidence::Score;
use flashlab::sim::generate::{self, Family};

fn quantile(v: &mut [f64], q: f64) -> f64 {
    if v.is_empty() {
        return 0.0;
    }
    v.sort_by(f64::total_cmp);
    v[((v.len() - 1) as f64 * q).round() as usize]
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let family = if args.iter().any(|a| a == "--calibration") {
        Family::Calibration
    } else {
        Family::Hard
    };
    let nums: Vec<u64> = args
        .iter()
        .enumerate()
        .filter(|(i, _)| *i == 0 || args[i - 1] != "--worst")
        .filter_map(|(_, a)| a.parse().ok())
        .collect();
    let cards = nums.first().copied().unwrap_or(300) as usize;
    let seeds: Vec<u64> = if nums.len() > 1 {
        nums[1..].to_vec()
    } else {
        vec![1, 2, 3]
    };
    let mut work = Vec::new();
    for &seed in &seeds {
        let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        work.extend((0..cards).map(|_| generate::card_of(family, &mut rng)));
    }
    if args.iter().any(|a| a == "--specs") {
        for (_, spec, _) in &work {
            println!("{spec}");
        }
        return;
    }
    let steps = flashlab::command::probe::ProbeSteps {
        erase: None,
        capacity_and_bench: true,
    };
    // A probe that failed midway still has what completed.
    let results: Vec<_> = probe_cards(&work, steps)
        .into_iter()
        .map(|(spec, doc, truth)| {
            (
                spec,
                doc.unwrap_or_else(|e| e.partial.map(|d| *d).expect("a document")),
                truth,
            )
        })
        .collect();
    let mut score = Score::default();
    // Every generated card is genuine: what capacity said of them.
    let mut genuine = (0, 0);
    let mut total = Vec::new();
    let mut per_step: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    for (spec, doc, truth) in &results {
        let mut wrong = score.add(&doc.results, truth);
        if let Some(c) = doc.results.capacity.get() {
            genuine.1 += 1;
            if c.verdict == flashlab::measure::capacity::Verdict::Genuine {
                genuine.0 += 1;
            } else {
                wrong.push(format!("capacity {:?}", c.verdict));
            }
        }
        let t = doc.device_time_s.unwrap_or(0.0);
        total.push(t);
        let mut steps: BTreeMap<String, f64> = BTreeMap::new();
        for s in doc.extras.steps.get().into_iter().flatten() {
            *steps.entry(s.step.clone()).or_default() += s.device_s;
        }
        for (k, v) in &steps {
            per_step.entry(k.clone()).or_default().push(*v);
        }
        // --steps: each card's device time by step, one line a card.
        if args.iter().any(|a| a == "--steps") {
            let each: Vec<String> = steps.iter().map(|(k, v)| format!("{k}={v:.1}")).collect();
            println!("steps {t:.1} {} | {spec}", each.join(" "));
        }
        // --unsure: every verdict probe would not stand behind, with why,
        // where the spending goes next.
        if args.iter().any(|a| a == "--unsure") {
            let o = doc.results.open_au.get();
            let sweeps = [
                ("linear", o.as_ref().and_then(|o| o.linear.clone())),
                ("random", o.as_ref().and_then(|o| o.random.clone())),
            ];
            for (name, s) in sweeps {
                if let Some(s) = s.filter(|s| s.confidence < 0.9) {
                    println!(
                        "unsure {name} (truth {}): up to {} {:?} budget {:?} | {spec}",
                        if name == "linear" { truth.linear } else { truth.random },
                        s.tried_up_to,
                        s.claim.not_claimed,
                        s.stopped_by_budget_s
                    );
                }
            }
            if let Some(f) = doc.results.fat.get().filter(|f| f.confidence < 0.9) {
                println!(
                    "unsure FAT (truth {}): {:?} {:?} | {spec}",
                    truth.fat, f.claim.not_claimed, f.notes
                );
            }
        }
        if !wrong.is_empty() || t > 600.0 {
            let worst = steps
                .iter()
                .max_by(|a, b| a.1.total_cmp(b.1))
                .map_or(String::new(), |(k, v)| format!("{k} {v:.0} s"));
            println!("{spec}: {t:.0} device-s (most: {worst}) {}", wrong.join(", "));
        }
    }
    // --worst STEP: the five cards that spent most on STEP, to rerun.
    if let Some(step) = args.iter().position(|a| a == "--worst").and_then(|i| args.get(i + 1)) {
        let mut by: Vec<(f64, &String)> = results
            .iter()
            .map(|(spec, doc, _)| {
                let t = doc
                    .extras
                    .steps
                    .get()
                    .into_iter()
                    .flatten()
                    .filter(|s| &s.step == step)
                    .map(|s| s.device_s)
                    .sum::<f64>();
                (t, spec)
            })
            .collect();
        by.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (t, spec) in by.iter().take(5) {
            println!("{step} {t:.0} s: {spec}");
        }
    }
    let n = results.len();
    println!("\n{n} cards ({family:?} family, seeds {seeds:?})");
    println!("{:<12} {:>9} {:>9} {:>9}", "device-s", "median", "p95", "max");
    let row = |name: &str, v: &mut Vec<f64>| {
        println!(
            "{name:<12} {:>9.1} {:>9.1} {:>9.1}",
            quantile(v, 0.5),
            quantile(v, 0.95),
            quantile(v, 1.0)
        );
    };
    row("probe", &mut total);
    for (k, v) in per_step.iter_mut() {
        row(k, v);
    }
    let over = total.iter().filter(|&&t| t > 600.0).count();
    println!("cards over 10 device-minutes: {over}");
    println!("\n{}", score.show());
    println!("capacity: genuine on {} of {} cards", genuine.0, genuine.1);
    let confident_wrong = [&score.au, &score.page, &score.linear, &score.random, &score.fat]
        .iter()
        .map(|t| t.buckets[3].1 - t.buckets[3].0)
        .sum::<usize>();
    let verdicts = [&score.au, &score.page, &score.linear, &score.random, &score.fat]
        .iter()
        .map(|t| t.total)
        .sum::<usize>();
    println!(
        "wrong at confidence >= 0.9: {confident_wrong} of {verdicts} verdicts ({:.2}%)",
        100.0 * confident_wrong as f64 / verdicts.max(1) as f64
    );
}
