//! `open-au`: how many allocation units the card keeps open, for in-order and
//! for random-order writes (flashbench --open-au [--random], seeds 003/004).
//!
//! flashbench writes N AUs interleaved, chunk by chunk, and the user sweeps N by
//! hand; once N passes the card's limit every write closes an AU (copy the rest,
//! erase) and a run takes 25 minutes. Here N doubles until small-chunk writes
//! collapse, then bisects; a run stops as soon as its mean latency is clearly
//! above the one-AU baseline. Runs write whole AUs, so a finished run leaves its
//! AUs closed; an aborted run leaves them dirty, so later runs use fresh ones.

mod command;
mod show;

pub use command::Args;
pub use show::Entry;

use serde::{Deserialize, Serialize};

use super::MeasureError;
use crate::random::lfsr_positions;
use crate::safety::ranges::Range;
use crate::target::{AlignedBuf, Request, Target, run_all};

/// A run whose writes take this many times what the same positions took with
/// one AU is collapsed; checked as writes come in, so a collapsed run stops
/// early. Below the limit the ratio is 1 (same writes, same state) give or take
/// jitter; past it writes close AUs, tens of times slower (Bradford, Flashbenching: 128 KiB
/// writes fall from 4.5 MB/s to 0.3 MB/s at four Kingston AUs). 1.5, not 2:
/// a card whose writes are slow next to its merges (cf-simpletech-oem: 16 KiB
/// AUs written over PIO) only halves its speed past the limit, while runs
/// below the limit stay within 1.1 of the baseline (the property test's
/// highest on 1,600 cards).
const COLLAPSE: f64 = 1.5;
/// A one-AU write this many times the median one-AU write is housekeeping
/// (a merge, a gap copy), not a plain write.
const HOUSEKEEPING: f64 = 2.0;
/// AUs between two used ones (flashbench leaves 12; one is enough to keep the
/// end of one AU from looking like the start of the next).
const SPACING: u64 = 2;

