//! The FUSE side of `flashlab emulate`: one file, `card`, whose reads and
//! writes go through the card model and are answered when the model says
//! the card completes them, on a wall clock scaled by `time_scale`.

use std::cell::RefCell;
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::{Duration, Instant, UNIX_EPOCH};

use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, INodeNo, KernelConfig, LockOwner, OpenFlags,
    ReplyAttr, ReplyData, ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyWrite, Request, WriteFlags,
};

use super::files::Recorder;
use super::order::{Order, PATIENCE};
use super::timing::{Calibrating, Overhead, Waiter};
use crate::sim::SimTarget;
use crate::sim::replay::TraceOp;
use crate::targets::{AlignedBuf, Op, Request as Io};

/// The name of the one file, under the mount point.
pub const CARD_FILE: &str = "card";
pub(super) const CARD_INO: INodeNo = INodeNo(2);
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
/// libfuse 3.14 accepts (`docs/notes/fuse-loop-path.md`, "request
/// splitting"); the loop queue splits larger I/O itself.
pub const MAX_IO: u32 = 1 << 20;
/// Requests the kernel keeps in flight to the daemon: above the default 12
/// so fio at QD 32 reaches the model's host queue (same notes, "queue depth").
pub const MAX_BACKGROUND: u16 = 64;

/// What the card saw, for the live counters and the summary.
#[derive(Debug, Default, Clone)]
pub struct Stats {
    pub reads: u64,
    pub writes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
    pub flushes: u64,
    /// Discards (the loop device's, as hole punches) and their bytes.
    pub discards: u64,
    pub bytes_discarded: u64,
    /// Request sizes as they reached the card, bytes -> count (the loop
    /// device and FUSE split and merge what programs issue).
    pub sizes: BTreeMap<u32, u64>,
    /// Most requests inside the model at once.
    pub most_in_flight: u64,
    /// Answers the card model gave.
    pub answers: u64,
    /// Answers that left late ([`is_late`]): the machine did not keep up.
    pub late: u64,
    /// How late they were together, and the latest, ns past the moment.
    pub late_sum_ns: u64,
    pub late_max_ns: u64,
    /// Requests that came while none was in flight, and by how much more
    /// than the path's own round trip each came after the previous answer
    /// (ns, summed): the program's own time between requests, and whatever
    /// the machine made the program or the path wait.
    pub idle_arrivals: u64,
    pub idle_wait_sum_ns: u64,
    /// The card's time for those requests (wall ns, summed).
    pub idle_card_sum_ns: u64,
    /// When the last answer left.
    pub last_answer: Option<Instant>,
    /// Requests refused as outside the card or not whole sectors.
    pub refused: u64,
}

/// The least lateness counted late, ns: sleeps end within a few µs of
/// their moment here, and the path's own round trip varies by 10 µs.
const LATE_FLOOR_NS: u64 = 10_000;

/// Whether an answer `late_ns` past its moment, for a request the card
/// takes `card_ns` (wall) over, is late: by more than a tenth of that time
/// and more than [`LATE_FLOOR_NS`].
pub fn is_late(late_ns: u64, card_ns: u64) -> bool {
    late_ns > LATE_FLOOR_NS.max(card_ns / 10)
}

thread_local! {
    /// Each FUSE thread's request buffer, kept: a new zeroed MiB per
    /// request cost a mapping and its page faults on every answer.
    static BUF: RefCell<Option<AlignedBuf>> = const { RefCell::new(None) };
}

/// Run `f` with this thread's buffer of at least [`MAX_IO`] bytes.
fn with_buf<R>(f: impl FnOnce(&mut AlignedBuf) -> R) -> R {
    BUF.with(|b| {
        let mut b = b.borrow_mut();
        f(b.get_or_insert_with(|| AlignedBuf::new(MAX_IO as usize)))
    })
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
    waiter: Waiter,
    /// The path's overhead taken off each wait; unset while it is measured
    /// (then requests are answered at once and the model does not see
    /// them).
    overhead: OnceLock<Overhead>,
    calibrating: Mutex<Calibrating>,
    pub order: Order,
    in_flight: AtomicU64,
    /// Whether the card is in its slot ([`super::medium`]): out of it, the
    /// file shows 0 bytes and every request fails with ENOMEDIUM.
    pub present: AtomicBool,
    pub stats: Mutex<Stats>,
    /// `--record`'s file, from when the card serves the model.
    record: OnceLock<Recorder>,
}

