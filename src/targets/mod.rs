//! The seam every test runs through (docs/DESIGN.md "The seam: Target"): geometry, and
//! "run these requests at this queue depth and tell me how long each took". Tests
//! never read a clock or learn which kind of target they drive, so the same code
//! measures real hardware and runs deterministically on simulated cards.

pub mod buffer;
pub mod real;
pub mod spec;

use serde::{Deserialize, Serialize};

pub use buffer::AlignedBuf;

/// What a target is, as the JSON contract's `target` object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TargetDescription {
    /// The spec the user gave (`/dev/mmcblk0`, `sim:demo,au_size=8M`).
    pub spec: String,
    pub kind: TargetKind,
    pub size_bytes: u64,
    /// The smallest unit the target accepts; every request is aligned to it.
    pub logical_block_size: u32,
    pub physical_block_size: u32,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TargetKind {
    Block,
    File,
    Sim,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Op {
    Read,
    Write,
}

/// One I/O: `len` bytes at `offset` on the target, to or from `buf_offset` in the
/// batch's buffer. Offsets and lengths must be multiples of the logical block size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Request {
    pub op: Op,
    pub offset: u64,
    pub len: u32,
    pub buf_offset: usize,
}

impl Request {
    pub fn read(offset: u64, len: u32, buf_offset: usize) -> Self {
        Request {
            op: Op::Read,
            offset,
            len,
            buf_offset,
        }
    }

    pub fn write(offset: u64, len: u32, buf_offset: usize) -> Self {
        Request {
            op: Op::Write,
            offset,
            len,
            buf_offset,
        }
    }
}

/// How one request ended. Durations are nanoseconds from submission to
/// completion: wall time on a monotonic clock for real targets, virtual time for
/// simulated ones.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Completion {
    pub duration_ns: u64,
    /// `None` on success; the errno of a failed request (EIO for a bad range).
    pub errno: Option<i32>,
}

/// What running a batch gives: a completion for each request, in request
/// order, or why the batch as a whole could not run. Every engine and
/// every wrapping target returns it, so it has one name.
pub type Completions = Result<Vec<Completion>, TargetError>;

/// Why a batch could not run. Request-level I/O errors are not here: they come
/// back per request in [`Completion::errno`] so a test can map bad ranges.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    #[error("{path}: no such file or device")]
    NotFound { path: String },
    #[error("{path}: permission denied")]
    PermissionDenied { path: String },
    #[error("{path}: not a block device or regular file")]
    NotBlockOrFile { path: String },
    #[error("{path}: size is zero")]
    Empty { path: String },
    #[error("{path} holds {size} bytes, less than one {block}-byte block")]
    TooSmall { path: String, size: u64, block: u32 },
    #[error("{path} is read-only (write-protected), so a writing test cannot run")]
    WriteProtected { path: String },
    #[error("{path}: device is busy (mounted, held by another device, or opened exclusively)")]
    Busy { path: String },
    #[error("{path}: {source}")]
    Open { path: String, source: std::io::Error },
    #[error("request at offset {offset} length {len} is not aligned to the {align}-byte logical block size")]
    Unaligned { offset: u64, len: u32, align: u32 },
    #[error("request at offset {offset} length {len} passes the end of the target ({size} bytes)")]
    PastEnd { offset: u64, len: u32, size: u64 },
    #[error("request needs buffer bytes {start}..{end} but the buffer holds {buf_len}")]
    BufferTooSmall { start: usize, end: usize, buf_len: usize },
    #[error("target was opened read-only; a write request is not allowed")]
    ReadOnly,
    #[error("queue depth must be at least 1")]
    ZeroQueueDepth,
    #[error("{op} at offset {offset} failed: {source}")]
    Io {
        op: &'static str,
        offset: u64,
        source: std::io::Error,
    },
    /// A write the preserving target refused: it lies outside every range the
    /// test declared, so it would change bytes nobody journalled.
    #[error("write outside the declared ranges: {len} bytes at {offset}")]
    Undeclared { offset: u64, len: u64 },
    /// A range's original read back holding a block this run wrote at
    /// another address: the target maps two addresses onto the same bytes
    /// (a fake card that wraps). The write it was read for was not made.
    #[error(
        "the bytes at {offset} are those at {other}: a block written at {other} read back at {offset}, so the \
         target wraps its addresses (a fake card)"
    )]
    Aliased { offset: u64, other: u64 },
    /// Ctrl-C or SIGTERM arrived; the preserving target refuses the next write
    /// so the caller can restore and exit.
    #[error("interrupted by signal {signal}")]
    Interrupted { signal: i32 },
    /// The preservation journal could not be written, so the write it was to
    /// protect was not made.
    #[error("{0}")]
    Journal(String),
}

