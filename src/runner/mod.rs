//! The one runner (docs/DESIGN.md "Tests, the runner, the run document"): every
//! command, `probe` and the property tests run their tests through it. It
//! opens the target once read-only (a bad target is refused here, before
//! any test), asks each test for its plan before any I/O, and runs a
//! read-only test on that handle and a writing test on a preserving target
//! over the target it opened for writing once (consent, claim, journal,
//! restore, signals). Each result goes into the run document as soon as its
//! test ends, and to whoever listens (the results store), so a late failure
//! loses nothing. To the tests' own sequences it is a
//! [`Session`](crate::measure::registry::Session).

pub mod many;
pub mod open;
pub mod overall;
pub mod progress;
pub mod writable;

use std::path::PathBuf;

use crate::args;
use crate::document::{NoteKind, RunDocument, WriteRecord};
use crate::error::{CliError, CliResult};
use crate::identify::DeviceInfo;
use crate::measure::registry::Session;
use crate::measure::{Cx, MeasureError, Medium, Results, Test};
use crate::safety::PreservingTarget;
use crate::targets::real::EngineChoice;
use crate::targets::{Target, TargetDescription, TargetError, TargetKind};
use crate::units::Iec;
use open::Opened;
use writable::{Consent, Writable};

/// Called as results land, and once more with the finished document (which
/// it may annotate: a store that could not save says so in it). Send, as
/// the runner it listens to is.
pub trait Listener: Send {
    fn landed(&mut self, doc: &RunDocument);
    fn finished(&mut self, doc: &mut RunDocument) {
        self.landed(doc);
    }
}

/// A document made without a runner (import, life) finished, then saved
/// in the store at `store` where there is one and said as a measuring
/// run's is; `named`: the user named the store (`Places::store_named_by`).
pub fn finish_and_save(doc: &mut RunDocument, store: Option<&std::path::Path>, named: bool) {
    doc.finish(None);
    if let Some(path) = store {
        let mut saver = crate::store::Saver::at(path);
        saver.named = named;
        saver.finished(doc);
    }
}

/// The results store saves each result as it lands, and says at the end
/// where the run went (or why it could not).
impl Listener for crate::store::Saver {
    fn landed(&mut self, doc: &RunDocument) {
        self.save(doc);
    }

    fn finished(&mut self, doc: &mut RunDocument) {
        self.save(doc);
        if let Some(why) = self.failure() {
            doc.warnings.push(crate::document::Note {
                kind: NoteKind::Store,
                message: format!("the run is not saved: {why}"),
                hint: Some("--db PATH or FLASHLAB_DB chooses another store, --no-store skips it".into()),
            });
        }
        // One line, so probe's answer fits an 80x24 screen: the store's
        // path only where --db or FLASHLAB_DB chose it (`results list`
        // names it in any case), and then in the commands too, which
        // would read the default store without it.
        if let Some((id, path)) = self.saved() {
            let (place, db) = if self.named {
                (
                    format!(" in {}", path.display()),
                    crate::places::db_option(&path.to_string_lossy()),
                )
            } else {
                (String::new(), String::new())
            };
            let line = format!("saved as run {id}{place} {}", crate::places::run_commands(id, &db));
            crate::errln!("{}", crate::console::wrap(&line, "", ""));
        }
        self.upload(doc);
    }
}

/// What a measuring command runs on and how, resolved once from its
/// arguments: the target, the engine, the user's consent to writing, and
/// the results store (None: --no-store).
#[derive(Debug, Clone)]
pub struct Resolved {
    pub target: args::TargetArg,
    pub engine: EngineChoice,
    pub consent: Consent,
    pub store: Option<PathBuf>,
    /// The user chose the store (`--db`, `FLASHLAB_DB`; see
    /// [`crate::places::Places::store_named`]).
    pub store_named: bool,
    /// The fleet store the run goes to once it is kept in `store`
    /// (`--db postgres://...`).
    pub fleet: Option<String>,
    /// `--label`: the name the run is listed by.
    pub label: Option<String>,
}

