//! `flashlab probe`: everything the user's consent allows, in order:
//! identify, align and scatter (reads); au and page (the geometry from
//! writes, which a slow host cannot hide), then open-au and fat on that
//! geometry, fat's limit checked against open-au's; capacity and bench's
//! quick preset; then advice from what was measured. A step that cannot run
//! says why in the document, and what ran before a failure is kept.

use crate::document::{NoteKind, RunDocument};
use crate::error::CliResult;
use crate::measure::advice::{Measured, advise};
use crate::measure::fat::{self, DEFAULT_AUS, Fat};
use crate::measure::open_au::{self, Choices, OpenAu};
use crate::measure::registry::Session;
use crate::measure::session::Geometry;
use crate::measure::{CONFIDENT, Test, align, au, bench, capacity, page, scatter};
use crate::runner::{Resolved, Runner};

/// The arguments `probe` takes besides the shared groups.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeSteps {
    /// The user's erase size, taken over what align and au find.
    pub erase: Option<u64>,
    /// capacity and bench's quick preset (the property tests, which judge
    /// the geometry verdicts on hundreds of cards, leave them out).
    pub capacity_and_bench: bool,
}

/// probe on each generated card (a fresh card from its parameters), on
/// every core: the calibration and budget examples and the property tests.
/// Each card's spec (it reruns the card), its result and its truth.
#[allow(clippy::type_complexity)]
pub fn probe_cards(
    cards: &[(crate::sim::SimTarget, String, crate::sim::generate::Truth)],
    steps: ProbeSteps,
) -> Vec<(String, CliResult<RunDocument>, crate::sim::generate::Truth)> {
    crate::sim::generate::on_every_core(cards.iter().collect(), |(t, spec, truth)| {
        let card = crate::sim::SimTarget::new(spec, t.params.clone());
        let doc = probe_with(Runner::for_sim(crate::document::CommandName::Probe, card), steps);
        (spec.clone(), doc, truth.clone())
    })
}

/// The region probe's scatter reads: the first 8 MiB, where a FAT area and
/// the first erase-block boundaries are (flashbench users map the start).
const PROBE_SCATTER: u64 = 8 << 20;

pub fn probe(r: &Resolved, erase: Option<u64>) -> CliResult<RunDocument> {
    let mut runner = Runner::new(crate::document::CommandName::Probe, r)?;
    // probe --write on a card in use is refused as bench --write is,
    // before any step, and the card stays held for every writing step.
    if r.consent.write {
        runner.hold_for_writing()?;
    }
    runner.announce_steps();
    let budget = match r.consent.budget_s {
        Some(each) => crate::runner::overall::Budget::EachStep(each),
        None => crate::runner::overall::Budget::Whole(PROBE_BUDGET_S),
    };
    runner.show_overall(&crate::runner::overall::PROBE_STEPS, budget);
    probe_with(
        runner,
        ProbeSteps {
            erase,
            capacity_and_bench: true,
        },
    )
}

/// probe on a runner already made (the property tests' random cards). A
/// step that fails keeps what the steps before it found: the error carries
/// the document, which is printed and saved.
pub fn probe_with(mut r: Runner, steps: ProbeSteps) -> CliResult<RunDocument> {
    match probe_steps(&mut r, steps) {
        Ok(()) => Ok(r.finish()),
        Err(e) if e.exit == crate::error::Exit::Usage && e.partial.is_none() => Err(e),
        Err(e) => {
            let what = e.message.clone();
            r.doc().note(
                NoteKind::Skipped,
                format!("probe stopped: {what}; the results above were complete before it"),
                None,
            );
            let hint = e.hint.clone().unwrap_or_default();
            let doc = r.finish();
            let mut e = e.with_document(doc);
            e.hint = Some(format!(
                "{hint}{}what completed is printed above and saved",
                if hint.is_empty() { "" } else { "; " }
            ));
            Err(e)
        }
    }
}

