//! `bench`: how fast the target reads and writes, fio's way: one job of a
//! read/write pattern, block size and queue depth, with a warm-up that does
//! not count, latencies in an HDR histogram and throughput over time.
//!
//! One test per (rw, bs, qd), limited by bytes (fio's --size) or device
//! time (--runtime), and presets (quick, cdm, a1, sdspeed, full). The SD
//! class verdicts come from the figures (`measure::classes`).

pub mod classes;
mod command;
mod cost;
mod result;
mod run;
mod show;

pub use command::{Args, BenchArgs, DEFAULT_SIZE, options_of};
use cost::{Cost, pieces};
pub use result::{BenchTest, FLOOR_NS, FLOOR_REQUESTS, FLOOR_SLOWEST, Latency, Point, Rw};
use run::{Reach, run_counted};
pub use show::Presenter;

use serde::{Deserialize, Serialize};

use super::MeasureError;
use crate::measure::registry::Settle;
use crate::safety::ranges::Range;
use crate::targets::{Target, TargetDescription};
use crate::units::Iec;

/// Largest block size: fio allows more, but flash tests stop at the erase
/// block, and the buffer is the block size times the queue depth.
pub const MAX_BS: u64 = 64 << 20;
/// Deepest queue: NVMe's 64K entries are far past any card; 1024.
pub const MAX_QD: usize = 1024;
/// Most requests one test issues (a bound before looping on a size the user
/// gave): 2^24, 64 GiB of 4 KiB requests.
pub const MAX_REQUESTS: u64 = 1 << 24;
/// The warm-up, not counted: this share of the test's requests, at least one
/// queue's worth (fio's ramp_time, by count because the seam has no clock).
const WARMUP_SHARE: u64 = 10;
/// Longest latency the histogram tells apart: an hour.
const LONGEST_NS: u64 = 3_600_000_000_000;
/// Points of the throughput timeline.
const TIMELINE_POINTS: u64 = 20;

/// fio's --size or --runtime: bytes moved, or device time spent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Limit {
    Bytes(u64),
    DeviceNs(u64),
}

#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub rw: Rw,
    pub bs: u64,
    pub qd: usize,
    /// How long the measured part runs, after its warm-up.
    pub limit: Limit,
    /// The test area (offset, length): sequential tests walk it, random ones
    /// pick whole blocks in it.
    pub area: (u64, u64),
    /// randrw: reads as a percentage of requests.
    pub rwmix_read: u8,
    pub seed: u64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchResult {
    pub tests: Vec<BenchTest>,
    /// SD classes ("A1", "C10", "V30" ...) whose figures were all measured:
    /// met or not, "A1-style" (see `measure::classes`).
    #[serde(default)]
    pub classes: std::collections::BTreeMap<classes::SdClass, bool>,
    /// The figures behind each verdict, against the class's thresholds.
    #[serde(default)]
    pub class_figures: std::collections::BTreeMap<classes::SdClass, classes::ClassFigures>,
    /// Why no class is judged: the target is not a card.
    #[serde(default)]
    pub not_flash: Option<String>,
    /// What the step's budget changed (a random-write area cut, a class
    /// then not judged).
    #[serde(default)]
    pub notes: Vec<String>,
}

impl Settle for BenchResult {
    /// Mark each short sample and take back a class judged from one: as
    /// the test ends, and on every run read back (runs stored before the
    /// mark judged classes from a handful of requests).
    fn settle(&mut self) {
        for t in &mut self.tests {
            t.settle();
        }
        classes::forget_short(&self.tests, &mut self.classes, &mut self.class_figures);
    }
}

