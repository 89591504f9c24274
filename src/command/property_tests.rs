//! The robustness goal: random simulated cards (AU 1-64 MiB including
//! 3 x 2^n, pages 2-64 KiB, open AUs 1-30 each way, FAT area 0-4 AUs, jitter
//! 0-10%), every test run on each, exact-answer rates checked against the
//! goals. The seed is printed; FLASHLAB_PROPERTY_SEED=N reruns one set.

use crate::measure::{align, fat, open_au};
use crate::sim::SimTarget;

const CARDS: usize = 200;

struct Card {
    au: u64,
    page: u64,
    linear: u64,
    random: u64,
    fat: u64,
    jitter: f64,
    seed: u64,
}

use crate::random::xorshift;

fn card(rng: &mut u64) -> Card {
    const AUS: [u64; 12] = [1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64];
    let au = AUS[(xorshift(rng) % AUS.len() as u64) as usize] << 20;
    let page = (2u64 << 10) << (xorshift(rng) % 6);
    let linear = 1 + xorshift(rng) % 30;
    // The model's random-order AUs come out of its open AUs, so a card cannot
    // keep more AUs open for random writes than for in-order ones.
    let random = 1 + xorshift(rng) % linear;
    Card {
        au,
        page,
        linear,
        random,
        fat: xorshift(rng) % 5,
        jitter: (xorshift(rng) % 101) as f64 / 1000.0,
        seed: xorshift(rng) % 1_000_000,
    }
}

/// (erase size, page size, open AUs in order, open AUs random, FAT area AUs).
type Answers = (Option<u64>, Option<u64>, Option<u64>, Option<u64>, u64);

/// What the CLI runs: `probe` through the runner (align, scatter, then
/// open-au in both orders with the largest sweep up to 32 that fits, and fat
/// on align's erase size, each writing test on a fresh card with the same
/// parameters behind the preserving target).
fn characterise(card: SimTarget) -> Answers {
    let doc = super::probe::probe_with(
        crate::runner::Runner::for_sim(crate::document::CommandName::Probe, card),
        Default::default(),
    )
    .unwrap();
    let a: &align::AlignResult = doc.results.align.get().expect("align ran");
    let r: Option<&open_au::OpenAuResult> = doc.results.open_au.get();
    let f: Option<&fat::FatResult> = doc.results.fat.get();
    (
        a.erase_size_bytes,
        a.page_size_bytes,
        r.as_ref().and_then(|r| r.linear.as_ref()).and_then(|s| s.max_open_aus),
        r.as_ref().and_then(|r| r.random.as_ref()).and_then(|s| s.max_open_aus),
        f.map_or(0, |f| f.fat_area_aus),
    )
}

/// Exact on every built-in card. Two answers are what the card's
/// physics allow rather than its settings: a page-mapped FTL (emmc-hs400) has
/// no open-AU limit, and a page no larger than half the read block
/// (sandisk-512mb's 512 B small-block NAND pages) puts a page boundary inside
/// every read, so no boundary stands out.
#[test]
fn builtin_cards_are_characterised_exactly() {
    for prof in crate::sim::profiles::PROFILES {
        let params = crate::sim::profiles::build(prof.name).unwrap();
        let got = characterise(SimTarget::new(&format!("sim:{}", prof.name), params.clone()));
        let block = align::block_size(params.sector_size);
        let limit = |n: u64| (!params.page_mapped).then_some(n);
        let want = (
            Some(params.au_size),
            (params.page_size > block / 2).then_some(params.page_size),
            limit(params.open_aus_linear),
            limit(params.open_aus_random),
            params.fat_area_aus,
        );
        assert_eq!(got, want, "{}", prof.name);
    }
}

