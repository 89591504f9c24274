//! `flashlab batch`: many devices, one table. Each device is a run of its
//! own on its own thread, with every safety rule of a single run (consent,
//! journal, claims on its bytes, restore), its own progress line and its
//! own stored run tagged with the batch. Data checks (capacity) run side by
//! side; speed (bench, probe) holds the device's bus alone
//! ([`crate::runner::many`]). The rows' verdicts come last, against the
//! batch's medians ([`verdict`]).

mod content;
mod devices;
mod rows;
pub mod verdict;
mod watch;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};

use crate::args::TargetArg;
use crate::document::batch::{BatchBody, BatchTag, Identity, RowVerdict};
use crate::document::bodies::Body;
use crate::document::{CommandName, RunDocument};
use crate::error::{CliError, CliResult, Exit};
use crate::measure::Test;
use crate::measure::bench::classes::SdClass;
use crate::measure::{bench, capacity};
use crate::runner::many::{Buses, Span, Timeline, Use, hold};
use crate::runner::writable::Consent;
use crate::runner::{Listener, Resolved, Runner};
use crate::targets::real::EngineChoice;

/// Which tests each device gets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Tests {
    pub capacity: bool,
    pub bench: bool,
    /// Every step of probe (capacity and bench among them), its bus held
    /// alone throughout: align and scatter are timing too.
    pub probe: bool,
}

/// `batch`, resolved.
#[derive(Debug, Clone)]
pub struct Options {
    pub devices: Vec<TargetArg>,
    pub all_removable: bool,
    pub tests: Tests,
    /// (DEVICE, PORT or SLOT; LABEL), from --label and --labels.
    pub labels: Vec<(String, String)>,
    /// --claims: the classes every card claims, over what its SSR says.
    pub claims: Vec<SdClass>,
    /// bench: device time of each of the quick preset's tests.
    pub runtime_ns: Option<u64>,
    pub engine: EngineChoice,
    pub consent: Consent,
    pub store: Option<PathBuf>,
    /// Write and read back every block of each real device first
    /// (`--destructive`: its data is destroyed, nothing is journalled).
    pub destructive: bool,
    /// A station: test each card as it is put in, until Ctrl-C or SIGTERM
    /// ([`watch`]).
    pub watch: bool,
    /// The fleet store the runs go to once they are kept in `store`.
    pub fleet: Option<String>,
}

/// What one device's thread hands back.
struct Done {
    slot: String,
    device: String,
    identity: Identity,
    label: Option<String>,
    bus: String,
    announced: u64,
    doc: Option<RunDocument>,
    /// Why the row ended early: skipped (refused before any write) or the
    /// error a test ended with.
    ended: Option<(RowVerdict, String)>,
    claims: Vec<SdClass>,
    claimed_by: String,
    /// Its run's id in the store, once the store's listener has it.
    run_id: Arc<Mutex<Option<i64>>>,
    ended_s: f64,
    /// What an earlier run left in its journal and was put back first.
    restored: Option<String>,
    /// The full write-and-verify (`--destructive`).
    fill: Option<crate::measure::capacity::fill::FillResult>,
}

