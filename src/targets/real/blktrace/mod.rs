//! The kernel's block tracing of a real device, copied to blktrace's
//! binary files (`PREFIX.blktrace.CPU`, the format blkparse and `life`
//! read; `docs/notes/trace-formats.md`). Two ways in, tried in order:
//! - [`relay`]: blktrace's own, the `BLKTRACESETUP` ioctls and one debugfs
//!   relay file per CPU;
//! - [`ftrace`]: the `blk` tracer of ftrace in binary mode, one
//!   `trace_pipe` per CPU, which writes the same `blk_io_trace` records
//!   (with sequence numbers of 0 and no notes of process names). A kernel
//!   in lockdown refuses debugfs's relay files ("Lockdown: blktrace:
//!   debugfs access is restricted", on this project's machine) but not
//!   tracefs.
//!
//! The device is opened read-only, and only for the ioctls: tracing never
//! writes it. Whatever a capture changed (a mount, the tracer, the
//! device's trace switch) is put back by [`Tracing`]'s drop, so no path
//! out of a capture, an error included, leaves the kernel tracing.

mod ftrace;
pub mod record;
mod relay;

use std::fs::File;
use std::io::{Read, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};

/// Where debugfs and tracefs are mounted on every distribution that mounts them.
pub const DEBUGFS: &str = "/sys/kernel/debug";
pub const TRACEFS: &str = "/sys/kernel/tracing";

/// Why a capture could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum CaptureError {
    #[error("cannot open {path} read-only: {why}")]
    Open { path: String, why: std::io::Error },
    #[error("{0} is not a block device")]
    NotBlock(String),
    #[error("{path} cannot be traced: {why}")]
    Setup { path: String, why: String },
    #[error("the kernel's tracer is busy: current_tracer is '{0}'")]
    Busy(String),
    #[error("{path}: {why}")]
    Output { path: String, why: String },
    #[error("reading the kernel's trace: {0}")]
    Read(std::io::Error),
}

impl CaptureError {
    /// What to do about it.
    pub fn hint(&self) -> String {
        let other = "blktrace (Debian's package blktrace) or biosnoop (bpfcc-tools) record the same, and \
                     flashlab life reads both";
        match self {
            CaptureError::Open { .. } => format!("run it as root, on a block device; or use {other}"),
            CaptureError::NotBlock(_) => "give a block device: a card (/dev/mmcblk0, /dev/sdb) or a partition".into(),
            CaptureError::Setup { .. } => format!(
                "the kernel needs CONFIG_BLK_DEV_IO_TRACE and debugfs or tracefs ({DEBUGFS}, {TRACEFS}); or \
                 use {other}"
            ),
            CaptureError::Busy(_) => format!(
                "another trace is running (trace-cmd, perf, blktrace?): end it, or `echo nop > \
                 {TRACEFS}/current_tracer` if none is"
            ),
            CaptureError::Output { .. } => "give -o a path in a directory you can write".into(),
            CaptureError::Read(_) => "what was copied so far is kept; run it again to go on".into(),
        }
    }
}

/// One CPU's trace and the file it is copied to.
struct Cpu {
    from: File,
    to: File,
}

/// Open `path` for reading without blocking (a relay file or a
/// trace_pipe: a read with nothing new says so at once).
fn open_nonblocking(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

/// The per-CPU files of a tracing folder, in CPU order: each CPU `N` that
/// has an entry `{prefix}N` in `dir`, with the file `path(N)` opened
/// without blocking. A failure names the path it failed on.
fn per_cpu(
    dir: &Path,
    prefix: &str,
    path: impl Fn(u32) -> PathBuf,
) -> Result<Vec<(u32, File)>, (PathBuf, std::io::Error)> {
    let mut cpus: Vec<u32> = std::fs::read_dir(dir)
        .map_err(|e| (dir.to_path_buf(), e))?
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.strip_prefix(prefix)?.parse().ok())
        .collect();
    cpus.sort_unstable();
    cpus.into_iter()
        .map(|cpu| {
            let p = path(cpu);
            open_nonblocking(&p).map(|f| (cpu, f)).map_err(|e| (p, e))
        })
        .collect()
}

/// Mount `fs` at `at` unless it is mounted there: whether this did.
fn mount_if_missing(fs: &str, at: &str, marker: &str) -> std::io::Result<bool> {
    let mounted = std::fs::read_to_string("/proc/mounts").is_ok_and(|m| {
        m.lines()
            .any(|l| l.split_whitespace().nth(1) == Some(at) && l.starts_with(fs))
    }) || Path::new(at).join(marker).exists();
    if mounted {
        return Ok(false);
    }
    rustix::mount::mount(fs, at, fs, rustix::mount::MountFlags::empty(), None)?;
    Ok(true)
}

/// `PREFIX.blktrace.CPU` for each CPU, made (or emptied) as regular files
/// only: never written over a device node, a FIFO or a link.
fn outputs(prefix: &Path, cpus: &[u32]) -> Result<Vec<(PathBuf, File)>, CaptureError> {
    let mut out = Vec::new();
    for cpu in cpus {
        let path = PathBuf::from(format!("{}.blktrace.{cpu}", prefix.display()));
        let shown = path.display().to_string();
        if let Some(what) = crate::files::not_a_regular_file(&path) {
            return Err(CaptureError::Output {
                path: shown,
                why: format!("is {what}, not a regular file"),
            });
        }
        let f = File::create(&path).map_err(|e| CaptureError::Output {
            path: shown,
            why: e.to_string(),
        })?;
        out.push((path, f));
    }
    Ok(out)
}