/// Checks before anything is allocated or looped on.
pub fn check(o: &Options, d: &TargetDescription) -> Result<(), MeasureError> {
    let block = u64::from(d.logical_block_size.max(1));
    let bad = |why: String, fix: &str| MeasureError::Bad { why, fix: fix.into() };
    if o.bs == 0 || o.bs > MAX_BS || !o.bs.is_multiple_of(block) {
        return Err(bad(
            format!(
                "--bs {} must be a multiple of the {block}-byte block, at most {MAX_BS}",
                o.bs
            ),
            "give --bs as 4k, 128k, 1M ...",
        ));
    }
    if o.qd == 0 || o.qd > MAX_QD {
        return Err(bad(
            format!("--qd {} must be between 1 and {MAX_QD}", o.qd),
            "give --qd 1, 4, 32 ...",
        ));
    }
    // Each test keeps a request's worth of buffer per queue slot: together
    // the two may ask for more memory than the machine has.
    let need = o.bs.saturating_mul(o.qd as u64);
    if need > super::MAX_BUFFER {
        return Err(bad(
            format!(
                "--bs {} at --qd {} needs a {} buffer; flashlab allocates at most {}",
                Iec(o.bs),
                o.qd,
                Iec(need),
                Iec(super::MAX_BUFFER)
            ),
            "lower --bs or --qd (fio would need the same memory)",
        ));
    }
    let (off, len) = o.area;
    if len < o.bs || !off.is_multiple_of(block) || off.checked_add(len).is_none_or(|e| e > d.size_bytes) {
        return Err(bad(
            format!(
                "the test area {off}+{len} must hold one block and lie inside the target ({} bytes)",
                d.size_bytes
            ),
            "give --area OFFSET+LENGTH inside the target",
        ));
    }
    if o.rw.writes() && cost::count(o) > cost::MAX_PIECES {
        let piece = cost::piece(o);
        return Err(bad(
            format!(
                "{} journals its area in pieces of {}: {} is {} of them, more than the {} one test may declare",
                o.rw.name(),
                Iec(piece),
                Iec(len),
                cost::count(o),
                cost::MAX_PIECES
            ),
            &format!(
                "give --area OFFSET+LENGTH of at most {} to a writing test (reading tests take any area)",
                Iec(cost::MAX_PIECES * piece)
            ),
        ));
    }
    if let Limit::Bytes(size) = o.limit {
        let n = size / o.bs;
        if n == 0 || n > MAX_REQUESTS {
            return Err(bad(
                format!(
                    "--size {size} is {n} requests of {} bytes; 1 to {MAX_REQUESTS} are allowed",
                    o.bs
                ),
                "give a --size of at least one block",
            ));
        }
    }
    if o.rwmix_read > 100 {
        return Err(bad(
            format!("--rwmix-read {} is not a percentage", o.rwmix_read),
            "give 0 to 100",
        ));
    }
    Ok(())
}

impl Options {
    /// Device-ns the test's measured part is limited to (0 for a size).
    fn limit_ns(&self) -> u64 {
        match self.limit {
            Limit::DeviceNs(ns) => ns,
            Limit::Bytes(_) => 0,
        }
    }
}

pub struct Bench {
    pub options: Vec<Options>,
    /// A target that is not flash gets its speeds, but no SD class verdict.
    pub medium: super::Medium,
}