/// Steps probe leaves out, and why: in `skipped` and as a note; the
/// overall line stops waiting for them.
fn skip_step(r: &mut Runner, steps: &[&str], why: String, hint: Option<&str>) {
    r.skip_steps(steps);
    let line = match hint {
        Some(h) => format!("{why}; {h}"),
        None => why.clone(),
    };
    let doc = r.doc();
    doc.note(NoteKind::Skipped, why, hint);
    let mut all = doc.extras.skipped.get().cloned().unwrap_or_default();
    all.push(line);
    doc.extras.skipped.set(all);
    r.publish();
}

/// Device-seconds a whole probe may take without --budget: ten minutes
/// with a margin (the goal for hard cards, as `STEP_BUDGET_S` in
/// `measure/mod.rs` states it: at most 10 device-minutes a probe, each
/// step at most 4).
pub const PROBE_BUDGET_S: f64 = 570.0;

/// AUs from which open-au's confident random-write limit is fat's without a
/// second check (see `writing_steps`).
const TRUSTED_AU: u64 = 16 << 20;

/// probe's budget, shared among its writing steps as they come: each gets
/// what is left over the steps still to come, at most a step's own budget.
/// A user's --budget is each step's, as for the commands alone.
struct Shares {
    user: bool,
    start_ns: u64,
}

impl Shares {
    fn new(r: &Runner) -> Shares {
        Shares {
            user: r.consent().budget_s.is_some(),
            start_ns: crate::measure::registry::Session::device_ns(r),
        }
    }

    /// Before a writing step, with `left` writing steps still to come (it
    /// included).
    fn give(&self, r: &mut Runner, left: u32) {
        if self.user {
            return;
        }
        let spent = crate::measure::registry::Session::device_ns(r).saturating_sub(self.start_ns) as f64 / 1e9;
        let share = ((PROBE_BUDGET_S - spent) / f64::from(left.max(1))).clamp(10.0, crate::measure::STEP_BUDGET_S);
        r.set_step_budget(share);
    }
}

/// Every step of probe, in its phases: the reading steps, the writing
/// steps (or why they were skipped), capacity and bench, then what probe
/// concludes from them.
fn probe_steps(r: &mut Runner, steps: ProbeSteps) -> CliResult<()> {
    let shares = Shares::new(r);
    r.doc().extras.skipped.set(Vec::new());
    let (info, a, medium) = reading_steps(r)?;
    let real = r.is_real();
    let write = r.consent().write;
    if real && !write {
        r.doc().extras.read_only.set(true);
    }
    if a.not_flash.is_some() {
        skip_step(
            r,
            &["au", "page", "open-au", "fat"],
            "au, page, open-au and fat: the target shows no flash behaviour".into(),
            Some("they would measure the medium, not flash (align says why)"),
        );
    } else if real && !write {
        skip_step(
            r,
            &["au", "page", "open-au", "fat", "capacity", "bench"],
            "au, page, open-au, fat, capacity and bench write to the target".into(),
            Some("add --write (its data is journalled, restored and verified)"),
        );
    } else {
        writing_steps(r, &a, medium.clone(), steps.erase, &shares)?;
    }
    // capacity and bench ask no flash of the target, only leave to write.
    let may_write = steps.capacity_and_bench && (!real || write);
    if steps.capacity_and_bench && !may_write && a.not_flash.is_some() && !write {
        // The geometry steps were skipped for the medium; these two for consent.
        skip_step(
            r,
            &["capacity", "bench"],
            "capacity and bench write to the target; add --write (its data is journalled, restored and verified)"
                .into(),
            None,
        );
    }
    if may_write {
        capacity_and_bench(r, medium, &shares)?;
    }
    conclude(r, info.as_ref(), &a, real)
}

