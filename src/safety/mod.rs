//! Data safety (DESIGN.md "Data safety"): the one write path every writing test
//! goes through. Ranges are declared up front; their original bytes go to a
//! journal outside the target, durable before the first write; at the end (or on
//! Ctrl-C, or after a crash with `flashlab restore`) they are written back and
//! verified, then the journal is deleted.

pub mod journal;
pub mod ranges;
pub mod signals;

use std::path::{Path, PathBuf};

use crate::target::{AlignedBuf, Completion, Op, Request, Target, TargetError};
use journal::{CHUNK, Header, Journal, Writer};
use ranges::Range;
use signals::crash_point;

#[derive(Debug, thiserror::Error)]
pub enum SafetyError {
    #[error("bad range '{range}': {why}")]
    BadRange { range: String, why: String },
    #[error("range {range} ends past the end of the target ({size} bytes); offsets never wrap")]
    PastEnd { range: String, size: u64 },
    #[error("journal directory {dir}: {why}")]
    JournalDir { dir: String, why: String },
    #[error("journal {path}: {why}")]
    Journal { path: String, why: String },
    #[error("journal {path} is corrupted at {region}; nothing was restored")]
    Corrupt { path: String, region: String },
    #[error("journal {path} belongs to {expected}, but the target is {found}")]
    IdentityMismatch {
        path: String,
        expected: String,
        found: String,
    },
    #[error("write outside the declared ranges: {len} bytes at {offset}")]
    Undeclared { offset: u64, len: u64 },
    #[error("read-back after restore differs in bytes {offset}..{}", offset + len)]
    VerifyFailed { offset: u64, len: u64 },
    /// Ctrl-C or SIGTERM arrived; the test stops before its next write so
    /// the caller can restore.
    #[error("interrupted by signal {signal}")]
    Interrupted { signal: i32 },
    #[error(transparent)]
    Target(#[from] TargetError),
    #[error("I/O error at byte {offset} of the target: {}", std::io::Error::from_raw_os_error(*errno))]
    Errno { offset: u64, errno: i32 },
}

/// Run one request and turn a failed completion into an error.
pub(crate) fn run_one(target: &mut dyn Target, r: Request, buf: &mut AlignedBuf) -> Result<u64, SafetyError> {
    run_batch(target, &[r], 1, buf).map(|c| c[0].duration_ns)
}

/// Run a batch at `queue_depth` and turn the first failed completion into an error.
pub(crate) fn run_batch(
    target: &mut dyn Target,
    requests: &[Request],
    queue_depth: usize,
    buf: &mut AlignedBuf,
) -> Result<Vec<Completion>, SafetyError> {
    let done = target.run(requests, queue_depth, buf)?;
    if let Some((r, errno)) = requests.iter().zip(&done).find_map(|(r, c)| c.errno.map(|e| (r, e))) {
        return Err(SafetyError::Errno {
            offset: r.offset,
            errno,
        });
    }
    Ok(done)
}

/// Where journals live unless `--journal-dir` says otherwise: /var/lib/flashlab
/// for root, the XDG state directory for everyone else.
pub fn default_journal_dir() -> PathBuf {
    if rustix::process::geteuid().is_root() {
        return PathBuf::from("/var/lib/flashlab/journals");
    }
    let state = std::env::var_os("XDG_STATE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute())
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".local/state")))
        .unwrap_or_else(|| PathBuf::from("/tmp"));
    state.join("flashlab/journals")
}

/// The sysfs node of a block device number, if it has one.
fn sysfs_node(dev: u64) -> Option<PathBuf> {
    let (ma, mi) = (rustix::fs::major(dev), rustix::fs::minor(dev));
    std::fs::canonicalize(format!("/sys/dev/block/{ma}:{mi}")).ok()
}

/// Refuse a journal directory that cannot hold `bytes`, cannot be written, or
/// lives on the target itself (restoring would need the data being restored).
pub fn check_journal_dir(dir: &Path, target: &Path, bytes: u64) -> Result<(), SafetyError> {
    use std::os::unix::fs::MetadataExt;
    let refuse = |why: String| SafetyError::JournalDir {
        dir: dir.display().to_string(),
        why,
    };
    std::fs::create_dir_all(dir).map_err(|e| refuse(format!("cannot create it: {e}")))?;
    let probe = dir.join(format!(".flashlab-probe-{}", std::process::id()));
    std::fs::write(&probe, b"").map_err(|e| refuse(format!("not writable: {e}")))?;
    let _ = std::fs::remove_file(&probe);
    let dir_dev = std::fs::metadata(dir).map_err(|e| refuse(e.to_string()))?.dev();
    if let Ok(meta) = std::fs::metadata(target)
        && std::os::unix::fs::FileTypeExt::is_block_device(&meta.file_type())
        && let (Some(d), Some(t)) = (sysfs_node(dir_dev), sysfs_node(meta.rdev()))
        && d.starts_with(&t)
    {
        return Err(refuse(format!(
            "it is on {} itself; choose a directory on another device",
            target.display()
        )));
    }
    let st = rustix::fs::statvfs(dir).map_err(|e| refuse(e.to_string()))?;
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    // Record headers are 32 bytes per MiB; keep a margin for the header line.
    let need = bytes + bytes / (CHUNK as u64) * 32 + (1 << 20);
    if free < need {
        return Err(refuse(format!("{free} bytes free, the journal needs {need}")));
    }
    Ok(())
}