impl super::Test for Bench {
    const KEY: &'static str = "bench";
    type Output = BenchResult;
    fn plan(&self, d: &TargetDescription) -> Result<Vec<Range>, MeasureError> {
        let mut ranges = Vec::new();
        for o in &self.options {
            check(o, d)?;
            if o.rw.writes() {
                ranges.extend(pieces(o));
            }
        }
        Ok(ranges)
    }
    fn run(&self, cx: &mut super::Cx<'_>) -> Result<BenchResult, MeasureError> {
        let n = self.options.len();
        let started = cx.target.device_time_ns();
        let mut notes = Vec::new();
        let mut cost = Cost::of(&self.options);
        let mut tests: Vec<BenchTest> = Vec::with_capacity(n);
        let mut cut = false;
        for (i, o) in self.options.iter().enumerate() {
            let mut o = *o;
            if o.rw.random() && o.rw.writes() {
                let spent = cx.target.device_time_ns().saturating_sub(started);
                let later: u64 = self.options[i + 1..].iter().map(|o| o.limit_ns()).sum();
                let left = cx.budget_ns.saturating_sub(spent).saturating_sub(later) as f64 / 1e9;
                let area = cost.fitting_area(&o, left);
                if area < o.area.1 {
                    notes.push(format!(
                        "{} {} ran in {} of the {} area: the step's budget (--budget SECONDS gives it more) left \
                         {left:.0} device-seconds for it, and each byte written is journalled before, written back \
                         and read again after",
                        o.rw.name(),
                        Iec(o.bs),
                        Iec(area),
                        Iec(o.area.1),
                    ));
                    o.area.1 = area;
                    cut = true;
                }
            }
            // Past its own limit for its floor, within what the budget
            // leaves after the later tests' limits (a sequential write's
            // with what it costs around it) and the restore of what the
            // earlier ones wrote.
            let later: u64 = self.options[i + 1..]
                .iter()
                .map(|o| match o.rw {
                    Rw::Write => (o.limit_ns() as f64 * (1.0 + cost::AFTER_WRITE)) as u64,
                    Rw::Read | Rw::RandRead | Rw::RandWrite | Rw::RandRw => o.limit_ns(),
                })
                .sum();
            let reach = Reach {
                until_ns: started
                    .saturating_add(cx.budget_ns)
                    .saturating_sub(later)
                    .saturating_sub((cost.restore_s() * 1e9) as u64),
                after: if o.rw == Rw::Write { cost::AFTER_WRITE } else { 0.0 },
            };
            let test = run_counted(cx.target, &o, (i, n), cx.progress, reach)?;
            cost.learn(&o, &test);
            tests.push(test);
        }
        let (mut classes, class_figures) = match &self.medium.not_flash {
            None => classes::verdicts(&tests),
            Some(_) => Default::default(),
        };
        if cut {
            // A smaller area spares the card merges: a class met there is
            // not met in the area it is defined in. One missed stands.
            let judged: Vec<classes::SdClass> = classes::with_random_writes()
                .filter(|c| classes.get(c) == Some(&true))
                .collect();
            for c in &judged {
                classes.remove(c);
            }
            let judged: Vec<String> = judged.iter().map(|c| format!("{c}-style")).collect();
            if !judged.is_empty() {
                notes.push(format!(
                    "{} not judged: met in the smaller random-write area, which spares the card merges",
                    judged.join(", ")
                ));
            }
        }
        if let (None, Some(lost)) = (&self.medium.not_flash, classes::unjudged(&tests, &classes)) {
            notes.push(format!(
                "{} not judged: a figure {} is a short sample (under {FLOOR_REQUESTS} requests or a \
                 device-second): {}",
                lost.classes.join(", "),
                if lost.classes.len() == 1 {
                    "it needs"
                } else {
                    "they need"
                },
                lost.samples.join(", ")
            ));
        }
        if let (None, Some(one)) = (&self.medium.not_flash, classes::one_point(&tests)) {
            let names: Vec<String> = one.classes.iter().map(|c| format!("{c}-style")).collect();
            notes.push(format!(
                "{} not judged: one point of {} decides {}, {:.1} MB/s against {:.1} MB/s at the next slowest (one \
                 slow stretch, which another run may not meet)",
                names.join(", "),
                one.test,
                if names.len() == 1 { "it" } else { "them" },
                one.slowest,
                one.next
            ));
        }
        Ok(BenchResult {
            tests,
            classes,
            class_figures,
            not_flash: self.medium.not_flash.clone(),
            notes,
        })
    }
    fn record(out: &BenchResult, results: &mut super::Results) {
        results.bench.set(out.clone());
    }
}