pub struct Runner {
    target: args::TargetArg,
    engine: EngineChoice,
    consent: Consent,
    reader: Opened,
    /// The real target opened exclusively at the first writing test (or by
    /// [`Runner::hold_for_writing`]), kept for the rest of the run.
    writer: Option<Writable>,
    device_ns: u64,
    doc: RunDocument,
    listeners: Vec<Box<dyn Listener>>,
    /// Say each step's end on stderr even without a terminal (probe).
    announce: bool,
    /// Identification, read from sysfs once: info, the references align
    /// compares with and the medium all come from it.
    identity: std::cell::OnceCell<CliResult<DeviceInfo>>,
    /// What each writing test on a real target wrote, in order.
    writes: Vec<WriteRecord>,
    /// This run's own number ([`Session::nonce`]).
    nonce: u64,
    /// Where its progress shows.
    display: progress::Display,
    /// The line over its steps (probe on a terminal).
    overall: Option<overall::Overall>,
    /// What stops this run: a signal, or its own stop ([`Runner::stopper`]).
    stop: crate::safety::signals::Stop,
}

impl Runner {
    /// Open the target read-only (a bad target is refused here, before any
    /// test) and start the document of `command`; the store, if any,
    /// listens.
    pub fn new(command: crate::document::CommandName, r: &Resolved) -> CliResult<Self> {
        let reader = open::read_only(&r.target, r.engine)?;
        let desc = reader.as_target().description().clone();
        let mut doc = RunDocument::new(command, Some(desc.clone()));
        if let Opened::Real(t) = &reader
            && !t.direct
        {
            doc.note(
                NoteKind::Engine,
                "the filesystem refused O_DIRECT; reads of this file go through the page cache",
                None,
            );
        }
        if let Opened::Real(t) = &reader
            && t.tail_bytes > 0
        {
            let line = format!(
                "the last {} bytes of {} are not a whole {}-byte block: the tests measure and write only the \
                 {} bytes before them",
                t.tail_bytes, r.target.text, desc.logical_block_size, desc.size_bytes
            );
            crate::errln!("{}", crate::console::wrap(&format!("note: {line}"), "", "      "));
            doc.note(NoteKind::Geometry, line, None);
        }
        if let Some(l) = &r.label {
            doc.extras.label.set(l.clone());
        }
        let mut runner = Runner::assemble(r.target.clone(), r.engine, r.consent.clone(), reader, doc);
        if let Some(p) = &r.store {
            let mut saver = crate::store::Saver::at(p);
            saver.named = r.store_named;
            saver.fleet = r.fleet.clone();
            runner.listen(Box::new(saver));
        }
        runner.stamp_device();
        Ok(runner)
    }

    /// A runner over an opened target, before anything ran: no listener,
    /// no writer held, its own nonce and stop.
    fn assemble(
        target: args::TargetArg,
        engine: EngineChoice,
        consent: Consent,
        reader: Opened,
        doc: RunDocument,
    ) -> Self {
        Runner {
            target,
            engine,
            consent,
            reader,
            writer: None,
            device_ns: 0,
            doc,
            listeners: Vec::new(),
            announce: false,
            identity: std::cell::OnceCell::new(),
            writes: Vec::new(),
            nonce: crate::random::nonce(),
            display: progress::Display::default(),
            overall: None,
            stop: Default::default(),
        }
    }

    /// A line over the run's steps, `plan`, above each step's own: where
    /// the run is alone on stderr's terminal (among other runs, each run's
    /// line is its step's).
    pub fn show_overall(&mut self, plan: &[(&str, f64, bool)], budget: overall::Budget) {
        if self.display.is_shared() {
            return;
        }
        if let Some((o, d)) = overall::Overall::start(plan, budget) {
            self.overall = Some(o);
            self.display = d;
        }
    }

    /// Steps of the overall line's plan that will not run.
    pub fn skip_steps(&self, steps: &[&str]) {
        if let Some(o) = &self.overall {
            o.skip(steps);
        }
    }

    /// Show this run's progress as one line among several runs'.
    pub fn show_among(&mut self, multi: &indicatif::MultiProgress, label: &str) {
        self.display = progress::Display::among(multi, label);
    }

    /// A runner over a simulated card built in code (the property tests'
    /// random cards); every test of the run uses that one card.
    pub fn for_sim(command: crate::document::CommandName, card: crate::sim::SimTarget) -> Self {
        let desc = card.description().clone();
        let text = desc.spec.clone();
        let target = args::TargetArg {
            resolved: args::Resolved::Sim(Box::new(card.params.clone())),
            text,
        };
        let doc = RunDocument::new(command, Some(desc));
        let mut r = Runner::assemble(
            target,
            EngineChoice::Auto,
            Consent::default(),
            Opened::Sim(Box::new(card)),
            doc,
        );
        r.stamp_device();
        r
    }