pub fn run(o: &Options) -> CliResult<RunDocument> {
    // Refused before anything starts: a device that cannot be tested, a
    // station that cannot hear the kernel.
    let targets = match o.watch {
        false => devices::gather(&o.devices, o.all_removable)?,
        true => Vec::new(),
    };
    let station = o.watch.then(|| watch::listen(&o.devices)).transpose()?;
    let mut doc = RunDocument::new(CommandName::Batch, None);
    // Host and second are not enough: three stations named alike started
    // their batches in one second and shared an id.
    let id = format!(
        "{}-{}-{:06x}",
        doc.host.hostname,
        doc.started_unix,
        (crate::random::nonce() >> 1) & 0xff_ffff
    );
    let multi = indicatif::MultiProgress::new();
    let terminal = std::io::IsTerminal::is_terminal(&std::io::stderr());
    if terminal {
        crate::console::stdio::set_spinner(Some(crate::console::stdio::Shown::Many(multi.clone())));
    } else {
        multi.set_draw_target(indicatif::ProgressDrawTarget::hidden());
    }
    crate::safety::signals::install();
    let timeline = Timeline::new();
    let shared = Shared {
        o,
        id: &id,
        buses: &Buses::default(),
        timeline: &timeline,
        multi: &multi,
    };
    let (done, stopped_tests) = match &station {
        Some(station) => watch::station(&shared, station),
        None => (at_once(&shared, &targets), true),
    };
    if terminal {
        crate::console::stdio::set_spinner(None);
    }
    let _ = multi.clear();
    // A station's slots wait for cards; a label of a single batch that no
    // row took was meant for a device not given (a mistyped slot).
    if station.is_none() {
        unused_labels(&mut doc, &o.labels, &done);
    }
    let spans = timeline.spans();
    let batch = rows::batch(id, &done, &spans, timeline.now_s());
    // A station ends by a signal: an interruption only where it stopped a
    // test.
    let interrupted = crate::safety::signals::pending().filter(|_| stopped_tests);
    if interrupted.is_none() {
        crate::safety::signals::clear();
    }
    if let (Some(url), Some(local)) = (&o.fleet, &o.store) {
        upload(&mut doc, local, url);
    }
    doc.body = Body::Batch(BatchBody { batch });
    doc.finish(None);
    if let Some(signal) = interrupted {
        return Err(crate::error::interrupted(signal).with_document(doc));
    }
    match nothing_tested(&done).filter(|_| station.is_none()) {
        Some(e) => Err(e.with_document(doc)),
        None => Ok(doc),
    }
}

/// A batch that tested no device to the end says so in its exit code, as
/// one run would (a script reading 0 took it for 40 cards tested):
/// every row skipped is a refusal, exit 2 (nothing was written); every
/// row failed or gone, a failed run, exit 1. Once one device's tests ran
/// to the end, the table judges the rest. A station is left out: it ends
/// by a signal, with or without cards.
fn nothing_tested(done: &[Done]) -> Option<CliError> {
    let ended: Vec<(&Done, &(RowVerdict, String))> = done
        .iter()
        .map(|d| d.ended.as_ref().map(|e| (d, e)))
        .collect::<Option<_>>()?;
    let skipped = ended.iter().all(|(_, (v, _))| *v == RowVerdict::Skipped);
    let (first, (_, why)) = ended.iter().find(|(_, (v, _))| skipped || *v != RowVerdict::Skipped)?;
    let slot = &first.slot;
    let (devices, were) = match ended.len() {
        1 => ("the one device".to_string(), "was"),
        n => (format!("all {n} devices"), "were"),
    };
    // A skip's reason is in the table alone; a failure's is on its
    // device's line above already, and is not said twice.
    Some(if skipped {
        CliError::usage(format!(
            "no device was tested: {devices} {were} skipped (see the table)"
        ))
        // A refusal that names the device already is not named again.
        .hint(
            if why.starts_with(&format!("{slot}:")) || why.starts_with(&format!("{}:", first.device)) {
                why.clone()
            } else {
                format!("{slot}: {why}")
            },
        )
    } else {
        CliError::failed(format!(
            "no device's tests ran to the end: {devices} failed, went away or {were} skipped (see the table)"
        ))
        .hint(format!("what stopped {slot} is on its line above and in its row"))
    })
}

/// Warn of each label no row carries.
fn unused_labels(doc: &mut RunDocument, labels: &[(String, String)], done: &[Done]) {
    for (at, label) in labels {
        if done.iter().any(|d| d.label.as_deref() == Some(label.as_str())) {
            continue;
        }
        // Named twice (`sim1=A` and `sim:demo=B` for one device): the
        // first label it matched is its own.
        let message = match done.iter().find(|d| d.slot == *at || d.device == *at) {
            Some(d) => format!(
                "the label `{label}` is for {at}, which took the label `{}`: unused",
                d.label.as_deref().unwrap_or_default()
            ),
            None => format!("the label `{label}` is for {at}, and no device given here is {at}: unused"),
        };
        let hint = "a label names a device as given, its short name (sim1, loop0) or its slot (info's place.port)";
        crate::errln!("warning: {message}");
        crate::errln!("hint: {hint}");
        doc.warnings.push(crate::document::Note {
            kind: crate::document::NoteKind::Label,
            message,
            hint: Some(hint.into()),
        });
    }
}

