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
mod result;
mod show;

pub use command::Args;
pub use result::{Level, OpenAuResult, Run, Sweep, cross_check};
pub use show::Entry;

use super::MeasureError;
use super::claim::Claim;
use crate::random::lfsr_positions;
use crate::safety::ranges::Range;
use crate::target::{Request, Target, run_all};

/// A count whose visits take this many times the one-AU baseline's (by
/// median, or by mean without the slowest tenth) is collapsed, in two
/// windows in a row: the faint collapse
/// of a card whose merges are cheap next to its writes (cf-simpletech-oem: 16
/// KiB AUs written over PIO only halve their speed past the limit), while
/// counts below the limit stay within 1.1 of the baseline (the property
/// test's highest on 1,600 cards).
const COLLAPSE: f64 = 1.5;
/// A write this many times the baseline's median is a merge (or an outlier).
/// A merge copies pages of an AU and erases it: a 4 MiB AU of 16 KiB pages
/// costs ~100 writes' time, a 128 MiB AU of 4 KiB pages ~15,000.
const SLOW: f64 = 8.0;
/// The sequential test on slow visits (Wald's SPRT): below the limit a
/// visit is slow with probability [`P_OUTLIER`] or the rate the sweep saw
/// so far, if higher (an outlier: the generator's cards have up to 2%,
/// heavy-tailed); past it with probability [`P_COLLAPSED`] (every visit
/// merges in the model; a card that merges every other visit still gets
/// there, later). Each slow visit multiplies the evidence by P_COLLAPSED /
/// P_OUTLIER, each quick one by (1 - P_COLLAPSED) / (1 - P_OUTLIER); a count
/// collapses once it passes [`EVIDENCE`]: three slow visits in a row. A
/// count below the limit passes it with probability under 1/EVIDENCE.
const P_OUTLIER: f64 = 0.03;
const P_COLLAPSED: f64 = 0.7;
const EVIDENCE: f64 = 1e4;
/// The evidence a collapse needs when its count is judged again
/// (`Sweeper::judge_again`): two slow visits in a row. Below the limit a count
/// passes both tests with probability under 1/(EVIDENCE x this), and the
/// second costs a merge less (seconds each on a large AU).
const EVIDENCE_AGAIN: f64 = 1e2;
/// Evidence for "no collapse" is kept at most this strong, so a collapse
/// that begins late in a count still shows.
const FLOOR: f64 = 1e-2;
/// AUs between two used ones (flashbench leaves 12; one is enough to keep the
/// end of one AU from looking like the start of the next).
const SPACING: u64 = 2;
/// Chunks written at the start of each AU, at most: each count gives each of
/// its AUs a few writes, so over a sweep to 32 the first AU takes ~130.
pub const REGION_POSITIONS: u64 = 256;
/// Bytes of each AU's region, at most (chunks of large pages get fewer
/// positions): what the journal holds per AU.
const REGION_BYTES: u64 = 8 << 20;
/// Visits of the one-AU baseline, after its first (which opens the AU).
const BASELINE_WRITES: usize = 24;
/// Visits after which a count that is plainly slower (three times the
/// baseline) is called collapsed without waiting for two windows.
const EARLY_LOOK: usize = 6;
/// Visits each count is judged on: at least this many, and two rounds.
const JUDGED_WRITES: usize = 16;

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

/// The pool: `max` AUs, each declared for its region (whole, with --full),
/// and the bytes they span from [`base`].
fn span(o: &Options) -> (u64, u64) {
    // check_plan bounds max (1024) and erase (1 GiB): 1,024 slots of 2 GiB,
    // far inside u64.
    let slots = o.max.max(1);
    (slots, slots * SPACING * o.erase)
}