    /// Which device this is, in every document, so the results store lists
    /// runs of one card together. An identification that fails here says
    /// why where identification is needed (info, probe); the stamp is
    /// left out.
    fn stamp_device(&mut self) {
        if let Ok(info) = self.identify() {
            let id = crate::document::DeviceId::of_info(&info, &self.target.text);
            self.doc.extras.device.set(id);
        }
    }

    /// One line on stderr as each step ends, terminal or not.
    pub fn announce_steps(&mut self) {
        self.announce = true;
    }

    pub fn listen(&mut self, l: Box<dyn Listener>) {
        self.listeners.push(l);
    }

    pub fn spec(&self) -> &str {
        &self.target.text
    }

    /// The device-time budget of the writing steps from here on (probe
    /// shares its own among its steps).
    pub fn set_step_budget(&mut self, seconds: f64) {
        self.consent.budget_s = Some(seconds);
    }

    pub fn consent(&self) -> &Consent {
        &self.consent
    }

    /// A handle that stops this run alone, from another thread, as a
    /// signal stops every run: at its next request, its data restored.
    pub fn stopper(&self) -> crate::safety::signals::Stop {
        self.stop.clone()
    }

    pub fn doc(&mut self) -> &mut RunDocument {
        &mut self.doc
    }

    /// Identify the target (sysfs and registers, or the simulated card's).
    pub fn identify(&self) -> CliResult<DeviceInfo> {
        self.identity.get_or_init(|| self.read_identity()).clone()
    }

    fn read_identity(&self) -> CliResult<DeviceInfo> {
        let d = self.reader.as_target().description();
        match &self.reader {
            Opened::Real(_) => crate::identify::identify(
                &crate::identify::sysfs::Roots::system(),
                std::path::Path::new(&self.target.text),
                d.size_bytes,
                d.logical_block_size,
                d.physical_block_size,
            )
            .map_err(|e| {
                CliError::usage(e.to_string())
                    .hint("sysfs looks unusual for this device; please report it with `ls -lR /sys/dev/block/`")
            }),
            Opened::Sim(s) => Ok(s.device_info()),
        }
    }

    /// Hold the real target for writing now: the writing run's refusals (a
    /// pending journal, an alias in use, the device busy) come before any
    /// step, and the exclusive open is kept for every writing step. probe
    /// with --write does this first.
    pub fn hold_for_writing(&mut self) -> CliResult<()> {
        if self.writer.is_none() && self.is_real() {
            self.writer = Some(Writable::open(&self.target, &self.consent, self.engine)?);
        }
        Ok(())
    }

    /// Hand the document on to whoever listens.
    pub fn publish(&mut self) {
        self.doc.device_time_s = Some(self.device_ns as f64 / 1e9);
        for l in &mut self.listeners {
            l.landed(&self.doc);
        }
    }

    /// Stop here if a signal came after the last write (honoured between
    /// steps).
    pub fn check_signal(&self) -> CliResult<()> {
        match self.stop.pending() {
            Some(signal) => Err(crate::error::interrupted(signal)),
            None => Ok(()),
        }
    }

    /// Run one test: its plan first (refused before any I/O), then on the
    /// read-only handle or through a preserving target; its result
    /// recorded and handed on.
    pub fn run_test<T: Test>(&mut self, test: &T) -> CliResult<T::Output> {
        // A Ctrl-C or SIGTERM that came after the last step's last write
        // (while it restored, or during a read-only step) stops the run here.
        self.check_signal()?;
        let ranges = test.plan(self.reader.as_target().description())?;
        let budget = (!ranges.is_empty()).then(|| crate::measure::budget_ns(self.consent.budget_s) as f64 / 1e9);
        let step = T::KEY.replace('_', "-");
        if let Some(o) = &self.overall {
            o.begin(&step);
        }
        let progress = progress::Progress::start(&self.display, &step, budget);
        let before = self.device_ns;
        let out = if ranges.is_empty() {
            let t = self.reader.as_target_mut();
            let start = t.device_time_ns();
            let stop = self.stop.clone();
            let stopped = move || stop.pending();
            let mut cx = Cx {
                target: t,
                progress: &progress,
                cancelled: &stopped,
                budget_ns: crate::measure::budget_ns(self.consent.budget_s),
            };
            let r = test.run(&mut cx);
            self.device_ns += t_device(&self.reader).saturating_sub(start);
            r.map_err(CliError::from)
        } else {
            self.run_writing(test, ranges, &progress)
        };
        let spent = (self.device_ns - before) as f64 / 1e9;
        let ended = match &out {
            Ok(_) => "done:",
            Err(e) => match e.exit {
                crate::error::Exit::Usage => "refused:",
                crate::error::Exit::Interrupted | crate::error::Exit::Terminated => "interrupted:",
                crate::error::Exit::Failed => "failed:",
            },
        };
        progress.finish(ended, spent, self.announce);
        if let Some(o) = &self.overall {
            o.end(&step, self.device_ns as f64 / 1e9);
        }
        let mut steps = self.doc.extras.steps.get().cloned().unwrap_or_default();
        steps.push(crate::document::StepTime { step, device_s: spent });
        self.doc.extras.steps.set(steps);
        let out = out?;
        T::record(&out, &mut self.doc.results);
        self.publish();
        Ok(out)
    }