#[test]
fn random_cards_are_characterised_exactly() {
    let seed: u64 = std::env::var("FLASHLAB_PROPERTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| std::process::id() as u64);
    println!("property seed {seed} (FLASHLAB_PROPERTY_SEED={seed} reruns it)");
    let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let (mut au_ok, mut page_ok, mut lin_ok, mut rnd_ok, mut fat_ok) = (0, 0, 0, 0, 0);
    for i in 0..CARDS {
        let c = card(&mut rng);
        let spec = format!(
            "capacity=64G,au_size={},page_size={},open_aus_linear={},open_aus_random={},fat_area_aus={},jitter={},seed={},keep_data=false",
            c.au, c.page, c.linear, c.random, c.fat, c.jitter, c.seed
        );
        let got = characterise(SimTarget::from_spec(&format!("sim:demo,{spec}")).unwrap());
        let want = (Some(c.au), Some(c.page), Some(c.linear), Some(c.random), c.fat);
        au_ok += usize::from(got.0 == want.0);
        page_ok += usize::from(got.1 == want.1);
        lin_ok += usize::from(got.2 == want.2);
        rnd_ok += usize::from(got.3 == want.3);
        fat_ok += usize::from(got.4 == want.4);
        if got != want {
            println!("card {i}: sim:demo,{spec}: got {got:?}, want {want:?}");
        }
    }
    let pct = |n: usize| 100.0 * n as f64 / CARDS as f64;
    println!(
        "{CARDS} cards: AU {:.1}%, page {:.1}%, open linear {:.1}%, open random {:.1}%, FAT {:.1}%",
        pct(au_ok),
        pct(page_ok),
        pct(lin_ok),
        pct(rnd_ok),
        pct(fat_ok)
    );
    assert!(pct(au_ok) >= 98.0, "AU size exact on {:.1}% (goal 98%)", pct(au_ok));
    assert!(
        pct(page_ok) >= 95.0,
        "page size exact on {:.1}% (goal 95%)",
        pct(page_ok)
    );
    assert!(
        pct(lin_ok) >= 95.0,
        "linear open AUs exact on {:.1}% (goal 95%)",
        pct(lin_ok)
    );
    assert!(
        pct(rnd_ok) >= 95.0,
        "random open AUs exact on {:.1}% (goal 95%)",
        pct(rnd_ok)
    );
    assert!(pct(fat_ok) >= 95.0, "FAT area exact on {:.1}% (goal 95%)", pct(fat_ok));
}

/// The calibration generator (src/sim/generate.rs): 300 cards with jitter up to
/// 25% and heavy-tailed outliers, hosts from UHS-I down to at91-mci, 512-
/// and 4096-byte sectors, AUs of 1-128 MiB. What this checks is that the
/// confidence means what it says: verdicts given at 0.9 or more are right
/// about 90% of the time or more, each lower bucket within 15 points of its
/// bound.
/// The exact rates are checked against floors well below the goals
/// (98/90/95/95/95%), which they do not reach yet; the floors catch a
/// regression, the README's calibration figures say how far the goals are.
#[test]
fn generated_cards_get_calibrated_confidence() {
    let score = probe_generated(crate::sim::generate::Family::Calibration, 300);
    // Seeds 1-6 gave 95.0-98.0% exact open AUs in order (300 cards, about 1
    // point of standard error): the floor sits two errors under the mean.
    check_calibrated(&score, [0.96, 0.97, 0.95, 0.96, 0.94]);
}

/// The hard family (AUs up to 128 MiB with 4 KiB pages, 96-AU
/// cards, slow hosts), where each writing step runs out of its budget
/// first: an answer cut short must say unsure, so the confidence stays
/// calibrated; its exact rates are lower (900 cards: AU 96.4%, page 99.9%,
/// open AUs 97.8% each, FAT 89.4%, by examples/budget.rs). Their device time
/// is measured by `examples/budget.rs`, not here.
#[test]
fn hard_cards_get_calibrated_confidence() {
    let score = probe_generated(crate::sim::generate::Family::Hard, 60);
    check_calibrated(&score, [0.9, 0.93, 0.9, 0.9, 0.8]);
}

/// probe on `n` cards of `family`, with their score; cards with a wrong
/// verdict are printed (their spec reruns them).
fn probe_generated(family: crate::sim::generate::Family, n: usize) -> crate::measure::confidence::Score {
    use crate::measure::confidence::Score;
    use crate::sim::generate;
    let seed: u64 = std::env::var("FLASHLAB_PROPERTY_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        // A fixed default keeps CI's verdict reproducible; other seeds are
        // tried by hand, with FLASHLAB_PROPERTY_SEED.
        .unwrap_or(20_261_123);
    println!("generator seed {seed} (FLASHLAB_PROPERTY_SEED={seed} reruns it)");
    let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let cards: Vec<_> = (0..n).map(|_| generate::card_of(family, &mut rng)).collect();
    let docs: Vec<_> = super::probe::probe_cards(&cards, Default::default())
        .into_iter()
        .map(|(spec, doc, truth)| {
            let doc = doc.unwrap_or_else(|e| panic!("{spec}: {e}"));
            (spec, doc, truth)
        })
        .collect();
    let mut score = Score::default();
    for (spec, doc, truth) in &docs {
        let wrong = score.add(&doc.results, truth);
        if !wrong.is_empty() {
            println!("{spec}: {}", wrong.join(", "));
        }
    }
    println!("{}", score.show());
    score
}

/// Each confidence bucket's share right against its bound, and each
/// verdict's exact rate against its floor (AU, page, linear, random, FAT).
/// Each bucket's share right is a sample: with ~130 verdicts at 0.9 or
/// more its standard error is about 2 points, so the bound allows two of
/// them (0.86 for the 0.9 bucket).
fn check_calibrated(score: &crate::measure::confidence::Score, floors: [f64; 5]) {
    use crate::measure::confidence::{BUCKETS, Tally};
    let check = |name: &str, t: &Tally, floor: f64| {
        for (b, (&(right, total), lower)) in t.buckets.iter().zip(BUCKETS).enumerate().skip(1) {
            let slack = if b == 3 { 0.04 } else { 0.15 };
            if total >= 20 {
                assert!(
                    right as f64 >= (lower - slack) * total as f64,
                    "{name}: confidence >= {lower} right {right}/{total}"
                );
            }
        }
        assert!(
            t.rate() >= floor,
            "{name}: {:.1}% exact, floor {floor}",
            100.0 * t.rate()
        );
    };
    check("AU", &score.au, floors[0]);
    check("page", &score.page, floors[1]);
    check("open AUs in order", &score.linear, floors[2]);
    check("open AUs random", &score.random, floors[3]);
    check("FAT area", &score.fat, floors[4]);
}

/// (what, the standalone command's value, its confidence, probe's value,
/// probe's confidence).
type Check = (&'static str, Option<u64>, f64, Option<u64>, f64);

/// A standalone command (`open-au`, `fat`, `au`, `page`, `align`) on each
/// built-in card gives probe's verdict or says it is unsure; never another
/// confident one (`open-au sim:demo` once said "random: 6, 0.95"
/// where probe said 24).
#[test]
fn standalone_commands_never_confidently_contradict_probe() {
    use crate::measure::CONFIDENT;
    use crate::measure::summary::Summary;
    use clap::Parser;
    /// A measuring test's command line, parsed as the CLI parses it (the
    /// same clap subcommands), without naming the CLI: command sits below
    /// it.
    #[derive(Parser)]
    struct One {
        #[command(subcommand)]
        test: crate::measure::TestCommand,
    }
    for prof in crate::sim::profiles::PROFILES {
        let spec = format!("sim:{}", prof.name);
        let card = || SimTarget::from_spec(&spec).unwrap();
        let doc = super::probe::probe_with(
            crate::runner::Runner::for_sim(crate::document::CommandName::Probe, card()),
            Default::default(),
        )
        .unwrap();
        let probe: Summary = crate::measure::summary::of(&doc.results);
        for command in ["align", "au", "page", "open-au", "fat"] {
            let cmd = One::try_parse_from(["flashlab", command, spec.as_str()]).unwrap().test;
            let mut runner = crate::runner::Runner::for_sim(crate::document::CommandName::parse(command), card());
            cmd.run(&mut runner).unwrap();
            let alone = runner.finish();
            let r = &alone.results;
            let mut checks: Vec<Check> = Vec::new();
            let size =
                |s: &Option<crate::measure::summary::Size>| s.as_ref().map_or((None, 0.0), |s| (s.bytes, s.confidence));
            if let Some(a) = r.align.get() {
                let (pe, pc) = size(&probe.erase_block);
                checks.push(("align erase", a.erase_size_bytes, a.confidence, pe, pc));
            }
            if let Some(a) = r.au.get() {
                let (pe, pc) = size(&probe.erase_block);
                checks.push(("au erase", a.erase_size_bytes, a.confidence, pe, pc));
            }
            if let Some(p) = r.page.get() {
                let (pp, pc) = size(&probe.page);
                checks.push(("page", p.page_size_bytes, p.confidence, pp, pc));
            }
            if let (Some(o), Some(po)) = (r.open_au.get(), probe.open_aus.as_ref()) {
                let lim = |l: &Option<crate::measure::summary::Limit>| {
                    l.as_ref().map_or((None, 0.0), |l| (l.count, l.confidence))
                };
                for (name, s, p) in [
                    ("open-au linear", &o.linear, &po.linear),
                    ("open-au random", &o.random, &po.random),
                ] {
                    let (pv, pc) = lim(p);
                    if let Some(s) = s {
                        checks.push((name, s.max_open_aus, s.confidence, pv, pc));
                    }
                }
            }
            if let (Some(f), Some(pf)) = (r.fat.get(), probe.fat_area.as_ref()) {
                checks.push(("fat", Some(f.fat_area_aus), f.confidence, Some(pf.aus), pf.confidence));
            }
            assert!(!checks.is_empty(), "{}: `{command}` gave nothing to compare", prof.name);
            for (what, alone, c, probe, pc) in checks {
                assert!(
                    c < CONFIDENT || pc < CONFIDENT || alone == probe,
                    "{}: `{command}` says {what} {alone:?} ({c:.2}), probe {probe:?} ({pc:.2})",
                    prof.name
                );
            }
        }
    }
}

/// Several runners at once, each on its own thread and card (what `batch`
/// will do with real targets): a runner is Send, and each run's verdicts
/// are its own card's, the same as when it ran alone.
#[test]
fn runners_on_threads_each_measure_their_own_card() {
    let specs = ["sim:demo,capacity=256M,au_size=1M", "sim:kingston-sa04g,capacity=256M"];
    let alone: Vec<Answers> = specs
        .iter()
        .map(|s| characterise(SimTarget::from_spec(s).unwrap()))
        .collect();
    let together: Vec<Answers> = std::thread::scope(|scope| {
        let runs: Vec<_> = specs
            .iter()
            .map(|s| {
                let runner = crate::runner::Runner::for_sim(
                    crate::document::CommandName::Probe,
                    SimTarget::from_spec(s).unwrap(),
                );
                scope.spawn(move || {
                    let doc = super::probe::probe_with(runner, Default::default()).unwrap();
                    let a = doc.results.align.get().expect("align ran").clone();
                    (a.erase_size_bytes, a.page_size_bytes)
                })
            })
            .collect();
        runs.into_iter()
            .zip(&alone)
            .map(|(h, a)| {
                let (erase, page) = h.join().unwrap();
                (erase, page, a.2, a.3, a.4)
            })
            .collect()
    });
    assert_eq!(together, alone);
    assert_eq!(alone[0].0, Some(1 << 20));
    assert_eq!(alone[1].0, Some(4 << 20));
}

/// A run stopped by its own stopper ends as a signal would end it, and the
/// run beside it on another thread goes on to its verdicts: what `batch`
/// needs to end one device's run and not the others'.
#[test]
fn a_run_stopped_alone_leaves_the_other_runs_going() {
    let runner = |spec: &str| {
        crate::runner::Runner::for_sim(crate::document::CommandName::Probe, SimTarget::from_spec(spec).unwrap())
    };
    let (stopped, going) = (
        runner("sim:demo,capacity=256M"),
        runner("sim:demo,capacity=256M,au_size=1M"),
    );
    stopped.stopper().stop(libc::SIGTERM);
    let (a, b) = std::thread::scope(|scope| {
        let a = scope.spawn(move || super::probe::probe_with(stopped, Default::default()));
        let b = scope.spawn(move || super::probe::probe_with(going, Default::default()));
        (a.join().unwrap(), b.join().unwrap())
    });
    let Err(e) = a else { panic!("the stopped run went on") };
    assert_eq!(e.exit, crate::error::Exit::Terminated, "{}", e.message);
    assert!(e.message.contains("SIGTERM"), "{}", e.message);
    let doc = b.expect("the other run goes on");
    assert_eq!(doc.results.align.get().and_then(|a| a.erase_size_bytes), Some(1 << 20));
    assert!(doc.results.open_au.get().is_some(), "its writing steps ran");
    assert_eq!(crate::safety::signals::pending(), None, "no signal went to the process");
}