enum Backend {
    Relay(relay::Relay),
    /// Held for its drop, which puts the tracer back.
    Ftrace(#[expect(dead_code, reason = "held for its drop")] ftrace::Ftrace),
}

/// A running capture.
pub struct Tracing {
    backend: Option<Backend>,
    cpus: Vec<Cpu>,
    /// The files written, in CPU order.
    pub outputs: Vec<PathBuf>,
    /// Bytes copied so far.
    pub bytes: u64,
}

impl Tracing {
    /// Start tracing the block device `path`, copying to `PREFIX.blktrace.CPU`.
    pub fn start(path: &Path, prefix: &Path) -> Result<Tracing, CaptureError> {
        let shown = path.display().to_string();
        let device = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path)
            .map_err(|why| CaptureError::Open {
                path: shown.clone(),
                why,
            })?;
        use std::os::unix::fs::FileTypeExt;
        let meta = device.metadata().map_err(|why| CaptureError::Open {
            path: shown.clone(),
            why,
        })?;
        if !meta.file_type().is_block_device() {
            return Err(CaptureError::NotBlock(shown));
        }
        let (backend, sources) = match relay::Relay::start(device, &shown) {
            Ok(started) => (Backend::Relay(started.0), started.1),
            Err(relay_failed) => {
                let name = sysfs_name(&meta).ok_or_else(|| CaptureError::Setup {
                    path: shown.clone(),
                    why: "its sysfs entry is not found".into(),
                })?;
                match ftrace::Ftrace::start(&name) {
                    Ok(started) => (Backend::Ftrace(started.0), started.1),
                    Err(e @ CaptureError::Busy(_)) => return Err(e),
                    Err(e) => {
                        return Err(CaptureError::Setup {
                            path: shown,
                            why: format!("blktrace's way: {relay_failed}; ftrace's: {e}"),
                        });
                    }
                }
            }
        };
        let ids: Vec<u32> = sources.iter().map(|s| s.0).collect();
        let mut tracing = Tracing {
            backend: Some(backend),
            cpus: Vec::new(),
            outputs: Vec::new(),
            bytes: 0,
        };
        for ((_, from), (path, to)) in sources.into_iter().zip(outputs(prefix, &ids)?) {
            tracing.cpus.push(Cpu { from, to });
            tracing.outputs.push(path);
        }
        Ok(tracing)
    }

    /// Which way the kernel is traced, in words.
    pub fn how(&self) -> &'static str {
        match self.backend {
            Some(Backend::Relay(_)) => "blktrace's relay files",
            Some(Backend::Ftrace(_)) => "ftrace's blk tracer",
            None => "stopped",
        }
    }

    /// Copy what the kernel traced since the last drain, CPU by CPU;
    /// `seen` gets each CPU's new bytes as they are copied.
    pub fn drain(&mut self, mut seen: impl FnMut(usize, &[u8])) -> Result<u64, CaptureError> {
        let mut buf = vec![0u8; 256 << 10];
        let mut total = 0;
        for (i, cpu) in self.cpus.iter_mut().enumerate() {
            loop {
                let n = match cpu.from.read(&mut buf) {
                    Ok(0) => break,
                    Ok(n) => n,
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    Err(e) => return Err(CaptureError::Read(e)),
                };
                cpu.to.write_all(&buf[..n]).map_err(CaptureError::Read)?;
                seen(i, &buf[..n]);
                total += n as u64;
            }
        }
        self.bytes += total;
        Ok(total)
    }

    /// Stop the events, copy the rest, put back what the capture changed,
    /// and make the copies durable. The bytes copied in all.
    pub fn stop(mut self, seen: impl FnMut(usize, &[u8])) -> Result<u64, CaptureError> {
        if let Some(Backend::Relay(r)) = &self.backend {
            r.stop_events();
        }
        let rest = self.drain(seen);
        let synced = self.cpus.iter().try_for_each(|c| c.to.sync_all());
        self.put_back();
        rest?;
        synced.map_err(CaptureError::Read)?;
        Ok(self.bytes)
    }

    fn put_back(&mut self) {
        // The trace files close before the tracer changes: ftrace cannot
        // change its tracer while a trace_pipe is open.
        self.cpus.clear();
        self.backend = None;
    }
}

impl Drop for Tracing {
    fn drop(&mut self) {
        self.put_back();
    }
}

/// The device's name in /sys/class/block (`mmcblk0`, `sdb1`), from its number.
fn sysfs_name(meta: &std::fs::Metadata) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let (major, minor) = (rustix::fs::major(meta.rdev()), rustix::fs::minor(meta.rdev()));
    let link = std::fs::read_link(format!("/sys/dev/block/{major}:{minor}")).ok()?;
    Some(link.file_name()?.to_str()?.to_string())
}
