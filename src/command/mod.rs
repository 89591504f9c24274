//! What each measuring command runs, in order, through the [`Runner`]. The
//! arguments arrive parsed and validated (sizes included) by the CLI; each
//! job returns the run document its renderers print.

pub mod debug;
pub mod offline;
pub mod restore;
pub mod results;

use crate::document::{NoteKind, RunDocument};
use crate::error::{CliError, CliResult};
use crate::measure::advice::{Measured, advise};
use crate::measure::{CONFIDENT, Test, align, fat, open_au, page, scatter};
use crate::runner::Runner;
use crate::runner::session::Consent;
use crate::target::real::EngineChoice;
use crate::units::Iec;

/// flashbench users sweep up to a few dozen; the most any seed reports is 20
/// (seed 003's SanDisk part).
pub const DEFAULT_MAX_OPEN_AUS: u64 = 32;
/// Leading AUs the FAT test examines: a FAT area is a few AUs at the start,
/// where the filesystem's metadata lives (seed 004's --find-fat looks at 6).
pub const DEFAULT_FAT_AUS: u64 = 8;

/// Where and how a job runs.
#[derive(Debug, Clone)]
pub struct On {
    pub spec: String,
    pub engine: EngineChoice,
    pub consent: Consent,
    /// The results store, saving each step as it lands (None: --no-store).
    pub save: Option<std::rc::Rc<std::cell::RefCell<crate::store::Saver>>>,
}

impl On {
    fn runner(&self, command: &str) -> CliResult<Runner> {
        let mut r = Runner::new(command, &self.spec, self.engine, self.consent.clone())?;
        if let Some(s) = &self.save {
            let s = s.clone();
            r.listen(Box::new(move |doc| s.borrow_mut().save(doc)));
        }
        Ok(r)
    }
}

#[derive(Debug, Clone, Default)]
pub struct OpenAuArgs {
    pub erase: Option<u64>,
    pub chunk: Option<u64>,
    pub max: Option<u64>,
    pub random_only: bool,
    pub linear_only: bool,
    pub full: bool,
}

#[derive(Debug, Clone)]
pub struct ScatterArgs {
    pub offset: u64,
    pub length: u64,
    pub block: Option<u64>,
}

/// `registers`: the text output lists every register field, not only the
/// summary.
pub fn info(on: &On, registers: bool) -> CliResult<RunDocument> {
    let mut r = on.runner("info")?;
    let info = r.identify()?;
    r.put("info", &info);
    let mut doc = r.finish();
    doc.detail = registers;
    Ok(doc)
}

pub fn align(on: &On) -> CliResult<RunDocument> {
    let mut r = on.runner("align")?;
    let references = r.references();
    let medium = r.medium();
    r.run(&align::Align { references, medium })?;
    Ok(r.finish())
}

pub fn scatter(on: &On, a: &ScatterArgs) -> CliResult<RunDocument> {
    let mut r = on.runner("scatter")?;
    r.run(&scatter::Scatter {
        offset: a.offset,
        length: a.length,
        block: a.block,
    })?;
    Ok(r.finish())
}

/// What the writing tests need to know about the target.
struct Geometry {
    erase: u64,
    /// How sure the erase size is: align's confidence, 1 when given.
    erase_confidence: f64,
    page: Option<u64>,
    block: u64,
    size: u64,
}

/// Erase size and page: given, or estimated by align (read-only) first.
fn geometry(r: &mut Runner, erase: Option<u64>) -> CliResult<Geometry> {
    let d = r.description();
    let (block, size) = (u64::from(d.logical_block_size), d.size_bytes);
    if let Some(erase) = erase {
        return Ok(Geometry {
            erase,
            erase_confidence: 1.0,
            page: None,
            block,
            size,
        });
    }
    let medium = r.medium();
    let a = r.run(&align::Align {
        references: Vec::new(),
        medium,
    })?;
    let Some(erase) = a.erase_size_bytes else {
        return Err(CliError::usage("align could not see the erase size of this target")
            .hint("give it with --erase-size SIZE (for example 4M)"));
    };
    let line = format!(
        "erase size {} from align (confidence {:.2}); --erase-size overrides it",
        Iec(erase),
        a.confidence
    );
    crate::errln!("{line}");
    r.doc().note(NoteKind::Geometry, line, None);
    Ok(Geometry {
        erase,
        erase_confidence: a.confidence,
        page: a.page_size_bytes,
        block,
        size,
    })
}

