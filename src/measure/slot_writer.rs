//! Random-write slots, probed by writing. A card keeps a few AUs open for
//! random-order writes; a set of regions written in random order, two writes
//! per visit, either fits those slots (no merges) or overflows them (every
//! visit merges a whole AU, half the writes). fat tells FAT-area AUs apart
//! this way, and `au` the erase size (two regions in one AU take one slot).

use std::collections::{BTreeMap, HashMap};

use super::{MeasureError, median};
use crate::targets::Target;

/// Writes measured per slot-method set between looks at the share that
/// merged: 8, four merges in an overflowing set. One batch decides a clean
/// set (see [`ODDS`]); each costs an overflowing set four merges, seconds
/// each with AUs of tens of MiB. Where the regions are known to fill
/// their logs rarely ([`SlotWriter::in_regions_of`]) the writer looks
/// after every visit.
/// (au looking after every visit too called a 12 MiB AU 16 MiB at 0.95 on
/// one of 300 hard cards, seed 84879: a run of slow writes at the start of
/// a set decided it before the batch could undo them.)
const SLOT_BATCH: u64 = 8;
/// Most writes measured per set before it is called unclear.
const SLOT_MOST: u64 = 96;
/// Writes per visit of an AU, one below the other: on a card whose slots
/// overflow, the first reopens the AU (evicted since its last visit) and the
/// second needs a random-write slot, so every visit merges another AU; one
/// write per visit would merge about once per cycle, too rarely to tell from
/// a noisy host's stalls.
const VISIT_WRITES: u64 = 2;
/// Chunks each region is written at, downwards: every visit lands below
/// the last, so the card sees random order.
pub const SLOT_POSITIONS: u64 = 64;
/// Device time one set's measuring rounds may take before the probe gives
/// up (fat then falls back to its latency method, au claims nothing): a
/// merge copies a whole AU, and with AUs of 100 MiB and more (seconds per
/// merge) the overflowing sets would take many minutes. The warm-up before
/// them is not counted (only the step's budget bounds it): it visits each
/// region once, and pays for what was open before the set, a merge per AU
/// the step before left open. Counted, the first set of fat's on cards of
/// 48-128 MiB AUs ran out in it (open-au had left 15-30 AUs open), and fat
/// fell back to its latency method: "none" at 0.3 where a 6-AU area was
/// (`examples/budget.rs`, 300 hard cards: FAT confident and right 261 ->
/// 268, none wrong).
pub const SLOT_BUDGET_NS: f64 = 60e9;
/// Visits written between looks at the budget: up to 4 merges of an AU.
const WITHIN_VISITS: usize = 4;
/// Largest random-write limit the slot method works with (open-au's sweeps
/// go to 32; beyond, a set would be most of a small card's writes).
pub const MAX_SLOT_AUS: u64 = 32;

/// Share of merging writes in a set that fits the card's slots: a log
/// fills at most once in 16 writes with the smallest AUs of 16 pages, and a
/// noisy host stalls a request or two in a hundred.
const FITS: f64 = 0.06;
/// Of [`FITS`], the host's stalls: the generator's hard family stalls up to
/// 2% of requests (`outlier_fraction`, sim/generate.rs). Where the regions'
/// size is known ([`SlotWriter::in_regions_of`]), their logs' share is
/// reckoned from it, and on large AUs a fitting set is told from an
/// overflowing one by fewer merges, seconds each.
const STALLS: f64 = 0.02;
/// Chunks a log fills by per page: a chunk smaller than the page still
/// takes one (pages up to 64 KiB with 4 KiB chunks).
const CHUNKS_PER_PAGE: u64 = 16;
/// Share in a set that overflows them: one merge per visit of two writes.
const OVERFLOWS: f64 = 0.5;
/// Likelihood ratio between the two at which a set is decided (Wald's
/// sequential test): 100 to 1 either way. Eight writes decide a clean set:
/// none slow gives 1 to 156 against overflowing, four slow 390 to 1 for it.
const ODDS: f64 = 100.0;
/// The share past which an undecided set counts as overflowing.
const SPLIT: f64 = 0.25;

/// What a set's writes came to.
#[derive(Debug, Clone, Copy, Default)]
pub struct Share {
    /// Writes slower than the merge threshold, as a share of all.
    pub slow: f64,
    writes: usize,
    /// The mean write without the slowest tenth, for the table.
    pub typical_ns: f64,
}