impl Card {
    pub fn new(sim: SimTarget, backing: Option<File>, scale: f64, waiter: Waiter) -> Card {
        let d = crate::targets::Target::description(&sim).clone();
        Card {
            sim: Mutex::new(sim),
            backing,
            size: d.size_bytes,
            sector: d.logical_block_size,
            origin: Instant::now(),
            scale,
            waiter,
            overhead: OnceLock::new(),
            calibrating: Mutex::new(Calibrating::default()),
            order: Order::default(),
            in_flight: AtomicU64::new(0),
            present: AtomicBool::new(true),
            stats: Mutex::new(Stats::default()),
            record: OnceLock::new(),
        }
    }

    /// The record's requests once the device is gone (None without
    /// `--record`).
    pub fn finish_record(&self) -> Result<Option<u64>, super::EmulateError> {
        self.record.get().map(Recorder::finish).transpose()
    }

    /// Record each request the model takes from now on into `r`.
    pub fn record_to(&self, r: Recorder) {
        let _ = self.record.set(r);
    }

    /// `--record` one request as the model takes it, at `arrival` (the
    /// card's clock).
    fn note(&self, arrival: u64, op: TraceOp, offset: u64, bytes: u32) {
        if let Some(r) = self.record.get() {
            r.note(arrival, op, offset, bytes);
        }
    }

    /// What the daemon saw while the overhead is measured.
    pub fn calibration(&self) -> &Mutex<Calibrating> {
        &self.calibrating
    }

    /// Serve the model from now on, taking `o` off each answer.
    pub fn serve_model(&self, o: Overhead) {
        let _ = self.overhead.set(o);
    }

    /// The card's flash work so far, by cause.
    pub fn flash_report(&self) -> crate::sim::ftl::FlashReport {
        self.sim.lock().unwrap_or_else(|p| p.into_inner()).flash_report()
    }

    /// The model's counters: merges (GC events), open AUs (in order, in
    /// random mode), device time.
    pub fn model(&self) -> (u64, (u64, u64), u64) {
        let s = self.sim.lock().unwrap_or_else(|p| p.into_inner());
        (
            s.counters.gc_events,
            s.ftl.open_modes(),
            crate::targets::Target::device_time_ns(&*s),
        )
    }

