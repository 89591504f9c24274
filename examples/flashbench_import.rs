//! `import flashbench` on generated cards (the flashbench family of
//! src/sim/generate.rs), each printed as a user's flashbench session and
//! read back: exact erase blocks and open-AU limits, confident wrong
//! verdicts, and whether three -a runs of one card, imported one by one,
//! ever give confident answers that differ.
//!
//! `cargo run --release --example flashbench_import -- [CARDS] [SEED...]`

use flashlab::import::flashbench::score::{assess, trials};

fn main() {
    let args: Vec<u64> = std::env::args().skip(1).filter_map(|a| a.parse().ok()).collect();
    let n = args.first().copied().unwrap_or(200) as usize;
    let seeds: Vec<u64> = if args.len() > 1 {
        args[1..].to_vec()
    } else {
        vec![20261124]
    };
    for seed in seeds {
        let t = trials(n, seed, 10);
        let o = assess(&t);
        let pct = |k: usize| 100.0 * k as f64 / o.cards.max(1) as f64;
        println!(
            "seed {seed}: {} cards (+{} with a wrong --erasesize): erase block exact {:.1}%, open AUs linear {:.1}%, random {:.1}%",
            o.cards,
            o.wrong_erasesize_cards,
            pct(o.exact_au),
            pct(o.exact_linear),
            pct(o.exact_random)
        );
        println!("{}", o.score.show());
        println!(
            "confident wrong: {} ({:.2}% of {} verdicts); -a runs alone confidently differing: {} cards; wrong --erasesize still confident: {}",
            o.confident_wrong.len(),
            100.0 * o.confident_wrong.len() as f64 / (3 * o.cards).max(1) as f64,
            3 * o.cards,
            o.split_align,
            o.wrong_erasesize_confident
        );
        for w in &o.confident_wrong {
            println!("  {w}");
        }
        println!(
            "wrong --erasesize, confident and wrong: {}",
            o.wrong_erasesize_confident_wrong.len()
        );
        for w in &o.wrong_erasesize_confident_wrong {
            println!("  {w}");
        }
        // Open-AU limits read exactly, by host: flashbench's rates include
        // the host's time, so a slow host hides the card's merges.
        let host = |spec: &str| {
            spec.split(',')
                .find_map(|kv| kv.strip_prefix("host="))
                .unwrap_or("?")
                .to_string()
        };
        let mut hosts: Vec<String> = t.iter().filter(|x| !x.wrong_erasesize).map(|x| host(&x.spec)).collect();
        hosts.sort();
        hosts.dedup();
        for h in hosts {
            let cards = t.iter().filter(|x| !x.wrong_erasesize && host(&x.spec) == h).count();
            let missed = |way: &str| {
                o.open_au_misses
                    .iter()
                    .filter(|m| host(m) == h && m.contains(&format!(": {way} truth")))
                    .count()
            };
            let pct = |k: usize| 100.0 * (cards - k) as f64 / cards.max(1) as f64;
            println!(
                "  {h}: {cards} cards, open AUs linear {:.1}%, random {:.1}%",
                pct(missed("linear")),
                pct(missed("random"))
            );
        }
        if std::env::var_os("FLASHBENCH_MISSES").is_some() {
            for m in &o.open_au_misses {
                println!("  miss: {m}");
            }
        }
        // FLASHBENCH_DUMP=DIR: every session's text, named by card, to
        // import by hand.
        if let Ok(dir) = std::env::var("FLASHBENCH_DUMP") {
            for (i, x) in t.iter().enumerate() {
                let body = format!("# {}\n{}", x.spec, x.text);
                let _ = std::fs::write(format!("{dir}/{i:03}.txt"), body);
            }
        }
    }
}