impl Share {
    fn of(lat: &[f64], threshold: f64) -> Share {
        let mut s = lat.to_vec();
        s.sort_by(f64::total_cmp);
        let keep = &s[..(s.len() - s.len() / 10).max(1).min(s.len())];
        Share {
            slow: lat.iter().filter(|&&x| x > threshold).count() as f64 / lat.len().max(1) as f64,
            writes: lat.len(),
            typical_ns: keep.iter().sum::<f64>() / keep.len().max(1) as f64,
        }
    }

    /// `Some(true)` when the set clearly overflows, `Some(false)` when it
    /// clearly fits: the odds of its count of merging writes under
    /// [`OVERFLOWS`] against `fits` (the share that merge in a set that
    /// fits) pass [`ODDS`] one way or the other.
    fn overflows(&self, fits: f64) -> Option<bool> {
        let n = self.writes as f64;
        let k = (self.slow * n).round();
        let log_odds = k * (OVERFLOWS / fits).ln() + (n - k) * ((1.0 - OVERFLOWS) / (1.0 - fits)).ln();
        if log_odds > ODDS.ln() {
            Some(true)
        } else if log_odds < -ODDS.ln() {
            Some(false)
        } else {
            None
        }
    }
}

/// Where the `k`th write of a visit to region `region` lands (its byte
/// offset); each below the last in that region.
pub type Place<'a> = &'a dyn Fn(u64, u64) -> u64;

/// The writer: remembers how often each region was visited, so every write
/// lands below the last one in its region.
pub struct SlotWriter<'a> {
    place: Place<'a>,
    chunk: u64,
    visits: HashMap<u64, u64>,
    /// When each region was last visited (a count of visits), to go round a
    /// set least recently visited first.
    last: HashMap<u64, u64>,
    clock: u64,
    /// The regions of the last set that fit: in the card's slots still, so
    /// the next set's warm-up skips them.
    warm: Vec<u64>,
    /// A write slower than this merged: twice the median write of one
    /// region alone (a merge copies a whole AU; a 4 KiB write programs one
    /// page).
    threshold: f64,
    /// The share of writes that merge in a set that fits: [`FITS`], or less
    /// where the regions' size is known ([`SlotWriter::in_regions_of`]).
    fits: f64,
    /// Sets of the first `n` regions of a search, as decided.
    pub seen: BTreeMap<usize, Decision>,
    /// The step's device-time budget: (device time at its start, ns it may
    /// take); a set that would start past it is not decided.
    budget: Option<(u64, u64)>,
    /// The step's budget ended a set: its device-seconds so far.
    pub out_of_time_s: Option<f64>,
    /// With [`SlotWriter::cautious`], the most device time a decided set
    /// has taken: a set is not started with less of the budget left (past
    /// the limit, a set of 128 MiB AUs behind a slow host is a minute, and
    /// one started near the end of the budget overran it by that much).
    dearest_ns: Option<u64>,
}

/// What [`SlotWriter::decide`] made of a set.
pub struct Decision {
    pub overflows: bool,
    /// Decided by the rule, not by a guess after the last measurement.
    pub clear: bool,
    pub share: Share,
}

/// Why a search for the random-write limit stopped without one.
pub enum NoLimit {
    /// A set of this many regions used up [`SLOT_BUDGET_NS`].
    Budget(usize),
    /// Every count up to the regions given fit.
    NoneUpTo(usize),
}

impl NoLimit {
    pub fn why(&self) -> String {
        match self {
            NoLimit::Budget(n) => format!(
                "a set of {n} AUs took more than {:.0} device-seconds (each merge copies a whole AU)",
                SLOT_BUDGET_NS / 1e9
            ),
            NoLimit::NoneUpTo(n) => format!(
                "random writes in {n} AUs at once merged no more than in one (no random-write limit to work with)"
            ),
        }
    }
}

