//! The slot method: each leading AU written in random order beside as many
//! ordinary AUs as the card has random-write slots (see the parent module).

use super::{AuRow, FatResult, Method, Options, in_order_au, patterned};
use crate::measure::{MeasureError, median};
use crate::safety::ranges::Range;
use crate::seam::{AlignedBuf, Request, Target, run_all};

/// Writes measured per slot-method set between looks at the share that
/// merged: 8, four merges in an overflowing set. One batch decides a clean
/// set (see [`ODDS`]); each costs an overflowing set four merges, seconds
/// each with AUs of tens of MiB.
const SLOT_BATCH: u64 = 8;
/// Most writes measured per set before it is called unclear.
const SLOT_MOST: u64 = 96;
/// Writes per visit of an AU, one below the other: on a card whose slots
/// overflow, the first reopens the AU (evicted since its last visit) and the
/// second needs a random-write slot, so every visit merges another AU; one
/// write per visit would merge about once per cycle, too rarely to tell from
/// a noisy host's stalls.
const VISIT_WRITES: u64 = 2;
/// Chunks each slot-method AU is written at, downwards from its end: every
/// visit lands below the last, so the card sees random order.
const SLOT_POSITIONS: u64 = 64;
/// Device time the slot method may spend on one set before it gives up for
/// the latency method: a merge copies a whole AU, and with AUs of 100 MiB and
/// more (seconds per merge) the overflowing sets would take many minutes.
const SLOT_BUDGET_NS: f64 = 60e9;
/// Largest random-write limit the slot method works with (open-au's sweeps
/// go to 32; beyond, a set would be most of a small card's writes).
pub const MAX_SLOT_AUS: u64 = 32;

/// The slot method's write size: 4 KiB, a FAT cluster's write (or the
/// block where that is larger, the chunk where that is smaller).
fn slot_chunk(o: &Options) -> u64 {
    let c = (4u64 << 10).max(o.block).min(o.chunk);
    if o.erase.is_multiple_of(c) { c } else { o.chunk }
}

/// The ordinary AUs the slot method fills the card's slots with: as many as
/// the largest random-write limit it looks for, and one more.
pub(super) fn aus(o: &Options) -> Vec<u64> {
    let first = in_order_au(o) + 1;
    if o.slots {
        (first..first + MAX_SLOT_AUS + 1).collect()
    } else {
        Vec::new()
    }
}

/// Where the `k`th slot-method write into AU `au` lands: downwards from the
/// chunk before the AU's last, over [`SLOT_POSITIONS`] chunks, then round
/// again. Not the last chunk itself: a fresh log whose first write ends the
/// AU is complete in order, and a card may swap it in at once (a switch
/// merge) instead of keeping the AU open.
fn slot_offset(o: &Options, au: u64, k: u64) -> u64 {
    let (top, p) = slot_span(o);
    au * o.erase + (top - k % p) * slot_chunk(o)
}

/// The highest chunk the slot method writes in an AU, and how many below
/// it (that one included) it goes round.
fn slot_span(o: &Options) -> (u64, u64) {
    let n = o.erase / slot_chunk(o);
    // check_plan: the chunk splits the AU at least twice, and the slot
    // chunk is no larger than the chunk.
    let top = n.saturating_sub(2);
    (top, (top + 1).min(SLOT_POSITIONS))
}

pub(super) fn ranges(o: &Options) -> Vec<Range> {
    if !o.slots {
        return Vec::new();
    }
    let (_, p) = slot_span(o);
    (0..o.max_aus)
        .chain(aus(o))
        .map(|au| Range {
            offset: slot_offset(o, au, p - 1),
            len: p * slot_chunk(o),
        })
        .collect()
}

/// Share of merging writes in a set that fits the card's slots: a log
/// fills at most once in 16 writes with the smallest AUs of 16 pages, and a
/// noisy host stalls a request or two in a hundred.
const FITS: f64 = 0.06;
/// Share in a set that overflows them: one merge per visit of two writes.
const OVERFLOWS: f64 = 0.5;
/// Likelihood ratio between the two at which a set is decided (Wald's
/// sequential test): 100 to 1 either way. Eight writes decide a clean set:
/// none slow gives 1 to 170 against overflowing, four slow 770 to 1 for it.
const ODDS: f64 = 100.0;
/// The share past which an undecided set counts as overflowing.
const SPLIT: f64 = 0.25;

