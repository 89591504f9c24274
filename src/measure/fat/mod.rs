//! `fat`: how many leading AUs tolerate small random writes (the FAT-optimised
//! area, flashbench --find-fat's question, as Bradford's Flashbenching asks it).
//!
//! flashbench writes each leading AU in order and leaves the reading to the
//! user. Here each candidate AU is written in random order together with r
//! ordinary AUs, r being the card's random-write open-AU limit (open-au's
//! answer as a hint, confirmed, or found by `measure::slot_writer`): the *slot*
//! method. An AU of the FAT area takes small random writes without a
//! random-write slot of its own, so the r others fit and nothing is merged;
//! an ordinary AU is one too many and every visit merges a whole AU. That is
//! a merge against none, plain even on slow hosts and under heavy jitter,
//! where the per-write penalty of random order alone (a fraction of a
//! millisecond) is lost in the transfer.
//!
//! Where no limit shows, or a set would take too long, each candidate AU
//! gets the same few page-sized writes in LFSR order, and so does a
//! reference AU past them (the *latency* method): the area is the run of
//! leading AUs clearly faster than the reference.

use serde::{Deserialize, Serialize};

mod command;
mod latency;
mod show;
mod slots;

pub use command::Args;
pub use show::Presenter;

pub use slots::MAX_SLOT_AUS;

use super::MeasureError;
use super::claim::{self, Claim};
use crate::measure::registry::Settle;
use crate::random::lfsr_positions;
use crate::safety::ranges::Range;
use crate::targets::Target;

/// Most leading AUs examined. A FAT area holds the filesystem's metadata:
/// the cards of Bradford's Flashbenching show 0 to 2 AUs; a few dozen would be a whole partition.
pub const MAX_AUS: u64 = 256;
/// Writes per AU: enough for a stable median, few enough to be cheap.
const WRITES: u64 = 32;