impl<'a> SlotWriter<'a> {
    /// A writer of `chunk`-byte writes (the buffer holds a fixed pattern),
    /// its merge threshold taken from `alone` written by itself: one region
    /// always fits (a card takes random writes in at least one AU without
    /// merging on every visit).
    pub fn new(t: &mut dyn Target, place: Place<'a>, chunk: u64, alone: u64) -> Result<Self, MeasureError> {
        let mut w = SlotWriter {
            place,
            chunk,
            visits: HashMap::new(),
            last: HashMap::new(),
            clock: 0,
            warm: Vec::new(),
            threshold: f64::INFINITY,
            fits: FITS,
            seen: BTreeMap::new(),
            budget: None,
            out_of_time_s: None,
            dearest_ns: None,
        };
        let lat = w.write(t, &[alone; 1 + (SLOT_BATCH / VISIT_WRITES) as usize])?;
        w.threshold = 2.0 * median(&lat[VISIT_WRITES as usize..]);
        w.warm = vec![alone];
        Ok(w)
    }

    /// Regions of `bytes` each (fat's AUs): a fitting set's logs fill once
    /// in `bytes` / (chunk x [`CHUNKS_PER_PAGE`]) writes at most, and with
    /// the host's [`STALLS`] that is the share that merge in it (at most
    /// [`FITS`]); below it, the share is looked at after every visit. On AUs of
    /// 128 MiB an overflowing set is then decided after two merges, not
    /// four.
    pub fn in_regions_of(mut self, bytes: u64) -> Self {
        let logs = self.chunk.saturating_mul(CHUNKS_PER_PAGE) as f64 / bytes.max(1) as f64;
        self.fits = (logs + STALLS).min(FITS);
        self
    }

    /// Visits between looks at the share: one where the regions' logs
    /// fill rarely ([`SlotWriter::in_regions_of`]), else [`SLOT_BATCH`]'s.
    fn visits_per_look(&self) -> usize {
        if self.fits < FITS {
            1
        } else {
            (SLOT_BATCH / VISIT_WRITES) as usize
        }
    }

    /// Keep to a step's budget of `budget_ns` from device time `started_ns`.
    pub fn with_budget(mut self, started_ns: u64, budget_ns: u64) -> Self {
        self.budget = Some((started_ns, budget_ns));
        self
    }

    /// Start no set with less of the step's budget left than the dearest
    /// set so far took (au: its bisection has no cheap sets to finish
    /// with; fat's last sets are cheap as often as not, and it goes on).
    pub fn cautious(mut self) -> Self {
        self.dearest_ns = Some(0);
        self
    }

    /// Why a set was not decided: the step's budget, or the set's own.
    pub fn why_stopped(&self, n: usize) -> String {
        self.explain(&NoLimit::Budget(n))
    }

    /// Why a search stopped: the step's budget when that ended it.
    pub fn explain(&self, stop: &NoLimit) -> String {
        match (self.out_of_time_s, stop) {
            (Some(secs), NoLimit::Budget(_)) => crate::measure::claim::budget_ended(secs),
            _ => stop.why(),
        }
    }

    /// Past the step's budget (noted in [`SlotWriter::out_of_time_s`]).
    fn out_of_time(&mut self, t: &dyn Target) -> bool {
        self.out_of_time_with(t, 0)
    }

    /// Past the step's budget, or within `need` ns of it.
    fn out_of_time_with(&mut self, t: &dyn Target, need: u64) -> bool {
        let Some((start, ns)) = self.budget else { return false };
        let spent = t.device_time_ns().saturating_sub(start);
        let out = spent.saturating_add(need) >= ns;
        if out {
            self.out_of_time_s = Some(spent as f64 / 1e9);
        }
        out
    }

    /// Writes `set` round-robin, [`VISIT_WRITES`] chunks per AU per visit,
    /// least recently visited first: one warm-up cycle (it brings the set's
    /// AUs into the card's slots, or starts the overflow), then batches of
    /// [`SLOT_BATCH`] writes (a visit where the regions' logs fill rarely),
    /// going on round the set, until the share of
    /// merging writes clearly fits or overflows (at most [`SLOT_MOST`]
    /// writes). `None` once the rounds after the warm-up have used
    /// [`SLOT_BUDGET_NS`], or the step its budget.
    ///
    /// Where the set is the last one that fit plus new regions (fat's next
    /// candidate AU beside the same ordinary ones, au's next stride), the
    /// warm-up visits only the new ones: the others hold their slots
    /// still. Going round least recently visited first, an overflowing set
    /// then misses on every visit at once, as after a whole warm-up cycle,
    /// which past the limit costs a merge of a whole AU per region (17
    /// merges of 64 MiB AUs were a minute of device time per set).
    pub fn decide(&mut self, t: &mut dyn Target, set: &[u64]) -> Result<Option<Decision>, MeasureError> {
        if self.out_of_time_with(t, self.dearest_ns.unwrap_or(0)) {
            return Ok(None);
        }
        let started = t.device_time_ns();
        let decided = self.decide_in_order(t, set)?;
        if let Some(d) = &mut self.dearest_ns {
            *d = (*d).max(t.device_time_ns().saturating_sub(started));
        }
        self.warm = match &decided {
            Some(d) if !d.overflows => set.to_vec(),
            _ => Vec::new(),
        };
        Ok(decided)
    }

