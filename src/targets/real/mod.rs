//! Real block devices and regular files: O_DIRECT, page-aligned buffers, durations
//! on the monotonic clock, and two engines (psync for one request at a time,
//! io_uring for deeper queues).

pub mod blktrace;
mod psync;
mod uring;

use std::fs::File;
use std::io;
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};

use rustix::fs::OFlags;

use super::{AlignedBuf, Completions, Request, Target, TargetDescription, TargetError, TargetKind, check_requests};

/// Which I/O engine runs batches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineChoice {
    /// psync for queue depth 1, io_uring above it (psync if io_uring is unavailable).
    #[default]
    Auto,
    Psync,
    IoUring,
}

/// How to open a real target.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenOptions {
    /// Open read-write. Read-only tests never set this.
    pub write: bool,
    /// Open a block device with O_EXCL, which the kernel refuses (EBUSY) while the
    /// device or a partition is mounted or held: the reliable in-use check.
    pub exclusive: bool,
    pub engine: EngineChoice,
}

/// A block device or regular file opened for measurement.
pub struct RealTarget {
    file: File,
    /// Where it was opened, for the independent reader.
    path: std::path::PathBuf,
    desc: TargetDescription,
    writable: bool,
    /// False when the filesystem refused O_DIRECT (tmpfs before Linux 6.6) and the
    /// file is read through the page cache; timings then measure memory.
    pub direct: bool,
    /// Bytes at the end of a file past its last whole logical block: not
    /// part of the target (O_DIRECT cannot reach them), never read or written.
    pub tail_bytes: u64,
    engine: EngineChoice,
    /// The engine that ran the last batch (Psync or IoUring), for reports and tests.
    pub last_engine: Option<EngineChoice>,
    uring: Option<uring::Uring>,
    device_ns: u64,
    /// See [`RealTarget::inject_submit_failure`].
    inject_submit_failure: Option<u32>,
    /// Every engine that ran a batch, in first use order.
    engines_used: Vec<EngineChoice>,
}

static URING_FALLBACK_SAID: AtomicBool = AtomicBool::new(false);

impl RealTarget {
    /// Open `path` and read its geometry.
    pub fn open(path: &Path, spec: &str, opts: OpenOptions) -> Result<Self, TargetError> {
        let p = path.display().to_string();
        let meta = std::fs::metadata(path).map_err(|e| open_error(&p, e))?;
        let ft = meta.file_type();
        let kind = if ft.is_block_device() {
            TargetKind::Block
        } else if ft.is_file() {
            TargetKind::File
        } else {
            return Err(TargetError::NotBlockOrFile { path: p });
        };
        if opts.write && kind == TargetKind::Block && block_read_only(&meta) {
            return Err(TargetError::WriteProtected { path: p });
        }
        let (file, direct) = open_file(path, &p, kind, opts)?;
        let (whole, logical, physical) = geometry(&file, kind, &meta).map_err(|e| open_error(&p, e))?;
        // A file need not end on a block; O_DIRECT reaches whole blocks only,
        // so the partial block at its end is left out (and said so).
        let tail_bytes = whole % u64::from(logical.max(1));
        let size = whole - tail_bytes;
        if whole == 0 {
            return Err(TargetError::Empty { path: p });
        }
        if size == 0 {
            return Err(TargetError::TooSmall {
                path: p,
                size: whole,
                block: logical,
            });
        }
        Ok(RealTarget {
            file,
            path: path.to_path_buf(),
            desc: TargetDescription {
                spec: spec.to_string(),
                kind,
                size_bytes: size,
                logical_block_size: logical,
                physical_block_size: physical,
            },
            writable: opts.write,
            direct,
            tail_bytes,
            engine: opts.engine,
            last_engine: None,
            uring: None,
            device_ns: 0,
            inject_submit_failure: None,
            engines_used: Vec::new(),
        })
    }

