//! `open-au`: how many allocation units the card keeps open, for in-order and
//! for random-order writes (flashbench --open-au [--random]; Bergmann's
//! open-AU table, calibration/bergmann_open_au.csv).
//!
//! flashbench writes N AUs interleaved, whole, and the user sweeps N by hand;
//! past the card's limit every write closes an AU (copy the rest, erase), and
//! a run takes 25 minutes. Here one pool of `max + 1` AUs serves every count:
//! N goes 1, 2, 3... and each count adds one AU to the round-robin, whose
//! writes go on where that AU's last one ended (in order, or the next of its
//! shuffled positions), so no AU is ever written whole. Only a small region
//! at the start of each AU is written ([`REGION_POSITIONS`] chunks), with the
//! bytes it already held (read just before): the card does the same work,
//! and there is nothing to write back afterwards. A count collapses when its
//! writes turn into merges; the sweep stops there, or at its device-time
//! budget, and says which.

mod command;
mod evidence;
mod result;
mod show;
mod sweep;

pub use command::Args;
pub use result::{Level, OpenAuResult, Run, Sweep, cross_check};
pub use show::Presenter;

use super::MeasureError;
use crate::measure::registry::Settle;
use crate::safety::ranges::Range;
use crate::targets::Target;

/// AUs between two used ones (flashbench leaves 12; one is enough to keep the
/// end of one AU from looking like the start of the next).
const SPACING: u64 = 2;
/// Chunks written at the start of each AU, at most: each count gives each of
/// its AUs a few writes, so over a sweep to 32 the first AU takes ~130.
pub const REGION_POSITIONS: u64 = 256;
/// Bytes of each AU's region, at most (chunks of large pages get fewer
/// positions): what the journal holds per AU.
const REGION_BYTES: u64 = 8 << 20;

#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub erase: u64,
    /// Chunk of the sweep: the page, so a write is one page program.
    pub chunk: u64,
    /// Largest N tried.
    pub max: u64,
    pub linear: bool,
    pub random: bool,
    /// After the sweep, every chunk size from the erase size down at one
    /// AU, at the limit and one past it, like flashbench's table.
    pub full: bool,
}

/// Fewest chunks per AU: with few, a write is a large share of the AU and
/// an eviction's copy costs little next to it, so the collapse is faint (a
/// 16 KiB-AU card of 512-byte pages written in 4 KiB chunks slows by a
/// fifth; in 512-byte chunks, tenfold).
const MIN_POSITIONS: u64 = 64;

/// The sweep chunk: the page (16 KiB when unknown), at least a block, at
/// most a quarter AU: each write is one page program, and a merge copies
/// the most pages next to it. Halved, down to the block, while the AU holds
/// fewer than [`MIN_POSITIONS`], but below a known page only in an AU of
/// fewer than 16 pages: a part of a page costs a read-modify-write, which
/// makes a merge look cheap where it copies many pages (a 2 MiB AU of 64
/// KiB pages in 32 KiB chunks collapsed by only 1.55 times), while in an AU
/// of 8 pages over a slow host (cf-simpletech-oem) only sector-sized writes
/// are cheap enough next to a merge to show it.
pub fn default_chunk(erase: u64, page: Option<u64>, block: u64) -> u64 {
    let mut c = page.unwrap_or(16 << 10).max(block).min(erase / 4).max(block);
    let floor = match page {
        Some(p) if erase / p.max(1) >= 16 => p.max(block),
        _ => block,
    };
    while erase / c < MIN_POSITIONS && c / 2 >= floor && (c / 2).is_multiple_of(block) {
        c /= 2;
    }
    c
}

/// Chunks of each AU's region: [`REGION_POSITIONS`], fewer for large chunks
/// ([`REGION_BYTES`]) and small AUs (the whole AU), at least 2.
fn positions(o: &Options) -> u64 {
    (o.erase / o.chunk)
        .min(REGION_POSITIONS)
        .min((REGION_BYTES / o.chunk).max(2))
        .max(2)
}

/// The first AU used: past flashbench's 16 MiB and any FAT area (up to 8 AUs).
fn base(erase: u64) -> u64 {
    (16u64 << 20).max(8 * erase).next_multiple_of(erase)
}

/// Most open AUs a sweep tries. the best card of Bergmann's MMC quirks post
/// keeps 20 open; a card keeping hundreds would be page-mapped, which the
/// sweep reports as "no limit" long before this.
pub const MAX_OPEN_AUS: u64 = 1024;