/// What a set's writes came to.
#[derive(Debug, Clone, Copy, Default)]
struct Share {
    /// Writes slower than the merge threshold, as a share of all.
    slow: f64,
    writes: usize,
    /// The mean write without the slowest tenth, for the table.
    typical_ns: f64,
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
    /// [`OVERFLOWS`] against [`FITS`] pass [`ODDS`] one way or the other.
    fn overflows(&self) -> Option<bool> {
        let n = self.writes as f64;
        let k = (self.slow * n).round();
        let log_odds = k * (OVERFLOWS / FITS).ln() + (n - k) * ((1.0 - OVERFLOWS) / (1.0 - FITS)).ln();
        if log_odds > ODDS.ln() {
            Some(true)
        } else if log_odds < -ODDS.ln() {
            Some(false)
        } else {
            None
        }
    }
}

/// The slot method's writer: remembers how often each AU was visited, so
/// every write lands below the last one in its AU.
struct SlotWriter<'a> {
    o: &'a Options,
    visits: std::collections::HashMap<u64, u64>,
    buf: AlignedBuf,
    /// A write slower than this merged: twice the median write of one AU
    /// alone (a merge copies a whole AU; a 4 KiB write programs one page).
    threshold: f64,
}

/// What [`SlotWriter::decide`] made of a set.
struct Decision {
    overflows: bool,
    /// Decided by the rule, not by a guess after the last measurement.
    clear: bool,
    share: Share,
}