fn open_au_test(g: &Geometry, a: &OpenAuArgs, medium: crate::measure::Medium) -> open_au::OpenAu {
    let mut o = open_au::Options {
        erase: g.erase,
        chunk: a
            .chunk
            .unwrap_or_else(|| open_au::default_chunk(g.erase, g.page, g.block)),
        max: a.max.unwrap_or(DEFAULT_MAX_OPEN_AUS),
        linear: !a.random_only,
        random: !a.linear_only,
        full: a.full,
    };
    if a.max.is_none() {
        // A small card gets the largest sweep that fits instead of a refusal.
        o.max = open_au::largest_max(g.size, &o).max(1);
    }
    open_au::OpenAu {
        options: o,
        medium,
        erase_confidence: g.erase_confidence,
    }
}

/// The erase-size test by writes, over the whole card.
fn au_test(d: &crate::target::TargetDescription, medium: crate::measure::Medium) -> crate::measure::au::Au {
    crate::measure::au::Au {
        options: crate::measure::au::Options {
            size: d.size_bytes,
            block: u64::from(d.logical_block_size),
            random_aus: None,
        },
        medium,
    }
}

/// Where align saw no erase block, the page test writes in a region of
/// this size (a typical SD AU) at the middle of the card.
const PAGE_REGION: u64 = 4 << 20;

/// The page test in the AU at the middle of the card: away from the FAT
/// area and the AUs open-au and fat write at the start.
fn page_test(g: &Geometry, medium: crate::measure::Medium) -> page::Page {
    page::Page {
        options: page::Options {
            at: (g.size / g.erase.max(1) / 2) * g.erase,
            erase: g.erase,
            block: g.block,
        },
        medium,
    }
}

fn fat_test(g: &Geometry, max: u64, random_aus: Option<u64>, medium: crate::measure::Medium) -> fat::Fat {
    let mut options = fat::Options {
        erase: g.erase,
        chunk: fat::default_chunk(g.erase, g.page, g.block),
        max_aus: max,
        block: g.block,
        random_aus,
        slots: true,
    };
    // A card too small for the slot method's AUs gets the latency method
    // (the result's notes say so) rather than no fat at all.
    if fat::plan(g.size, &options).is_err() {
        options.slots = false;
    }
    fat::Fat {
        options,
        medium,
        erase_confidence: g.erase_confidence,
    }
}

pub fn open_au(on: &On, a: &OpenAuArgs) -> CliResult<RunDocument> {
    let mut r = on.runner("open-au")?;
    let g = geometry(&mut r, a.erase)?;
    let medium = r.medium();
    r.run(&open_au_test(&g, a, medium))?;
    Ok(r.finish())
}

pub fn fat(on: &On, erase: Option<u64>, max: u64, open_aus: Option<u64>) -> CliResult<RunDocument> {
    let mut r = on.runner("fat")?;
    let g = geometry(&mut r, erase)?;
    let medium = r.medium();
    r.run(&fat_test(&g, max, open_aus, medium))?;
    Ok(r.finish())
}

pub fn au(on: &On, open_aus: Option<u64>) -> CliResult<RunDocument> {
    let mut r = on.runner("au")?;
    let medium = r.medium();
    let d = r.description().clone();
    let mut t = au_test(&d, medium);
    t.options.random_aus = open_aus;
    r.run(&t)?;
    Ok(r.finish())
}

/// capacity's push unless the user gave one: 32 MiB, or on a small target
/// at most half of what lies past the untouched start.
fn default_push(d: &crate::target::TargetDescription, skip: u64) -> u64 {
    let block = u64::from(d.logical_block_size.max(1));
    crate::measure::capacity::DEFAULT_PUSH.min(d.size_bytes.saturating_sub(skip) / 2 / block * block)
}

/// The capacity check: a survey of the whole card, then stages that narrow
/// the window where its real size lies, each a preserving run of its own.
pub fn capacity(on: &On, skip: u64, push: Option<u64>) -> CliResult<RunDocument> {
    let mut r = on.runner("capacity")?;
    let d = r.description().clone();
    let push = push.unwrap_or_else(|| default_push(&d, skip));
    let found = capacity_steps(&mut r, skip, push)?;
    r.put("capacity", &found);
    Ok(r.finish())
}