/// The pool: the AUs the sweeps write (byte offsets), from [`base`] every
/// [`SPACING`]th AU, skipping any AU a range of `avoid` touches, up to
/// `o.max`; fewer where the target ends first (each AU needs its gap).
///
/// `avoid` is what earlier steps of the same run wrote: a card keeps those
/// AUs open for random writes, and in-order writes to such an AU take no
/// in-order slot. au's search regions, a stride apart, are every other AU
/// on a card of 2 MiB AUs and 192 MiB, as open-au's are: the in-order sweep
/// then counted 25 where the card keeps 18, at confidence 0.95.
pub fn pool(size: u64, o: &Options, avoid: &[Range]) -> Vec<u64> {
    if o.erase == 0 || o.erase > super::MAX_ERASE {
        return Vec::new();
    }
    let from = base(o.erase);
    let step = SPACING * o.erase;
    let touched = |a: u64| avoid.iter().any(|r| r.touches(a, o.erase));
    (0u64..)
        .map_while(|k| k.checked_mul(step)?.checked_add(from))
        .take_while(|a| a.checked_add(step).is_some_and(|end| end <= size))
        .filter(|&a| !touched(a))
        .take(o.max.max(1) as usize)
        .collect()
}

/// The byte ranges the test may write (the regions of [`pool`]'s AUs,
/// whole with --full), declared before it starts; refused when they pass
/// the end.
pub fn plan(size: u64, o: &Options, avoid: &[Range]) -> Result<Vec<Range>, MeasureError> {
    super::check_plan(o.erase, o.chunk, o.max, MAX_OPEN_AUS)?;
    let aus = pool(size, o, avoid);
    if (aus.len() as u64) < o.max.max(1) {
        let fits = aus.len() as u64;
        let from = base(o.erase);
        // check_plan bounds max (1024) and erase (1 GiB): far inside u64.
        let need = o.max.max(1) * SPACING * o.erase;
        return Err(MeasureError::DoesNotFit {
            // Where not even one AU fits, the count is not the cause: name
            // none (a small card's default is 1, which nobody typed).
            what: if fits == 0 {
                "open-au (one AU and the gap after it)".to_string()
            } else {
                format!("open-au with --max {}", o.max)
            },
            from,
            need,
            size,
            fix: match fits {
                0 => format!(
                    "the sweep's AU of {} (and the gap after it) does not fit past the first {}: use a larger \
                     target or a smaller --erase-size",
                    crate::units::Iec(o.erase),
                    crate::units::Iec(from)
                ),
                n => format!("the largest --max that fits is {n} (or use a larger target)"),
            },
        });
    }
    let len = if o.full { o.erase } else { positions(o) * o.chunk };
    Ok(aus.into_iter().map(|offset| Range { offset, len }).collect())
}

/// The largest `--max` (up to `o.max`, at most [`MAX_OPEN_AUS`]) that fits,
/// for a small card's default and the refusal's hint; 0 when none does.
pub fn largest_max(size: u64, o: &Options, avoid: &[Range]) -> u64 {
    let most = Options {
        max: o.max.min(MAX_OPEN_AUS),
        ..*o
    };
    pool(size, &most, avoid).len() as u64
}

/// Run the sweep(s) over the ranges from [`plan`] (writes to anything else
/// are refused by the preserving target the test is handed).
pub struct OpenAu {
    pub options: Options,
    pub medium: super::Medium,
    /// How sure the erase size is (align's confidence; 1 when the user gave
    /// it): the limits count AUs of that size, so they are never surer.
    pub erase_confidence: f64,
    /// What earlier steps of the run wrote: the pool keeps clear of it
    /// (see [`pool`]).
    pub avoid: Vec<Range>,
}

/// flashbench users sweep up to a few dozen; the most any published card
/// keeps is 20 (Arnd Bergmann's "MMC quirks relating to
/// performance/lifetime", linaro-dev, 2011: a SanDisk part).
pub const DEFAULT_MAX_OPEN_AUS: u64 = 32;

/// What the user chose of a sweep (each None or false: the default).
#[derive(Debug, Clone, Copy, Default)]
pub struct Choices {
    pub chunk: Option<u64>,
    pub max: Option<u64>,
    pub random_only: bool,
    pub linear_only: bool,
    pub full: bool,
}

impl OpenAu {
    /// The sweep on geometry `g`: the chunk from the page, and without a
    /// --max the largest sweep up to [`DEFAULT_MAX_OPEN_AUS`] that fits (a
    /// small card gets that instead of a refusal).
    pub fn on(g: &super::session::Geometry, c: Choices, avoid: Vec<Range>, medium: super::Medium) -> OpenAu {
        let mut o = Options {
            erase: g.erase,
            chunk: c.chunk.unwrap_or_else(|| default_chunk(g.erase, g.page, g.block)),
            max: c.max.unwrap_or(DEFAULT_MAX_OPEN_AUS),
            linear: !c.random_only,
            random: !c.linear_only,
            full: c.full,
        };
        if c.max.is_none() {
            o.max = largest_max(g.size, &o, &avoid).max(1);
        }
        OpenAu {
            options: o,
            medium,
            erase_confidence: g.erase_confidence,
            avoid,
        }
    }
}