    /// [`SlotWriter::decide`]'s writes and decision; the caller has looked
    /// at the budget.
    fn decide_in_order(&mut self, t: &mut dyn Target, set: &[u64]) -> Result<Option<Decision>, MeasureError> {
        let last = |w: &Self, r: &u64| w.last.get(r).copied().unwrap_or(0);
        // Warm-up most recently visited first: regions still in a slot are
        // touched before any region that needs one, so the regions that
        // need one take the slots of regions outside the set (after an
        // overflowing set, one merge instead of a merge per region).
        let mut warm: Vec<u64> = set.to_vec();
        warm.sort_by_key(|r| std::cmp::Reverse(last(self, r)));
        let fresh: Vec<u64> = warm.iter().copied().filter(|r| !self.warm.contains(r)).collect();
        if !fresh.is_empty() && fresh.len() < set.len() {
            warm = fresh;
        }
        // The warm-up against the step's budget only (see SLOT_BUDGET_NS).
        if !self.write_within(t, &warm, &mut 0.0, f64::INFINITY)?.1 {
            return Ok(None);
        }
        let mut spent = 0.0;
        // Then round the set least recently visited first: where the set
        // overflows the card's slots, every visit finds its AU evicted.
        let mut order = set.to_vec();
        order.sort_by_key(|r| last(self, r));
        let mut next = order.into_iter().cycle();
        let mut lat = Vec::new();
        loop {
            let aus: Vec<u64> = next.by_ref().take(self.visits_per_look()).collect();
            let (ns, within) = self.write_within(t, &aus, &mut spent, SLOT_BUDGET_NS)?;
            lat.extend(ns);
            let share = Share::of(&lat, self.threshold);
            match share.overflows(self.fits) {
                Some(overflows) => {
                    return Ok(Some(Decision {
                        overflows,
                        clear: true,
                        share,
                    }));
                }
                None if !within => return Ok(None),
                None if lat.len() >= SLOT_MOST as usize => {
                    return Ok(Some(Decision {
                        overflows: share.slow > SPLIT,
                        clear: false,
                        share,
                    }));
                }
                None => {}
            }
        }
    }

    /// [`SlotWriter::write`] a few visits at a time, adding their time to
    /// `spent`: the latencies, and false if `spent` passed `cap` or the
    /// step's budget was used up before the last visit (past a card's limit every visit
    /// merges an AU: 20 visits to 128 MiB AUs behind a slow host are
    /// minutes, so the budget is looked at between every [`WITHIN_VISITS`]
    /// visits, not once per cycle). What was written still counts: a batch
    /// that took the budget may have decided its set (four merges of 128 MiB
    /// AUs are a minute, and decide an overflowing set).
    fn write_within(
        &mut self,
        t: &mut dyn Target,
        visits: &[u64],
        spent: &mut f64,
        cap: f64,
    ) -> Result<(Vec<f64>, bool), MeasureError> {
        let mut lat = Vec::with_capacity(visits.len() * VISIT_WRITES as usize);
        for group in visits.chunks(WITHIN_VISITS) {
            let ns = self.write(t, group)?;
            *spent += ns.iter().sum::<f64>();
            lat.extend(ns);
            if *spent > cap || self.out_of_time(t) {
                return Ok((lat, false));
            }
        }
        Ok((lat, true))
    }