/// What a preserving session promised and did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Outcome {
    pub ranges: Vec<Range>,
    pub preserved: bool,
    pub journal: Option<String>,
    pub bytes_written: u64,
    pub bytes_restored: u64,
    /// Verified restore throughput (write back, read back, flush) in bytes per
    /// second of device time.
    pub restore_bytes_per_sec: Option<f64>,
    /// The write-back alone, comparable with the device's sequential write speed.
    pub restore_write_bytes_per_sec: Option<f64>,
}

/// The write path of every writing test: declared ranges, preservation on by
/// default, writes refused outside the ranges.
pub struct Preserver {
    ranges: Vec<Range>,
    journal: Option<Writer>,
    pub bytes_written: u64,
}

impl Preserver {
    /// Copy the ranges' original bytes into a new journal in `dir` (or keep no
    /// journal when `dir` is `None`), durable before returning.
    pub fn begin(
        target: &mut dyn Target,
        ranges: Vec<Range>,
        dir: Option<(&Path, Header)>,
    ) -> Result<Self, SafetyError> {
        let journal = match dir {
            None => None,
            Some((dir, header)) => {
                let mut w = Writer::create(dir, &header)?;
                let mut buf = AlignedBuf::new(CHUNK);
                for r in &ranges {
                    let mut off = r.offset;
                    while off < r.end() {
                        let n = (r.end() - off).min(CHUNK as u64) as u32;
                        run_one(target, Request::read(off, n, 0), &mut buf)?;
                        crash_point("journal record");
                        w.record(off, &buf.as_slice()[..n as usize])?;
                        off += u64::from(n);
                    }
                }
                crash_point("journal sync");
                w.commit()?;
                Some(w)
            }
        };
        Ok(Preserver {
            ranges,
            journal,
            bytes_written: 0,
        })
    }

    pub fn journal_path(&self) -> Option<&Path> {
        self.journal.as_ref().map(|w| w.path.as_path())
    }

    /// Write, refusing anything outside the declared ranges.
    pub fn write(&mut self, target: &mut dyn Target, r: Request, buf: &mut AlignedBuf) -> Result<u64, SafetyError> {
        self.run(target, &[r], 1, buf).map(|c| c[0].duration_ns)
    }

    /// Run a batch (reads and writes) at `queue_depth`, refusing the whole batch
    /// before any I/O if one write lies outside the declared ranges. A failed
    /// request is an error: a writing test cannot interpret a partial batch.
    pub fn run(
        &mut self,
        target: &mut dyn Target,
        requests: &[Request],
        queue_depth: usize,
        buf: &mut AlignedBuf,
    ) -> Result<Vec<Completion>, SafetyError> {
        let mut bytes = 0;
        for r in requests.iter().filter(|r| r.op == Op::Write) {
            if !self.ranges.iter().any(|d| d.contains(r.offset, r.len.into())) {
                return Err(SafetyError::Undeclared {
                    offset: r.offset,
                    len: r.len.into(),
                });
            }
            bytes += u64::from(r.len);
        }
        if bytes > 0 {
            if let Some(signal) = signals::pending() {
                return Err(SafetyError::Interrupted { signal });
            }
            crash_point("device write");
        }
        let done = run_batch(target, requests, queue_depth, buf)?;
        self.bytes_written += bytes;
        Ok(done)
    }

    /// Put the original bytes back, verify them, delete the journal.
    pub fn finish(self, target: &mut dyn Target) -> Result<Outcome, SafetyError> {
        let mut out = Outcome {
            ranges: self.ranges,
            preserved: self.journal.is_some(),
            journal: self.journal.as_ref().map(|w| w.path.display().to_string()),
            bytes_written: self.bytes_written,
            bytes_restored: 0,
            restore_bytes_per_sec: None,
            restore_write_bytes_per_sec: None,
        };
        if let Some(w) = self.journal {
            target.sync()?;
            let j = Journal::open(&w.path)?;
            let done = j.restore(target)?;
            out.bytes_restored = done.bytes;
            out.restore_bytes_per_sec = done.bytes_per_sec();
            out.restore_write_bytes_per_sec = done.write_bytes_per_sec();
            j.delete()?;
        } else {
            target.sync()?;
        }
        Ok(out)
    }
}
