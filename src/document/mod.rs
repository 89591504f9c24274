//! The run document (docs/DESIGN.md "Tests, the runner, the run document"): the
//! envelope every `--json` output shares, every test's result typed under
//! its own key ([`Results`], from the registry of tests), what the runner
//! and probe add beside them ([`Extras`]), and a command's own body when it
//! measures nothing ([`Body`]); with typed notes and warnings. Every format
//! reads it, and a measuring run reads back from JSON, so a stored run
//! renders again. No result is looked up by a string.

pub mod batch;
pub mod bodies;
pub mod command;
pub mod device;
#[cfg(test)]
mod keys;

use serde::{Deserialize, Serialize};

use crate::identify::DeviceInfo;
use crate::measure::advice::Advice;
pub use crate::measure::note::{Note, NoteKind};
use crate::measure::{Results, Slot};
use crate::targets::TargetDescription;
use crate::targets::real::EngineChoice;
pub use bodies::Body;
pub use command::CommandName;
pub use device::DeviceId;

/// Bumped when a field changes meaning or disappears; adding fields keeps it.
pub const SCHEMA_VERSION: u32 = 1;

/// What one writing test did to a real target, under `writes`: which
/// engines ran it (a silent fallback shows), what it wrote and what it put
/// back.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct WriteRecord {
    pub test: String,
    pub engines: Vec<EngineChoice>,
    pub bytes_written: u64,
    pub ranges_declared: usize,
    pub ranges_touched: usize,
    pub bytes_restored: u64,
    /// Journalled bytes read back and found as they were (old runs lack it).
    #[serde(default)]
    pub bytes_verified: u64,
}

/// One step of a run and the device time it took (a probe's steps, or a
/// command's own and the align it ran first).
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StepTime {
    pub step: String,
    pub device_s: f64,
}

/// A failure, in the one document `--json` prints for it.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct ErrorBody {
    pub kind: String,
    pub exit_code: i32,
    pub message: String,
    pub hint: Option<String>,
}

/// What the runner and probe put beside the tests' results: each absent
/// unless set, and then left out of the JSON.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Extras {
    /// Which device this is, so the store lists runs of one card together.
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub device: Slot<DeviceId>,
    /// The name the user gave the run (`--label`, or a batch's label for
    /// its slot): what `results list` shows and `--label` finds.
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub label: Slot<String>,
    /// Identification (`info`, and probe's first step).
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub info: Slot<DeviceInfo>,
    /// Steps probe left out, each with why.
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub skipped: Slot<Vec<String>>,
    /// probe left every writing step out for want of `--write`: the run
    /// only read (`results list` says "read-only"). Absent otherwise.
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub read_only: Slot<bool>,
    /// probe's advice, drawn from confident verdicts only.
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub advice: Slot<Vec<Advice>>,
    /// What each writing test did to a real target.
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub writes: Slot<Vec<WriteRecord>>,
    /// Each step's device time, in order.
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub steps: Slot<Vec<StepTime>>,
    /// probe's combined verdicts, as its text summary states them.
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub summary: Slot<crate::measure::summary::Summary>,
    /// A simulated card's flash work over the run, by cause: absent where
    /// nothing was written or the target is not simulated.
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub flash_work: Slot<crate::sim::ftl::FlashReport>,
    /// Where an imported run came from (`import flashbench`).
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub import: Slot<crate::import::flashbench::Source>,
    /// How long the card lasts under a trace (`life`).
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub life: Slot<crate::measure::life::Life>,
    /// The batch a device's run belongs to (`batch`).
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub batch: Slot<batch::BatchTag>,
    /// Why the command failed (`--json` on a failure).
    #[serde(skip_serializing_if = "Slot::is_absent")]
    pub error: Slot<ErrorBody>,
}

/// The machine a run was made on.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct HostInfo {
    pub hostname: String,
    /// `uname -r`.
    pub kernel: String,
    pub arch: String,
}

impl HostInfo {
    pub fn this() -> Self {
        let u = rustix::system::uname();
        HostInfo {
            hostname: u.nodename().to_string_lossy().into_owned(),
            kernel: u.release().to_string_lossy().into_owned(),
            arch: std::env::consts::ARCH.to_string(),
        }
    }
}

/// One run of one command. The envelope's fields keep the names of the JSON
/// contract; the rest is flattened, so each result sits at the top level
/// under its own key, as it always has.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunDocument {
    pub schema_version: u32,
    pub command: CommandName,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<TargetDescription>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_time_s: Option<f64>,
    #[serde(default)]
    pub flashlab_version: String,
    #[serde(default)]
    pub host: HostInfo,
    /// Unix seconds.
    #[serde(default)]
    pub started_unix: u64,
    #[serde(default)]
    pub ended_unix: u64,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<Note>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub warnings: Vec<Note>,
    #[serde(flatten)]
    pub extras: Extras,
    #[serde(flatten)]
    pub results: Results,
    #[serde(flatten)]
    pub body: Body,
    /// Text output only, never in JSON: show every detail (info's ninety
    /// register fields) rather than the summary.
    #[serde(skip)]
    pub detail: bool,
}

fn now_unix() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

