//! Data safety (docs/DESIGN.md "Data safety"): the one write path every writing test
//! goes through. Ranges are declared up front; the test is handed a
//! [`PreservingTarget`] that copies a range's original bytes to a journal
//! outside the target, durable before the first write to it, and refuses
//! writes anywhere else; at the end (or on Ctrl-C, or after a crash with
//! `flashlab restore`) they are written back and verified through an
//! independent reader, then the journal is deleted. [`claim`] keeps a second
//! writer off the same bytes, through any alias; [`identity`] keeps a journal
//! off another device that happens to sit at the same path; [`output`]
//! keeps a report off a file in use.

pub mod claim;
pub mod header;
pub mod identity;
pub mod journal;
pub mod output;
pub mod pending;
pub mod preserve;
pub mod ranges;
pub mod registry;
pub mod signals;

use std::path::Path;

pub use preserve::PreservingTarget;

use crate::targets::{AlignedBuf, Completion, Request, Target, TargetError};
use journal::CHUNK;
use ranges::Range;

#[derive(Debug, thiserror::Error)]
pub enum SafetyError {
    #[error("bad range '{range}': {why}")]
    BadRange { range: String, why: String },
    #[error("range {range} ends past the end of the target ({size} bytes); offsets never wrap")]
    PastEnd { range: String, size: u64 },
    #[error("journal directory {dir}: {why}")]
    JournalDir { dir: String, why: String },
    #[error("the register of pending journals, {dir}: {why}")]
    Registry { dir: String, why: String },
    #[error("journal {path}: {why}")]
    Journal { path: String, why: String },
    #[error("journal {path} is not a regular file (a directory, a device, a FIFO): it is no journal flashlab wrote")]
    NotAJournal { path: String },
    #[error("journal {path} cannot be read by this user{}", owner.map(|o| format!(" (it belongs to uid {o})")).unwrap_or_default())]
    NotYours { path: String, owner: Option<u32> },
    #[error("journal {path} is corrupted at {region}")]
    Corrupt { path: String, region: String },
    #[error("journal {path} belongs to {expected}, but the target differs: {found}")]
    IdentityMismatch {
        path: String,
        expected: String,
        found: String,
    },
    #[error("read-back after restore differs in bytes {offset}..{} (checked against the journal's checksum through an independent reader)", offset + len)]
    VerifyFailed { offset: u64, len: u64 },
    #[error("{target} is in use: {what}; nothing was written")]
    InUse { target: String, what: String },
    #[error("journal {path} belongs to a flashlab run that is still going (pid {pid})")]
    Live { path: String, pid: u32 },
    #[error(transparent)]
    Target(#[from] TargetError),
}

/// Run a batch, any failed request an error.
pub(crate) fn run_batch(
    target: &mut dyn Target,
    requests: &[Request],
    queue_depth: usize,
    buf: &mut AlignedBuf,
) -> Result<Vec<Completion>, SafetyError> {
    Ok(crate::targets::run_all(target, requests, queue_depth, buf)?)
}

/// Refuse a journal directory that cannot hold `bytes` or cannot be written;
/// [`claim::check_journal_dir_off_target`] refuses one on the target.
pub fn check_journal_dir(dir: &Path, bytes: u64) -> Result<(), SafetyError> {
    let refuse = |why: String| SafetyError::JournalDir {
        dir: dir.display().to_string(),
        why,
    };
    std::fs::create_dir_all(dir).map_err(|e| refuse(format!("cannot create it: {e}")))?;
    if !std::fs::metadata(dir).is_ok_and(|m| m.is_dir()) {
        return Err(refuse("not a directory".into()));
    }
    let probe = dir.join(format!(".flashlab-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| refuse(format!("not writable: {e}")))?;
    let _ = std::fs::remove_file(&probe);
    let st = rustix::fs::statvfs(dir).map_err(|e| refuse(e.to_string()))?;
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    // 32 bytes of record head per MiB; a margin for the header and slots.
    let need = bytes
        .saturating_add(bytes / (CHUNK as u64) * 32)
        .saturating_add(1 << 20);
    match too_little_space(free, need) {
        Some(why) => Err(refuse(why)),
        None => Ok(()),
    }
}

/// Why `free` bytes cannot hold a journal of `need` bytes, in exact bytes
/// too: rounded alike ("2 MiB free, the journal needs 2.00 MiB") the two
/// read as enough.
fn too_little_space(free: u64, need: u64) -> Option<String> {
    (free < need).then(|| {
        format!(
            "{} ({free} bytes) free, the journal needs {} ({need} bytes), {} bytes more",
            crate::units::Iec(free),
            crate::units::Iec(need),
            need - free
        )
    })
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_shortfall_hidden_by_rounding_is_said_in_bytes() {
        let why = super::too_little_space(2 << 20, (2 << 20) + 32).unwrap();
        assert!(why.contains("2097152 bytes") && why.contains("2097184 bytes"), "{why}");
        assert!(why.ends_with("32 bytes more"), "{why}");
        assert_eq!(super::too_little_space(2 << 20, 2 << 20), None);
    }
}

/// What a preserving session promised and did.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Outcome {
    pub ranges: Vec<Range>,
    pub preserved: bool,
    pub journal: Option<String>,
    pub bytes_written: u64,
    /// How many of `ranges` were written (and so journalled and restored).
    pub ranges_touched: usize,
    pub bytes_restored: u64,
    /// Journalled bytes read back and found as they were: the restored ones
    /// and those a run wrote with their own bytes.
    #[serde(default)]
    pub bytes_verified: u64,
    /// Verified restore throughput (write back, read back, flush) in bytes per
    /// second of device time.
    pub restore_bytes_per_sec: Option<f64>,
    /// The write-back alone, comparable with the device's sequential write speed.
    pub restore_write_bytes_per_sec: Option<f64>,
    /// Device time the independent reader spent reading the restore back:
    /// the device's time as much as the writes', but on another
    /// descriptor's clock than the target handed back, so the run adds it.
    #[serde(skip)]
    pub verify_device_ns: u64,
}

impl Outcome {
    /// What came back, as a person counts it: the saved bytes put back
    /// (those that had changed rewritten) and every saved byte read back
    /// the same.
    pub fn put_back(&self) -> String {
        format!(
            "put the saved data back ({} rewritten) and read all {} back the same",
            crate::units::Iec(self.bytes_restored),
            crate::units::Iec(self.bytes_verified)
        )
    }
}
