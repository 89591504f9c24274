//! The run document (DESIGN.md "Tests, the runner, the run document"): the
//! envelope every `--json` output shares, each test's result under its key,
//! and typed notes and warnings. Every renderer reads it, and it reads back
//! from JSON, so a stored run renders again.

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};

use crate::target::TargetDescription;

/// Bumped when a field changes meaning or disappears; adding fields keeps it.
pub const SCHEMA_VERSION: u32 = 1;

/// What a note is about, so a script (or the store) can pick them out
/// without reading prose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NoteKind {
    /// A test that did not run, and why.
    Skipped,
    /// Geometry a writing test took from align rather than the user.
    Geometry,
    /// What the preserving target wrote, restored and verified.
    Restored,
    /// The I/O path differs from what was asked (no O_DIRECT, no io_uring).
    Engine,
    /// The results store could not save the run.
    Store,
}

/// A note or warning for the reader, with what to do about it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Note {
    pub kind: NoteKind,
    pub message: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hint: Option<String>,
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
/// contract; `results` is flattened, so each test's result sits at the top
/// level under its own key, as it always has.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunDocument {
    pub schema_version: u32,
    pub command: String,
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
    pub results: serde_json::Map<String, serde_json::Value>,
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
    pub fn new(command: &str, target: Option<TargetDescription>) -> Self {
        RunDocument {
            schema_version: SCHEMA_VERSION,
            command: command.to_string(),
            target,
            device_time_s: None,
            flashlab_version: env!("CARGO_PKG_VERSION").to_string(),
            host: HostInfo::this(),
            started_unix: now_unix(),
            ended_unix: 0,
            notes: Vec::new(),
            warnings: Vec::new(),
            results: serde_json::Map::new(),
            detail: false,
        }
    }

    /// Put a result under `key` (replacing an earlier one).
    pub fn put<T: Serialize>(&mut self, key: &str, value: &T) {
        self.results.insert(key.to_string(), to_value(value));
    }

    /// Merge an object's fields into the top level: `decode`'s register and
    /// `sim list`'s tables are the document's body itself.
    pub fn merge<T: Serialize>(&mut self, value: &T) {
        if let serde_json::Value::Object(m) = to_value(value) {
            self.results.extend(m);
        }
    }

    /// A result read back as its type; None when absent, null, or not of
    /// that shape (a document from another version).
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Option<T> {
        match self.results.get(key)? {
            serde_json::Value::Null => None,
            v @ (serde_json::Value::Bool(_)
            | serde_json::Value::Number(_)
            | serde_json::Value::String(_)
            | serde_json::Value::Array(_)
            | serde_json::Value::Object(_)) => serde_json::from_value(v.clone()).ok(),
        }
    }

    /// The whole body as one type (for documents built with [`Self::merge`]).
    pub fn body<T: DeserializeOwned>(&self) -> Option<T> {
        serde_json::from_value(serde_json::Value::Object(self.results.clone())).ok()
    }

    pub fn note(&mut self, kind: NoteKind, message: impl Into<String>, hint: Option<&str>) {
        self.notes.push(Note {
            kind,
            message: message.into(),
            hint: hint.map(str::to_string),
        });
    }

    /// Stamp the end of the run.
    pub fn finish(&mut self, device_ns: Option<u64>) {
        self.device_time_s = device_ns.map(|ns| ns as f64 / 1e9);
        self.ended_unix = now_unix();
    }
}

fn to_value<T: Serialize>(value: &T) -> serde_json::Value {
    // Results are plain data (numbers, strings, vectors, maps with string
    // keys): serialising them cannot fail; a Null keeps the document whole if
    // a future type breaks that.
    serde_json::to_value(value).unwrap_or(serde_json::Value::Null)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::TargetKind;

    #[test]
    fn a_document_reads_back_with_its_results_at_the_top_level() {
        let mut d = RunDocument::new(
            "probe",
            Some(TargetDescription {
                spec: "sim:demo".into(),
                kind: TargetKind::Sim,
                size_bytes: 1 << 30,
                logical_block_size: 512,
                physical_block_size: 512,
            }),
        );
        d.put("fat", &serde_json::json!({"fat_area_aus": 2}));
        d.put("open_au", &Option::<u32>::None);
        d.note(NoteKind::Skipped, "capacity: not yet", Some("add --write"));
        d.finish(Some(1_500_000_000));
        let text = serde_json::to_string(&d).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["fat"]["fat_area_aus"], 2);
        assert!(v["open_au"].is_null());
        assert_eq!(v["device_time_s"], 1.5);
        assert_eq!(v["notes"][0]["kind"], "skipped");
        let back: RunDocument = serde_json::from_str(&text).unwrap();
        assert_eq!(back, d);
        assert_eq!(back.get::<u32>("open_au"), None);
    }
}