impl SlotWriter<'_> {
    /// Writes `set` round-robin, [`VISIT_WRITES`] chunks per AU per visit:
    /// one warm-up cycle (it brings the set's AUs into the card's slots, or
    /// starts the overflow), then batches of [`SLOT_BATCH`] writes, going on
    /// round the set, until the share of merging writes clearly fits or
    /// overflows (at most [`SLOT_MOST`] writes). `None` once the set has
    /// used [`SLOT_BUDGET_NS`].
    fn decide(&mut self, t: &mut dyn Target, set: &[u64]) -> Result<Option<Decision>, MeasureError> {
        let mut next = set.iter().copied().cycle();
        let warm: Vec<u64> = next.by_ref().take(set.len()).collect();
        let mut spent: f64 = self.write(t, &warm)?.iter().sum();
        let mut lat = Vec::new();
        loop {
            let aus: Vec<u64> = next.by_ref().take((SLOT_BATCH / VISIT_WRITES) as usize).collect();
            let ns = self.write(t, &aus)?;
            spent += ns.iter().sum::<f64>();
            lat.extend(ns);
            if spent > SLOT_BUDGET_NS {
                return Ok(None);
            }
            let share = Share::of(&lat, self.threshold);
            match share.overflows() {
                Some(overflows) => {
                    return Ok(Some(Decision {
                        overflows,
                        clear: true,
                        share,
                    }));
                }
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

    /// One write of [`VISIT_WRITES`] chunks per AU visited, each below the
    /// AU's last; their latencies.
    fn write(&mut self, t: &mut dyn Target, visits: &[u64]) -> Result<Vec<f64>, MeasureError> {
        let c = slot_chunk(self.o);
        let reqs: Vec<Request> = visits
            .iter()
            .flat_map(|&au| [au; VISIT_WRITES as usize])
            .map(|au| {
                let k = self.visits.entry(au).or_default();
                let off = slot_offset(self.o, au, *k);
                *k += 1;
                Request::write(off, c as u32, 0)
            })
            .collect();
        Ok(run_all(t, &reqs, 1, &mut self.buf)?
            .iter()
            .map(|d| d.duration_ns as f64)
            .collect())
    }
}

/// The slot method (module documentation); `Err` says why it could not
/// decide, and the caller falls back.
pub(super) fn slots(t: &mut dyn Target, o: &Options) -> Result<Result<FatResult, String>, MeasureError> {
    let aus = aus(o);
    let mut w = SlotWriter {
        o,
        visits: Default::default(),
        buf: patterned(slot_chunk(o)),
        threshold: f64::INFINITY,
    };
    let over = |n: usize| {
        format!(
            "a set of {n} AUs took more than {:.0} device-seconds (each merge copies a whole AU)",
            SLOT_BUDGET_NS / 1e9
        )
    };
    // One AU alone always fits (a card takes random writes in at least one
    // AU without merging on every visit): its median write sets the
    // threshold a merging write stands above.
    let alone = w.write(t, &[aus[0]; 1 + (SLOT_BATCH / VISIT_WRITES) as usize])?;
    w.threshold = 2.0 * median(&alone[VISIT_WRITES as usize..]);
    // The card's random-write limit r as this method sees it: r ordinary
    // AUs fit its slots, r + 1 overflow them. open-au's answer is tried
    // first; otherwise doubling, then bisection.
    let mut seen: std::collections::BTreeMap<usize, Decision> = Default::default();
    let mut decide = |w: &mut SlotWriter, t: &mut dyn Target, n: usize| -> Result<Option<bool>, MeasureError> {
        let Some(d) = w.decide(t, &aus[..n])? else {
            return Ok(None);
        };
        let overflows = d.overflows;
        seen.insert(n, d);
        Ok(Some(overflows))
    };
    let most = aus.len() - 1;
    // Where the search starts: the hint and the count above it, when they
    // fit (an exact hint ends it at once: r fits, r + 1 overflows).
    let (mut lo, mut hi) = (1, None);
    if let Some(r) = o.random_aus.map(|r| r as usize).filter(|r| (1..=most).contains(r)) {
        for n in [r, r + 1] {
            match decide(&mut w, t, n)? {
                None => return Ok(Err(over(n))),
                Some(true) => {
                    hi = Some(n);
                    break;
                }
                Some(false) => lo = n,
            }
        }
    }
    // Growing by half, not doubling: every AU past the limit costs the
    // warm-up cycle a merge of a whole AU.
    let grow = |n: usize| (n + (n / 2).max(1)).min(most + 1);
    let mut n = grow(lo);
    while hi.is_none() && lo <= most {
        match decide(&mut w, t, n)? {
            None => return Ok(Err(over(n))),
            Some(true) => hi = Some(n),
            Some(false) => {
                lo = n;
                n = grow(n);
            }
        }
    }
    let Some(mut hi) = hi else {
        return Ok(Err(format!(
            "random writes in {} AUs at once merged no more than in one (no random-write limit to work with)",
            most + 1
        )));
    };
    while hi - lo > 1 {
        let m = (lo + hi) / 2;
        match decide(&mut w, t, m)? {
            None => return Ok(Err(over(m))),
            Some(true) => hi = m,
            Some(false) => lo = m,
        }
    }
    let r = lo;
    let unsure_limit = [r, r + 1].iter().any(|n| seen.get(n).is_some_and(|d| !d.clear));
    let fits = seen.get(&r).map(|d| d.share.typical_ns);
    let overflows = seen.get(&(r + 1)).map(|d| d.share.typical_ns);
    let refs = &aus[..r];
    let with = |au: u64| refs.iter().copied().chain([au]).collect::<Vec<u64>>();
    // Each leading AU in turn beside the r ordinary ones, until the first
    // that overflows them: the area is the run of AUs before it.
    let mut rows = Vec::new();
    let mut unclear = unsure_limit;
    let mut area = o.max_aus;
    for au in 0..o.max_aus {
        let Some(d) = w.decide(t, &with(au))? else {
            return Ok(Err(over(r + 1)));
        };
        unclear |= !d.clear;
        rows.push(AuRow {
            au,
            median_ns: d.share.typical_ns,
            bytes_per_sec: slot_chunk(o) as f64 * 1e9 / d.share.typical_ns.max(1.0),
            fast: !d.overflows,
            in_area: !d.overflows,
            merging: Some(d.share.slow),
        });
        if d.overflows {
            area = au;
            break;
        }
    }
    // Confirmation before anything is claimed: both sides of the boundary
    // once more, each on its own.
    let mut confirmed = true;
    for (au, overflow) in [(area.checked_sub(1), false), ((area < o.max_aus).then_some(area), true)] {
        if let Some(au) = au {
            let Some(d) = w.decide(t, &with(au))? else {
                return Ok(Err(over(r + 1)));
            };
            confirmed &= d.overflows == overflow;
        }
    }
    let confidence = if !confirmed {
        0.3
    } else if unclear {
        0.5
    } else {
        0.95
    };
    Ok(Ok(FatResult {
        not_flash: None,
        erase_size_bytes: o.erase,
        fat_area_aus: area,
        confidence,
        chunk_bytes: slot_chunk(o),
        reference_au: aus[r],
        reference_median_ns: overflows.unwrap_or(0.0),
        aus: rows,
        method: Method::Slots,
        random_aus: Some(r as u64),
        fits_ns: fits,
        overflows_ns: overflows,
        notes: Vec::new(),
    }))
}