/// What every device's thread shares.
struct Shared<'a> {
    o: &'a Options,
    id: &'a str,
    buses: &'a Buses,
    timeline: &'a Timeline,
    multi: &'a indicatif::MultiProgress,
}

/// Every device at once, each on its thread; their outcomes in order.
fn at_once(shared: &Shared, targets: &[(TargetArg, Option<String>)]) -> Vec<Done> {
    std::thread::scope(|scope| {
        let handles: Vec<_> = targets
            .iter()
            .enumerate()
            .map(|(n, (t, dup))| spawn(scope, shared, t.clone(), short(t, n), dup.clone()))
            .collect();
        handles
            .into_iter()
            .zip(targets.iter().enumerate())
            .map(|(h, (n, (t, _)))| joined(h, t, &short(t, n)))
            .collect()
    })
}

/// One device's thread, its lines named `name`.
fn spawn<'scope>(
    scope: &'scope std::thread::Scope<'scope, '_>,
    shared: &'scope Shared,
    t: TargetArg,
    name: String,
    dup: Option<String>,
) -> std::thread::ScopedJoinHandle<'scope, Done> {
    scope.spawn(move || {
        crate::console::stdio::set_thread_prefix(Some(name.clone()));
        let r = match dup {
            Some(first) => skipped(&t, &name, format!("the same device as {first}, given twice")),
            None => one(shared, &t, &name),
        };
        crate::console::stdio::set_thread_prefix(None);
        r
    })
}

/// A device's outcome once its thread ends; a row of its own if it panicked.
fn joined(h: std::thread::ScopedJoinHandle<'_, Done>, t: &TargetArg, name: &str) -> Done {
    h.join()
        .unwrap_or_else(|_| skipped(t, name, "its thread panicked; its journal, if any, waits".into()))
}

/// Send the runs to the fleet, or say why they wait.
fn upload(doc: &mut RunDocument, local: &std::path::Path, url: &str) {
    match crate::store::Store::open(local) {
        Ok(mut s) => crate::store::fleet::upload_and_say(&mut s, url, doc),
        Err(e) => {
            crate::errln!("warning: not uploaded: {e}");
            doc.warnings.push(crate::document::Note {
                kind: crate::document::NoteKind::Store,
                message: format!("not uploaded: {e}"),
                hint: Some("--db PATH or FLASHLAB_DB chooses another local store".into()),
            });
        }
    }
}

/// A labels file: `WHERE LABEL` a line (a device or a slot, then the
/// rest of the line); blank lines and `#` comments are skipped.
pub fn read_labels(path: &std::path::Path) -> CliResult<Vec<(String, String)>> {
    let text = crate::files::read_small(path, LABELS_MAX).map_err(|e| {
        CliError::usage(format!("cannot read the labels file {}: {e}", path.display()))
            .hint("a text file of `WHERE LABEL` lines, such as `1-1.2 shelf-A3`")
    })?;
    text.lines()
        .enumerate()
        .map(|(i, l)| (i, l.trim()))
        .filter(|(_, l)| !l.is_empty() && !l.starts_with('#'))
        .map(|(i, l)| {
            let at = || format!("{} line {}", path.display(), i + 1);
            match l.split_once(char::is_whitespace) {
                Some((w, label)) => crate::args::label(label)
                    .map(|label| (w.to_string(), label))
                    .map_err(|why| CliError::usage(format!("{}: {why}", at())).hint(LABELS_HINT)),
                None => Err(CliError::usage(format!("{}: `{l}` has no label", at())).hint(LABELS_HINT)),
            }
        })
        .collect()
}

/// Two labels for one place (`--label`, `--labels` or both): which the
/// table shows would be the first given, silently.
pub fn one_label_each(labels: &[(String, String)]) -> CliResult<()> {
    for (i, (at, label)) in labels.iter().enumerate() {
        if let Some((_, other)) = labels[..i].iter().find(|(w, l)| w == at && l != label) {
            return Err(
                CliError::usage(format!("{at} is labelled twice: `{other}` and `{label}`"))
                    .hint("give each device or slot one label, in --label or the --labels file"),
            );
        }
    }
    Ok(())
}

const LABELS_HINT: &str = "each line is WHERE LABEL: a device or slot, a space, then the label";