/// The presets: named sets of tests, each as (rw, bs, qd, limit, area).
/// The area is `None` for the command's default area.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Preset {
    /// Under a minute on a typical card: sequential 1 MiB read and write,
    /// random 4 KiB read and write (in 64 MiB, as a1), 5 device-seconds each.
    Quick,
    /// CrystalDiskMark's and KDiskMark's default set: SEQ1M Q8T1, SEQ1M
    /// Q1T1, RND4K Q32T1, RND4K Q1T1, each read and write, 5 s each.
    Cdm,
    /// The shape of Raspberry Pi's agnostics A1 test: 512 KiB sequential
    /// write, then 4 KiB random write and read at queue depth 4, 10 s each,
    /// in a 64 MiB area.
    A1,
    /// Sustained sequential writes across many AUs, in the spirit of the SD
    /// speed classes' recording units: 512 KiB writes (the largest
    /// recording unit of the SD spec's speed-class tables) over 1 GiB (256
    /// AUs of 4 MiB, far past any cache), 30 device-seconds.
    Sdspeed,
    /// All of the above.
    Full,
}

/// A test as a preset or the command line names it: (rw, block size,
/// queue depth, limit, area length; None for the command's default area).
pub type Spec = (Rw, u64, usize, Limit, Option<u64>);

/// The options of `tests`, each in the area `area_of` gives for its
/// length, seeded 1, 2, ... in order (a rerun writes the same data).
pub fn options_for(tests: Vec<Spec>, area_of: impl Fn(Option<u64>) -> (u64, u64), rwmix_read: u8) -> Vec<Options> {
    tests
        .into_iter()
        .enumerate()
        .map(|(i, (rw, bs, qd, limit, area))| Options {
            rw,
            bs,
            qd,
            limit,
            area: area_of(area),
            rwmix_read,
            seed: 1 + i as u64,
        })
        .collect()
}