    /// For the conformance tests: the next io_uring batch fails its
    /// submission after `after` successful ones, as a kernel refusing a
    /// request would, leaving the request it was submitting queued.
    fn note_engine(&mut self, e: EngineChoice) {
        if !self.engines_used.contains(&e) {
            self.engines_used.push(e);
        }
    }

    #[doc(hidden)]
    pub fn inject_submit_failure(&mut self, after: u32) {
        self.inject_submit_failure = Some(after);
    }

    fn use_uring(&mut self, queue_depth: usize) -> bool {
        let wanted = match self.engine {
            EngineChoice::Psync => false,
            EngineChoice::IoUring => true,
            EngineChoice::Auto => queue_depth > 1,
        };
        if !wanted {
            return false;
        }
        // A ring a batch left poisoned goes before it could enter the
        // kernel again (a panic unwinds past the check after `run`).
        if self.uring.as_ref().is_some_and(|u| u.poisoned) {
            self.uring = None;
        }
        if self.uring.as_ref().is_some_and(|u| u.entries() >= queue_depth) {
            return true;
        }
        match uring::Uring::new(&self.file, queue_depth) {
            Ok(u) => {
                self.uring = Some(u);
                true
            }
            Err(e) => {
                if !URING_FALLBACK_SAID.swap(true, Ordering::Relaxed) {
                    crate::errln!("note: io_uring is unavailable ({e}); using psync, one request at a time");
                }
                self.engine = EngineChoice::Psync;
                false
            }
        }
    }
}

impl Target for RealTarget {
    fn description(&self) -> &TargetDescription {
        &self.desc
    }

    fn run(&mut self, requests: &[Request], queue_depth: usize, buf: &mut AlignedBuf) -> Completions {
        check_requests(&self.desc, requests, queue_depth, buf.len(), self.writable)?;
        let started = std::time::Instant::now();
        let result = if self.use_uring(queue_depth) {
            self.last_engine = Some(EngineChoice::IoUring);
            self.note_engine(EngineChoice::IoUring);
            let uring = self.uring.as_mut().expect("set by use_uring");
            uring.fail_submit_after = self.inject_submit_failure.take();
            let r = uring.run(requests, queue_depth, buf);
            // Entries that never left a failed batch's queue point into
            // `buf`: the ring goes, and they with it, before anything else.
            if uring.poisoned {
                self.uring = None;
            }
            r
        } else {
            self.last_engine = Some(EngineChoice::Psync);
            self.note_engine(EngineChoice::Psync);
            psync::run(&self.file, requests, buf)
        };
        self.device_ns += started.elapsed().as_nanos() as u64;
        result
    }

    fn device_time_ns(&self) -> u64 {
        self.device_ns
    }

    /// The flush is device time too: it is when a write-back cache reaches
    /// the medium.
    fn sync(&mut self) -> Result<(), TargetError> {
        let started = std::time::Instant::now();
        let result = rustix::fs::fdatasync(&self.file).map_err(|e| TargetError::Io {
            op: "sync",
            offset: 0,
            source: e.into(),
        });
        self.device_ns += started.elapsed().as_nanos() as u64;
        result
    }

    /// psync on a new read-only descriptor of the same path.
    fn independent_reader(&self) -> Option<Box<dyn Target>> {
        let opts = OpenOptions {
            write: false,
            exclusive: false,
            engine: EngineChoice::Psync,
        };
        RealTarget::open(&self.path, &self.desc.spec, opts)
            .ok()
            .filter(|r| r.desc.size_bytes == self.desc.size_bytes)
            .map(|r| Box::new(r) as Box<dyn Target>)
    }

    fn engines_used(&self) -> Vec<EngineChoice> {
        self.engines_used.clone()
    }
}