/// A labels file is a slot map, not data: a megabyte is thousands of lines.
const LABELS_MAX: u64 = 1 << 20;

/// A device's name as its lines start and as its slot where it has no
/// port: "sdc", "loop8", a file's name, "sim3" for the batch's third
/// device, a simulated card (its spec is in the row's `device`).
fn short(t: &TargetArg, n: usize) -> String {
    match &t.resolved {
        crate::args::Resolved::Sim(_) => format!("sim{}", n + 1),
        crate::args::Resolved::Path(p) => p
            .file_name()
            .map_or_else(|| t.text.clone(), |f| f.to_string_lossy().into_owned()),
    }
}

fn skipped(t: &TargetArg, name: &str, why: String) -> Done {
    Done {
        slot: name.to_string(),
        device: t.text.clone(),
        identity: Identity::default(),
        label: None,
        bus: String::new(),
        announced: 0,
        doc: None,
        ended: Some((RowVerdict::Skipped, why)),
        claims: Vec::new(),
        claimed_by: String::new(),
        run_id: Arc::default(),
        ended_s: 0.0,
        restored: None,
        fill: None,
    }
}

/// Saves a device's run as its results land (as a single run's store
/// does) and keeps the id for its row.
struct Saving {
    saver: crate::store::Saver,
    id: Arc<Mutex<Option<i64>>>,
}

impl Listener for Saving {
    fn landed(&mut self, doc: &RunDocument) {
        self.saver.save(doc);
        *self.id.lock().unwrap_or_else(|p| p.into_inner()) = self.saver.saved().map(|(id, _)| id);
    }
}

/// One device, start to end, on its own thread.
fn one(shared: &Shared, t: &TargetArg, name: &str) -> Done {
    let Shared {
        o,
        id,
        buses,
        timeline,
        multi,
    } = *shared;
    // A path no test could open says why first (missing, a directory, a
    // fifo, an empty reader): consent to write it is beside the point.
    if let crate::args::Resolved::Path(path) = &t.resolved {
        let read_only = crate::targets::real::OpenOptions {
            write: false,
            exclusive: false,
            engine: o.engine,
        };
        if let Err(e) = crate::targets::real::RealTarget::open(path, &t.text, read_only) {
            return skipped(t, name, refusal(&e.into()));
        }
    }
    // Every test of a batch writes (capacity, bench's write tests, probe):
    // one line says so, not each range a refusal would list.
    if !o.consent.write && matches!(t.resolved, crate::args::Resolved::Path(_)) {
        return skipped(
            t,
            name,
            "its tests write to it: add --write to consent (what they overwrite is journalled and put back)".into(),
        );
    }
    let restored = match returned(o, t) {
        Ok(r) => r,
        Err(why) => return skipped(t, name, why),
    };
    if o.consent.write
        && restored.is_none()
        && let Some(why) = content::moved_here(t, o.engine, &o.consent)
    {
        return skipped(t, name, why);
    }
    // Read before any test writes, and after a restore put it back.
    let content = content::Content::read(t, o.engine);
    let (mut runner, mut done) = match start(o, t, name, id, multi) {
        Ok(started) => started,
        Err(skipped) => return *skipped,
    };
    done.restored = restored;
    done.identity.fingerprint = content.and_then(|c| c.shown());
    if o.consent.write
        && let Err(e) = runner.hold_for_writing()
    {
        done.ended = Some((RowVerdict::Skipped, refusal(&e)));
        done.ended_s = timeline.now_s();
        return done;
    }
    let lock = buses.lock_of(&done.bus);
    let on_bus = OnBus {
        lock: &lock,
        timeline,
        slot: done.slot.clone(),
        bus: done.bus.clone(),
    };
    let outcome = if o.tests.probe {
        let steps = crate::command::probe::ProbeSteps {
            erase: None,
            capacity_and_bench: true,
        };
        on_bus.run("probe", Use::Alone, || crate::command::probe::probe_with(runner, steps))
    } else {
        let mut r = Ok(());
        // First, each device's bus shared: every destructive fill of a
        // batch runs at once, and the speed tests come after them.
        if o.destructive && matches!(t.resolved, crate::args::Resolved::Path(_)) {
            r = on_bus.run("fill", Use::Shared, || fill_step(&mut runner, o, &mut done));
        }
        if o.tests.capacity && r.is_ok() {
            r = on_bus.run("capacity", Use::Shared, || capacity_step(&mut runner));
        }
        if o.tests.bench && r.is_ok() {
            r = on_bus.run("bench", Use::Alone, || bench_step(&mut runner, o.runtime_ns));
        }
        let d = runner.finish();
        r.map(|()| d.clone()).map_err(|e| e.with_document(d))
    };
    match outcome {
        Ok(d) => done.doc = Some(d),
        Err(mut e) => {
            done.doc = e.partial.take().map(|d| *d);
            done.ended = Some(ended_by(&e, &t.text));
        }
    }
    done.ended_s = timeline.now_s();
    done
}