impl RunDocument {
    /// The name the user gave the run: its `--label`, else its batch's
    /// label for its slot (runs stored before `label` had only that).
    pub fn label(&self) -> Option<&str> {
        self.extras
            .label
            .get()
            .map(String::as_str)
            .or_else(|| self.extras.batch.get().and_then(|t| t.label.as_deref()))
    }

    pub fn new(command: CommandName, target: Option<TargetDescription>) -> Self {
        RunDocument {
            schema_version: SCHEMA_VERSION,
            command,
            target,
            device_time_s: None,
            flashlab_version: env!("CARGO_PKG_VERSION").to_string(),
            host: HostInfo::this(),
            started_unix: now_unix(),
            ended_unix: 0,
            notes: Vec::new(),
            warnings: Vec::new(),
            extras: Extras::default(),
            results: Results::default(),
            body: Body::None,
            detail: false,
        }
    }

    /// The figures a comparison sets beside another run's: every test's,
    /// and a `life` answer's.
    pub fn metrics(&self) -> Vec<crate::measure::metrics::Metric> {
        let mut out = self.results.metrics();
        if let Some(l) = self.extras.life.get() {
            out.extend(l.metrics());
        }
        out
    }

    pub fn note(&mut self, kind: NoteKind, message: impl Into<String>, hint: Option<&str>) {
        self.notes.push(Note {
            kind,
            message: message.into(),
            hint: hint.map(str::to_string),
        });
    }

    /// A document from its JSON, each result settled as this flashlab's
    /// tests settle theirs, `read_only` found in an older probe's skipped
    /// lines, and probe's summary made again from them: a run
    /// stored by an older one (a verdict it refused but did not mark, and
    /// a summary that said "no limit up to N" of it) shows as this one
    /// would show it. The advice stays as it was given.
    pub fn from_json(text: &str) -> serde_json::Result<RunDocument> {
        let mut doc: RunDocument = serde_json::from_str(text)?;
        doc.results.settle();
        // A probe stored before `read_only` said so only in its skipped
        // lines, each of which told the user to add --write.
        if doc.extras.read_only.get().is_none()
            && doc
                .extras
                .skipped
                .get()
                .is_some_and(|s| s.iter().any(|w| w.contains("add --write")))
        {
            doc.extras.read_only.set(true);
        }
        if doc.extras.summary.get().is_some() {
            doc.extras.summary.set(crate::measure::summary::of(&doc.results));
        }
        Ok(doc)
    }

    /// Stamp the end of the run.
    pub fn finish(&mut self, device_ns: Option<u64>) {
        self.device_time_s = device_ns.map(|ns| ns as f64 / 1e9);
        self.ended_unix = now_unix();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::targets::TargetKind;

    #[test]
    fn a_document_reads_back_with_its_results_at_the_top_level() {
        let mut d = RunDocument::new(
            CommandName::Probe,
            Some(TargetDescription {
                spec: "sim:demo".into(),
                kind: TargetKind::Sim,
                size_bytes: 1 << 30,
                logical_block_size: 512,
                physical_block_size: 512,
            }),
        );
        d.results.scatter.set(crate::measure::scatter::ScatterResult {
            offset_bytes: 0,
            length_bytes: 4096,
            block_size: 4096,
            points: vec![crate::measure::scatter::Point {
                offset: 0,
                latency_ns: 2,
            }],
        });
        d.results.open_au.mark_not_run();
        d.note(NoteKind::Skipped, "capacity: not yet", Some("add --write"));
        d.finish(Some(1_500_000_000));
        let text = serde_json::to_string(&d).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["scatter"]["points"][0]["latency_ns"], 2);
        assert!(v.get("fat").is_none(), "absent results are not in the JSON");
        assert!(v["open_au"].is_null());
        assert_eq!(v["device_time_s"], 1.5);
        assert_eq!(v["notes"][0]["kind"], "skipped");
        let back: RunDocument = serde_json::from_str(&text).unwrap();
        assert_eq!(serde_json::to_string(&back).unwrap(), text, "reads back whole");
        assert_eq!(back.results.open_au, Slot::Null);
    }

    /// `read_only` is a key of its own; a probe stored before it gets it
    /// from the skipped line that asked for --write, and only from that.
    #[test]
    fn an_older_read_only_probe_reads_back_read_only() {
        let mut d = RunDocument::new(CommandName::Probe, None);
        d.extras.skipped.set(vec!["bench: the area does not fit".into()]);
        let text = serde_json::to_string(&d).unwrap();
        assert!(!text.contains("read_only"));
        assert_eq!(RunDocument::from_json(&text).unwrap().extras.read_only.get(), None);
        d.extras.skipped.set(vec![
            "au, page, open-au, fat, capacity and bench write to the target; add --write (its data is journalled, \
             restored and verified)"
                .into(),
        ]);
        let old = serde_json::to_string(&d).unwrap();
        assert_eq!(
            RunDocument::from_json(&old).unwrap().extras.read_only.get(),
            Some(&true)
        );
        d.extras.read_only.set(true);
        let v: serde_json::Value = serde_json::from_str(&serde_json::to_string(&d).unwrap()).unwrap();
        assert_eq!(v["read_only"], true);
    }
}