    /// Serve request `unique`, which reached the daemon at `arrived`: into
    /// the model in the kernel's order, the model's completion time, then
    /// the wait until it, less the path's overhead; the data through the
    /// model (or the backing file). An errno on failure.
    /// Discard `len` bytes at `offset` (or, `zero`, write zeroes there),
    /// in its turn among the requests, and do the same to a backing file.
    fn discard(&self, offset: u64, len: u64, zero: bool, arrived: Instant, unique: u64) -> Result<(), Errno> {
        self.in_slot(unique)?;
        let ss = u64::from(self.sector.max(1));
        if offset.checked_add(len).is_none_or(|e| e > self.size)
            || !offset.is_multiple_of(ss)
            || !len.is_multiple_of(ss)
        {
            self.order.seen(unique);
            self.stats.lock().unwrap_or_else(|p| p.into_inner()).refused += 1;
            return Err(Errno::EINVAL);
        }
        {
            self.order.wait_turn(unique, arrived + PATIENCE);
            let mut sim = self.sim.lock().unwrap_or_else(|p| p.into_inner());
            self.order.seen(unique);
            let arrival = self.arrival(arrived);
            if zero {
                with_buf(|buf| {
                    buf.as_mut_slice().fill(0);
                    let mut at = offset;
                    while at < offset + len {
                        let n = (offset + len - at).min(u64::from(MAX_IO)) as u32;
                        sim.serve_at(arrival, &Io::write(at, n, 0), buf)
                            .map_err(|_| Errno::EIO)?;
                        self.note(arrival, TraceOp::Write, at, n);
                        at += u64::from(n);
                    }
                    Ok::<(), Errno>(())
                })?;
            } else {
                sim.discard(offset, len);
                // A record holds at most 4 GiB; 2 GiB pieces stay whole
                // AUs of any power-of-two size up to theirs.
                let mut at = offset;
                while at < offset + len {
                    let n = (offset + len - at).min(1 << 31) as u32;
                    self.note(arrival, TraceOp::Discard, at, n);
                    at += u64::from(n);
                }
            }
        }
        if let Some(f) = &self.backing {
            let mode = if zero {
                libc::FALLOC_FL_ZERO_RANGE | libc::FALLOC_FL_KEEP_SIZE
            } else {
                libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE
            };
            let (Ok(at), Ok(n)) = (i64::try_from(offset), i64::try_from(len)) else {
                return Err(Errno::EINVAL);
            };
            // SAFETY: fallocate(2) on a descriptor `f` keeps open for the
            // call; it takes only integers and touches no memory of ours.
            if unsafe { libc::fallocate(std::os::fd::AsRawFd::as_raw_fd(f), mode, at, n) } != 0 {
                return Err(Errno::EIO);
            }
        }
        let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
        if zero {
            st.writes += 1;
            st.bytes_written += len;
        } else {
            st.discards += 1;
            st.bytes_discarded += len;
        }
        Ok(())
    }

    /// `at` on the card's clock: wall time since the start over the scale.
    fn arrival(&self, at: Instant) -> u64 {
        (at.saturating_duration_since(self.origin).as_nanos() as f64 / self.scale) as u64
    }

    /// ENOMEDIUM (its number seen) while the card is out of its slot.
    fn in_slot(&self, unique: u64) -> Result<(), Errno> {
        if self.present.load(Ordering::SeqCst) {
            return Ok(());
        }
        self.order.seen(unique);
        Err(Errno::from_i32(libc::ENOMEDIUM))
    }