/// The kernel's read-only flag of a block device (`losetup -r`, a card's lock
/// switch, `blockdev --setro`), from sysfs: opening such a device for writing
/// succeeds and only the writes fail, so it has to be asked.
fn block_read_only(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::MetadataExt;
    let (ma, mi) = (rustix::fs::major(meta.rdev()), rustix::fs::minor(meta.rdev()));
    std::fs::read_to_string(format!("/sys/dev/block/{ma}:{mi}/ro")).is_ok_and(|s| s.trim() == "1")
}

// io::ErrorKind is non_exhaustive: a catch-all arm is required, and every
// kind not named is an open failure.
#[allow(clippy::wildcard_enum_match_arm)]
fn open_error(path: &str, e: io::Error) -> TargetError {
    match e.kind() {
        io::ErrorKind::NotFound => TargetError::NotFound { path: path.to_string() },
        io::ErrorKind::PermissionDenied => TargetError::PermissionDenied { path: path.to_string() },
        _ if e.raw_os_error() == Some(libc::EBUSY) => TargetError::Busy { path: path.to_string() },
        _ if e.raw_os_error() == Some(libc::EROFS) => TargetError::WriteProtected { path: path.to_string() },
        _ => TargetError::Open {
            path: path.to_string(),
            source: e,
        },
    }
}

/// How long an exclusive open keeps retrying a busy device (see `open_file`).
pub const BUSY_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

fn open_file(path: &Path, p: &str, kind: TargetKind, opts: OpenOptions) -> Result<(File, bool), TargetError> {
    let mut flags = OFlags::CLOEXEC | OFlags::DIRECT;
    if opts.exclusive && kind == TargetKind::Block {
        flags |= OFlags::EXCL;
    }
    let mut oo = std::fs::OpenOptions::new();
    oo.read(true).write(opts.write);
    let mut opened = oo.clone().custom_flags(flags.bits() as i32).open(path);
    // A process killed mid-test (SIGKILL, power-off of the host shell) holds
    // the device through its io_uring until the kernel tears the ring down,
    // asynchronously, a moment after the process is gone; `restore` run right
    // then would be refused. A device that is really in use stays busy.
    let deadline = std::time::Instant::now() + BUSY_GRACE;
    while opts.exclusive
        && matches!(&opened, Err(e) if e.raw_os_error() == Some(libc::EBUSY))
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(std::time::Duration::from_millis(50));
        opened = oo.clone().custom_flags(flags.bits() as i32).open(path);
    }
    match opened {
        Ok(f) => Ok((f, true)),
        // Filesystems without O_DIRECT answer EINVAL; fall back to the page cache.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) && kind == TargetKind::File => {
            let f = oo
                .custom_flags((flags - OFlags::DIRECT).bits() as i32)
                .open(path)
                .map_err(|e| open_error(p, e))?;
            Ok((f, false))
        }
        Err(e) => Err(open_error(p, e)),
    }
}

/// Size, logical and physical block size.
fn geometry(file: &File, kind: TargetKind, meta: &std::fs::Metadata) -> io::Result<(u64, u32, u32)> {
    use std::os::unix::fs::MetadataExt;
    match kind {
        TargetKind::Block => {
            let size = rustix::fs::seek(file, rustix::fs::SeekFrom::End(0))?;
            let logical = rustix::fs::ioctl_blksszget(file)?;
            let physical = rustix::fs::ioctl_blkpbszget(file)?;
            Ok((size, logical, physical))
        }
        TargetKind::File | TargetKind::Sim => {
            // O_DIRECT on a file needs the filesystem's direct-I/O alignment
            // (statx STATX_DIOALIGN, Linux 6.1+); 512 is the historic minimum.
            let dio = rustix::fs::statx(
                file,
                "",
                rustix::fs::AtFlags::EMPTY_PATH,
                rustix::fs::StatxFlags::DIOALIGN,
            )
            .ok()
            .map(|s| s.stx_dio_offset_align)
            .filter(|&a| a > 0)
            .unwrap_or(512);
            let physical = (meta.blksize() as u32).max(dio);
            Ok((meta.len(), dio, physical))
        }
    }
}
