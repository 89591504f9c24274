//! The FUSE side of `flashlab emulate`: one file, `card`, whose reads and
//! writes go through the card model and are answered when the model says
//! the card completes them, on a wall clock scaled by `time_scale`.

use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, KernelConfig, LockOwner, OpenFlags,
    ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};

use crate::sim::SimTarget;
use crate::target::{AlignedBuf, Request as Io};

/// The name of the one file, under the mount point.
pub const CARD_FILE: &str = "card";
const CARD_INO: INodeNo = INodeNo(2);
/// How long the kernel may cache the attributes: for good, as they never
/// change. Once they expire, the kernel asks the daemon again whenever
/// anyone asks a loop device over the card what it shows (`losetup -a`,
/// `LOOP_GET_STATUS64`, flashlab's own device stack), and a stopped daemon
/// would hang every one of those callers, machine-wide, until it is ended
/// (with an hour's cache, an hour after it stopped). The kernel caps the
/// time at its largest jiffy offset. Writes invalidate the size and times,
/// never the inode number the loop driver reads.
const TTL: Duration = Duration::from_secs(100 * 365 * 24 * 3600);
/// Largest FUSE write, and the read size asked for: 1 MiB, the largest
/// libfuse 3.14 accepts (`../shared/notes/fuse-loop-path.md`, "request
/// splitting"); the loop queue splits larger I/O itself.
pub const MAX_IO: u32 = 1 << 20;
/// Requests the kernel keeps in flight to the daemon: above the default 12
/// so fio at QD 32 reaches the model's host queue (same notes, "queue depth").
pub const MAX_BACKGROUND: u16 = 64;
/// The last stretch of a wait is spun, not slept: a sleep overshoots by
/// 50-100 µs (same notes, "timing accuracy").
const SPIN: Duration = Duration::from_micros(150);

/// What the card saw, for the live counters and the summary.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub flushes: u64,
    /// Request sizes as they reached the card, bytes -> count (the loop
    /// device and FUSE split and merge what programs issue).
    pub sizes: BTreeMap<u32, u64>,
    /// Most requests inside the model at once.
    pub most_in_flight: u64,
    /// Requests answered later than the model said (the wait was already
    /// past when the request arrived or the scheduler was late).
    pub late: u64,
    /// Requests refused as outside the card or not whole sectors.
    pub refused: u64,
}

/// The state the FUSE threads share.
pub struct Card {
    sim: Mutex<SimTarget>,
    backing: Option<File>,
    size: u64,
    sector: u32,
    origin: Instant,
    /// Wall seconds per model second.
    scale: f64,
    /// The serving overhead taken off each wait (ns of wall time).
    overhead_ns: AtomicU64,
    /// While the overhead is measured, requests are answered at once and
    /// the model does not see them.
    calibrating: AtomicBool,
    in_flight: AtomicU64,
    pub stats: Mutex<Stats>,
}

impl Card {
    pub fn new(sim: SimTarget, backing: Option<File>, scale: f64) -> Card {
        let d = crate::target::Target::description(&sim).clone();
        Card {
            sim: Mutex::new(sim),
            backing,
            size: d.size_bytes,
            sector: d.logical_block_size,
            origin: Instant::now(),
            scale,
            overhead_ns: AtomicU64::new(0),
            calibrating: AtomicBool::new(true),
            in_flight: AtomicU64::new(0),
            stats: Mutex::new(Stats::default()),
        }
    }

    pub fn set_overhead(&self, ns: u64) {
        self.overhead_ns.store(ns, Ordering::SeqCst);
        self.calibrating.store(false, Ordering::SeqCst);
    }

    /// The model's counters: merges (GC events), open AUs, device time.
    pub fn model(&self) -> (u64, usize, u64) {
        let s = self.sim.lock().unwrap_or_else(|p| p.into_inner());
        (
            s.counters.gc_events,
            s.ftl.open_aus().len(),
            crate::target::Target::device_time_ns(&*s),
        )
    }

    fn model_now(&self) -> u64 {
        (self.origin.elapsed().as_nanos() as f64 / self.scale) as u64
    }

    /// Serve one request: the model's completion time, then the wait until
    /// it, less the overhead; the data through the model (or the backing
    /// file). An errno on failure.
    fn serve(&self, io: Io, buf: &mut AlignedBuf) -> Result<(), Errno> {
        let len = u64::from(io.len);
        let ss = u64::from(self.sector.max(1));
        if io.offset.checked_add(len).is_none_or(|e| e > self.size)
            || !io.offset.is_multiple_of(ss)
            || !len.is_multiple_of(ss)
        {
            self.stats.lock().unwrap_or_else(|p| p.into_inner()).refused += 1;
            return Err(Errno::EINVAL);
        }
        if self.calibrating.load(Ordering::SeqCst) {
            return Ok(());
        }
        let n = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        let arrival = self.model_now();
        let served = {
            let mut sim = self.sim.lock().unwrap_or_else(|p| p.into_inner());
            sim.serve_at(arrival, &io, buf)
        };
        let result = match served {
            Ok((complete, errno)) => {
                if let Some(f) = &self.backing {
                    let data = &mut buf.as_mut_slice()[..io.len as usize];
                    let moved = match io.op {
                        crate::target::Op::Read => f.read_exact_at(data, io.offset),
                        crate::target::Op::Write => f.write_all_at(data, io.offset),
                    };
                    if moved.is_err() {
                        self.in_flight.fetch_sub(1, Ordering::SeqCst);
                        return Err(Errno::EIO);
                    }
                }
                let late = self.wait_until(complete);
                let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
                st.most_in_flight = st.most_in_flight.max(n);
                st.late += u64::from(late);
                *st.sizes.entry(io.len).or_default() += 1;
                match io.op {
                    crate::target::Op::Read => {
                        st.reads += 1;
                        st.bytes_read += len;
                    }
                    crate::target::Op::Write => {
                        st.writes += 1;
                        st.bytes_written += len;
                    }
                }
                match errno {
                    Some(_) => Err(Errno::EIO),
                    None => Ok(()),
                }
            }
            Err(_) => Err(Errno::EINVAL),
        };
        self.in_flight.fetch_sub(1, Ordering::SeqCst);
        result
    }