#[derive(Debug, Clone, Copy)]
pub struct Options {
    pub erase: u64,
    pub chunk: u64,
    /// Leading AUs examined.
    pub max_aus: u64,
    /// The target's logical block: the slot method writes 4 KiB (a FAT
    /// cluster's write), or one block where blocks are larger.
    pub block: u64,
    /// The card's random-write open-AU limit (open-au's): where the slot
    /// method confirms it, no search for it.
    pub random_aus: Option<u64>,
    /// Use the slot method (its AUs fit on the card).
    pub slots: bool,
    /// `random_aus` was measured with confidence just before (probe's
    /// open-au): the slot method takes it without checking it again, which
    /// on a card of large AUs spares an overflowing set (a merge of a whole
    /// AU per visit, seconds each).
    pub trusted_limit: bool,
    /// The slot method's ordinary AUs where they must step around what
    /// earlier steps of the run wrote ([`Fat::avoiding`]); None: the
    /// [`slots::aus`] after the in-order AU.
    pub ordinary: Option<[u64; slots::ORDINARY]>,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuRow {
    pub au: u64,
    pub median_ns: f64,
    pub bytes_per_sec: f64,
    /// Faster than the split in both passes.
    pub fast: bool,
    /// Counted in the FAT area: fast, and every AU before it fast too.
    #[serde(default)]
    pub in_area: bool,
    /// Slot method: the share of this AU's set's writes that merged.
    #[serde(default)]
    pub merging: Option<f64>,
}

/// How the area was told apart (see the module documentation).
#[derive(Debug, Clone, Copy, Serialize, Deserialize, PartialEq, Eq, Default)]
#[serde(rename_all = "snake_case")]
pub enum Method {
    /// Each AU beside `random_aus` ordinary ones, in random order.
    Slots,
    /// Each AU's median random-write latency against a reference AU's.
    #[default]
    Latency,
    /// flashbench --find-fat's table, imported: each AU written in order,
    /// chunk by chunk, against the back half of the table.
    FindFat,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FatResult {
    /// Why this target cannot show flash behaviour; then no area is claimed.
    #[serde(default)]
    pub not_flash: Option<String>,
    pub erase_size_bytes: u64,
    /// 0 for no area, and where none is claimed.
    pub fat_area_aus: u64,
    /// How sure the area (or "no area") is: both passes must agree and the
    /// fast AUs must stand clear of the reference. 0 where nothing is
    /// claimed.
    #[serde(default)]
    pub confidence: f64,
    /// Whether an area (or "no area") is claimed, and why not: the target
    /// is not flash, or no AU was examined (the budget ended it first).
    #[serde(flatten)]
    pub claim: Claim,
    pub chunk_bytes: u64,
    /// The ordinary AU every candidate is compared with.
    pub reference_au: u64,
    pub reference_median_ns: f64,
    pub aus: Vec<AuRow>,
    #[serde(default)]
    pub method: Method,
    /// Slot method: the random-write limit it worked with, and the typical
    /// write of its two controls (that many ordinary AUs: no merges; one
    /// more: merges). An AU's row is then its set's typical write.
    #[serde(default)]
    pub random_aus: Option<u64>,
    #[serde(default)]
    pub fits_ns: Option<f64>,
    #[serde(default)]
    pub overflows_ns: Option<f64>,
    /// Why the slot method was not used, or gave way to the latency method.
    #[serde(default)]
    pub notes: Vec<String>,
}

/// One page per write (16 KiB when the page is unknown), at least a block, at
/// most half an AU: a multi-page write dilutes the per-write random cost.
pub fn default_chunk(erase: u64, page: Option<u64>, block: u64) -> u64 {
    let c = page.unwrap_or(16 << 10).max(block).min(erase / 2);
    // Whole blocks: half of a 3 x 2^n erase block need not be one.
    (c / block.max(1)).max(1) * block.max(1)
}

fn reference_au(o: &Options) -> u64 {
    o.max_aus + 2
}

/// Byte offsets written in AU `au`: the same LFSR-chosen chunks in each.
fn offsets(o: &Options, au: u64) -> Vec<u64> {
    let num = o.erase / o.chunk;
    lfsr_positions(num)
        .into_iter()
        .take(WRITES.min(num) as usize)
        .map(|p| au * o.erase + p * o.chunk)
        .collect()
}

/// The AU written in order, as many chunks as [`offsets`]: what the same
/// writes cost without the random-order penalty a FAT area is spared.
fn in_order_au(o: &Options) -> u64 {
    reference_au(o) + 1
}

fn in_order_offsets(o: &Options) -> Vec<u64> {
    let au = in_order_au(o);
    (0..WRITES.min(o.erase / o.chunk))
        .map(|k| au * o.erase + k * o.chunk)
        .collect()
}

/// The chunks the test writes, declared up front (just the chunks, so a real
/// card's journal stays small).
pub fn plan(size: u64, o: &Options) -> Result<Vec<Range>, MeasureError> {
    super::check_plan(o.erase, o.chunk, o.max_aus, MAX_AUS)?;
    if o.random_aus.is_some_and(|r| r == 0 || r > MAX_SLOT_AUS) {
        return Err(MeasureError::Bad {
            why: format!("the random-write open-AU limit must be between 1 and {MAX_SLOT_AUS}"),
            fix: "give --open-aus as open-au's random limit, or leave it out".into(),
        });
    }
    // Bounded by check_plan and the check above: at most 294 AUs of 1 GiB
    // (ordinary AUs that step around others: checked where they are chosen).
    let last = slots::aus(o).last().copied().unwrap_or(in_order_au(o));
    let need = last.saturating_add(1).saturating_mul(o.erase);
    if need > size {
        return Err(MeasureError::DoesNotFit {
            what: format!("fat with --max {}", o.max_aus),
            from: 0,
            need,
            size,
            fix: "use a smaller --max (or --erase-size), or a larger target".into(),
        });
    }
    Ok((0..o.max_aus)
        .chain([reference_au(o)])
        .flat_map(|au| offsets(o, au))
        .chain(in_order_offsets(o))
        .map(|offset| Range { offset, len: o.chunk })
        .chain(slots::ranges(o))
        .collect())
}

pub struct Fat {
    pub options: Options,
    pub medium: super::Medium,
    /// How sure the erase size is (align's confidence; 1 when the user gave
    /// it): the area is counted in AUs of that size, so it is never surer.
    pub erase_confidence: f64,
}

impl super::Test for Fat {
    const KEY: &'static str = "fat";
    type Output = FatResult;
    fn plan(&self, d: &crate::targets::TargetDescription) -> Result<Vec<Range>, MeasureError> {
        super::check_blocks(self.options.erase, self.options.chunk, d)?;
        plan(d.size_bytes, &self.options)
    }
    fn run(&self, cx: &mut super::Cx<'_>) -> Result<FatResult, MeasureError> {
        let mut r = run(cx.target, self.options, cx.progress, cx.budget_ns)?;
        if r.confidence > self.erase_confidence {
            r.confidence = self.erase_confidence;
            r.notes.push(format!(
                "counted in AUs of {}, an erase size align gave with confidence {:.2}: the area is no surer",
                crate::units::Iec(self.options.erase),
                self.erase_confidence
            ));
        }
        r.not_flash = self.medium.not_flash.clone();
        r.settle();
        Ok(r)
    }
    fn record(out: &FatResult, results: &mut super::Results) {
        results.fat.set(out.clone());
    }
}

impl Settle for FatResult {
    /// Claim no area (nor "no area") on a target that is not flash, nor
    /// where no AU was examined, with no confidence: done as the test ends
    /// and on every document read back (runs stored before `claimed` said
    /// "no FAT area, confidence 1" on a loop device).
    fn settle(&mut self) {
        if !self.claim.claimed {
            return;
        }
        let why = match &self.not_flash {
            Some(why) => claim::not_flash(why),
            None if self.aus.is_empty() && self.confidence == 0.0 => self
                .notes
                .last()
                .cloned()
                .unwrap_or_else(|| "no AU was examined".into()),
            None => return,
        };
        self.fat_area_aus = 0;
        self.confidence = 0.0;
        for a in &mut self.aus {
            a.in_area = false;
        }
        self.claim = Claim::refused(why);
    }
}

/// Leading AUs the test examines by default: a FAT area is a few AUs at the
/// start, where the filesystem's metadata lives (flashbench's --find-fat in
/// Andrew Bradford's "Flashbenching" post looks at 6).
pub const DEFAULT_AUS: u64 = 8;

impl Fat {
    /// The test on geometry `g`, `max` leading AUs, with the card's
    /// random-write limit when known. A card too small for the slot
    /// method's AUs gets the latency method (the result's notes say so)
    /// rather than no fat at all.
    pub fn on(g: &super::session::Geometry, max: u64, random_aus: Option<u64>, medium: super::Medium) -> Fat {
        let mut options = Options {
            erase: g.erase,
            chunk: default_chunk(g.erase, g.page, g.block),
            max_aus: max,
            block: g.block,
            random_aus,
            slots: true,
            trusted_limit: false,
            ordinary: None,
        };
        if plan(g.size, &options).is_err() {
            options.slots = false;
        }
        Fat {
            options,
            medium,
            erase_confidence: g.erase_confidence,
        }
    }