/// probe's reading steps: identify (kept in the document at once), align
/// and a scatter of the first [`PROBE_SCATTER`] bytes. A phase of its own
/// because they run on any target, with or without --write, and decide
/// what the writing steps may do. Returns the device, align's result and
/// the medium the steps measure.
fn reading_steps(
    r: &mut Runner,
) -> CliResult<(
    Option<crate::identify::DeviceInfo>,
    align::AlignResult,
    crate::measure::Medium,
)> {
    let info = r.identify().ok();
    r.doc().extras.info = info.clone().into();
    r.publish();
    let references = r.references();
    let medium = r.medium();
    let a = r.run(&align::Align {
        references,
        medium: medium.clone(),
    })?;
    let size = r.description().size_bytes;
    let length = PROBE_SCATTER.min(size - size % 4096);
    if length > 0 {
        r.run(&scatter::Scatter {
            offset: 0,
            length,
            block: None,
        })?;
    }
    Ok((info, a, medium))
}

/// capacity, then bench's quick preset, each given its share of the
/// budget or skipped with why when the target cannot take it. A phase of
/// its own because they ask no flash of the target, only leave to write.
fn capacity_and_bench(r: &mut Runner, medium: crate::measure::Medium, shares: &Shares) -> CliResult<()> {
    let d = r.description().clone();
    let skip = capacity::DEFAULT_SKIP;
    let push = capacity::default_push(&d, skip);
    let options = capacity::Options::new(skip, push, capacity::DEFAULT_FLUSH, r.nonce());
    let survey = capacity::Stage {
        options,
        window: None,
        flush: true,
        canary: None,
        lap: 0,
        flush_budget_ns: u64::MAX,
    };
    let planned = if r.keeps_data() {
        survey.plan(&d).map(|_| ())
    } else {
        Err(capacity::keeps_no_data(&d))
    };
    match planned {
        Ok(()) => {
            shares.give(r, 2);
            let found = capacity::steps(r, options)?;
            r.update(|res| res.capacity.set(found));
        }
        Err(e) => skip_step(r, &["capacity"], format!("capacity: {e}"), None),
    }
    let quick = bench::BenchArgs {
        preset: Some(bench::Preset::Quick),
        rwmix_read: 50,
        ..Default::default()
    };
    let test = bench::Bench {
        options: bench::options_of(&holding_own_data(&d, r.doc().results.capacity.get()), &quick),
        medium,
    };
    match test.plan(&d) {
        Ok(_) => {
            shares.give(r, 1);
            r.run(&test)?;
        }
        Err(e) => skip_step(r, &["bench"], format!("bench: {e}"), None),
    }
    Ok(())
}

/// The part of a target like `d` that holds its own data, for the steps
/// after capacity: all of it, or up to the usable size of a card capacity
/// found fake or damaged. A bench area past it would meet itself through
/// the wrap (a 32 MiB card that says 256 MiB keeps bench's 64 MiB area in
/// 32), and a write journalled after another landed there keeps that
/// write's bytes as an original: the restore would put them back last.
pub(crate) fn holding_own_data(
    d: &crate::targets::TargetDescription,
    capacity: Option<&capacity::CapacityResult>,
) -> crate::targets::TargetDescription {
    let mut own = d.clone();
    if let Some(c) = capacity.filter(|c| c.verdict != capacity::Verdict::Genuine) {
        let block = u64::from(d.logical_block_size.max(1));
        own.size_bytes = c.usable_bytes.min(d.size_bytes) / block * block;
    }
    own
}

/// What probe concludes once every step has run or been skipped: the
/// steps that did not run marked so, then advice and the summary from
/// what was measured. A phase of its own because it measures nothing,
/// it reads the document the steps filled.
fn conclude(
    r: &mut Runner,
    info: Option<&crate::identify::DeviceInfo>,
    a: &align::AlignResult,
    real: bool,
) -> CliResult<()> {
    let pending = real
        .then(|| crate::runner::writable::pending_journal(std::path::Path::new(r.spec()), r.consent()))
        .flatten()
        .map(|p| p.found.path.display().to_string());
    let doc = r.doc();
    let res = &mut doc.results;
    for slot_not_run in [
        &mut res.au as &mut dyn NotRun,
        &mut res.page,
        &mut res.open_au,
        &mut res.fat,
        &mut res.capacity,
        &mut res.bench,
    ] {
        slot_not_run.not_run();
    }
    let advice = advise(&Measured {
        info,
        align: Some(a),
        au: doc.results.au.get(),
        page: doc.results.page.get(),
        open_au: doc.results.open_au.get(),
        fat: doc.results.fat.get(),
        capacity: doc.results.capacity.get(),
        bench: doc.results.bench.get(),
        pending_journal: pending.as_deref(),
    });
    doc.extras.advice.set(advice);
    let summary = crate::measure::summary::of(&doc.results);
    doc.extras.summary.set(summary);
    r.check_signal()?;
    r.publish();
    Ok(())
}