/// A device's steps on its bus: each held as it asks, and its span kept.
struct OnBus<'a> {
    lock: &'a std::sync::RwLock<()>,
    timeline: &'a Timeline,
    slot: String,
    bus: String,
}

impl OnBus<'_> {
    fn run<R>(&self, step: &str, how: Use, f: impl FnOnce() -> R) -> R {
        let _held = hold(self.lock, how);
        let from_s = self.timeline.now_s();
        let r = f();
        self.timeline.record(Span {
            slot: self.slot.clone(),
            bus: self.bus.clone(),
            step: step.into(),
            how,
            from_s,
            to_s: self.timeline.now_s(),
        });
        r
    }
}

/// The device's runner, opened and tagged with the batch, and its row as
/// far as identification fills it; or its row, skipped with why.
fn start(
    o: &Options,
    t: &TargetArg,
    name: &str,
    id: &str,
    multi: &indicatif::MultiProgress,
) -> Result<(Runner, Done), Box<Done>> {
    let resolved = Resolved {
        target: t.clone(),
        engine: o.engine,
        consent: o.consent.clone(),
        store: None,
        store_named: false,
        // The batch uploads every device's run once, at its end.
        fleet: None,
        // Set below, with the batch's tag, once the slot is known.
        label: None,
    };
    let mut runner = Runner::new(CommandName::Batch, &resolved).map_err(|e| Box::new(skipped(t, name, refusal(&e))))?;
    let info = runner.identify().ok();
    let place = info.as_ref().and_then(|i| i.place.clone()).unwrap_or_default();
    let slot = place.port.clone().unwrap_or_else(|| name.to_string());
    let bus = if place.bus.is_empty() {
        format!("own {slot}")
    } else {
        place.bus.clone()
    };
    let label = o
        .labels
        .iter()
        .find(|(k, _)| *k == t.text || *k == slot || k == name)
        .map(|(_, l)| l.clone());
    let (claims, claimed_by) = claims_of(o, info.as_ref());
    runner.show_among(multi, &slot);
    if let Some(l) = &label {
        runner.doc().extras.label.set(l.clone());
    }
    runner.doc().extras.batch.set(BatchTag {
        id: id.to_string(),
        slot: slot.clone(),
        label: label.clone(),
        bus: bus.clone(),
    });
    let run_id = Arc::new(Mutex::new(None));
    if let Some(p) = &o.store {
        runner.listen(Box::new(Saving {
            saver: crate::store::Saver::at(p),
            id: run_id.clone(),
        }));
    }
    let done = Done {
        slot,
        device: t.text.clone(),
        identity: info.as_ref().map(|i| Identity::of(i, &t.text)).unwrap_or_default(),
        label,
        bus,
        announced: crate::measure::registry::Session::description(&runner).size_bytes,
        doc: None,
        ended: None,
        claims,
        claimed_by,
        run_id,
        ended_s: 0.0,
        restored: None,
        fill: None,
    };
    Ok((runner, done))
}

