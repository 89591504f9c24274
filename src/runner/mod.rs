//! The one runner (DESIGN.md "Tests, the runner, the run document"): every
//! command, `probe` and the property tests run their tests through it. It
//! opens the target, asks each test for its plan before any I/O, and runs a
//! read-only test on one shared read-only handle and a writing test on a
//! preserving target (consent, claim, journal, restore, signals). Each result
//! goes into the run document as soon as its test ends, and to whoever
//! listens (the results store), so a late failure loses nothing.

pub mod open;
pub mod progress;
pub mod session;

use serde::Serialize;

use crate::document::{NoteKind, RunDocument};
use crate::error::{CliError, CliResult};
use crate::identify::DeviceInfo;
use crate::measure::{MeasureError, Test};
use crate::target::real::EngineChoice;
use crate::target::{Target, TargetDescription, TargetError, TargetKind};
use crate::units::Iec;
use open::Opened;
use session::Consent;

/// Called with the document each time a result lands in it.
pub type Listener = Box<dyn FnMut(&RunDocument)>;

pub struct Runner {
    spec: String,
    engine: EngineChoice,
    consent: Consent,
    reader: Opened,
    device_ns: u64,
    doc: RunDocument,
    listeners: Vec<Listener>,
    /// Say each step's end on stderr even without a terminal (probe).
    announce: bool,
    /// Identification, read from sysfs once: info, the references align
    /// compares with and the medium all come from it.
    identity: std::cell::OnceCell<CliResult<DeviceInfo>>,
    /// What each writing test on a real target wrote, in order.
    writes: Vec<WriteRecord>,
}

/// What one writing test did to a real target, under `writes` in the run
/// document: which engines ran it (a silent fallback shows), what it wrote
/// and what it put back.
#[derive(Debug, Clone, Serialize, serde::Deserialize, PartialEq)]
pub struct WriteRecord {
    pub test: String,
    pub engines: Vec<EngineChoice>,
    pub bytes_written: u64,
    pub ranges_declared: usize,
    pub ranges_touched: usize,
    pub bytes_restored: u64,
}