    fn run_writing<T: Test>(
        &mut self,
        test: &T,
        ranges: Vec<crate::safety::ranges::Range>,
        progress: &progress::Progress,
    ) -> CliResult<T::Output> {
        let d = self.reader.as_target().description().clone();
        let ranges = writable::consented(&self.target.text, &d, ranges, &self.consent)?;
        let consent = self.consent.clone();
        let spec = self.target.text.clone();
        if let Opened::Sim(card) = &mut self.reader {
            // The same card for every test of the run, as a real card keeps
            // what each step left it (AUs open, logs half full): the first
            // write after open-au pays for closing what open-au left open,
            // through `flashlab emulate` as on the card itself.
            let p = writable::simulated(&spec, Box::new(card.as_mut()), ranges)?.stopping_on(self.stop.clone());
            let (out, (_, ns, _)) = run_preserved(test, p, progress, &spec, None, &consent, &self.stop)?;
            self.device_ns += ns;
            return Ok(out);
        }
        self.hold_for_writing()?;
        let writer = self.writer.as_mut().expect("held above");
        let p = writer.preserve(ranges, &consent)?.stopping_on(self.stop.clone());
        let journal = p.journal_path().map(std::path::Path::to_path_buf);
        let (out, (outcome, ns, engines)) =
            run_preserved(test, p, progress, &spec, journal.as_deref(), &consent, &self.stop)?;
        self.device_ns += ns;
        self.note_written(T::KEY, &outcome, engines);
        Ok(out)
    }

    /// What a writing test did to a real target: a line on stderr, a note,
    /// and its record under `writes`.
    fn note_written(&mut self, key: &str, outcome: &crate::safety::Outcome, engines: Vec<EngineChoice>) {
        if outcome.preserved {
            // Bytes as a person counts them, and in the order they
            // happened: what the test wrote, where (the ranges journalled
            // first), what was put back and what read back the same.
            // "21.09 MiB of writes landed on 56 MiB of the device (14 of
            // 16 pieces); 33 MiB written back, 56 MiB verified" had said
            // none of it plainly.
            let line = format!(
                "{key}: wrote {} into {} of the device ({} of the {} saved first); {}; journal deleted",
                Iec(outcome.bytes_written),
                Iec(outcome.bytes_verified),
                outcome.ranges_touched,
                crate::units::count(outcome.ranges.len() as u64, "range", "ranges"),
                outcome.put_back()
            );
            crate::errln!("{}", line.split_once(": ").map_or(line.as_str(), |x| x.1));
            self.doc.note(NoteKind::Restored, line, None);
        }
        self.writes.push(WriteRecord {
            test: key.to_string(),
            engines,
            bytes_written: outcome.bytes_written,
            ranges_declared: outcome.ranges.len(),
            ranges_touched: outcome.ranges_touched,
            bytes_restored: outcome.bytes_restored,
            bytes_verified: outcome.bytes_verified,
        });
        self.doc.extras.writes.set(self.writes.clone());
    }

    /// The finished document, handed to the listeners once more.
    pub fn finish(mut self) -> RunDocument {
        // The overall line goes before the report is printed.
        self.overall = None;
        if let Opened::Sim(card) = &self.reader {
            let report = card.flash_report();
            if report.host_bytes_written > 0 {
                self.doc.extras.flash_work.set(report);
            }
        }
        self.doc.finish(Some(self.device_ns));
        for l in &mut self.listeners {
            l.finished(&mut self.doc);
        }
        // Held aliases and the exclusive open go only now.
        self.writer = None;
        self.doc
    }
}

