//! The files an emulation writes beside the card: the backing file that
//! keeps a genuine card's bytes (`--backing`), and the record of every
//! request in the order the card took it (`--record`).

use std::fs::{File, OpenOptions};
use std::io::{BufWriter, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use super::{EmulateError, refused};
use crate::sim::SimTarget;
use crate::sim::replay::TraceOp;
use crate::targets::Target;
use crate::targets::real::blktrace::record::{TC_DISCARD, TC_FLUSH, TC_READ, TC_WRITE, issue_record};

/// A file's device and inode: the same bytes under any name.
pub(super) fn file_id(f: &File) -> Option<(u64, u64)> {
    f.metadata().ok().map(|m| (m.dev(), m.ino()))
}

/// The backing file: a regular file (made if missing) of the card's size.
pub(super) fn open_backing(p: &Path, sim: &SimTarget) -> Result<File, EmulateError> {
    let size = sim.description().size_bytes;
    if sim.params.real_capacity.is_some() || sim.params.write_cache > 0 {
        return Err(refused(
            "--backing keeps a genuine card's bytes; a fake card's lost writes are modelled in memory only",
            "leave out --backing, or emulate a genuine profile",
        ));
    }
    if let Ok(m) = std::fs::symlink_metadata(p)
        && !m.file_type().is_file()
    {
        return Err(refused(
            format!("--backing {} exists and is not a regular file", p.display()),
            "give a regular file (it is made if missing)",
        ));
    }
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW)
        .open(p)
        .map_err(|e| refused(format!("cannot open --backing {}: {e}", p.display()), "check the path"))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    if len != 0 && len != size {
        return Err(refused(
            format!("--backing {} holds {len} bytes, the card has {size}", p.display()),
            "give the file of the same card (same profile and capacity), or a new one",
        ));
    }
    if len == 0 {
        f.set_len(size).map_err(|e| {
            refused(
                format!("cannot size --backing {}: {e}", p.display()),
                "check the filesystem's space",
            )
        })?;
    }
    Ok(f)
}

/// `--record FILE`: each request the card takes, in the order the model
/// took it, as a blktrace D record (`issue_record`). A capture of the loop
/// device (`flashlab trace`) holds the order the kernel issued; this holds
/// the card's, so `life` on it replays exactly what the card counted, and
/// the two differ only where the path between them reordered or split.
pub(super) struct Recorder {
    path: PathBuf,
    out: Mutex<Written>,
}

struct Written {
    file: BufWriter<File>,
    records: u64,
    /// The first write that failed: nothing is written after it.
    failed: Option<String>,
}

impl Recorder {
    /// Refuse `path` unless it is absent or a regular file that nothing
    /// uses: never a device node, a link or a file in use
    /// ([`crate::safety::output::check`]), nor the `--backing` file under
    /// any name (its path, or its device and inode once it exists): this
    /// emulation holds that one open itself, and emptying it would empty
    /// the card.
    pub(super) fn check(path: &Path, backing: Option<&Path>) -> Result<(), EmulateError> {
        let id = |p: &Path| std::fs::metadata(p).ok().map(|m| (m.dev(), m.ino()));
        Self::check_apart(
            path,
            backing.is_some_and(|b| b == path || id(b).is_some() && id(b) == id(path)),
        )
    }

    /// [`Self::check`] with the backing file known by its device and
    /// inode (`backing`, once it is open).
    fn check_id(path: &Path, backing: Option<(u64, u64)>) -> Result<(), EmulateError> {
        let same = backing.is_some() && std::fs::metadata(path).ok().map(|m| (m.dev(), m.ino())) == backing;
        Self::check_apart(path, same)
    }

    /// Refuse `path` as an output, or as the backing file (`same`).
    fn check_apart(path: &Path, same: bool) -> Result<(), EmulateError> {
        let hint = "give --record a new file, or a regular file nothing uses";
        crate::safety::output::check(path).map_err(|e| refused(format!("--record: {e}"), hint))?;
        if same {
            return Err(refused(
                format!(
                    "--record {} is the --backing file, which holds the card's data",
                    path.display()
                ),
                hint,
            ));
        }
        Ok(())
    }

    /// Create `path`, or empty the regular file there ([`Self::check`]
    /// again, just before).
    pub(super) fn create(path: &Path, backing: Option<(u64, u64)>) -> Result<Recorder, EmulateError> {
        Self::check_id(path, backing)?;
        let refuse = |why: String| refused(why, "give --record a new file, or a regular file nothing uses");
        let file = OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .custom_flags(libc::O_NOFOLLOW)
            .open(path)
            .map_err(|e| refuse(format!("cannot open --record {}: {e}", path.display())))?;
        Ok(Recorder {
            path: path.to_path_buf(),
            out: Mutex::new(Written {
                file: BufWriter::new(file),
                records: 0,
                failed: None,
            }),
        })
    }

    /// Record one request at `time_ns`, the card's own clock.
    pub(super) fn note(&self, time_ns: u64, op: TraceOp, offset: u64, bytes: u32) {
        let mut w = self.out.lock().unwrap_or_else(|p| p.into_inner());
        if w.failed.is_some() {
            return;
        }
        let category = match op {
            TraceOp::Read => TC_READ,
            TraceOp::Write => TC_WRITE,
            TraceOp::Discard => TC_WRITE | TC_DISCARD,
            TraceOp::Flush => TC_WRITE | TC_FLUSH,
        };
        // blktrace's sequence is 32 bits and wraps as the kernel's does.
        let record = issue_record(w.records as u32, time_ns, category, offset, bytes, 0);
        match w.file.write_all(&record) {
            Ok(()) => w.records += 1,
            Err(e) => w.failed = Some(e.to_string()),
        }
    }

    /// Flush what is buffered, once no request can come: the records
    /// written, or why the record is not whole.
    pub(super) fn finish(&self) -> Result<u64, EmulateError> {
        let mut w = self.out.lock().unwrap_or_else(|p| p.into_inner());
        if w.failed.is_none()
            && let Err(e) = w.file.flush().and_then(|()| w.file.get_ref().sync_all())
        {
            w.failed = Some(e.to_string());
        }
        match &w.failed {
            None => Ok(w.records),
            Some(e) => Err(super::failed(
                format!(
                    "the record {} stops after {} requests: {e}",
                    self.path.display(),
                    w.records
                ),
                "check the filesystem's space, then record again",
            )),
        }
    }
}