/// The byte ranges the test may write, declared before it starts; refused when
/// they pass the end.
pub fn plan(size: u64, o: &Options) -> Result<Vec<Range>, MeasureError> {
    super::check_plan(o.erase, o.chunk, o.max, MAX_OPEN_AUS)?;
    let (slots, need) = span(o);
    let from = base(o.erase);
    if from.saturating_add(need) > size {
        let fits = largest_max(size, o);
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
    Ok((0..slots)
        .map(|s| Range {
            offset: from + s * SPACING * o.erase,
            len,
        })
        .collect())
}

/// The largest `--max` (up to `o.max`, at most [`MAX_OPEN_AUS`]) that fits,
/// for a small card's default and the refusal's hint; 0 when none does.
pub fn largest_max(size: u64, o: &Options) -> u64 {
    if o.erase == 0 || o.erase > super::MAX_ERASE {
        return 0;
    }
    let room = size.saturating_sub(base(o.erase)) / (SPACING * o.erase);
    room.min(o.max.min(MAX_OPEN_AUS))
}

/// Where a sweep is in each AU of the pool.
struct Pool {
    /// Next position (in order) or next index into the shuffled positions.
    next: Vec<u64>,
}

struct Sweeper<'a> {
    t: &'a mut dyn Target,
    progress: &'a dyn super::Progress,
    o: Options,
    /// Device time at the start of the step.
    started_ns: u64,
    shuffled: Vec<u64>,
    /// Judge a collapse again before claiming it (`Sweeper::judge_again`):
    /// wherever the clock is real. The simulator's is virtual: nothing of
    /// the host slows a visit there, its outliers come one by one, as the
    /// sequential test assumes, and judging again would only spend budget
    /// (on 100 hard simulated cards it cost 15 of 200 sweeps and 6 FAT
    /// verdicts their confidence: `examples/budget.rs`).
    confirm: bool,
}

/// What judging a collapsing count again found (see `Sweeper::judge_again`).
enum Confirmed {
    Collapse,
    /// The collapse did not repeat, or the control collapsed too: nothing
    /// is claimed.
    NotRepeated,
    /// A region ran out.
    Unsure,
    OutOfTime,
}

/// What every count of one sweep is judged by.
#[derive(Clone, Copy)]
struct Pass<'a> {
    random: bool,
    /// The one-AU visits' times.
    base: &'a Stats,
    deadline_ns: u64,
}

/// What one count's writes showed.
struct Judged {
    collapsed: bool,
    latencies: Vec<f64>,
    /// The budget ended it first.
    out_of_time: bool,
}