    /// Ordinary AUs that none of `written` touches (probe: what au, page
    /// and open-au wrote before fat on a card of `size` bytes). Those AUs
    /// are open on the card in states fat does not know: with its ordinary
    /// AUs on open-au's pool, probe on an emulated demo card that keeps 24
    /// random-write AUs and 2 FAT AUs found a FAT area of 3 at 0.95 and a
    /// limit of 23 (CI, 75595d6), as did probe in process on the same card drifting
    /// (`drift=0.5,drift_period_ns=2000000000`), where open-au's sweep
    /// stopped at other counts and left other AUs open. The slot method
    /// gives way to the latency method where the AUs then pass the card's
    /// end.
    pub fn avoiding(mut self, size: u64, written: &[Range]) -> Fat {
        let o = &mut self.options;
        if o.slots {
            o.ordinary = slots::ordinary_avoiding(o, written);
            o.slots = o.ordinary.is_some() && plan(size, o).is_ok();
        }
        self
    }

    /// Take the random-write limit given as measured (see
    /// [`Options::trusted_limit`]).
    pub fn trusting(mut self) -> Fat {
        self.options.trusted_limit = self.options.random_aus.is_some();
        self
    }
}

/// The FAT area by the slot method where the random-write limit is known
/// and the method can tell its controls apart, else by the latency method;
/// the result's notes say which and why.
pub fn run(
    t: &mut dyn Target,
    o: Options,
    progress: &dyn super::Progress,
    budget_ns: u64,
) -> Result<FatResult, MeasureError> {
    let started = t.device_time_ns();
    let why = if o.slots {
        match slots::slots(t, &o, progress, budget_ns)? {
            Ok(found) => return Ok(found),
            // Out of time: no second method after it; unsure.
            Err(stop) if stop.out_of_time => return Ok(unsure(&o, Method::Slots, stop.why)),
            Err(stop) => stop.why,
        }
    } else {
        format!("the card has no room for its {} extra AUs", MAX_SLOT_AUS + 1)
    };
    let until = started.saturating_add(budget_ns);
    let mut r = match latency::latency(t, o, until)? {
        Ok(r) => r,
        Err(_) => {
            let spent = t.device_time_ns().saturating_sub(started) as f64 / 1e9;
            let saw = format!("no AU told apart; the slot method had stopped first: {why}");
            return Ok(unsure(&o, Method::Latency, claim::out_of_budget(spent, &saw)));
        }
    };
    r.notes.push(format!(
        "slot method not used: {why}; the latency method compares each AU's random writes with an ordinary AU's, \
         and a slow host or noisy timing can hide the difference"
    ));
    Ok(r)
}

/// No area claimed: the step's budget ended it before an answer.
fn unsure(o: &Options, method: Method, why: String) -> FatResult {
    let mut r = FatResult {
        not_flash: None,
        erase_size_bytes: o.erase,
        fat_area_aus: 0,
        confidence: 0.0,
        claim: Claim::made(),
        chunk_bytes: o.chunk,
        reference_au: reference_au(o),
        reference_median_ns: 0.0,
        aus: Vec::new(),
        method,
        random_aus: None,
        fits_ns: None,
        overflows_ns: None,
        notes: vec![why],
    };
    r.settle();
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;
    use crate::sim::profiles::{PROFILES, build};

    #[test]
    fn every_built_in_profile_gives_its_fat_area() {
        for prof in PROFILES {
            let params = build(prof.name).unwrap();
            let o = Options {
                erase: params.au_size,
                chunk: default_chunk(params.au_size, Some(params.page_size), 512),
                ..demo_options()
            };
            let want = if params.page_mapped { 0 } else { params.fat_area_aus };
            let fat = Fat {
                options: o,
                medium: Default::default(),
                erase_confidence: 1.0,
            };
            let r = crate::measure::run_alone(&fat, &mut SimTarget::new(prof.name, params)).unwrap();
            assert_eq!(r.fat_area_aus, want, "{}: {:#?}", prof.name, r.aus);
        }
    }

    fn demo_fat(random_aus: Option<u64>, slots: bool, jitter: &str) -> FatResult {
        let mut params = build("demo").unwrap();
        params.set("jitter", jitter).unwrap();
        // Few random-write slots, as on most cards: the hints below lie on both sides.
        params.set("open_aus_random", "4").unwrap();
        let o = Options {
            erase: params.au_size,
            chunk: default_chunk(params.au_size, Some(params.page_size), 512),
            max_aus: 8,
            block: 512,
            random_aus,
            slots,
            trusted_limit: false,
            ordinary: None,
        };
        let fat = Fat {
            options: o,
            medium: Default::default(),
            erase_confidence: 1.0,
        };
        crate::measure::run_alone(&fat, &mut SimTarget::new("demo", params)).unwrap()
    }

    #[test]
    fn slot_method_finds_the_random_limit_when_the_hint_is_wrong() {
        // demo with 4 random-write slots, a 2-AU FAT area.
        for hint in [None, Some(1), Some(4), Some(9)] {
            let r = demo_fat(hint, true, "0.2");
            assert_eq!(r.method, Method::Slots, "hint {hint:?}: {:?}", r.notes);
            assert_eq!(r.random_aus, Some(4), "hint {hint:?}");
            assert_eq!(r.fat_area_aus, 2, "hint {hint:?}: {:#?}", r.aus);
            assert_eq!(r.confidence, 0.95, "hint {hint:?}");
            // The table and the verdict agree: the area's rows, then the
            // first ordinary AU, merging on about half its writes.
            let labelled: Vec<u64> = r.aus.iter().filter(|a| a.in_area).map(|a| a.au).collect();
            assert_eq!(labelled, [0, 1]);
            let m = r.aus[2].merging.unwrap();
            assert!((0.4..=0.6).contains(&m), "AU 2 merging {m}");
            // A wrong hint is said, a right one or none is not.
            let said = r
                .notes
                .iter()
                .any(|n| n.contains("did not hold here: the card kept 4 AUs open"));
            assert_eq!(said, matches!(hint, Some(1 | 9)), "hint {hint:?}: {:?}", r.notes);
        }
    }

    #[test]
    fn without_room_for_slots_the_latency_method_answers_and_says_why() {
        let r = demo_fat(None, false, "0");
        assert_eq!(r.method, Method::Latency);
        assert_eq!(r.fat_area_aus, 2);
        assert!(r.notes[0].contains("no room"), "{:?}", r.notes);
        let plan_with = plan(
            1 << 30,
            &Options {
                slots: true,
                ..demo_options()
            },
        )
        .unwrap();
        let plan_without = plan(
            1 << 30,
            &Options {
                slots: false,
                ..demo_options()
            },
        )
        .unwrap();
        // The slot method's writes are declared up front (the journal keeps
        // them): 64 chunks of 4 KiB in each leading AU and each slot AU.
        let extra: u64 = plan_with.iter().map(|r| r.len).sum::<u64>() - plan_without.iter().map(|r| r.len).sum::<u64>();
        assert_eq!(extra, (8 + MAX_SLOT_AUS + 1) * 64 * 4096);
    }

    #[test]
    fn an_unsure_erase_size_makes_the_area_unsure() {
        let params = build("demo").unwrap();
        let fat = Fat {
            options: demo_options(),
            medium: Default::default(),
            erase_confidence: 0.3,
        };
        let r = crate::measure::run_alone(&fat, &mut SimTarget::new("demo", params)).unwrap();
        assert_eq!(r.fat_area_aus, 2);
        assert_eq!(r.confidence, 0.3);
        assert!(r.notes.iter().any(|n| n.contains("confidence 0.30")), "{:?}", r.notes);
    }

    pub(super) fn demo_options() -> Options {
        Options {
            erase: 4 << 20,
            chunk: 16 << 10,
            max_aus: 8,
            block: 512,
            random_aus: None,
            slots: true,
            trusted_limit: false,
            ordinary: None,
        }
    }
}