    /// Wait until model time `complete` (wall: origin + complete x scale,
    /// less the overhead); true when that moment had already passed by
    /// more than the overhead.
    fn wait_until(&self, complete: u64) -> bool {
        let overhead = Duration::from_nanos(self.overhead_ns.load(Ordering::SeqCst));
        let due = self.origin + Duration::from_nanos((complete as f64 * self.scale) as u64);
        let due = due.checked_sub(overhead).unwrap_or(due);
        let now = Instant::now();
        if now >= due {
            return now - due > overhead.max(Duration::from_micros(100));
        }
        let left = due - now;
        if left > SPIN {
            std::thread::sleep(left - SPIN);
        }
        while Instant::now() < due {
            std::hint::spin_loop();
        }
        false
    }

    fn attr(&self, ino: INodeNo) -> FileAttr {
        let file = ino == CARD_INO;
        FileAttr {
            ino,
            size: if file { self.size } else { 0 },
            blocks: if file { self.size.div_ceil(512) } else { 0 },
            atime: UNIX_EPOCH,
            mtime: UNIX_EPOCH,
            ctime: UNIX_EPOCH,
            crtime: UNIX_EPOCH,
            kind: if file {
                FileType::RegularFile
            } else {
                FileType::Directory
            },
            perm: if file { 0o600 } else { 0o700 },
            nlink: if file { 1 } else { 2 },
            uid: 0,
            gid: 0,
            rdev: 0,
            flags: 0,
            blksize: self.sector.max(512),
        }
    }
}

/// The filesystem fuser serves: a root directory holding `card`.
pub struct CardFs(pub std::sync::Arc<Card>);

impl Filesystem for CardFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        // Each setter clamps to what the kernel offers; the nearest is fine.
        let _ = config.set_max_write(MAX_IO);
        let _ = config.set_max_background(MAX_BACKGROUND);
        let _ = config.set_congestion_threshold(MAX_BACKGROUND * 3 / 4);
        // Direct I/O from the loop device's async requests stays async:
        // without it the kernel sends one request at a time, whatever the
        // program's queue depth (fio at QD 32 reached the card one by one).
        let _ = config.add_capabilities(fuser::InitFlags::FUSE_ASYNC_DIO);
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        if parent == INodeNo::ROOT && name == CARD_FILE {
            reply.entry(&TTL, &self.0.attr(CARD_INO), fuser::Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        if ino == INodeNo::ROOT || ino == CARD_INO {
            reply.attr(&TTL, &self.0.attr(ino));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        if ino == CARD_INO {
            // Direct I/O: no page cache between the loop device and the card.
            reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
        } else {
            reply.error(Errno::EISDIR);
        }
    }

    fn read(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        if ino != CARD_INO {
            return reply.error(Errno::EISDIR);
        }
        let size = size.min(MAX_IO);
        let mut buf = AlignedBuf::new(size as usize);
        match self.0.serve(Io::read(offset, size, 0), &mut buf) {
            Ok(()) => reply.data(&buf.as_slice()[..size as usize]),
            Err(e) => reply.error(e),
        }
    }

    fn write(
        &self,
        _req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        if ino != CARD_INO {
            return reply.error(Errno::EISDIR);
        }
        let Ok(len) = u32::try_from(data.len()) else {
            return reply.error(Errno::EINVAL);
        };
        let mut buf = AlignedBuf::new(data.len());
        buf.as_mut_slice().copy_from_slice(data);
        match self.0.serve(Io::write(offset, len, 0), &mut buf) {
            Ok(()) => reply.written(len),
            Err(e) => reply.error(e),
        }
    }

    fn flush(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        reply.ok();
    }

    fn fsync(&self, _req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        self.0.stats.lock().unwrap_or_else(|p| p.into_inner()).flushes += 1;
        if let Some(f) = &self.0.backing {
            let _ = f.sync_data();
        }
        reply.ok();
    }

    fn readdir(&self, _req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        if ino != INodeNo::ROOT {
            return reply.error(Errno::ENOTDIR);
        }
        let entries = [
            (INodeNo::ROOT, FileType::Directory, "."),
            (INodeNo::ROOT, FileType::Directory, ".."),
            (CARD_INO, FileType::RegularFile, CARD_FILE),
        ];
        for (i, (ino, kind, name)) in entries.iter().enumerate().skip(offset as usize) {
            if reply.add(*ino, (i + 1) as u64, *kind, name) {
                break;
            }
        }
        reply.ok();
    }
}