    fn serve(&self, io: Io, buf: &mut AlignedBuf, arrived: Instant, unique: u64) -> Result<(), Errno> {
        self.in_slot(unique)?;
        let len = u64::from(io.len);
        let ss = u64::from(self.sector.max(1));
        if io.offset.checked_add(len).is_none_or(|e| e > self.size)
            || !io.offset.is_multiple_of(ss)
            || !len.is_multiple_of(ss)
        {
            self.order.seen(unique);
            self.stats.lock().unwrap_or_else(|p| p.into_inner()).refused += 1;
            return Err(Errno::EINVAL);
        }
        let Some(overhead) = self.overhead.get() else {
            self.order.seen(unique);
            self.calibrating
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .seen
                .push((io.op, io.len, arrived.elapsed()));
            return Ok(());
        };
        let n = self.in_flight.fetch_add(1, Ordering::SeqCst) + 1;
        let mut idle = false;
        if n == 1 {
            let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
            if let Some(gap) = st.last_answer.and_then(|t| arrived.checked_duration_since(t)) {
                idle = true;
                st.idle_arrivals += 1;
                st.idle_wait_sum_ns += (gap.as_nanos() as u64).saturating_sub(overhead.at(io.op, io.len));
            }
        }
        let arrival = self.arrival(arrived);
        let served = {
            self.order.wait_turn(unique, arrived + PATIENCE);
            let mut sim = self.sim.lock().unwrap_or_else(|p| p.into_inner());
            self.order.seen(unique);
            let served = sim.serve_at(arrival, &io, buf);
            if served.is_ok() {
                let op = match io.op {
                    Op::Read => TraceOp::Read,
                    Op::Write => TraceOp::Write,
                };
                self.note(arrival, op, io.offset, io.len);
            }
            served
        };
        let result = match served {
            Ok((complete, errno)) => {
                if let Some(f) = &self.backing {
                    let data = &mut buf.as_mut_slice()[..io.len as usize];
                    let moved = match io.op {
                        Op::Read => f.read_exact_at(data, io.offset),
                        Op::Write => f.write_all_at(data, io.offset),
                    };
                    if moved.is_err() {
                        self.in_flight.fetch_sub(1, Ordering::SeqCst);
                        return Err(Errno::EIO);
                    }
                }
                let wall = |model_ns: u64| Duration::from_nanos((model_ns as f64 * self.scale) as u64);
                let due = self.origin + wall(complete);
                let due = due
                    .checked_sub(Duration::from_nanos(overhead.at(io.op, io.len)))
                    .unwrap_or(due);
                let late = self.waiter.until(due);
                let mut st = self.stats.lock().unwrap_or_else(|p| p.into_inner());
                st.last_answer = Some(Instant::now());
                st.answers += 1;
                st.most_in_flight = st.most_in_flight.max(n);
                let card_ns = wall(complete.saturating_sub(arrival)).as_nanos() as u64;
                if idle {
                    st.idle_card_sum_ns += card_ns;
                }
                if is_late(late, card_ns) {
                    st.late += 1;
                    st.late_sum_ns += late;
                    st.late_max_ns = st.late_max_ns.max(late);
                }
                *st.sizes.entry(io.len).or_default() += 1;
                match io.op {
                    Op::Read => {
                        st.reads += 1;
                        st.bytes_read += len;
                    }
                    Op::Write => {
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

    fn attr(&self, ino: INodeNo) -> FileAttr {
        let file = ino == CARD_INO;
        let size = if file && self.present.load(Ordering::SeqCst) {
            self.size
        } else {
            0
        };
        FileAttr {
            ino,
            size,
            blocks: size.div_ceil(512),
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

    fn lookup(&self, req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        self.0.order.seen(req.unique().0);
        if parent == INodeNo::ROOT && name == CARD_FILE {
            reply.entry(&TTL, &self.0.attr(CARD_INO), fuser::Generation(0));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn getattr(&self, req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        self.0.order.seen(req.unique().0);
        if ino == INodeNo::ROOT || ino == CARD_INO {
            reply.attr(&TTL, &self.0.attr(ino));
        } else {
            reply.error(Errno::ENOENT);
        }
    }

    fn open(&self, req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.0.order.seen(req.unique().0);
        if ino == CARD_INO {
            // Direct I/O: no page cache between the loop device and the card.
            reply.opened(FileHandle(0), FopenFlags::FOPEN_DIRECT_IO);
        } else {
            reply.error(Errno::EISDIR);
        }
    }

    fn read(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        // The arrival, first thing.
        let (arrived, unique) = (Instant::now(), req.unique().0);
        if ino != CARD_INO {
            self.0.order.seen(unique);
            return reply.error(Errno::EISDIR);
        }
        let size = size.min(MAX_IO);
        with_buf(
            |buf| match self.0.serve(Io::read(offset, size, 0), buf, arrived, unique) {
                Ok(()) => reply.data(&buf.as_slice()[..size as usize]),
                Err(e) => reply.error(e),
            },
        )
    }

    fn write(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let (arrived, unique) = (Instant::now(), req.unique().0);
        let len = match u32::try_from(data.len()) {
            Ok(len) if len <= MAX_IO && ino == CARD_INO => len,
            _ => {
                self.0.order.seen(unique);
                return reply.error(if ino == CARD_INO { Errno::EINVAL } else { Errno::EISDIR });
            }
        };
        with_buf(|buf| {
            buf.as_mut_slice()[..data.len()].copy_from_slice(data);
            match self.0.serve(Io::write(offset, len, 0), buf, arrived, unique) {
                Ok(()) => reply.written(len),
                Err(e) => reply.error(e),
            }
        })
    }

    fn flush(&self, req: &Request, _ino: INodeNo, _fh: FileHandle, _lock_owner: LockOwner, reply: ReplyEmpty) {
        self.0.order.seen(req.unique().0);
        reply.ok();
    }

    fn fsync(&self, req: &Request, _ino: INodeNo, _fh: FileHandle, _datasync: bool, reply: ReplyEmpty) {
        self.0.order.seen(req.unique().0);
        self.0.stats.lock().unwrap_or_else(|p| p.into_inner()).flushes += 1;
        self.0.note(self.0.arrival(Instant::now()), TraceOp::Flush, 0, 0);
        if let Some(f) = &self.0.backing {
            let _ = f.sync_data();
        }
        reply.ok();
    }

    // The requests below change nothing here; each answers as fuser would
    // by itself, and is noted, so that no read or write waits for its
    // number ([`Order`]): flashlab's own checks of the device stack
    // (open, stat, statfs of the card's file) sent them between a probe's
    // tests, and each unseen number held the next write up to the wait's
    // end.

    /// Also each node of a batch of forgets (fuser calls this for each).
    fn forget(&self, req: &Request, _ino: INodeNo, _nlookup: u64) {
        self.0.order.seen(req.unique().0);
    }

    fn opendir(&self, req: &Request, _ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        self.0.order.seen(req.unique().0);
        reply.opened(FileHandle(0), FopenFlags::empty());
    }

    fn releasedir(&self, req: &Request, _ino: INodeNo, _fh: FileHandle, _flags: OpenFlags, reply: ReplyEmpty) {
        self.0.order.seen(req.unique().0);
        reply.ok();
    }

    fn release(
        &self,
        req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        self.0.order.seen(req.unique().0);
        reply.ok();
    }

    fn statfs(&self, req: &Request, _ino: INodeNo, reply: fuser::ReplyStatfs) {
        self.0.order.seen(req.unique().0);
        reply.statfs(0, 0, 0, 0, 0, 512, 255, 0);
    }

    fn access(&self, req: &Request, _ino: INodeNo, _mask: fuser::AccessFlags, reply: ReplyEmpty) {
        self.0.order.seen(req.unique().0);
        reply.error(Errno::ENOSYS);
    }

    fn getxattr(&self, req: &Request, _ino: INodeNo, _name: &OsStr, _size: u32, reply: fuser::ReplyXattr) {
        self.0.order.seen(req.unique().0);
        reply.error(Errno::ENOSYS);
    }

    fn listxattr(&self, req: &Request, _ino: INodeNo, _size: u32, reply: fuser::ReplyXattr) {
        self.0.order.seen(req.unique().0);
        reply.error(Errno::ENOSYS);
    }

    /// A loop device passes a discard on as a hole punched in its file:
    /// the card discards the range. It passes a request to write zeroes
    /// (mkfs.ext4 zeroes its journal so) as a zeroed range: the card
    /// writes zeroes there, as the block layer has an SD card do, having
    /// no command of its own for it. Any other mode is not a card's.
    fn fallocate(
        &self,
        req: &Request,
        ino: INodeNo,
        _fh: FileHandle,
        offset: u64,
        length: u64,
        mode: i32,
        reply: ReplyEmpty,
    ) {
        let (arrived, unique) = (Instant::now(), req.unique().0);
        let punch = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
        let zero = mode & !libc::FALLOC_FL_KEEP_SIZE == libc::FALLOC_FL_ZERO_RANGE;
        if ino != CARD_INO || (mode != punch && !zero) {
            self.0.order.seen(unique);
            return reply.error(Errno::EOPNOTSUPP);
        }
        match self.0.discard(offset, length, zero, arrived, unique) {
            Ok(()) => reply.ok(),
            Err(e) => reply.error(e),
        }
    }

    fn readdir(&self, req: &Request, ino: INodeNo, _fh: FileHandle, offset: u64, mut reply: ReplyDirectory) {
        self.0.order.seen(req.unique().0);
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