/// A device the tests can measure. Send: several runs in one process
/// (`batch`) each drive their own target from a thread of their own.
pub trait Target: Send {
    fn description(&self) -> &TargetDescription;

    /// Run `requests` keeping up to `queue_depth` in flight, and return one
    /// completion per request, in request order.
    fn run(&mut self, requests: &[Request], queue_depth: usize, buf: &mut AlignedBuf) -> Completions;

    /// Time the device has spent on requests so far (virtual for a simulation).
    fn device_time_ns(&self) -> u64;

    /// The part of [`Target::device_time_ns`] a wrapping layer spent on
    /// its own requests, not the caller's: the preservation journal's reads
    /// of originals through this target. A test that times its requests
    /// takes it out (bench: a piece journalled mid-test is not throughput).
    fn own_time_ns(&self) -> u64 {
        0
    }

    /// Make completed writes durable (a power cut after this loses nothing). A
    /// simulation has nothing to flush.
    fn sync(&mut self) -> Result<(), TargetError> {
        Ok(())
    }

    /// A second, read-only way to the same bytes that shares no buffer, file
    /// description or engine with this one: psync on a new descriptor for a
    /// real target. The preservation journal reads originals and verifies
    /// restores through it, so a fault in the engine that wrote cannot also
    /// hide itself from the check. `None` where no such path exists (a
    /// simulation keeps its data in this process); callers then read through
    /// `self` with a fresh buffer.
    fn independent_reader(&self) -> Option<Box<dyn Target>> {
        None
    }

    /// The engines that ran this target's batches so far (psync, io_uring),
    /// so a run can say which it used: a silent fallback is visible. Empty
    /// for a simulation.
    fn engines_used(&self) -> Vec<real::EngineChoice> {
        Vec::new()
    }

    /// Whether reads return what was written: false only for a simulated
    /// card that keeps timing alone (`keep_data=false`), whose restores
    /// cannot be checked by content.
    fn keeps_data(&self) -> bool {
        true
    }

    /// Read the `len` bytes at `offset` into `buf` and, where `keep`
    /// accepts them, write them back as they are; whether they were
    /// written. A flush that pushes a write cache out and leaves the card
    /// holding what it held (capacity). A preserving target journals the
    /// bytes this read took, where a read and a write would have it read
    /// them twice.
    fn rewrite(
        &mut self,
        offset: u64,
        len: u32,
        buf: &mut AlignedBuf,
        keep: &dyn Fn(&[u8]) -> bool,
    ) -> Result<bool, TargetError> {
        rewrite_through(self, offset, len, buf, keep)
    }
}

/// A borrowed or boxed target is a target: each method forwards.
macro_rules! forward_target {
    ($($ty:ty),*) => {$(
        impl<T: Target + ?Sized> Target for $ty {
            fn description(&self) -> &TargetDescription {
                (**self).description()
            }

            fn run(
                &mut self,
                requests: &[Request],
                queue_depth: usize,
                buf: &mut AlignedBuf,
            ) -> Completions {
                (**self).run(requests, queue_depth, buf)
            }

            fn device_time_ns(&self) -> u64 {
                (**self).device_time_ns()
            }

            fn own_time_ns(&self) -> u64 {
                (**self).own_time_ns()
            }

            fn sync(&mut self) -> Result<(), TargetError> {
                (**self).sync()
            }

            fn independent_reader(&self) -> Option<Box<dyn Target>> {
                (**self).independent_reader()
            }

            fn engines_used(&self) -> Vec<real::EngineChoice> {
                (**self).engines_used()
            }

            fn keeps_data(&self) -> bool {
                (**self).keeps_data()
            }

            fn rewrite(
                &mut self,
                offset: u64,
                len: u32,
                buf: &mut AlignedBuf,
                keep: &dyn Fn(&[u8]) -> bool,
            ) -> Result<bool, TargetError> {
                (**self).rewrite(offset, len, buf, keep)
            }
        }
    )*};
}

forward_target!(&mut T, Box<T>);

/// Run a batch and turn the first failed request into an error: for callers
/// that cannot interpret a partial batch (the journal, a restore, the
/// writing tests).
pub fn run_all(target: &mut dyn Target, requests: &[Request], queue_depth: usize, buf: &mut AlignedBuf) -> Completions {
    let done = target.run(requests, queue_depth, buf)?;
    first_failure(requests, &done)?;
    Ok(done)
}