fn capacity_steps(r: &mut Runner, skip: u64, push: u64) -> CliResult<crate::measure::capacity::CapacityResult> {
    use crate::measure::capacity::{Next, Options, Stage, next, verdict};
    let d = r.description().clone();
    let options = Options::new(skip, push);
    let mut stages = Vec::new();
    let mut window = None;
    loop {
        stages.push(r.run(&Stage { options, window })?);
        match next(&stages, d.size_bytes) {
            Next::Done => break,
            Next::Narrow(lo, hi) => {
                crate::errln!(
                    "capacity: the real size lies between byte {lo} and byte {hi} ({} apart); narrowing",
                    Iec(hi - lo)
                );
                window = Some((lo, hi));
            }
        }
    }
    Ok(verdict(&stages, &d, &options))
}

pub fn page(on: &On, erase: Option<u64>) -> CliResult<RunDocument> {
    let mut r = on.runner("page")?;
    let medium = r.medium();
    let d = r.description().clone();
    let erase = match erase {
        Some(e) => e,
        None => {
            let a = r.run(&align::Align {
                references: Vec::new(),
                medium: medium.clone(),
            })?;
            a.erase_size_bytes.unwrap_or(PAGE_REGION)
        }
    };
    let g = Geometry {
        erase,
        erase_confidence: 1.0,
        page: None,
        block: u64::from(d.logical_block_size),
        size: d.size_bytes,
    };
    r.run(&page_test(&g, medium))?;
    Ok(r.finish())
}

/// `bench`'s choices as given; empty lists take the defaults.
pub struct BenchArgs {
    pub preset: Option<crate::measure::bench::Preset>,
    pub rw: Option<crate::measure::bench::Rw>,
    pub bs: Vec<u64>,
    pub qd: Vec<usize>,
    /// --size or --runtime; a preset's own limits without.
    pub limit: Option<crate::measure::bench::Limit>,
    pub rwmix_read: u8,
    pub area: Option<(u64, u64)>,
}

/// What a custom test moves without --size or --runtime.
const DEFAULT_SIZE: crate::measure::bench::Limit = crate::measure::bench::Limit::Bytes(32 << 20);

/// The default test area: 256 MiB (larger than the write caches cards keep)
/// from the middle of the target, or all of a smaller one.
const BENCH_AREA: u64 = 256 << 20;

pub fn bench(on: &On, a: &BenchArgs) -> CliResult<RunDocument> {
    let mut r = on.runner("bench")?;
    let d = r.description().clone();
    let options = bench_options(&d, a);
    let medium = r.medium();
    let deep = options.iter().any(|o| o.qd > 1);
    r.run(&crate::measure::bench::Bench { options, medium })?;
    if deep && r.is_real() && on.engine == EngineChoice::Psync {
        r.doc().note(
            NoteKind::Engine,
            "--engine psync runs one request at a time: the tests above Q1 ran at queue depth 1 (auto or \
             io_uring queue them)",
            None,
        );
    }
    Ok(r.finish())
}

/// bench's tests for `a` on a target like `d`: a custom test's every
/// combination, or a preset's.
fn bench_options(d: &crate::target::TargetDescription, a: &BenchArgs) -> Vec<crate::measure::bench::Options> {
    use crate::measure::bench::{Preset, Rw, Spec, options_for, preset};
    let block = u64::from(d.logical_block_size.max(1));
    let middle = d.size_bytes / 2 / block * block;
    let area_of = |len: Option<u64>| {
        a.area
            .unwrap_or_else(|| (middle, len.unwrap_or(BENCH_AREA).min(d.size_bytes - middle)))
    };
    // A custom test (--rw, or --bs/--qd alone, which mean fio's default
    // read): every combination of the block sizes and depths. Otherwise a
    // preset, quick by default.
    let custom = a.rw.or((!a.bs.is_empty() || !a.qd.is_empty()).then_some(Rw::Read));
    let tests: Vec<Spec> = match (custom, a.preset) {
        (Some(rw), _) => {
            let default_bs = if matches!(rw, Rw::Read | Rw::Write) {
                1 << 20
            } else {
                4096
            };
            let bs = if a.bs.is_empty() {
                vec![default_bs]
            } else {
                a.bs.clone()
            };
            let qd = if a.qd.is_empty() { vec![1] } else { a.qd.clone() };
            bs.iter()
                .flat_map(|&b| {
                    qd.iter()
                        .map(move |&q| (rw, b, q, a.limit.unwrap_or(DEFAULT_SIZE), None))
                })
                .collect()
        }
        // A preset, shortened or lengthened by --size or --runtime.
        (None, p) => preset(p.unwrap_or(Preset::Quick))
            .into_iter()
            .map(|(rw, bs, qd, limit, area)| (rw, bs, qd, a.limit.unwrap_or(limit), area))
            .collect(),
    };
    options_for(tests, area_of, a.rwmix_read)
}