#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub erase: u64,
    /// Chunk of the sweep: small enough that a collapse is unmistakable.
    pub chunk: u64,
    /// Largest N tried.
    pub max: u64,
    pub linear: bool,
    pub random: bool,
    /// After the sweep, every chunk size from the erase size down at the
    /// limit and one past it, like flashbench's table.
    pub full: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Level {
    pub chunk_bytes: u64,
    /// flashbench's figure: chunk over mean write latency.
    pub bytes_per_sec: f64,
    pub writes: usize,
    /// This chunk size clearly collapsed against the one-AU run.
    pub collapsed: bool,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Run {
    /// A second pass at the limit, on fresh AUs, to confirm it.
    #[serde(default)]
    pub confirmation: bool,
    pub open_aus: u64,
    /// Stopped early because it had clearly collapsed.
    pub aborted: bool,
    pub collapsed: bool,
    pub levels: Vec<Level>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Sweep {
    /// Null when nothing collapsed up to `tried_up_to` (a page-mapped FTL).
    pub max_open_aus: Option<u64>,
    pub tried_up_to: u64,
    pub runs: Vec<Run>,
    /// How sure the verdict is (a limit, or no limit up to `tried_up_to`):
    /// the limit was measured a second time on fresh AUs, and both passes
    /// must agree for a confident answer.
    #[serde(default)]
    pub confidence: f64,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OpenAuResult {
    /// Why this target cannot show flash behaviour; then no limit is claimed.
    #[serde(default)]
    pub not_flash: Option<String>,
    pub erase_size_bytes: u64,
    pub chunk_bytes: u64,
    pub linear: Option<Sweep>,
    pub random: Option<Sweep>,
    /// How the sweeps were read, where it needs saying.
    pub notes: Vec<String>,
}

/// fat's slot method measures the random-write limit another way: 4 KiB
/// writes, two per AU visit, so once the limit is passed every visit merges
/// a whole AU. flashbench's random sweep, one chunk per visit, merges about
/// once per round at one AU past the limit, a faint collapse that noise can
/// move to the next count. Where fat's confirmed answer (r fit, r + 1
/// overflow) differs, it becomes the verdict, and a note gives both: on
/// generated cards the two disagreed on 10 of 300 and fat was right each
/// time. The sweep's rows stay as measured.
pub fn cross_check(r: &mut OpenAuResult, fat_limit: u64) {
    let Some(sw) = r.random.as_mut() else { return };
    let (said, contradicts) = match sw.max_open_aus {
        Some(n) => (format!("collapse at {}", n + 1), n != fat_limit),
        None => (
            format!("no collapse up to {}", sw.tried_up_to),
            fat_limit < sw.tried_up_to,
        ),
    };
    if contradicts {
        sw.max_open_aus = Some(fat_limit);
        sw.confidence = 0.9;
        r.notes.push(format!(
            "random: the sweep alone says {said}; fat's slot test (4 KiB writes, two per AU visit, where \
             every visit merges once the card's random-write slots are full) found that {fat_limit} AU{} \
             fit and {} overflow them, and that is the verdict",
            if fat_limit == 1 { "" } else { "s" },
            fat_limit + 1
        ));
    }
}

/// Most chunk positions one AU is split into: flashbench's LFSR reaches
/// 2^16, but past a few thousand writes per AU a run only costs more device
/// time without telling more.
const MAX_POSITIONS: u64 = 4096;

/// Fewest chunk positions per AU: with few, a write is a large share of the
/// AU and an eviction's copy costs little next to it, so the collapse is
/// faint (a 16 KiB-AU CompactFlash card writing 2 KiB pages slows by a fifth).
const MIN_POSITIONS: u64 = 64;

/// The sweep chunk: the page (16 KiB when unknown), at least a block, at most
/// a quarter AU, doubled while the AU holds more than [`MAX_POSITIONS`] of
/// them. Whole pages where the AU holds [`MIN_POSITIONS`] of them: a chunk
/// that splits pages costs a read-modify-write at its edges and makes each
/// AU's log fill at a different write. Smaller AUs get smaller chunks, down
/// to the block, so the collapse shows.
pub fn default_chunk(erase: u64, page: Option<u64>, block: u64) -> u64 {
    let mut c = page.unwrap_or(16 << 10).max(block);
    while erase / c > MAX_POSITIONS && erase.is_multiple_of(2 * c) {
        c *= 2;
    }
    c = c.min(erase / 4).max(block);
    while erase / c < MIN_POSITIONS && c / 2 >= block && (c / 2).is_multiple_of(block) {
        c /= 2;
    }
    c
}

/// AU slots one order's sweep may need: the doubling, the first collapse, and
/// the bisection's collapsed runs each take fresh AUs; `--full` two more runs.
fn slots_per_order(o: &Options) -> u64 {
    // The confirmation pass adds one collapsed run of at most max + 1.
    5 * o.max + 5 + if o.full { 2 * o.max + 4 } else { 0 }
}

/// The first AU used: past flashbench's 16 MiB and any FAT area (up to 8 AUs).
fn base(erase: u64) -> u64 {
    (16u64 << 20).max(8 * erase).next_multiple_of(erase)
}

/// Most open AUs a sweep tries. the best card of Bergmann's MMC quirks post keeps 20 open; a card
/// keeping hundreds would be page-mapped, which the sweep reports as "no
/// limit" long before this.
pub const MAX_OPEN_AUS: u64 = 1024;

/// AU slots both orders need, and the bytes they span from [`base`].
fn span(o: &Options) -> (u64, u64) {
    let orders = u64::from(o.linear) + u64::from(o.random);
    let slots = slots_per_order(o) * orders;
    // check_plan bounds max (1024) and erase (1 GiB): at most 12,304 slots of
    // 2 GiB, far inside u64.
    (slots, slots * SPACING * o.erase)
}

/// The byte ranges the test may write, declared before it starts; refused when
/// they pass the end.
pub fn plan(size: u64, o: &Options) -> Result<Vec<Range>, MeasureError> {
    super::check_plan(o.erase, o.chunk, o.max, MAX_OPEN_AUS)?;
    let (slots, need) = span(o);
    let from = base(o.erase);
    if from.saturating_add(need) > size {
        let without_full = largest_max(size, &Options { full: false, ..*o });
        return Err(MeasureError::DoesNotFit {
            what: if o.full {
                format!("open-au --full (at --max {})", o.max)
            } else {
                format!("open-au with --max {}", o.max)
            },
            from,
            need,
            size,
            fix: match largest_max(size, o) {
                0 if o.full && without_full > 0 => format!(
                    "--full's extra runs do not fit on this target; without --full, --max up to {without_full} fits"
                ),
                0 => format!(
                    "even at --max 1 the sweep's {} AUs of {} do not fit past the first {}: use a larger target or \
                     a smaller --erase-size",
                    span(&Options { max: 1, ..*o }).0,
                    crate::units::Iec(o.erase),
                    crate::units::Iec(from)
                ),
                n => format!("the largest --max that fits is {n} (or use a larger target)"),
            },
        });
    }
    Ok((0..slots)
        .map(|s| Range {
            offset: from + s * SPACING * o.erase,
            len: o.erase,
        })
        .collect())
}

/// The largest `--max` (up to `o.max`, at most [`MAX_OPEN_AUS`]) that fits,
/// for a small card's default and the refusal's hint; 0 when none does. A
/// bisection on the arithmetic alone, so a huge `--max` costs nothing.
pub fn largest_max(size: u64, o: &Options) -> u64 {
    let fits = |m: u64| {
        let (_, need) = span(&Options { max: m, ..*o });
        base(o.erase).saturating_add(need) <= size
    };
    if o.erase == 0 || o.erase > super::MAX_ERASE {
        return 0;
    }
    let (mut lo, mut hi) = (0, o.max.min(MAX_OPEN_AUS));
    while lo < hi {
        let mid = lo + (hi - lo).div_ceil(2);
        if fits(mid) {
            lo = mid;
        } else {
            hi = mid - 1;
        }
    }
    lo
}

struct Sweeper<'a> {
    t: &'a mut dyn Target,
    progress: &'a dyn super::Progress,
    o: Options,
    buf: AlignedBuf,
    /// Next fresh slot.
    cursor: u64,
    slot_limit: u64,
}

impl Sweeper<'_> {
    fn au(&self, slot: u64) -> u64 {
        base(self.o.erase) + slot * SPACING * self.o.erase
    }

    /// One chunk size over `n` AUs starting at `first`, interleaved. With a
    /// baseline (the one-AU run's latency at each position of the same
    /// pattern), stops as soon as the latest writes take COLLAPSE times what
    /// the same positions took alone. Returns the level, whether it collapsed,
    /// and the latency at each position (the baseline, for a one-AU run).
    fn level(
        &mut self,
        first: u64,
        n: u64,
        chunk: u64,
        random: bool,
        baseline: Option<&[f64]>,
    ) -> Result<(Level, bool, Vec<f64>), MeasureError> {
        let num = self.o.erase / chunk;
        let positions: Vec<u64> = if random {
            lfsr_positions(num)
        } else {
            (0..num).collect()
        };
        let aus: Vec<u64> = (0..n).map(|i| self.au(first + i)).collect();
        let n = n as usize;
        // lat[k * n + a]: position index k, AU a.
        let mut lat: Vec<f64> = Vec::with_capacity(positions.len() * n);
        let per_batch = (64 / n).max(1);
        let window = (2 * n).max(8);
        // Positions where the one-AU run did its own housekeeping (a gap
        // copy, the merge that ends a random pass) are left out: a card
        // past its limit does that housekeeping elsewhere, and comparing it
        // there would hide the merges that are the collapse. Cards with few
        // pages per AU merge every pass anyway, so this is what tells their
        // runs apart.
        let quiet: Vec<bool> = match baseline {
            Some(b) => {
                let typical = super::median(b);
                b.iter().map(|&x| x <= HOUSEKEEPING * typical).collect()
            }
            None => Vec::new(),
        };
        // Measured over expected for the quiet writes `from..`; past three
        // rounds, so the first writes (which also close what an earlier run
        // left open) do not count. A mean, not a median: past the random
        // limit only every other write merges (an evicted AU reopens cheaply).
        //
        // The `drop` slowest writes are left out: a request that stalls for
        // reasons of its own (a USB reader's outlier, a background GC pause)
        // is rare and alone, while a card past its limit merges again and
        // again. One per early-stop window, 2% of a whole run.
        let ratio = |lat: &[f64], from: usize, b: &[f64], drop: usize| {
            let mut pairs: Vec<(f64, f64)> = (from..lat.len())
                .filter(|i| quiet[i / n])
                .map(|i| (lat[i], b[i / n]))
                .collect();
            pairs.sort_by(|x, y| (x.0 / x.1.max(1.0)).total_cmp(&(y.0 / y.1.max(1.0))));
            let keep = pairs.len().saturating_sub(drop).max(pairs.len().min(1));
            let (got, want) = pairs[..keep].iter().fold((0.0, 0.0), |(g, w), (l, b)| (g + l, w + b));
            if want > 0.0 { got / want } else { 1.0 }
        };
        let mut collapsed = false;
        // Over the limit in two windows in a row, each without its slowest
        // tenth (two at least): a card past its limit stays there, a burst of
        // outliers does not.
        let drop = (window / 10).max(2);
        let mut over = 0;
        let mut next = 0;
        while next < positions.len() {
            // After a window over the limit, only one more window's writes
            // before the second look: a collapsed run costs seconds a write.
            // And only as many as the first look needs before it: a run
            // that collapses from the start stops after two windows.
            let first_look = 3 * n + window;
            let take = if over > 0 {
                window.div_ceil(n).max(1)
            } else if baseline.is_some() && lat.len() < first_look {
                (first_look - lat.len()).div_ceil(n).max(1)
            } else {
                per_batch
            };
            let batch = &positions[next..(next + take).min(positions.len())];
            next += batch.len();
            let len = super::request_len(chunk, "--chunk")?;
            let reqs: Vec<Request> = batch
                .iter()
                .flat_map(|&pos| aus.iter().map(move |&a| Request::write(a + pos * chunk, len, 0)))
                .collect();
            let done = run_all(self.t, &reqs, 1, &mut self.buf)?;
            lat.extend(done.iter().map(|c| c.duration_ns as f64));
            if let Some(b) = baseline
                && lat.len() >= 3 * n + window
            {
                over = if ratio(&lat, lat.len() - window, b, drop) > COLLAPSE {
                    over + 1
                } else {
                    0
                };
                if over >= 2 {
                    collapsed = true;
                    break;
                }
            }
        }
        if let Some(b) = baseline
            && !collapsed
        {
            let from = (3 * n).min(lat.len() / 2);
            collapsed = ratio(&lat, from, b, (lat.len() - from).div_ceil(50)) > COLLAPSE;
        }
        let mean = lat.iter().sum::<f64>() / lat.len().max(1) as f64;
        let per_position = lat.chunks(n).map(|c| c.iter().sum::<f64>() / c.len() as f64).collect();
        Ok((
            Level {
                chunk_bytes: chunk,
                bytes_per_sec: chunk as f64 * 1e9 / mean.max(1.0),
                writes: lat.len(),
                collapsed,
            },
            collapsed,
            per_position,
        ))
    }

    fn take(&mut self, n: u64) -> Result<u64, MeasureError> {
        if self.cursor + n > self.slot_limit {
            return Err(MeasureError::Internal("open-au ran out of declared AUs".into()));
        }
        Ok(self.cursor)
    }

    /// One run at `n` AUs: each chunk of `chunks`, against its baseline.
    fn run(
        &mut self,
        n: u64,
        random: bool,
        chunks: &[u64],
        baselines: &[Vec<f64>],
    ) -> Result<(Run, Vec<Vec<f64>>), MeasureError> {
        let first = self.take(n)?;
        let mut levels = Vec::new();
        let mut profiles = Vec::new();
        let mut collapsed = false;
        let mut aborted = false;
        for (i, &c) in chunks.iter().enumerate() {
            let (level, col, profile) = self.level(first, n, c, random, baselines.get(i).map(Vec::as_slice))?;
            aborted |= level.writes < (n * self.o.erase / c) as usize;
            collapsed |= col;
            levels.push(level);
            profiles.push(profile);
        }
        if collapsed {
            // Its AUs are left open or half-merged: later runs use fresh ones.
            self.cursor += n;
        }
        Ok((
            Run {
                confirmation: false,
                open_aus: n,
                aborted,
                collapsed,
                levels,
            },
            profiles,
        ))
    }

    fn sweep(&mut self, random: bool) -> Result<Sweep, MeasureError> {
        let chunk = [self.o.chunk];
        let mut runs = Vec::new();
        let (first, baseline) = self.run(1, random, &chunk, &[])?;
        runs.push(first);
        let mut lo = 1;
        let mut hi = None;
        let mut n = 2;
        while n <= self.o.max {
            self.progress.advance(n, self.o.max);
            let (r, _) = self.run(n, random, &chunk, &baseline)?;
            let collapsed = r.collapsed;
            runs.push(r);
            if collapsed {
                hi = Some(n);
                break;
            }
            lo = n;
            if n == self.o.max {
                break;
            }
            n = (2 * n).min(self.o.max);
        }
        if let Some(mut h) = hi {
            while h - lo > 1 {
                let mid = (lo + h) / 2;
                let (r, _) = self.run(mid, random, &chunk, &baseline)?;
                if r.collapsed {
                    h = mid;
                } else {
                    lo = mid;
                }
                runs.push(r);
            }
        }
        // Confirmation: one past the limit, again on fresh AUs, must collapse
        // again (a collapsing run stops early, so this costs little). A
        // stall of the card's own that happened to fall in one run does not
        // repeat, and then the answer is unsure.
        let mut agree = 0;
        let mut passes = 0;
        if hi.is_some() {
            let (mut r, _) = self.run(lo + 1, random, &chunk, &baseline)?;
            r.confirmation = true;
            agree += u32::from(r.collapsed);
            passes += 1;
            runs.push(r);
        }
        // No collapse up to max: every run held, the largest against the
        // same baseline; a limit above max is not excluded, and the sweep
        // says "up to".
        // A limit the confirmation did not repeat is right about one time in
        // ten on generated cards: less than a coin flip.
        let confidence = if passes == 0 {
            0.9
        } else if agree == passes {
            0.95
        } else {
            0.3
        };
        if self.o.full {
            // flashbench's table: every chunk size at one AU (the baselines),
            // at the limit, and one past it.
            let chunks = crate::random::chunk_sizes(self.o.erase, self.o.chunk);
            let (one, baselines) = self.run(1, random, &chunks, &[])?;
            runs.push(one);
            for n in [lo, lo + 1] {
                let (r, _) = self.run(n, random, &chunks, &baselines)?;
                self.cursor += if r.collapsed { 0 } else { n };
                runs.push(r);
            }
        }
        Ok(Sweep {
            max_open_aus: hi.map(|_| lo),
            tried_up_to: if hi.is_some() { lo + 1 } else { lo },
            runs,
            confidence,
        })
    }
}

/// Run the sweep(s) over the ranges from [`plan`] (writes to anything else
/// are refused by the preserving target the test is handed).
pub struct OpenAu {
    pub options: Options,
    pub medium: super::Medium,
    /// How sure the erase size is (align's confidence; 1 when the user gave
    /// it): the limits count AUs of that size, so they are never surer.
    pub erase_confidence: f64,
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
    pub fn on(g: &super::session::Geometry, c: Choices, medium: super::Medium) -> OpenAu {
        let mut o = Options {
            erase: g.erase,
            chunk: c.chunk.unwrap_or_else(|| default_chunk(g.erase, g.page, g.block)),
            max: c.max.unwrap_or(DEFAULT_MAX_OPEN_AUS),
            linear: !c.random_only,
            random: !c.linear_only,
            full: c.full,
        };
        if c.max.is_none() {
            o.max = largest_max(g.size, &o).max(1);
        }
        OpenAu {
            options: o,
            medium,
            erase_confidence: g.erase_confidence,
        }
    }
}

impl super::Test for OpenAu {
    const KEY: &'static str = "open_au";
    type Output = OpenAuResult;
    fn plan(&self, d: &crate::target::TargetDescription) -> Result<Vec<Range>, MeasureError> {
        super::check_blocks(self.options.erase, self.options.chunk, d)?;
        plan(d.size_bytes, &self.options)
    }
    fn run(&self, cx: &mut super::Cx<'_>) -> Result<OpenAuResult, MeasureError> {
        let mut r = run(cx.target, self.options, cx.progress)?;
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
            // The runs stay in the table; a slowdown here is the medium's.
            for s in [&mut r.linear, &mut r.random].into_iter().flatten() {
                s.max_open_aus = None;
                s.confidence = 1.0;
            }
            r.notes
                .push(format!("no open-AU limit is claimed: the target is {why}"));
            r.not_flash = Some(why.clone());
        }
        Ok(r)
    }
    fn record(out: &OpenAuResult, results: &mut super::Results) {
        results.open_au.set(out.clone());
    }
}