/// A step that did not run shows as `null` in probe's JSON.
trait NotRun {
    fn not_run(&mut self);
}

impl<T> NotRun for crate::measure::Slot<T> {
    fn not_run(&mut self) {
        self.mark_not_run();
    }
}

/// probe's writing steps, in order: au and page (the geometry from
/// writes, which a slow host cannot hide), then open-au and fat on that
/// geometry, fat's limit checked against open-au's.
fn writing_steps(
    r: &mut Runner,
    a: &align::AlignResult,
    medium: crate::measure::Medium,
    given: Option<u64>,
    shares: &Shares,
) -> CliResult<()> {
    let d = r.description().clone();
    let at = au::Au::over(&d, medium.clone());
    let mut au_found = None;
    // The writes' erase size where the reads' is unsure: au merges AUs to
    // find it, up to a few device-minutes on a card of large AUs, which a
    // confident align spares (on the generator's hard family au then
    // changed no verdict).
    // What each writing step wrote: the card keeps those AUs open, and
    // open-au keeps its sweeps clear of them.
    let mut written = Vec::new();
    if given.is_none()
        && a.confidence < crate::measure::CONFIDENT
        && let Ok(ranges) = at.plan(&d)
    {
        shares.give(r, 4);
        au_found = Some(r.run(&at)?);
        written.extend(ranges);
    } else {
        r.skip_steps(&["au"]);
    }
    // The user's erase size stands (they know the card, or its datasheet).
    let (erase, erase_confidence) = match given {
        Some(e) => (Some(e), 1.0),
        None => crate::measure::best_erase(a, au_found.as_ref()),
    };
    let mut g = Geometry {
        erase: erase.unwrap_or(page::DEFAULT_REGION),
        erase_confidence,
        page: a.page_size_bytes,
        block: u64::from(d.logical_block_size),
        size: d.size_bytes,
    };
    // The page before open-au and fat: they write page-sized chunks.
    let pt = page::Page::at_end(&d, g.erase, medium.clone());
    if let Ok(ranges) = pt.plan(&d) {
        shares.give(r, 5);
        let found = r.run(&pt)?;
        g.page = crate::measure::best_page(a, Some(&found)).0;
        written.extend(ranges);
    } else {
        r.skip_steps(&["page"]);
    }
    if erase.is_none() {
        skip_step(
            r,
            &["open-au", "fat"],
            "open-au and fat: neither align's reads nor the writes showed an erase block".into(),
            Some("run them with --erase-size SIZE if you know it"),
        );
        return Ok(());
    }
    let ot = OpenAu::on(&g, Choices::default(), written.clone(), medium.clone());
    // fat's ordinary AUs step around everything written before it.
    if let Ok(ranges) = ot.plan(&d) {
        written.extend(ranges);
    }
    let ft = Fat::on(&g, DEFAULT_AUS, None, medium.clone()).avoiding(d.size_bytes, &written);
    // A plan that cannot fit (an erase block too large for the card) is a
    // reason to skip, not to lose what probe already measured.
    let mut fits = true;
    for (name, plan) in [("open-au", ot.plan(&d)), ("fat", ft.plan(&d))] {
        if let Err(e) = plan {
            skip_step(r, &[name], format!("{name}: {e}"), None);
            fits = false;
        }
    }
    if !fits {
        r.skip_steps(&["open-au", "fat"]);
        return Ok(());
    }
    shares.give(r, 4);
    let found = r.run(&ot)?;
    // fat's slot method starts from open-au's random-write limit ("no
    // collapse up to N" says N fit) and falls back by itself.
    let limit = found
        .random
        .as_ref()
        .and_then(|s| s.max_open_aus.or((s.tried_up_to > 0).then_some(s.tried_up_to)));
    // A limit open-au found with confidence on large AUs is taken as
    // measured: there every merge is plain (seconds), and checking it again
    // costs fat an overflowing set. On small AUs merges are faint next to
    // the writes and fat's own check corrects open-au's count now and then.
    let sure = g.erase >= TRUSTED_AU
        && found
            .random
            .as_ref()
            .is_some_and(|s| s.max_open_aus.is_some() && s.confidence >= CONFIDENT);
    shares.give(r, 3);
    let ft = Fat::on(&g, DEFAULT_AUS, limit, medium).avoiding(d.size_bytes, &written);
    let fat = r.run(&if sure { ft.trusting() } else { ft })?;
    if let (fat::Method::Slots, Some(n), true) = (fat.method, fat.random_aus, fat.confidence >= CONFIDENT) {
        let mut checked = found;
        open_au::cross_check(&mut checked, n);
        r.update(|res| res.open_au.set(checked));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::measure::Test;
    use crate::measure::open_au::{Choices, OpenAu};
    use crate::measure::session::Geometry;
    use crate::safety::ranges::Range;
    use crate::targets::Target;

    /// page leaves its AU open for random writes, and open-au and fat run
    /// after it on the same card: its AU must be none of theirs, on small
    /// cards (open-au's sweep reaching the end) as on large ones.
    #[test]
    fn page_writes_in_an_au_open_au_and_fat_leave_alone() {
        let touches = |a: &[Range], b: &[Range], erase: u64| {
            let aus = |rs: &[Range]| -> std::collections::BTreeSet<u64> {
                rs.iter()
                    .flat_map(|r| r.offset / erase..=(r.end() - 1) / erase)
                    .collect()
            };
            aus(a).intersection(&aus(b)).count()
        };
        let mut checked = 0;
        for (capacity, au) in [
            ("64M", "1M"),
            ("256M", "4M"),
            ("635437056", "6291456"),
            ("402653184", "4194304"),
            ("4G", "4M"),
            ("12G", "128M"),
            ("3G", "32M"),
        ] {
            let card = crate::sim::SimTarget::from_spec(&format!("sim:demo,capacity={capacity},au_size={au}")).unwrap();
            let d = card.description().clone();
            let g = Geometry {
                erase: card.params.au_size,
                erase_confidence: 1.0,
                page: Some(4096),
                block: u64::from(d.logical_block_size),
                size: d.size_bytes,
            };
            let page = page::Page::at_end(&d, g.erase, Default::default()).plan(&d).unwrap();
            let open = OpenAu::on(&g, Choices::default(), Vec::new(), Default::default())
                .plan(&d)
                .unwrap();
            let earlier: Vec<Range> = page.iter().chain(&open).copied().collect();
            let fat = Fat::on(&g, DEFAULT_AUS, None, Default::default())
                .avoiding(d.size_bytes, &earlier)
                .plan(&d)
                .unwrap();
            assert_eq!(touches(&page, &open, g.erase), 0, "{capacity} {au}: open-au");
            assert_eq!(touches(&page, &fat, g.erase), 0, "{capacity} {au}: fat");
            // fat's ordinary AUs are none of open-au's pool either (its
            // latency method's reference AU, DEFAULT_AUS + 2, may be one).
            let reference = Range {
                offset: (DEFAULT_AUS + 2) * g.erase,
                len: g.erase,
            };
            let fat_but_reference: Vec<Range> = fat
                .iter()
                .filter(|r| !reference.touches(r.offset, r.len))
                .copied()
                .collect();
            assert_eq!(
                touches(&open, &fat_but_reference, g.erase),
                0,
                "{capacity} {au}: fat on open-au's pool"
            );
            assert!(!open.is_empty() && !fat.is_empty() && !page.is_empty());
            checked += 1;
        }
        assert_eq!(checked, 7);
    }
}