fn t_device(o: &Opened) -> u64 {
    o.as_target().device_time_ns()
}

/// Run a writing test on its preserving target, then put the data back
/// (also after a failure or a signal) before anything is reported. Returns
/// the test's output, and what the restore did, the device time and the
/// engines that ran.
type Written = (crate::safety::Outcome, u64, Vec<EngineChoice>);

fn run_preserved<T: Test>(
    test: &T,
    mut p: PreservingTarget<'_>,
    progress: &progress::Progress,
    spec: &str,
    journal: Option<&std::path::Path>,
    consent: &Consent,
    stop: &crate::safety::signals::Stop,
) -> CliResult<(T::Output, Written)> {
    // Ctrl-C (or the run's own stop) stops the test before its next
    // write; the restore below runs.
    crate::safety::signals::install();
    let stopped = || stop.pending();
    // The reader's time is in it too: 0, as the reader opened with `p`.
    let before = p.device_time_ns();
    let result = {
        let mut cx = Cx {
            target: &mut p,
            progress,
            cancelled: &stopped,
            budget_ns: crate::measure::budget_ns(consent.budget_s),
        };
        test.run(&mut cx)
    };
    let engines = p.engines_used();
    let interrupted = matches!(result, Err(MeasureError::Target(TargetError::Interrupted { .. })));
    if interrupted {
        progress.interrupted();
    }
    let (target, outcome) = p.finish();
    if interrupted {
        progress.clear();
    }
    // The restore's reads through the independent reader are device time
    // too (capacity and bench each read 32 MiB back so on an at91 card, at
    // 1.5 MB/s): uncounted, probe through the real path reported less
    // device time than the same card took in process.
    let verified = outcome.as_ref().map_or(0, |o| o.verify_device_ns);
    let ns = target.device_time_ns().saturating_sub(before) + verified;
    let outcome = outcome.map_err(|e| writable::restore_failed(spec, journal, &consent.default_journal_dir, e))?;
    match result {
        Err(MeasureError::Target(TargetError::Interrupted { signal })) => {
            writable::report_interrupted(signal, &outcome);
            Err(crate::error::interrupted(signal))
        }
        r => Ok((r?, (outcome, ns, engines))),
    }
}

impl Session for Runner {
    type Error = CliError;

    fn description(&self) -> &TargetDescription {
        self.reader.as_target().description()
    }

    fn nonce(&self) -> u64 {
        self.nonce
    }

    /// What lies under the target, for the tests' verdicts: a simulated card
    /// is flash; a real target is what identification says (a file, a loop
    /// device, a RAM disk cannot show flash geometry). Unidentifiable real
    /// targets count as possibly flash: the statistics still have to hold.
    fn medium(&self) -> Medium {
        match (&self.reader, self.identify()) {
            (Opened::Sim(_), _) => Medium::default(),
            (Opened::Real(_), Ok(info)) => Medium::of(&info),
            (Opened::Real(_), Err(_)) => Medium::default(),
        }
    }

    /// What the card and the kernel say the AU is, for align to compare with.
    fn references(&self) -> Vec<(String, u64)> {
        let Ok(info) = self.identify() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Some(m) = &info.mmc {
            if let Some(au) = m.ssr.as_ref().and_then(|s| s.au_size_bytes) {
                out.push(("the card's SSR AU size".to_string(), au));
            }
            if let Some(p) = m.preferred_erase_size_bytes {
                out.push((
                    format!("the kernel's preferred erase size ({})", m.erase_size_source_words()),
                    p,
                ));
            }
        }
        out
    }

    fn is_real(&self) -> bool {
        self.description().kind != TargetKind::Sim
    }

    fn psync_only(&self) -> bool {
        self.engine == EngineChoice::Psync
    }

    fn keeps_data(&self) -> bool {
        self.reader.as_target().keeps_data()
    }

    fn device_ns(&self) -> u64 {
        self.device_ns
    }

    fn budget_ns(&self) -> u64 {
        crate::measure::budget_ns(self.consent.budget_s)
    }

    fn run<T: Test>(&mut self, test: &T) -> CliResult<T::Output> {
        self.run_test(test)
    }

    fn update(&mut self, f: impl FnOnce(&mut Results)) {
        f(&mut self.doc.results);
        self.publish();
    }

    fn note(&mut self, kind: NoteKind, message: String, hint: Option<&str>, say: bool) {
        if say {
            crate::errln!("{message}");
        }
        self.doc.note(kind, message, hint);
    }
}