/// The first request of a batch that failed, as an error.
pub fn first_failure(requests: &[Request], done: &[Completion]) -> Result<(), TargetError> {
    match requests.iter().zip(done).find_map(|(r, c)| c.errno.map(|e| (r, e))) {
        Some((r, errno)) => Err(TargetError::Io {
            op: match r.op {
                Op::Read => "read",
                Op::Write => "write",
            },
            offset: r.offset,
            source: std::io::Error::from_raw_os_error(errno),
        }),
        None => Ok(()),
    }
}

/// [`Target::rewrite`] as any target does it: a read, then a write of
/// what it read.
pub fn rewrite_through<T: Target + ?Sized>(
    t: &mut T,
    offset: u64,
    len: u32,
    buf: &mut AlignedBuf,
    keep: &dyn Fn(&[u8]) -> bool,
) -> Result<bool, TargetError> {
    let read = [Request::read(offset, len, 0)];
    first_failure(&read, &t.run(&read, 1, buf)?)?;
    if !keep(&buf.as_slice()[..len as usize]) {
        return Ok(false);
    }
    let write = [Request::write(offset, len, 0)];
    first_failure(&write, &t.run(&write, 1, buf)?)?;
    Ok(true)
}

/// The checks every target applies before any I/O: aligned, inside the target
/// (no wrapping), inside the buffer, writes only when writable.
pub fn check_requests(
    desc: &TargetDescription,
    requests: &[Request],
    queue_depth: usize,
    buf_len: usize,
    writable: bool,
) -> Result<(), TargetError> {
    if queue_depth == 0 {
        return Err(TargetError::ZeroQueueDepth);
    }
    let align = u64::from(desc.logical_block_size);
    for r in requests {
        if r.offset % align != 0 || u64::from(r.len) % align != 0 || r.len == 0 {
            return Err(TargetError::Unaligned {
                offset: r.offset,
                len: r.len,
                align: desc.logical_block_size,
            });
        }
        match r.offset.checked_add(u64::from(r.len)) {
            Some(end) if end <= desc.size_bytes => {}
            _ => {
                return Err(TargetError::PastEnd {
                    offset: r.offset,
                    len: r.len,
                    size: desc.size_bytes,
                });
            }
        }
        let end = r.buf_offset.saturating_add(r.len as usize);
        if end > buf_len {
            return Err(TargetError::BufferTooSmall {
                start: r.buf_offset,
                end,
                buf_len,
            });
        }
        if r.op == Op::Write && !writable {
            return Err(TargetError::ReadOnly);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn desc() -> TargetDescription {
        TargetDescription {
            spec: "t".into(),
            kind: TargetKind::File,
            size_bytes: 1 << 20,
            logical_block_size: 512,
            physical_block_size: 4096,
        }
    }

    #[test]
    fn checks_alignment_bounds_buffer_and_mode() {
        let d = desc();
        assert!(check_requests(&d, &[Request::read(0, 512, 0)], 1, 512, false).is_ok());
        assert!(matches!(
            check_requests(&d, &[Request::read(100, 512, 0)], 1, 4096, false),
            Err(TargetError::Unaligned { .. })
        ));
        assert!(matches!(
            check_requests(&d, &[Request::read(0, 100, 0)], 1, 4096, false),
            Err(TargetError::Unaligned { .. })
        ));
        assert!(matches!(
            check_requests(&d, &[Request::read((1 << 20) - 512, 1024, 0)], 1, 4096, false),
            Err(TargetError::PastEnd { .. })
        ));
        assert!(matches!(
            check_requests(&d, &[Request::read(u64::MAX - 511, 512, 0)], 1, 4096, false),
            Err(TargetError::PastEnd { .. })
        ));
        assert!(matches!(
            check_requests(&d, &[Request::read(0, 1024, 0)], 1, 512, false),
            Err(TargetError::BufferTooSmall { .. })
        ));
        assert!(matches!(
            check_requests(&d, &[Request::write(0, 512, 0)], 1, 512, false),
            Err(TargetError::ReadOnly)
        ));
        assert!(check_requests(&d, &[Request::write(0, 512, 0)], 1, 512, true).is_ok());
        assert!(matches!(
            check_requests(&d, &[], 0, 512, true),
            Err(TargetError::ZeroQueueDepth)
        ));
    }
}