impl super::Test for OpenAu {
    const KEY: &'static str = "open_au";
    type Output = OpenAuResult;
    fn plan(&self, d: &crate::targets::TargetDescription) -> Result<Vec<Range>, MeasureError> {
        super::check_blocks(self.options.erase, self.options.chunk, d)?;
        plan(d.size_bytes, &self.options, &self.avoid)
    }
    fn run(&self, cx: &mut super::Cx<'_>) -> Result<OpenAuResult, MeasureError> {
        let aus = pool(cx.target.description().size_bytes, &self.options, &self.avoid);
        let mut r = run(cx.target, self.options, aus, cx.progress, cx.budget_ns)?;
        let sweeps = [&mut r.linear, &mut r.random].into_iter().flatten();
        let mut capped = false;
        for s in sweeps.filter(|s| s.confidence > self.erase_confidence) {
            s.confidence = self.erase_confidence;
            capped = true;
        }
        if capped {
            r.notes.push(format!(
                "the limits count AUs of {}, an erase size align gave with confidence {:.2}: they are no surer",
                crate::units::Iec(self.options.erase),
                self.erase_confidence
            ));
        }
        if let Some(why) = &self.medium.not_flash {
            // The runs stay in the table; a slowdown here is the medium's,
            // and the notes that read the rows as flash's go.
            r.notes.clear();
            r.notes.push(format!(
                "no open-AU limit is claimed: the target is {why}; a slowdown in the table is the medium's"
            ));
            r.not_flash = Some(why.clone());
        }
        r.settle();
        Ok(r)
    }
    fn record(out: &OpenAuResult, results: &mut super::Results) {
        results.open_au.set(out.clone());
    }
}