/// A preset's tests.
pub fn preset(p: Preset) -> Vec<Spec> {
    const S5: Limit = Limit::DeviceNs(5_000_000_000);
    const S10: Limit = Limit::DeviceNs(10_000_000_000);
    const M: u64 = 1 << 20;
    const K4: u64 = 4096;
    match p {
        // The random tests in agnostics' 64 MiB, as the a1 preset: the
        // area the A1 verdict is read in, so quick's verdict agrees with a1's.
        // The sequential ones in the same 64 MiB: the journal reads what the area held before the
        // first write and the restore writes back what changed, so a 256
        // MiB area cost a slow host (at91-mci, ~3 MB/s) three device-minutes
        // besides the 20 s of tests.
        Preset::Quick => vec![
            (Rw::Read, M, 1, S5, Some(64 * M)),
            (Rw::Write, M, 1, S5, Some(64 * M)),
            (Rw::RandRead, K4, 1, S5, Some(64 * M)),
            (Rw::RandWrite, K4, 1, S5, Some(64 * M)),
        ],
        Preset::Cdm => [(Rw::Read, Rw::Write), (Rw::RandRead, Rw::RandWrite)]
            .into_iter()
            .flat_map(|(r, w)| {
                let (bs, depths) = if r == Rw::Read { (M, [8, 1]) } else { (K4, [32, 1]) };
                depths
                    .into_iter()
                    .flat_map(move |q| [(r, bs, q, S5, None), (w, bs, q, S5, None)])
            })
            .collect(),
        Preset::A1 => vec![
            (Rw::Write, 512 << 10, 1, S10, Some(64 * M)),
            (Rw::RandWrite, K4, 4, S10, Some(64 * M)),
            (Rw::RandRead, K4, 4, S10, Some(64 * M)),
        ],
        Preset::Sdspeed => vec![(Rw::Write, 512 << 10, 1, Limit::DeviceNs(30_000_000_000), Some(1 << 30))],
        Preset::Full => [Preset::Quick, Preset::Cdm, Preset::A1, Preset::Sdspeed]
            .into_iter()
            .flat_map(preset)
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;
    use crate::sim::profiles::build;
    use classes::SdClass;
    use result::DISTRIBUTION_SHARES;

    /// quick on a card behind a slow host (at91-mci, about 2 MB/s) with
    /// `budget_s`: the result, and the ranges the journal took.
    fn quick_within(budget_s: f64) -> (BenchResult, crate::safety::Outcome) {
        let card = SimTarget::from_spec("sim:demo,host=at91-mci").unwrap();
        let d = card.description().clone();
        let args = BenchArgs {
            preset: Some(Preset::Quick),
            rwmix_read: 50,
            ..Default::default()
        };
        let test = Bench {
            options: options_of(&d, &args),
            medium: Default::default(),
        };
        let ranges = super::super::Test::plan(&test, &d).unwrap();
        // The 64 MiB area in pieces of 1 MiB for the sequential write and
        // of one request for the random one, each journalled on its own.
        assert_eq!(ranges.len(), 64 + 16384);
        assert_eq!(ranges.iter().filter(|r| r.len == 1 << 20).count(), 64);
        assert_eq!(ranges.iter().filter(|r| r.len == 4096).count(), 16384);
        let ranges = crate::safety::ranges::normalize(ranges, d.size_bytes, 512).unwrap();
        assert_eq!(
            ranges.len(),
            64,
            "pieces that overlap merge (a random write in a sequential one's area journals its 1 MiB), pieces \
             that touch stay apart"
        );
        let mut p = crate::safety::PreservingTarget::in_memory(Box::new(card), ranges).unwrap();
        let never = || None;
        let mut cx = super::super::Cx {
            target: &mut p,
            progress: &(),
            cancelled: &never,
            budget_ns: (budget_s * 1e9) as u64,
        };
        let r = super::super::Test::run(&test, &mut cx).unwrap();
        let (_, outcome) = p.finish();
        (r, outcome.unwrap())
    }

    #[test]
    fn a_short_budget_cuts_the_random_write_area_and_says_so() {
        // Behind at91-mci a 1 MiB write takes 2.5 s: its 64 requests, and
        // what they cost to put back, need a budget of an hour.
        let (full, all) = quick_within(3600.0);
        assert!(full.notes.is_empty(), "{:?}", full.notes);
        assert!(
            full.tests
                .iter()
                .all(|t| !t.short_sample && t.requests >= FLOOR_REQUESTS)
        );
        assert_eq!(all.ranges_touched, 64, "the random writes cover the whole area");
        let (short, some) = quick_within(40.0);
        // The sequential tests end short of their floor where the budget
        // leaves them no more (the read went on to 24 s, the write had
        // none left): marked, and no class is judged from them.
        let short_ones: Vec<bool> = short.tests.iter().map(|t| t.short_sample).collect();
        assert_eq!(short_ones, [true, true, false, false]);
        assert!(short.tests[0].device_s() < 30.0, "{}", short.tests[0].device_s());
        assert!(short.classes.is_empty(), "{:?}", short.classes);
        assert_eq!(short.notes.len(), 2, "{:?}", short.notes);
        assert!(
            short.notes[1].ends_with("is a short sample (under 64 requests or a device-second): write 1 MiB Q1"),
            "{}",
            short.notes[1]
        );
        assert!(
            short.notes[0].starts_with("randwrite 4 KiB ran in 4 MiB of the 64 MiB area"),
            "{}",
            short.notes[0]
        );
        // The sequential write's few MiB and the random write's one piece.
        assert!(some.ranges_touched < 6, "{}", some.ranges_touched);
        assert!(some.bytes_restored < all.bytes_restored / 2);
        // The journal's reads are not the tests' time: the sequential rates
        // agree with the full run's within the card's jitter.
        for i in [0, 1] {
            let (a, b) = (full.tests[i].bytes_per_sec, short.tests[i].bytes_per_sec);
            assert!((a / b - 1.0).abs() < 0.25, "{}: {a} vs {b}", full.tests[i].name);
        }
    }

    #[test]
    fn a_class_met_in_a_cut_area_is_not_judged() {
        let mut card = SimTarget::from_spec("sim:demo").unwrap();
        let d = card.description().clone();
        let test = Bench {
            options: options_of(
                &d,
                &BenchArgs {
                    preset: Some(Preset::Quick),
                    ..Default::default()
                },
            ),
            medium: Default::default(),
        };
        let full = crate::measure::run_alone(&test, &mut card).unwrap();
        assert_eq!(
            full.classes.get(&SdClass::A1),
            Some(&true),
            "sim:demo meets A1 in 64 MiB"
        );
        let mut card = SimTarget::from_spec("sim:demo").unwrap();
        let ranges = super::super::Test::plan(&test, &d).unwrap();
        let ranges = crate::safety::ranges::normalize(ranges, d.size_bytes, 512).unwrap();
        let mut p = crate::safety::PreservingTarget::in_memory(Box::new(&mut card), ranges).unwrap();
        let never = || None;
        let mut cx = super::super::Cx {
            target: &mut p,
            progress: &(),
            cancelled: &never,
            budget_ns: 12_000_000_000,
        };
        let r = super::super::Test::run(&test, &mut cx).unwrap();
        assert!(r.notes[0].contains("ran in"), "{:?}", r.notes);
        assert_eq!(r.classes.get(&SdClass::A1), None, "{:?}", r.classes);
        assert!(r.notes[1].starts_with("A1-style not judged"), "{:?}", r.notes);
        // A class missed stands: A2 needs 2000 write IOPS.
        assert_eq!(r.classes.get(&SdClass::A2), Some(&false));
    }

    fn bench(profile: &str, extra: &[(&str, &str)], rw: Rw, bs: u64, qd: usize) -> BenchTest {
        let mut p = build(profile).unwrap();
        for (k, v) in extra {
            p.set(k, v).unwrap();
        }
        let area = (p.capacity / 2 / p.au_size * p.au_size, 64 << 20);
        let o = Options {
            rw,
            bs,
            qd,
            limit: Limit::Bytes(8 << 20),
            area,
            rwmix_read: 70,
            seed: 1,
        };
        let test = Bench {
            options: vec![o],
            medium: Default::default(),
        };
        crate::measure::run_alone(&test, &mut SimTarget::new(profile, p))
            .unwrap()
            .tests
            .remove(0)
    }

    #[test]
    fn figures_agree_with_each_other() {
        for rw in [Rw::Read, Rw::Write, Rw::RandRead, Rw::RandWrite, Rw::RandRw] {
            let b = bench("demo", &[("jitter", "0.2")], rw, 4096, 4);
            let want = b.iops * 4096.0;
            assert!(
                (b.bytes_per_sec - want).abs() <= 1e-6 * want,
                "{rw:?}: {} vs {want}",
                b.bytes_per_sec
            );
            let l = &b.latency_ns;
            assert!(
                l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max,
                "{rw:?}: {l:?}"
            );
            assert!(
                l.mean > 1000.0 && l.p50 > 1000,
                "{rw:?}: a simulated request takes microseconds: {l:?}"
            );
            assert_eq!(b.requests, 2048);
            assert_eq!(b.timeline.len() as u64, TIMELINE_POINTS);
        }
    }

    #[test]
    fn the_distribution_is_kept_in_order_and_agrees_with_the_percentiles() {
        let b = bench("demo", &[("jitter", "0.2")], Rw::RandRead, 4096, 1);
        let l = &b.latency_ns;
        let shares: Vec<f64> = l.distribution.iter().map(|q| q.share).collect();
        assert_eq!(shares, DISTRIBUTION_SHARES, "every share, in order");
        assert!(l.distribution.windows(2).all(|w| w[0].ns <= w[1].ns), "{l:?}");
        let at = |share: f64| l.distribution.iter().find(|q| q.share == share).map(|q| q.ns);
        assert_eq!((at(0.5), at(0.9), at(0.999)), (Some(l.p50), Some(l.p90), Some(l.p999)));
        assert!(
            l.distribution[0].ns < l.p50,
            "the fastest request, below the median: {l:?}"
        );
    }

    #[test]
    fn a_test_limited_by_time_runs_that_long() {
        let p = build("demo").unwrap();
        let o = Options {
            rw: Rw::RandRead,
            bs: 4096,
            qd: 1,
            limit: Limit::DeviceNs(2_000_000_000),
            area: (1 << 30, 64 << 20),
            rwmix_read: 70,
            seed: 3,
        };
        let test = Bench {
            options: vec![o],
            medium: Default::default(),
        };
        let b = crate::measure::run_alone(&test, &mut SimTarget::new("demo", p))
            .unwrap()
            .tests
            .remove(0);
        let spent = b.requests as f64 / b.iops;
        // Whole batches, each about a twentieth of the time: past the limit
        // by less than one.
        assert!((2.0..2.15).contains(&spent), "{spent} s for a 2 s runtime");
        assert!((18..=24).contains(&b.timeline.len()), "{} points", b.timeline.len());
    }

    #[test]
    fn presets_have_their_shapes() {
        let cdm = preset(Preset::Cdm);
        assert_eq!(cdm.len(), 8);
        assert_eq!((cdm[0].0, cdm[0].1, cdm[0].2), (Rw::Read, 1 << 20, 8));
        assert_eq!((cdm[7].0, cdm[7].1, cdm[7].2), (Rw::RandWrite, 4096, 1));
        let a1 = preset(Preset::A1);
        assert!(
            a1.iter()
                .all(|t| t.4 == Some(64 << 20) && t.3 == Limit::DeviceNs(10_000_000_000))
        );
        assert_eq!(a1.iter().map(|t| t.2).collect::<Vec<_>>(), [1, 4, 4]);
        assert_eq!(preset(Preset::Quick).len(), 4);
    }

    #[test]
    fn host_command_queueing_doubles_emmc_random_writes() {
        // Wang, MMC software queue: with sdhci-hs400-hsq 4 KiB random writes come out about
        // double those without.
        let plain = bench("emmc-hs400", &[("host", "sdhci-hs400")], Rw::RandWrite, 4096, 32);
        let hsq = bench("emmc-hs400", &[("host", "sdhci-hs400-hsq")], Rw::RandWrite, 4096, 32);
        let gain = hsq.iops / plain.iops;
        assert!(
            (1.6..2.6).contains(&gain),
            "hsq {} vs {} IOPS: {gain:.2}x",
            hsq.iops,
            plain.iops
        );
    }

    /// The a1 preset as `bench --preset a1` runs it: 64 MiB from the middle.
    fn a1_classes(profile: &str) -> BenchResult {
        let p = build(profile).unwrap();
        let card = SimTarget::new(profile, p.clone());
        let middle = p.capacity / 2 / 512 * 512;
        let options = options_for(preset(Preset::A1), |area| (middle, area.unwrap()), 0);
        let mut card = card;
        let test = Bench {
            options,
            medium: Default::default(),
        };
        crate::measure::run_alone(&test, &mut card).unwrap()
    }

    /// Whether the bench judged `class` met, with its figures where not as
    /// expected.
    fn judged(r: &BenchResult, class: SdClass, met: bool) {
        assert_eq!(
            r.classes.get(&class),
            Some(&met),
            "{class:?}: {:#?}",
            r.class_figures.get(&class)
        );
    }

    #[test]
    fn the_a1_verdict_is_met_by_demo_and_not_by_kingston() {
        let demo = a1_classes("demo");
        judged(&demo, SdClass::A1, true);
        // demo's random writes are A1's, not A2's.
        judged(&demo, SdClass::A2, false);
        let k = a1_classes("kingston-sa04g");
        judged(&k, SdClass::A1, false);
        // The simulated Kingston writes 512 KiB at 5.3 MB/s: C4, not C6.
        judged(&k, SdClass::C4, true);
        judged(&k, SdClass::C10, false);
    }

    /// A card that serves one request at a time, kept 4 deep: each request
    /// waits for the three before it, and its latency says so (Little's
    /// law: requests outstanding = IOPS x mean latency).
    #[test]
    fn latency_counts_the_wait_behind_a_single_request_host() {
        for qd in [1usize, 4, 16] {
            let t = bench("demo", &[], Rw::RandRead, 4096, qd);
            let outstanding = t.iops * t.latency_ns.mean / 1e9;
            assert!(
                (0.85 * qd as f64..=1.01 * qd as f64).contains(&outstanding),
                "Q{qd}: {} IOPS x {} ns = {outstanding}",
                t.iops,
                t.latency_ns.mean
            );
        }
    }
}
