//! Data safety (DESIGN.md "Data safety"): the one write path every writing test
//! goes through. Ranges are declared up front; a range's original bytes go to a
//! journal outside the target, durable before the first write to it; at the end (or on
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
    /// How many of `ranges` were written (and so journalled and restored).
    pub ranges_touched: usize,
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
    /// Which declared ranges a write has touched: only those are restored.
    touched: Vec<bool>,
    journal: Option<Writer>,
    pub bytes_written: u64,
}

impl Preserver {
    /// Start a session over `ranges`: create the journal in `dir` (header only,
    /// durable before returning), or keep none when `dir` is `None`.
    ///
    /// A range's original bytes go into the journal, durably, just before the
    /// first write to it (see [`run`](Self::run)): a sweep that declares a
    /// hundred AUs and writes a dozen reads and stores a dozen. A crash then
    /// finds complete records for every range that was written, and at most a
    /// torn tail for one that was not yet.
    pub fn begin(ranges: Vec<Range>, dir: Option<(&Path, Header)>) -> Result<Self, SafetyError> {
        let journal = match dir {
            None => None,
            Some((dir, header)) => Some(Writer::create(dir, &header)?),
        };
        Ok(Preserver {
            touched: vec![false; ranges.len()],
            ranges,
            journal,
            bytes_written: 0,
        })
    }

    /// Copy range `i`'s original bytes into the journal.
    fn journal_range(&mut self, target: &mut dyn Target, i: usize) -> Result<(), SafetyError> {
        let Some(w) = self.journal.as_mut() else {
            return Ok(());
        };
        let r = self.ranges[i];
        let mut buf = AlignedBuf::new(CHUNK.min(r.len as usize));
        let mut off = r.offset;
        while off < r.end() {
            let n = (r.end() - off).min(CHUNK as u64) as u32;
            run_one(target, Request::read(off, n, 0), &mut buf)?;
            crash_point("journal record");
            w.record(off, &buf.as_slice()[..n as usize])?;
            off += u64::from(n);
        }
        Ok(())
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
        let mut first = Vec::new();
        for r in requests.iter().filter(|r| r.op == Op::Write) {
            let Some(i) = self.ranges.iter().position(|d| d.contains(r.offset, r.len.into())) else {
                return Err(SafetyError::Undeclared {
                    offset: r.offset,
                    len: r.len.into(),
                });
            };
            if !self.touched[i] && !first.contains(&i) {
                first.push(i);
            }
            bytes += u64::from(r.len);
        }
        if bytes > 0
            && let Some(signal) = signals::pending()
        {
            return Err(SafetyError::Interrupted { signal });
        }
        if !first.is_empty() {
            // Ranges this batch writes for the first time: their original
            // bytes are journalled and durable before any of them changes.
            for &i in &first {
                self.journal_range(target, i)?;
            }
            if let Some(w) = self.journal.as_mut() {
                crash_point("journal sync");
                w.commit()?;
            }
            // Marked before the batch runs: a batch that fails half-way may
            // still have written some of its requests.
            for i in first {
                self.touched[i] = true;
            }
        }
        if bytes > 0 {
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
            ranges_touched: self.touched.iter().filter(|t| **t).count(),
            bytes_restored: 0,
            restore_bytes_per_sec: None,
            restore_write_bytes_per_sec: None,
        };
        if let Some(w) = self.journal {
            target.sync()?;
            let j = Journal::open(&w.path)?;
            // The journal holds exactly the ranges that were written.
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::{SimTarget, params_from_spec};

    fn fill(t: &mut dyn Target, off: u64, len: u64, byte: u8) {
        let mut buf = AlignedBuf::new(len as usize);
        buf.as_mut_slice().fill(byte);
        run_batch(t, &[Request::write(off, len as u32, 0)], 1, &mut buf).unwrap();
    }

    fn read(t: &mut dyn Target, off: u64, len: u64) -> Vec<u8> {
        let mut buf = AlignedBuf::new(len as usize);
        run_batch(t, &[Request::read(off, len as u32, 0)], 1, &mut buf).unwrap();
        buf.as_slice().to_vec()
    }

    #[test]
    fn only_the_ranges_a_test_wrote_are_written_back() {
        let o = [("capacity".to_string(), "64M".to_string())];
        let mut t = SimTarget::new("sim:demo,capacity=64M", params_from_spec("demo", &o).unwrap());
        let ranges = vec![
            Range {
                offset: 1 << 20,
                len: 1 << 20,
            },
            Range {
                offset: 4 << 20,
                len: 2 << 20,
            },
        ];
        fill(&mut t, 1 << 20, 1 << 20, 0x11);
        fill(&mut t, 4 << 20, 2 << 20, 0x22);
        let dir = tempfile::tempdir().unwrap();
        let header = Header {
            target: "sim:demo".into(),
            size_bytes: 64 << 20,
            identity: None,
            created_unix: 0,
            pid: 0,
            ranges: ranges.iter().map(|r| [r.offset, r.len]).collect(),
            total_bytes: 3 << 20,
        };
        let mut p = Preserver::begin(ranges, Some((dir.path(), header))).unwrap();
        let mut buf = AlignedBuf::new(8192);
        buf.as_mut_slice().fill(0xee);
        p.write(&mut t, Request::write((5 << 20) + 8192, 8192, 0), &mut buf)
            .unwrap();
        assert!(
            p.write(&mut t, Request::write(3 << 20, 4096, 0), &mut buf).is_err(),
            "undeclared"
        );
        let out = p.finish(&mut t).unwrap();
        assert_eq!(out.bytes_written, 8192);
        assert_eq!(
            out.bytes_restored,
            2 << 20,
            "the untouched first range is not rewritten"
        );
        assert!(read(&mut t, 1 << 20, 1 << 20).iter().all(|&b| b == 0x11));
        assert!(read(&mut t, 4 << 20, 2 << 20).iter().all(|&b| b == 0x22));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "journal deleted");
    }
}