/// The region probe's scatter reads: the first 8 MiB, where a FAT area and
/// the first erase-block boundaries are (flashbench users map the start).
const PROBE_SCATTER: u64 = 8 << 20;

/// Everything the user's consent allows: identify, align, scatter, then
/// open-au and fat (writing), then advice from what was measured.
pub fn probe(on: &On, erase: Option<u64>) -> CliResult<RunDocument> {
    let mut r = on.runner("probe")?;
    if r.is_real() && on.consent.write {
        crate::runner::session::preflight(&on.spec, &on.consent, on.engine)?;
    }
    r.announce_steps();
    probe_with(
        r,
        ProbeSteps {
            erase,
            capacity_and_bench: true,
        },
    )
}

/// What a probe runs besides identification and geometry.
#[derive(Debug, Clone, Copy, Default)]
pub struct ProbeSteps {
    /// The user's erase size, taken over what align and au find.
    pub erase: Option<u64>,
    /// capacity and bench's quick preset (the property tests, which judge
    /// the geometry verdicts on hundreds of cards, leave them out).
    pub capacity_and_bench: bool,
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

fn probe_steps(r: &mut Runner, steps: ProbeSteps) -> CliResult<()> {
    let erase = steps.erase;
    let info = r.identify().ok();
    r.put("info", &info);
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
    let real = r.is_real();
    let skip = if a.not_flash.is_some() {
        Some((
            "au, page, open-au and fat: the target shows no flash behaviour",
            "they would measure the medium, not flash (align says why)",
        ))
    } else if real && !r.consent().write {
        Some((
            "au, page, open-au, fat, capacity and bench write to the target",
            "add --write (its data is journalled, restored and verified)",
        ))
    } else {
        None
    };
    let w = match skip {
        Some((why, hint)) => {
            r.put("skipped", &[format!("{why}; {hint}")]);
            r.doc().note(NoteKind::Skipped, why, Some(hint));
            Written::default()
        }
        None => writing_steps(r, &a, medium.clone(), erase)?,
    };
    // capacity and bench ask no flash of the target, only leave to write.
    let pending = real
        .then(|| crate::runner::session::pending_journal(std::path::Path::new(&r.description().spec), r.consent()))
        .flatten()
        .map(|(j, _)| j.display().to_string());
    let may_write = steps.capacity_and_bench && (!real || r.consent().write);
    let (mut capacity, mut bench) = (None, None);
    if steps.capacity_and_bench && !may_write && a.not_flash.is_some() && !r.consent().write {
        // The geometry steps were skipped for the medium; these two for consent.
        skip_step(
            r,
            "capacity and bench write to the target; add --write (its data is journalled, restored and verified)"
                .into(),
        );
    }
    if may_write {
        use crate::measure::capacity::{DEFAULT_SKIP, Options, Stage};
        let d = r.description().clone();
        let push = default_push(&d, DEFAULT_SKIP);
        let survey = Stage {
            options: Options::new(DEFAULT_SKIP, push),
            window: None,
        };
        match survey.plan(&d) {
            Ok(_) => {
                capacity = Some(capacity_steps(r, DEFAULT_SKIP, push)?);
                r.put("capacity", &capacity);
            }
            Err(e) => skip_step(r, format!("capacity: {e}")),
        }
        let quick = BenchArgs {
            preset: Some(crate::measure::bench::Preset::Quick),
            rw: None,
            bs: Vec::new(),
            qd: Vec::new(),
            limit: None,
            rwmix_read: 50,
            area: None,
        };
        let test = crate::measure::bench::Bench {
            options: bench_options(&d, &quick),
            medium,
        };
        match test.plan(&d) {
            Ok(_) => bench = Some(r.run(&test)?),
            Err(e) => skip_step(r, format!("bench: {e}")),
        }
    }
    for (key, absent) in [
        ("au", w.au.is_none()),
        ("page", w.page.is_none()),
        ("open_au", w.open_au.is_none()),
        ("fat", w.fat.is_none()),
        ("capacity", capacity.is_none()),
        ("bench", bench.is_none()),
    ] {
        if absent {
            r.put(key, &None::<()>);
        }
    }
    r.put(
        "advice",
        &advise(&Measured {
            info: info.as_ref(),
            align: Some(&a),
            au: w.au.as_ref(),
            page: w.page.as_ref(),
            open_au: w.open_au.as_ref(),
            fat: w.fat.as_ref(),
            capacity: capacity.as_ref(),
            bench: bench.as_ref(),
            pending_journal: pending.as_deref(),
        }),
    );
    Ok(())
}

/// A step probe leaves out, and why: in `skipped` and as a note.
fn skip_step(r: &mut Runner, why: String) {
    let mut all: Vec<String> = r.doc().get("skipped").unwrap_or_default();
    r.doc().note(NoteKind::Skipped, why.clone(), None);
    all.push(why);
    r.put("skipped", &all);
}

/// What probe's writing steps found (each absent where it could not run).
#[derive(Default)]
struct Written {
    au: Option<crate::measure::au::AuResult>,
    page: Option<page::PageResult>,
    open_au: Option<open_au::OpenAuResult>,
    fat: Option<fat::FatResult>,
}

/// probe's writing steps, in order: au and page (the geometry from writes,
/// which a slow host cannot hide), then open-au and fat on that geometry,
/// fat's limit checked against open-au's.
fn writing_steps(
    r: &mut Runner,
    a: &align::AlignResult,
    medium: crate::measure::Medium,
    given: Option<u64>,
) -> CliResult<Written> {
    let mut out = Written::default();
    let d = r.description().clone();
    let at = au_test(&d, medium.clone());
    if given.is_none() && at.plan(&d).is_ok() {
        out.au = Some(r.run(&at)?);
    }
    // The user's erase size stands (they know the card, or its datasheet).
    let (erase, erase_confidence) = match given {
        Some(e) => (Some(e), 1.0),
        None => crate::measure::au::best(a, out.au.as_ref()),
    };
    let mut g = Geometry {
        erase: erase.unwrap_or(PAGE_REGION),
        erase_confidence,
        page: a.page_size_bytes,
        block: u64::from(d.logical_block_size),
        size: d.size_bytes,
    };
    // The page before open-au and fat: they write page-sized chunks.
    let pt = page_test(&g, medium.clone());
    if pt.plan(&d).is_ok() {
        let found = r.run(&pt)?;
        g.page = page::best(a, Some(&found)).0;
        out.page = Some(found);
    }
    if erase.is_none() {
        let (why, hint) = (
            "open-au and fat: neither align's reads nor the writes showed an erase block",
            "run them with --erase-size SIZE if you know it",
        );
        r.put("skipped", &[format!("{why}; {hint}")]);
        r.doc().note(NoteKind::Skipped, why, Some(hint));
        return Ok(out);
    }
    let (ot, ft) = (
        open_au_test(&g, &OpenAuArgs::default(), medium.clone()),
        fat_test(&g, DEFAULT_FAT_AUS, None, medium.clone()),
    );
    // A plan that cannot fit (an erase block too large for the card) is a
    // reason to skip, not to lose what probe already measured.
    let mut skipped = Vec::new();
    for (name, plan) in [("open-au", ot.plan(&d)), ("fat", ft.plan(&d))] {
        if let Err(e) = plan {
            let why = format!("{name}: {e}");
            r.doc().note(NoteKind::Skipped, why.clone(), None);
            skipped.push(why);
        }
    }
    r.put("skipped", &skipped);
    if !skipped.is_empty() {
        return Ok(out);
    }
    let mut found = r.run(&ot)?;
    // fat's slot method starts from open-au's random-write limit ("no
    // collapse up to N" says N fit) and falls back by itself.
    let limit = found
        .random
        .as_ref()
        .and_then(|s| s.max_open_aus.or((s.tried_up_to > 0).then_some(s.tried_up_to)));
    let fat = r.run(&fat_test(&g, DEFAULT_FAT_AUS, limit, medium))?;
    if let (fat::Method::Slots, Some(n), true) = (fat.method, fat.random_aus, fat.confidence >= CONFIDENT) {
        open_au::cross_check(&mut found, n);
        r.put("open_au", &found);
    }
    out.open_au = Some(found);
    out.fat = Some(fat);
    Ok(out)
}