impl Sweeper<'_> {
    fn au(&self, slot: u64) -> u64 {
        base(self.o.erase) + slot * SPACING * self.o.erase
    }

    fn spent_ns(&self) -> u64 {
        self.t.device_time_ns().saturating_sub(self.started_ns)
    }

    /// The byte of the next write to pool AU `slot`, advancing its cursor;
    /// None when an in-order region is used up (it cannot start over
    /// without going back, which is a random write).
    fn next_offset(&self, pool: &mut Pool, slot: usize, random: bool) -> Option<u64> {
        let n = positions(&self.o);
        let k = pool.next[slot];
        let whole = n == self.o.erase / self.o.chunk;
        if !random && k >= n && !whole {
            return None;
        }
        pool.next[slot] = k + 1;
        let pos = if random { self.shuffled[(k % n) as usize] } else { k % n };
        Some(self.au(slot as u64) + pos * self.o.chunk)
    }

    /// The offsets of one visit to pool AU `slot`: one chunk in order, or
    /// two of its shuffled chunks, the higher first. In random order the
    /// second write always goes back, so once the card is past its limit
    /// every visit to an AU it closed must take a random-write slot, and
    /// merges another AU to get it (fat's slot test does the same): the
    /// collapse shows on every visit, not once a round.
    fn visit(&self, pool: &mut Pool, slot: usize, random: bool) -> Option<Vec<u64>> {
        if !random {
            return self.next_offset(pool, slot, false).map(|o| vec![o]);
        }
        let a = self.next_offset(pool, slot, true)?;
        let b = self.next_offset(pool, slot, true)?;
        Some(vec![a.max(b), a.min(b)])
    }

    /// Visits, each written as one group; the time of each visit.
    fn visits(&mut self, visits: &[Vec<u64>]) -> Result<Vec<f64>, MeasureError> {
        let flat: Vec<u64> = visits.iter().flatten().copied().collect();
        let lat = super::rewrite(self.t, &flat, self.o.chunk)?;
        let mut out = Vec::with_capacity(visits.len());
        let mut i = 0;
        for v in visits {
            out.push(lat[i..i + v.len()].iter().sum());
            i += v.len();
        }
        Ok(out)
    }

    /// The one-AU baseline: its visits after the first (which opens the AU).
    fn baseline(&mut self, pool: &mut Pool, random: bool) -> Result<Option<Vec<f64>>, MeasureError> {
        let mut vs = Vec::new();
        for _ in 0..=BASELINE_WRITES {
            match self.visit(pool, 0, random) {
                Some(v) => vs.push(v),
                None => return Ok(None),
            }
        }
        let lat = self.visits(&vs)?;
        Ok(Some(lat[1..].to_vec()))
    }

    /// Count `n`: one round opens the new AU (and lets the others catch
    /// up; not when `again`: the count judged again, its AUs already open,
    /// on [`EVIDENCE_AGAIN`]), then rounds are judged until [`JUDGED_WRITES`] visits and two
    /// rounds are in, one visit at a time once one was slow (a merge of a
    /// large AU takes seconds). `noise` counts the slow visits of counts
    /// that held (slow, all): outliers of the reader or the card's own,
    /// which the sequential test must expect.
    fn count(
        &mut self,
        pool: &mut Pool,
        n: u64,
        pass: &Pass,
        noise: &mut (u64, u64),
        again: bool,
    ) -> Result<Option<Judged>, MeasureError> {
        let Pass {
            random,
            base,
            deadline_ns,
        } = *pass;
        let mut judged = Judged {
            collapsed: false,
            latencies: Vec::new(),
            out_of_time: false,
        };
        let whole = positions(&self.o) == self.o.erase / self.o.chunk;
        // Three rounds where a slow visit counts only after another to the
        // same AU (below), two elsewhere.
        let want = JUDGED_WRITES.max(if whole { 3 } else { 2 } * n as usize);
        let window = want / 2;
        // The outlier rate seen so far, never below the assumed one: a
        // noisy reader needs more evidence for the same verdict.
        let p0 = (noise.0 as f64 / noise.1.max(1) as f64).clamp(P_OUTLIER, 0.5 * P_COLLAPSED);
        let (if_slow, if_quick) = (P_COLLAPSED / p0, (1.0 - P_COLLAPSED) / (1.0 - p0));
        let mut evidence: f64 = 1.0;
        let mut over = 0;
        let mut slow_seen = 0;
        let mut warm = !again;
        let needed = if again { EVIDENCE_AGAIN } else { EVIDENCE };
        // Judged again, past the limit maybe: one visit at a time from the
        // start, as after a slow one.
        let mut careful = again;
        let mut last_slow = vec![false; n as usize];
        let mut scored = Vec::new();
        'rounds: loop {
            let mut round = Vec::with_capacity(n as usize);
            for slot in 0..n as usize {
                match self.visit(pool, slot, random) {
                    Some(v) => round.push(v),
                    None => return Ok(None),
                }
            }
            // One visit at a time while a slow one is possible (the first
            // round opens an AU; a slow visit was seen); a whole round at
            // once while all is quick.
            let size = if careful || warm { 1 } else { round.len() };
            for (first, g) in round.chunks(size).enumerate().map(|(i, g)| (i * size, g)) {
                if self.spent_ns() >= deadline_ns {
                    judged.out_of_time = true;
                    break 'rounds;
                }
                for (slot, l) in (first..).zip(self.visits(g)?) {
                    let slow = l >= SLOW * base.median;
                    careful |= slow;
                    // Where the region is the whole AU, each AU's log fills
                    // once in a while and merges by itself, and the AUs of
                    // a count fill theirs in the same round: a burst of
                    // slow visits, one per AU. Past the limit an AU's
                    // visits are slow one after another; so there a slow
                    // visit counts only after a slow one to the same AU.
                    let counts = !whole || last_slow[slot];
                    last_slow[slot] = slow;
                    if warm {
                        continue;
                    }
                    judged.latencies.push(l);
                    // What the ratios see: a slow visit that does not count
                    // yet as the typical one.
                    scored.push(if slow && !counts { base.median } else { l });
                    slow_seen += u64::from(slow);
                    if !slow || counts {
                        evidence = (evidence * if slow { if_slow } else { if_quick }).max(FLOOR);
                    }
                    if evidence >= needed {
                        judged.collapsed = true;
                        break 'rounds;
                    }
                    let m = scored.len();
                    // A plain collapse needs no second window: the median
                    // and the trimmed mean of six visits both three times
                    // the baseline's (half of them slow at least: outliers
                    // of a few percent do that about once in 10^4 counts).
                    if m == EARLY_LOOK {
                        let w = &scored[..];
                        if super::median(w) >= 3.0 * base.median && trimmed_mean(w) >= 3.0 * base.trimmed {
                            judged.collapsed = true;
                            break 'rounds;
                        }
                    }
                    if m.is_multiple_of(window) {
                        // The median (a card whose one-AU writes do their
                        // own housekeeping every few, where a collapse moves
                        // the typical visit) or the mean without the
                        // slowest tenth (where only some visits merge).
                        let w = &scored[m - window..];
                        let r = (super::median(w) / base.median).max(trimmed_mean(w) / base.trimmed);
                        over = if r > COLLAPSE { over + 1 } else { 0 };
                        if over >= 2 {
                            judged.collapsed = true;
                            break 'rounds;
                        }
                    }
                }
            }
            if !warm && judged.latencies.len() >= want {
                break;
            }
            warm = false;
        }
        if !judged.collapsed {
            noise.0 += slow_seen;
            noise.1 += judged.latencies.len() as u64;
        }
        Ok(Some(judged))
    }

    fn sweep(&mut self, random: bool, deadline_ns: u64) -> Result<Sweep, MeasureError> {
        let mut pool = Pool {
            next: vec![0; self.o.max.max(1) as usize],
        };
        let mut runs = Vec::new();
        // A region used up (many counts on a card of few pages per AU, in
        // order) ends the sweep with nothing claimed.
        let region_out = |tried: u64, runs: Vec<Run>| Sweep {
            max_open_aus: None,
            tried_up_to: tried,
            runs,
            confidence: 0.0,
            claim: Claim::refused(if tried == 0 {
                "an AU's region is too small for the one-AU baseline in order".to_string()
            } else {
                format!("each AU's region was used up at {tried} open AUs, with no collapse yet")
            }),
            stopped_by_budget_s: None,
            at_most: None,
        };
        let Some(b) = self.baseline(&mut pool, random)? else {
            return Ok(region_out(0, runs));
        };
        let base = Stats::of(&b);
        // The baseline's own slow visits are outliers too.
        let mut noise = (
            b.iter().filter(|&&l| l >= SLOW * base.median).count() as u64,
            b.len() as u64,
        );
        runs.push(self.run_record(1, &b, false, random));
        let pass = Pass {
            random,
            base: &base,
            deadline_ns,
        };
        let mut lo = 1;
        for n in 2..=self.o.max {
            self.progress.advance(n - 1, self.o.max);
            let Some(j) = self.count(&mut pool, n, &pass, &mut noise, false)? else {
                // A region ran out (many counts on a card with few pages
                // per AU in order): as far as it got, unsure.
                return Ok(region_out(lo, runs));
            };
            if j.out_of_time {
                if !j.latencies.is_empty() {
                    runs.push(self.run_record(n, &j.latencies, false, random));
                }
                return Ok(self.out_of_time(lo, runs));
            }
            runs.push(self.run_record(n, &j.latencies, j.collapsed, random));
            if j.collapsed {
                let verdict = if self.confirm {
                    self.judge_again(&mut pool, n, &pass, &mut noise, &mut runs)?
                } else {
                    Confirmed::Collapse
                };
                match verdict {
                    Confirmed::Collapse => {
                        return Ok(Sweep {
                            max_open_aus: Some(lo),
                            tried_up_to: n,
                            runs,
                            confidence: 0.95,
                            claim: Claim::made(),
                            stopped_by_budget_s: None,
                            at_most: None,
                        });
                    }
                    Confirmed::NotRepeated => {
                        return Ok(Sweep {
                            max_open_aus: None,
                            tried_up_to: n,
                            runs,
                            confidence: 0.0,
                            claim: Claim::refused(format!(
                                "the collapse at {n} did not repeat when judged again, or {lo} AUs slowed down \
                                 too (a stall of the path, or a faint collapse): {lo} is the likelier limit"
                            )),
                            stopped_by_budget_s: None,
                            at_most: None,
                        });
                    }
                    Confirmed::Unsure => return Ok(region_out(lo, runs)),
                    Confirmed::OutOfTime => return Ok(self.out_of_time(lo, runs)),
                }
            }
            lo = n;
        }
        // No collapse up to max: a limit above it is not excluded, and the
        // sweep says "up to".
        Ok(Sweep {
            max_open_aus: None,
            tried_up_to: lo,
            runs,
            confidence: 0.9,
            claim: Claim::made(),
            stopped_by_budget_s: None,
            at_most: None,
        })
    }

    /// A collapse at count `n` judged again before it is claimed, with a
    /// control: a stall of the path (a loaded machine's, an emulation
    /// answering late, a reader's) slows a few visits in a row the way a
    /// collapse does, and through an emulated demo card with builds running
    /// beside it the random sweep claimed 20 and 18 open AUs at 0.95 where
    /// the card keeps 24 (`tests/integration/emulate/real_path.rs`,
    /// `scripts/probe-vs-emulate.sh`); under load that lasts, a second
    /// judgment of `n` alone collapsed again. So `n` is judged once more
    /// (its AUs open already: no opening round, two slow visits in a row
    /// suffice), then `n - 1` once more as the control, which must hold:
    /// a stall slows both, a card's limit only the first. Where either
    /// disagrees nothing is claimed; going on would claim one too many
    /// where the collapse is faint (the random sweep's one past the limit:
    /// 25 at 0.95 on the same card under two CPU spinners).
    fn judge_again(
        &mut self,
        pool: &mut Pool,
        n: u64,
        pass: &Pass,
        noise: &mut (u64, u64),
        runs: &mut Vec<Run>,
    ) -> Result<Confirmed, MeasureError> {
        // (count, judged again, must collapse); the control opens its AUs
        // again, as they may have been closed by the collapse.
        for (count, again, collapse) in [(n, true, true), (n - 1, false, false)] {
            if count < 2 {
                continue;
            }
            let Some(j) = self.count(pool, count, pass, noise, again)? else {
                return Ok(Confirmed::Unsure);
            };
            if j.out_of_time {
                return Ok(Confirmed::OutOfTime);
            }
            let mut row = self.run_record(count, &j.latencies, j.collapsed, pass.random);
            row.confirmation = true;
            runs.push(row);
            if j.collapsed != collapse {
                return Ok(Confirmed::NotRepeated);
            }
        }
        Ok(Confirmed::Collapse)
    }

    /// A sweep the step's budget ended before an answer: unsure, as far as
    /// `lo` open AUs.
    fn out_of_time(&self, lo: u64, runs: Vec<Run>) -> Sweep {
        Sweep {
            max_open_aus: None,
            tried_up_to: lo,
            runs,
            confidence: 0.0,
            claim: Claim::made(),
            stopped_by_budget_s: Some(self.spent_ns() as f64 / 1e9),
            at_most: None,
        }
    }

    /// A count's row: `lat` the time of each visit (two writes in random
    /// order).
    fn run_record(&self, n: u64, lat: &[f64], collapsed: bool, random: bool) -> Run {
        let per_visit = if random { 2.0 } else { 1.0 };
        let mean = lat.iter().sum::<f64>() / lat.len().max(1) as f64 / per_visit;
        Run {
            confirmation: false,
            open_aus: n,
            aborted: collapsed,
            collapsed,
            levels: vec![Level {
                chunk_bytes: self.o.chunk,
                bytes_per_sec: self.o.chunk as f64 * 1e9 / mean.max(1.0),
                writes: lat.len() * per_visit as usize,
                collapsed,
            }],
        }
    }

    /// flashbench's table (--full): every chunk size from the erase size
    /// down, at 1, `lo` and `lo + 1` AUs, each AU written whole with a test
    /// pattern (so this part is written back afterwards).
    fn table(&mut self, random: bool, lo: u64, deadline_ns: u64) -> Result<Vec<Run>, MeasureError> {
        let mut runs = Vec::new();
        let chunks = crate::random::chunk_sizes(self.o.erase, self.o.chunk);
        let mut data = super::test_data(self.o.erase)?;
        for n in [1, lo, lo + 1] {
            if n == 0 || n > self.o.max {
                continue;
            }
            let mut levels = Vec::new();
            for &c in &chunks {
                if self.spent_ns() >= deadline_ns {
                    break;
                }
                let num = self.o.erase / c;
                let order: Vec<u64> = if random {
                    lfsr_positions(num)
                } else {
                    (0..num).collect()
                };
                let len = super::request_len(c, "--chunk")?;
                let reqs: Vec<Request> = order
                    .iter()
                    .flat_map(|&p| (0..n).map(move |a| (a, p)))
                    .map(|(a, p)| Request::write(self.au(a) + p * c, len, 0))
                    .collect();
                let mut lat = Vec::with_capacity(reqs.len());
                for batch in reqs.chunks(64) {
                    if self.spent_ns() >= deadline_ns {
                        break;
                    }
                    lat.extend(
                        run_all(self.t, batch, 1, &mut data)?
                            .iter()
                            .map(|d| d.duration_ns as f64),
                    );
                }
                let mean = lat.iter().sum::<f64>() / lat.len().max(1) as f64;
                levels.push(Level {
                    chunk_bytes: c,
                    bytes_per_sec: c as f64 * 1e9 / mean.max(1.0),
                    writes: lat.len(),
                    collapsed: false,
                });
            }
            runs.push(Run {
                confirmation: false,
                open_aus: n,
                aborted: false,
                collapsed: n > lo,
                levels,
            });
        }
        Ok(runs)
    }
}

