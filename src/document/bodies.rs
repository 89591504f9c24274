//! The bodies of the commands that measure nothing: `decode`, `sim`,
//! `results`, `restore`, `report` and `debug write-pattern`. Each is typed
//! data its command fills and the text format prints; in JSON its fields
//! sit at the top level of the document, as they always have.

use serde::{Deserialize, Serialize};

use crate::measure::metrics::Row;
use crate::registers::Decoded;
use crate::safety::Outcome;
use crate::sim::reproduce::Report as Reproduced;

/// One stored run, as `results list` shows it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunRow {
    pub id: i64,
    pub started_unix: u64,
    pub command: super::CommandName,
    pub device_key: String,
    pub device: String,
    pub target: String,
    pub host: String,
    pub flashlab_version: String,
    /// What the run found, in a few words (`results list`'s last column):
    /// its first verdicts, and "read-only" where it wrote nothing it
    /// would have with --write.
    #[serde(default)]
    pub verdict: String,
    /// The run's label (`--label`, or its batch's for its slot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// A built-in profile or host preset.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Described {
    pub name: String,
    pub summary: String,
    pub source: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SimList {
    pub profiles: Vec<Described>,
    pub hosts: Vec<Described>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SimShow {
    pub profile: String,
    pub summary: Option<String>,
    pub source: Option<String>,
    pub params: serde_json::Map<String, serde_json::Value>,
    /// The same as a TOML file `sim:FILE.toml` reads back (`--toml`).
    #[serde(skip)]
    pub toml: String,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReproduceAll {
    pub experiments: Vec<Reproduced>,
    pub max_abs_error_pct: f64,
    /// Cells within 15% over every experiment, and how many there are.
    #[serde(default)]
    pub within_15_pct: usize,
    #[serde(default)]
    pub cells: usize,
}

/// A register decoded: which, in which layout, and its fields.
#[derive(Debug, Clone, Serialize)]
pub struct DecodeBody {
    pub register: String,
    pub layout: String,
    #[serde(flatten)]
    pub decoded: Decoded,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Listing {
    pub store: String,
    pub runs: Vec<RunRow>,
    /// What the suggested commands add to read this store
    /// ([`crate::places::db_option`]; empty for the default store). Text
    /// only: a document read back suggests nothing.
    #[serde(skip)]
    pub db_option: String,
    /// `--device`, where given: the runs listed are those it matched.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub device_filter: Option<String>,
    /// `--batch`, where given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub batch_filter: Option<String>,
    /// `--label`, where given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label_filter: Option<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ImportResult {
    pub id: i64,
    pub duplicate: bool,
    /// Where it was stored, for the text, where the user named the store
    /// (`--db`, `FLASHLAB_DB`), with the `--db` its suggested commands
    /// carry; None for the default store.
    #[serde(skip)]
    pub named_store: Option<(String, String)>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Comparison {
    /// The runs compared, in the order given.
    pub runs: Vec<Compared>,
    pub rows: Vec<Row>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Compared {
    pub id: String,
    pub command: super::CommandName,
    /// The target as the run was given it (`sim:demo,seed=5`): runs of
    /// one device differ by it. Empty for a document without one.
    #[serde(default)]
    pub target: String,
    pub device: String,
    pub started_unix: u64,
    /// The run's label (`--label`, or its batch's for its slot).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
}

/// A journal waiting in the directory.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Pending {
    pub journal: String,
    /// A running flashlab owns it (it restores the data itself).
    pub live: bool,
    pub target: Option<String>,
    pub size_bytes: Option<u64>,
    pub bytes: Option<u64>,
    pub created_unix: Option<u64>,
    /// Why it cannot be put back as things are (damaged, unreadable by this
    /// user, its directory not there); None when it can.
    pub error: Option<String>,
    /// Its bytes or header were changed or cut: it cannot be trusted.
    #[serde(default)]
    pub damaged: bool,
    /// Who made it, by the registry of pending journals.
    #[serde(default)]
    pub uid: Option<u32>,
}

impl Pending {
    /// The command that sets `stuck` aside: the journal's own path, quoted
    /// for the shell, where there is one, else JOURNAL for the user to
    /// pick from the list.
    pub fn set_aside_command<'a>(stuck: impl IntoIterator<Item = &'a Pending>) -> String {
        let mut stuck = stuck.into_iter();
        let path = match (stuck.next(), stuck.next()) {
            (Some(one), None) => crate::console::shell_word(&one.journal).into_owned(),
            _ => "JOURNAL".into(),
        };
        format!("`flashlab restore --set-aside {path}`")
    }
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PendingList {
    pub journal_dir: String,
    /// The register every run reads, whatever its journal directory.
    #[serde(default)]
    pub registry: String,
    pub pending: Vec<Pending>,
}

/// `restore --set-aside`: a journal no longer counted as pending.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetAsideBody {
    pub set_aside: SetAsideDone,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SetAsideDone {
    /// Where it was.
    pub journal: String,
    /// Where it is now, kept for inspection.
    pub now: String,
    /// The target it was for, when its header (or its registry entry) says.
    pub target: Option<String>,
}

/// A journal put back.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Restored {
    pub journal: String,
    pub target: String,
    pub bytes_restored: u64,
    /// A record past the committed ones was torn by the crash; its range was
    /// never written.
    pub torn_tail_skipped: bool,
    /// Differences from the journal's identity that --force overrode.
    pub forced_past: Vec<String>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RestoredList {
    pub restored: Vec<Restored>,
}

/// Where a report went, and what it shows.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReportBody {
    pub report: ReportWritten,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ReportWritten {
    pub path: String,
    pub runs: Vec<String>,
}

/// What `debug write-pattern` did.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PatternBody {
    pub outcome: Outcome,
    pub interrupted_by: Option<String>,
}

/// `trace`: what was captured, where, and for how long.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct Captured {
    pub device: String,
    /// Which of the kernel's ways in was used.
    pub how: String,
    pub seconds: f64,
    /// `--for`, `SIGINT` or `SIGTERM`.
    pub stopped_by: String,
    /// The files written, one per CPU (blktrace's binary format).
    pub files: Vec<String>,
    /// Bytes of records copied.
    pub bytes: u64,
    /// Requests issued to the driver (blktrace's D events), by kind.
    #[serde(flatten)]
    pub counts: crate::import::trace::Counts,
}

/// A command's own body, beside the envelope.
#[derive(Debug, Clone, Default, Serialize)]
#[serde(untagged)]
pub enum Body {
    /// A measuring command: its results are the document's `results`.
    #[default]
    None,
    Decode(DecodeBody),
    SimList(SimList),
    SimShow(SimShow),
    Reproduced(Reproduced),
    ReproduceAll(ReproduceAll),
    Listing(Listing),
    Comparison(Comparison),
    Imported(ImportResult),
    Pending(PendingList),
    Restored(RestoredList),
    SetAside(SetAsideBody),
    Report(ReportBody),
    Pattern(PatternBody),
    Emulating(EmulatingBody),
    Traced(Captured),
    Batch(super::batch::BatchBody),
    Uploaded(UploadBody),
}

/// `results upload`: `{"upload": {...}}`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct UploadBody {
    pub upload: Upload,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Upload {
    /// The fleet store, without its password.
    pub fleet: String,
    /// Runs written now.
    pub sent: usize,
    /// Runs the fleet had already, as they are.
    pub already: usize,
}

/// `emulate`: the device serving the card, printed when it is ready; with
/// `--json`, printed again when it stops, with what the card saw.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct EmulatingBody {
    pub emulate: crate::emulate::Ready,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped: Option<Box<crate::emulate::Summary>>,
}

/// Only measuring runs are read back (the store and `--json` files keep
/// nothing else): any other body reads back as none.
impl<'de> Deserialize<'de> for Body {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d)?;
        Ok(Body::None)
    }
}

#[cfg(test)]
mod tests {
    use super::Pending;

    fn stuck(journal: &str) -> Pending {
        Pending {
            journal: journal.into(),
            live: false,
            target: None,
            size_bytes: None,
            bytes: None,
            created_unix: None,
            error: Some("cut short".into()),
            damaged: true,
            uid: None,
        }
    }

    /// One journal to set aside is named, quoted; of several, the user
    /// picks one from the list.
    #[test]
    fn the_set_aside_command_names_the_one_journal() {
        let one = [stuck("/j dir/a.fljournal")];
        assert_eq!(
            Pending::set_aside_command(&one),
            "`flashlab restore --set-aside '/j dir/a.fljournal'`"
        );
        let two = [stuck("/j/a.fljournal"), stuck("/j/b.fljournal")];
        assert_eq!(
            Pending::set_aside_command(&two),
            "`flashlab restore --set-aside JOURNAL`"
        );
        assert_eq!(
            Pending::set_aside_command(&[]),
            "`flashlab restore --set-aside JOURNAL`"
        );
    }
}