    /// One write of [`VISIT_WRITES`] chunks per AU visited, each below the
    /// AU's last; their latencies. Each chunk is written with the bytes it
    /// holds ([`super::rewrite`]: with AUs of 128 MiB, writing a pattern
    /// and then the originals back merged 50 AUs, 12 device-minutes).
    fn write(&mut self, t: &mut dyn Target, visits: &[u64]) -> Result<Vec<f64>, MeasureError> {
        let c = self.chunk;
        let offsets: Vec<u64> = visits
            .iter()
            .flat_map(|&region| [region; VISIT_WRITES as usize])
            .map(|region| {
                let k = self.visits.entry(region).or_default();
                let off = (self.place)(region, *k);
                *k += 1;
                self.clock += 1;
                self.last.insert(region, self.clock);
                off
            })
            .collect();
        super::rewrite(t, &offsets, c)
    }

    /// The card's random-write limit r as these regions show it: the first r
    /// fit its slots, r + 1 overflow them. `hint` and the count above it are
    /// tried first (an exact hint ends it at once), then growth by half,
    /// then bisection. The decisions stay in [`SlotWriter::seen`].
    pub fn limit(
        &mut self,
        t: &mut dyn Target,
        regions: &[u64],
        hint: Option<u64>,
    ) -> Result<Result<usize, NoLimit>, MeasureError> {
        let most = regions.len() - 1;
        let decide = |w: &mut SlotWriter, t: &mut dyn Target, n: usize| -> Result<Option<bool>, MeasureError> {
            let Some(d) = w.decide(t, &regions[..n])? else {
                return Ok(None);
            };
            let overflows = d.overflows;
            w.seen.insert(n, d);
            Ok(Some(overflows))
        };
        let (mut lo, mut hi) = (1, None);
        if let Some(r) = hint.map(|r| r as usize).filter(|r| (1..=most).contains(r)) {
            for n in [r, r + 1] {
                match decide(self, t, n)? {
                    None => return Ok(Err(NoLimit::Budget(n))),
                    Some(true) => {
                        hi = Some(n);
                        break;
                    }
                    Some(false) => lo = n,
                }
            }
        }
        // Growing by half, not doubling: every region past the limit costs
        // the warm-up cycle a merge of a whole AU.
        let grow = |n: usize| (n + (n / 2).max(1)).min(most + 1);
        let mut n = grow(lo);
        while hi.is_none() && lo <= most {
            match decide(self, t, n)? {
                None => return Ok(Err(NoLimit::Budget(n))),
                Some(true) => hi = Some(n),
                Some(false) => {
                    lo = n;
                    n = grow(n);
                }
            }
        }
        let Some(mut hi) = hi else {
            return Ok(Err(NoLimit::NoneUpTo(most + 1)));
        };
        while hi - lo > 1 {
            let m = (lo + hi) / 2;
            match decide(self, t, m)? {
                None => return Ok(Err(NoLimit::Budget(m))),
                Some(true) => hi = m,
                Some(false) => lo = m,
            }
        }
        Ok(Ok(lo))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;

    /// On AUs of 128 MiB a merge is seconds: where the writer knows the
    /// AU, an overflowing set is decided after fewer of them, and a set
    /// that fits is still decided as fitting.
    #[test]
    fn known_large_aus_decide_an_overflowing_set_in_fewer_merges() {
        const AU: u64 = 128 << 20;
        let place = |au: u64, k: u64| au * AU + (AU / 4096 - 2 - k % SLOT_POSITIONS) * 4096;
        let decide = |known: bool, set: &[u64]| {
            let spec = "sim:demo,capacity=2G,au_size=128M,page_size=4096,open_aus_linear=4,open_aus_random=2,\
                        fat_area_aus=0,keep_data=false";
            let mut card = SimTarget::from_spec(spec).unwrap();
            let w = SlotWriter::new(&mut card, &place, 4096, set[0]).unwrap();
            let mut w = if known { w.in_regions_of(AU) } else { w };
            let before = card.ftl.work.merges;
            let d = w.decide(&mut card, set).unwrap().unwrap();
            (d.overflows, d.clear, card.ftl.work.merges - before)
        };
        let (overflows, clear, unknown) = decide(false, &[4, 5, 6]);
        assert!(overflows && clear);
        let (overflows, clear, known) = decide(true, &[4, 5, 6]);
        assert!(overflows && clear);
        // Beside the warm-up's, a merge per visit: four visits decide it
        // where the AU is not known, two where it is.
        assert_eq!((unknown, known), (5, 3), "merges");
        for known in [false, true] {
            let (overflows, clear, merges) = decide(known, &[4, 5]);
            assert_eq!((overflows, clear, merges), (false, true, 0), "known {known}");
        }
    }
}