pub fn run(t: &mut dyn Target, o: Options, progress: &dyn super::Progress) -> Result<OpenAuResult, MeasureError> {
    let slots = slots_per_order(&o);
    let mut s = Sweeper {
        t,
        progress,
        o,
        buf: super::test_data(o.erase.max(o.chunk))?,
        cursor: 0,
        slot_limit: slots,
    };
    let mut linear = if o.linear { Some(s.sweep(false)?) } else { None };
    s.cursor = if o.linear { slots } else { 0 };
    s.slot_limit = s.cursor + slots;
    let random = if o.random { Some(s.sweep(true)?) } else { None };
    let mut notes = Vec::new();
    if let (Some(lin), Some(rnd)) = (linear.as_mut(), &random)
        && let Some(k) = lin.max_open_aus
        && rnd.max_open_aus.is_none()
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
    Ok(OpenAuResult {
        not_flash: None,
        erase_size_bytes: o.erase,
        chunk_bytes: o.chunk,
        linear,
        random,
        notes,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;
    use crate::sim::profiles::build;

    fn measure(profile: &str, full: bool) -> (OpenAuResult, f64) {
        let params = build(profile).unwrap();
        let o = Options {
            erase: params.au_size,
            chunk: default_chunk(params.au_size, Some(params.page_size), 512),
            max: 32,
            linear: true,
            random: true,
            full,
        };
        let test = OpenAu {
            options: o,
            medium: Default::default(),
            erase_confidence: 1.0,
        };
        let mut card = SimTarget::new(profile, params);
        let r = crate::measure::run_alone(&test, &mut card).unwrap();
        (r, crate::target::Target::device_time_ns(&card) as f64 / 1e9)
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
        assert!(matches!(plan(1 << 30, &o), Err(MeasureError::DoesNotFit { .. })));
        let m = largest_max(1 << 30, &o);
        assert!(m > 0 && plan(1 << 30, &Options { max: m, ..o }).is_ok());
        assert!(plan(1 << 30, &Options { max: m + 1, ..o }).is_err());
        assert!(
            plan(64 << 30, &Options { chunk: 3 << 10, ..o }).is_err(),
            "chunk must divide"
        );
    }
}