/// The baseline's median and its mean without the slowest tenth.
struct Stats {
    median: f64,
    trimmed: f64,
}

impl Stats {
    fn of(lat: &[f64]) -> Stats {
        Stats {
            median: super::median(lat).max(1.0),
            trimmed: trimmed_mean(lat).max(1.0),
        }
    }
}

/// The mean without the slowest tenth (two at least): a stall of the card's
/// own is rare and alone, while a card past its limit merges again and again.
fn trimmed_mean(lat: &[f64]) -> f64 {
    let mut v = lat.to_vec();
    v.sort_by(f64::total_cmp);
    let keep = v.len().saturating_sub((v.len() / 10).max(2)).max(v.len().min(1));
    v[..keep].iter().sum::<f64>() / keep.max(1) as f64
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
        let mut r = run(cx.target, self.options, cx.progress, cx.budget_ns)?;
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
    progress: &dyn super::Progress,
    budget_ns: u64,
) -> Result<OpenAuResult, MeasureError> {
    let started_ns = t.device_time_ns();
    let n = positions(&o);
    let confirm = t.description().kind != crate::target::TargetKind::Sim;
    let mut s = Sweeper {
        t,
        progress,
        o,
        started_ns,
        // Each AU's region in a shuffled order of its own chunks.
        shuffled: lfsr_positions(n),
        confirm,
    };
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
        // Eight AUs (32 MiB), then 32 AUs of 4 MiB each followed by a gap:
        // 288 MiB.
        assert!(matches!(plan(287 << 20, &o), Err(MeasureError::DoesNotFit { .. })));
        assert!(plan(288 << 20, &o).is_ok());
        let m = largest_max(256 << 20, &o);
        assert_eq!(m, 28);
        assert!(plan(256 << 20, &Options { max: m, ..o }).is_ok());
        assert!(plan(256 << 20, &Options { max: m + 1, ..o }).is_err());
        assert!(
            plan(64 << 30, &Options { chunk: 3 << 10, ..o }).is_err(),
            "chunk must divide"
        );
    }
}