impl Runner {
    /// Open `spec` read-only (a bad target is refused here, before any test)
    /// and start the document of `command`.
    pub fn new(command: &str, spec: &str, engine: EngineChoice, consent: Consent) -> CliResult<Self> {
        let reader = open::read_only(spec, engine)?;
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
                "the last {} bytes of {spec} are not a whole {}-byte block: the tests measure and write only the \
                 {} bytes before them",
                t.tail_bytes, desc.logical_block_size, desc.size_bytes
            );
            crate::errln!("{}", crate::console::wrap(&format!("note: {line}"), "", "      "));
            doc.note(NoteKind::Geometry, line, None);
        }
        let mut r = Runner {
            spec: spec.to_string(),
            engine,
            consent,
            reader,
            device_ns: 0,
            doc,
            listeners: Vec::new(),
            announce: false,
            identity: std::cell::OnceCell::new(),
            writes: Vec::new(),
        };
        r.stamp_device();
        Ok(r)
    }

    /// Which device this is, in every document, so the results store lists
    /// runs of one card together. An identification that fails here says
    /// why where identification is needed (info, probe); the stamp is
    /// left out.
    fn stamp_device(&mut self) {
        if let Ok(info) = self.identify() {
            let id = crate::store::device_key::DeviceId::of_info(&info, &self.spec);
            self.doc.put("device", &id);
        }
    }

    /// A runner over a simulated card built in code (the property tests'
    /// random cards); writing tests get a fresh card with the same
    /// parameters, as a spec reopened by the CLI would.
    pub fn for_sim(command: &str, card: crate::sim::SimTarget) -> Self {
        let desc = card.description().clone();
        let mut r = Runner {
            spec: desc.spec.clone(),
            engine: EngineChoice::Auto,
            consent: Consent::default(),
            reader: Opened::Sim(Box::new(card)),
            device_ns: 0,
            doc: RunDocument::new(command, Some(desc)),
            listeners: Vec::new(),
            announce: false,
            identity: std::cell::OnceCell::new(),
            writes: Vec::new(),
        };
        r.stamp_device();
        r
    }

    /// One line on stderr as each step ends, terminal or not.
    pub fn announce_steps(&mut self) {
        self.announce = true;
    }

    pub fn listen(&mut self, l: Listener) {
        self.listeners.push(l);
    }

    pub fn description(&self) -> &TargetDescription {
        self.reader.as_target().description()
    }

    pub fn is_real(&self) -> bool {
        self.description().kind != TargetKind::Sim
    }

    pub fn consent(&self) -> &Consent {
        &self.consent
    }

    pub fn doc(&mut self) -> &mut RunDocument {
        &mut self.doc
    }

    /// Identify the target (sysfs and registers, or the simulated card's).
    pub fn identify(&self) -> CliResult<DeviceInfo> {
        self.identity.get_or_init(|| self.read_identity()).clone()
    }

    fn read_identity(&self) -> CliResult<DeviceInfo> {
        let d = self.description();
        match &self.reader {
            Opened::Real(_) => crate::identify::identify(
                &crate::identify::sysfs::Host::system(),
                std::path::Path::new(&self.spec),
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

    /// What lies under the target, for the tests' verdicts: a simulated card
    /// is flash; a real target is what identification says (a file, a loop
    /// device, a RAM disk cannot show flash geometry). Unidentifiable real
    /// targets count as possibly flash: the statistics still have to hold.
    pub fn medium(&self) -> crate::measure::Medium {
        match (&self.reader, self.identify()) {
            (Opened::Sim(_), _) => crate::measure::Medium::default(),
            (Opened::Real(_), Ok(info)) => crate::measure::Medium::of(&info),
            (Opened::Real(_), Err(_)) => crate::measure::Medium::default(),
        }
    }

    /// What the card and the kernel say the AU is, for align to compare with.
    pub fn references(&self) -> Vec<(String, u64)> {
        let Ok(info) = self.identify() else {
            return Vec::new();
        };
        let mut out = Vec::new();
        if let Some(m) = &info.mmc {
            if let Some(au) = m.ssr.as_ref().and_then(|s| s.au_size_bytes) {
                out.push(("ssr_au_size".to_string(), au));
            }
            if let Some(p) = m.preferred_erase_size_bytes {
                out.push((
                    format!("sysfs preferred_erase_size ({})", m.preferred_erase_size_source),
                    p,
                ));
            }
        }
        out
    }

    /// Put a result that is not a test's (identification, advice) into the
    /// document and hand it on.
    pub fn put<T: Serialize>(&mut self, key: &str, value: &T) {
        self.doc.put(key, value);
        self.publish();
    }

    fn publish(&mut self) {
        self.doc.device_time_s = Some(self.device_ns as f64 / 1e9);
        for l in &mut self.listeners {
            l(&self.doc);
        }
    }

    /// Run one test: its plan first (refused before any I/O), then on the
    /// shared read-only handle or through a preserving target.
    pub fn run<T: Test>(&mut self, test: &T) -> CliResult<T::Output> {
        // A Ctrl-C or SIGTERM that came after the last step's last write
        // (while it restored, or during a read-only step) stops the run here.
        if let Some(signal) = crate::safety::signals::pending() {
            return Err(crate::error::interrupted(signal));
        }
        let ranges = test.plan(self.description())?;
        let progress = crate::runner::progress::Progress::start(&T::KEY.replace('_', "-"));
        let before = self.device_ns;
        let out = self.run_planned(test, ranges);
        progress.finish(out.is_ok(), (self.device_ns - before) as f64 / 1e9, self.announce);
        let out = out?;
        self.doc.put(T::KEY, &out);
        self.publish();
        Ok(out)
    }

    fn run_planned<T: Test>(&mut self, test: &T, ranges: Vec<crate::safety::ranges::Range>) -> CliResult<T::Output> {
        Ok(if ranges.is_empty() {
            let t = match &mut self.reader {
                Opened::Real(t) => t.as_mut() as &mut dyn Target,
                Opened::Sim(t) => t.as_mut() as &mut dyn Target,
            };
            let before = t.device_time_ns();
            let r = test.run(t);
            self.device_ns += t.device_time_ns().saturating_sub(before);
            r?
        } else {
            self.run_writing(test, ranges)?
        })
    }

    fn run_writing<T: Test>(&mut self, test: &T, ranges: Vec<crate::safety::ranges::Range>) -> CliResult<T::Output> {
        let mut s = match &self.reader {
            Opened::Sim(card) => {
                let fresh = crate::sim::SimTarget::new(&self.spec, card.params.clone());
                session::simulated(&self.spec, fresh, ranges)?
            }
            Opened::Real(_) => session::open_for_writing(&self.spec, ranges, &self.consent, self.engine)?,
        };
        // Ctrl-C stops the test before its next write; the restore below runs.
        crate::safety::signals::install();
        let journal = s.target.journal_path().map(std::path::Path::to_path_buf);
        let result = test.run(&mut s.target);
        let (target, outcome) = s.target.finish();
        drop(s.claim);
        self.device_ns += target.device_time_ns();
        let outcome = outcome.map_err(|e| session::restore_failed(&self.spec, journal.as_deref(), &self.consent, e))?;
        if self.is_real() {
            self.writes.push(WriteRecord {
                test: T::KEY.to_string(),
                engines: target.engines_used(),
                bytes_written: outcome.bytes_written,
                ranges_declared: outcome.ranges.len(),
                ranges_touched: outcome.ranges_touched,
                bytes_restored: outcome.bytes_restored,
            });
            let writes = self.writes.clone();
            self.doc.put("writes", &writes);
        }
        match result {
            Err(MeasureError::Target(TargetError::Interrupted { signal })) => {
                session::report_interrupted(signal, &outcome);
                Err(crate::error::interrupted(signal))
            }
            r => {
                if outcome.preserved {
                    let line = format!(
                        "{}: wrote {} in {} of {} declared range{}; restored and verified {}; journal deleted",
                        T::KEY,
                        Iec(outcome.bytes_written),
                        outcome.ranges_touched,
                        outcome.ranges.len(),
                        if outcome.ranges.len() == 1 { "" } else { "s" },
                        Iec(outcome.bytes_restored)
                    );
                    crate::errln!("{}", line.split_once(": ").map_or(line.as_str(), |x| x.1));
                    self.doc.note(NoteKind::Restored, line, None);
                }
                Ok(r?)
            }
        }
    }

    /// The finished document.
    pub fn finish(mut self) -> RunDocument {
        self.doc.finish(Some(self.device_ns));
        self.doc
    }
}