/// Both sweeps (and --full's table) within `budget_ns` of device time.
pub fn run(
    t: &mut dyn Target,
    o: Options,
    aus: Vec<u64>,
    progress: &dyn super::Progress,
    budget_ns: u64,
) -> Result<OpenAuResult, MeasureError> {
    let mut s = sweep::Sweeper::new(t, progress, o, aus);
    // In order first, within half the budget when both run (it is done
    // sooner, and what it leaves is the random sweep's).
    let half = if o.linear && o.random { budget_ns / 2 } else { budget_ns };
    let mut linear = if o.linear { Some(s.sweep(false, half)?) } else { None };
    let random = if o.random {
        Some(s.sweep(true, budget_ns)?)
    } else {
        None
    };
    let mut notes = Vec::new();
    if let (Some(lin), Some(rnd)) = (linear.as_mut(), &random)
        && let Some(k) = lin.max_open_aus
        && rnd.max_open_aus.is_none()
        && rnd.claim.claimed
        && rnd.stopped_by_budget_s.is_none()
        && rnd.tried_up_to > k
    {
        // Random-mode AUs are open AUs too, so a card that keeps more open
        // for random writes than for in-order ones has no in-order limit:
        // what slowed the in-order runs is the interleaving itself (a
        // page-mapped FTL pays a map update whenever writes jump).
        notes.push(format!(
            "in-order writes slow down from {} AUs on, but random writes do not collapse up to {}: \
             that is the cost of interleaving (a page-mapped FTL), not an open-AU limit",
            k + 1,
            rnd.tried_up_to
        ));
        lin.max_open_aus = None;
        lin.tried_up_to = rnd.tried_up_to;
    }
    let mut random = random;
    if o.full {
        let deadline = budget_ns;
        if let Some(lin) = linear.as_mut() {
            let lo = lin.max_open_aus.unwrap_or(lin.tried_up_to);
            lin.runs.extend(s.table(false, lo, deadline)?);
        }
        if let Some(rnd) = random.as_mut() {
            let lo = rnd.max_open_aus.unwrap_or(rnd.tried_up_to);
            rnd.runs.extend(s.table(true, lo, deadline)?);
        }
    }
    let mut r = OpenAuResult {
        not_flash: None,
        erase_size_bytes: o.erase,
        chunk_bytes: o.chunk,
        linear,
        random,
        notes,
    };
    // A sweep the budget ended claims nothing (its claim says so).
    r.settle();
    Ok(r)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;
    use crate::sim::profiles::build;

    /// The worst estimate of the step's length (spent + left) against its
    /// real length, either way, from 10% on (where the bar shows an ETA).
    fn worst_estimate(profile: &str) -> (f64, usize) {
        let params = build(profile).unwrap();
        let o = both_sweeps(&params, false);
        let mut card = SimTarget::new(profile, params);
        let aus = pool(crate::targets::Target::description(&card).size_bytes, &o, &[]);
        let said = crate::measure::said::Said::default();
        let t0 = crate::targets::Target::device_time_ns(&card);
        run(&mut card, o, aus, &said, crate::measure::budget_ns(None)).unwrap();
        said.worst((crate::targets::Target::device_time_ns(&card) - t0) as f64)
    }

    /// Both sweeps on one bar, in device time: one count past the card's
    /// limit costs as much as all the counts before it (the bar had waited
    /// at 79% for 9 of the step's 18 s on an emulated demo card), so the
    /// step estimates what is left from what it has seen, a merge's cost
    /// once it saw one. From 10% on, the step's length as estimated stays
    /// within these factors of what it took (the goal is 2; where the limit
    /// lies is not known until it shows, see `left_between`).
    #[test]
    fn the_estimate_left_stays_near_the_truth() {
        let got: Vec<(&str, f64)> = ["demo", "kingston-sa04g", "toshiba-7au", "sandisk-20au", "sandisk-2gb"]
            .into_iter()
            .map(|p| {
                let (worst, shown) = worst_estimate(p);
                assert!(shown > 30, "{p}: {shown} estimates");
                (p, (worst * 100.0).round() / 100.0)
            })
            .collect();
        let want = [
            ("demo", 2.64),
            ("kingston-sa04g", 2.43),
            ("toshiba-7au", 1.54),
            ("sandisk-20au", 2.02),
            ("sandisk-2gb", 1.38),
        ];
        assert_eq!(got, want);
    }

    /// Both sweeps up to 32 AUs on the card's own AUs, in probe's chunks.
    fn both_sweeps(params: &crate::sim::params::Params, full: bool) -> Options {
        Options {
            erase: params.au_size,
            chunk: default_chunk(params.au_size, Some(params.page_size), 512),
            max: 32,
            linear: true,
            random: true,
            full,
        }
    }

    fn measure(profile: &str, full: bool) -> (OpenAuResult, f64) {
        let params = build(profile).unwrap();
        let test = OpenAu {
            options: both_sweeps(&params, full),
            medium: Default::default(),
            erase_confidence: 1.0,
            avoid: Vec::new(),
        };
        let mut card = SimTarget::new(profile, params);
        let r = crate::measure::run_alone(&test, &mut card).unwrap();
        (r, crate::targets::Target::device_time_ns(&card) as f64 / 1e9)
    }

    #[test]
    fn kingston_keeps_three_open_both_ways_within_three_device_minutes() {
        let (r, secs) = measure("kingston-sa04g", false);
        assert_eq!(r.linear.as_ref().unwrap().max_open_aus, Some(3));
        assert_eq!(r.random.as_ref().unwrap().max_open_aus, Some(3));
        assert!(secs < 180.0, "{secs} s");
        assert!(r.linear.unwrap().runs.iter().any(|run| run.aborted));
    }

    #[test]
    fn refuses_what_does_not_fit() {
        let o = Options {
            erase: 4 << 20,
            chunk: 16 << 10,
            max: 32,
            linear: true,
            random: true,
            full: false,
        };
        // Eight AUs (32 MiB), then 32 AUs of 4 MiB each followed by a gap:
        // 288 MiB.
        assert!(matches!(plan(287 << 20, &o, &[]), Err(MeasureError::DoesNotFit { .. })));
        assert!(plan(288 << 20, &o, &[]).is_ok());
        let m = largest_max(256 << 20, &o, &[]);
        assert_eq!(m, 28);
        assert!(plan(256 << 20, &Options { max: m, ..o }, &[]).is_ok());
        assert!(plan(256 << 20, &Options { max: m + 1, ..o }, &[]).is_err());
        assert!(
            plan(64 << 30, &Options { chunk: 3 << 10, ..o }, &[]).is_err(),
            "chunk must divide"
        );
        // A range an earlier step wrote from the end of the pool's second AU
        // (at 40 MiB) into its third (at 48 MiB) costs the pool those two:
        // 288 MiB no longer holds 32.
        let avoid = [Range {
            offset: (43 << 20) - 4096,
            len: (6 << 20) + 8192,
        }];
        let aus = pool(400 << 20, &o, &avoid);
        assert_eq!(aus.len(), 32);
        assert_eq!(&aus[..3], &[32 << 20, 56 << 20, 64 << 20]);
        assert!(
            aus.iter()
                .all(|&a| avoid.iter().all(|r| r.end() <= a || a + o.erase <= r.offset))
        );
        assert!(plan(288 << 20, &o, &avoid).is_err());
        assert_eq!(largest_max(288 << 20, &o, &avoid), 30);
    }
}