/// A card back in its slot (pulled mid-test, or left by a crash or a
/// power cut) whose earlier run's journal still waits: that journal is
/// restored first, with every identity check of `flashlab restore` (the
/// bytes it rests on, size, serial, the fingerprint of blocks the test
/// never writes), so another card in the slot is never written with this
/// one's data. What was put back, or why the row is skipped (the journal
/// waits).
fn returned(o: &Options, t: &TargetArg) -> Result<Option<String>, String> {
    let crate::args::Resolved::Path(path) = &t.resolved else {
        return Ok(None);
    };
    if !o.consent.write || crate::runner::writable::pending_journal(path, &o.consent).is_none() {
        return Ok(None);
    }
    let doc = crate::command::restore::run(
        Some(&t.text),
        false,
        false,
        o.consent.journal_dir.as_deref(),
        &o.consent.default_journal_dir,
        o.engine,
    )
    .map_err(|e| format!("its earlier run's journal waits: {}", refusal(&e)))?;
    let Body::Restored(list) = &doc.body else {
        return Ok(None);
    };
    let bytes: u64 = list.restored.iter().map(|r| r.bytes_restored).sum();
    Ok(Some(format!(
        "{} an earlier run left in {} journal{} put back and verified first",
        crate::units::Iec(bytes),
        list.restored.len(),
        if list.restored.len() == 1 { "" } else { "s" }
    )))
}

/// Every block written and read back ([`crate::measure::capacity::fill`]),
/// within `--budget` where one was given.
fn fill_step(r: &mut Runner, o: &Options, done: &mut Done) -> CliResult<()> {
    use crate::measure::registry::Session;
    let test = crate::measure::capacity::fill::Fill {
        nonce: r.nonce(),
        budget_ns: o.consent.budget_s.map(|s| crate::measure::budget_ns(Some(s))),
    };
    done.fill = Some(r.run(&test)?);
    Ok(())
}

/// capacity with probe's defaults.
fn capacity_step(r: &mut Runner) -> CliResult<()> {
    use crate::measure::registry::Session;
    let d = r.description().clone();
    let skip = capacity::DEFAULT_SKIP;
    let options = capacity::Options::new(
        skip,
        capacity::default_push(&d, skip),
        capacity::DEFAULT_FLUSH,
        r.nonce(),
    );
    let found = capacity::steps(r, options)?;
    r.update(|res| res.capacity.set(found));
    Ok(())
}

/// bench's quick preset; `runtime_ns` instead of its 5 device-seconds a test.
fn bench_step(r: &mut Runner, runtime_ns: Option<u64>) -> CliResult<()> {
    use crate::measure::registry::Session;
    let d = r.description().clone();
    let quick = bench::BenchArgs {
        preset: Some(bench::Preset::Quick),
        rwmix_read: 50,
        limit: runtime_ns.map(bench::Limit::DeviceNs),
        ..Default::default()
    };
    let own = crate::command::probe::holding_own_data(&d, r.doc().results.capacity.get());
    let test = bench::Bench {
        options: bench::options_of(&own, &quick),
        medium: r.medium(),
    };
    test.plan(&d)?;
    r.run(&test).map(|_| ())
}

/// A refusal before any write, as the row says it.
fn refusal(e: &CliError) -> String {
    match &e.hint {
        Some(h) => format!("{} ({h})", e.message),
        None => e.message.clone(),
    }
}

/// How a test's error ends the row: a device that went away is
/// "removed" (its journal waits for it), a refusal "skipped", the rest FAIL.
fn ended_by(e: &CliError, device: &str) -> (RowVerdict, String) {
    let gone = device.starts_with('/') && !std::path::Path::new(device).exists() || devices::size_of(device) == Some(0);
    match e.exit {
        _ if gone => (
            RowVerdict::Removed,
            format!(
                "it went away mid-test; its journal waits, and its data is put back when it returns (a batch \
                 with --write on it, or `flashlab restore {}`)",
                crate::console::shell_word(device)
            ),
        ),
        Exit::Usage => (RowVerdict::Skipped, refusal(e)),
        Exit::Interrupted | Exit::Terminated => (RowVerdict::Skipped, e.message.clone()),
        Exit::Failed => (RowVerdict::Fail, e.message.clone()),
    }
}

/// The classes the card claims: --claims, else its SSR's.
fn claims_of(o: &Options, info: Option<&crate::identify::DeviceInfo>) -> (Vec<SdClass>, String) {
    if !o.claims.is_empty() {
        return (o.claims.clone(), "--claims".into());
    }
    let ssr = info.and_then(|i| i.mmc.as_ref()).and_then(|m| m.ssr.as_ref());
    match ssr.map(SdClass::claimed_by) {
        Some(c) if !c.is_empty() => (c, "its SSR".into()),
        _ => (Vec::new(), String::new()),
    }
}
