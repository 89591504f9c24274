//! io_uring engine for queue depths above one. The target is a registered
//! (fixed) file, which saves the kernel a file lookup per request.
//!
//! Data buffers are deliberately *not* registered. A registered buffer must
//! stay valid until it is unregistered (the io-uring crate's contract for
//! `register_buffers`), but a batch's buffer belongs to the caller and may be
//! freed the moment `run` returns; a registration keyed by its address once
//! sent reads into pinned pages that no longer backed the caller's buffer, and
//! the preservation journal stored those wrong bytes. fio's io_uring engine
//! uses unregistered buffers by default too (`fixedbufs=0`), so this costs
//! nothing in a comparison with it.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Instant;

use io_uring::{IoUring, opcode, types};

use crate::targets::{AlignedBuf, Completion, Completions, Op, Request, TargetError};

pub struct Uring {
    ring: IoUring,
    entries: usize,
    /// A batch failed, or panicked, with entries still in the submission
    /// queue, which were never handed to the kernel and point into a buffer
    /// the caller may now free: this ring must never enter the kernel again.
    /// `run` refuses it; the owner drops it (the queue goes with it) and
    /// makes a new one.
    pub poisoned: bool,
    /// For the conformance tests: fail the submission after this many more
    /// succeed, as a kernel refusing one would.
    pub(super) fail_submit_after: Option<u32>,
    /// For the unit tests: panic once this many entries of a batch are
    /// queued (and, deeper than one, submitted), before their completions
    /// are drained, as an index or an allocation failing there would.
    #[cfg(test)]
    panic_after_pushes: Option<usize>,
}

/// `IORING_ENTER_GETEVENTS` of `<linux/io_uring.h>`: wait for completions.
const IORING_ENTER_GETEVENTS: u32 = 1;

impl Uring {
    pub fn new(file: &File, queue_depth: usize) -> io::Result<Self> {
        let entries = queue_depth.next_power_of_two().max(4);
        // As fio does where the kernel has them (6.1 on): completions are
        // run only when this one thread waits for them, not by interrupting
        // it (SINGLE_ISSUER, DEFER_TASKRUN; COOP_TASKRUN from 5.19). Older
        // kernels refuse the flags with EINVAL, and get a plain ring.
        let ring = IoUring::builder()
            .setup_single_issuer()
            .setup_defer_taskrun()
            .setup_coop_taskrun()
            .build(entries as u32)
            .or_else(|_| IoUring::builder().setup_coop_taskrun().build(entries as u32))
            .or_else(|_| IoUring::new(entries as u32))?;
        ring.submitter().register_files(&[file.as_raw_fd()])?;
        Ok(Uring {
            ring,
            entries,
            poisoned: false,
            fail_submit_after: None,
            #[cfg(test)]
            panic_after_pushes: None,
        })
    }

    pub fn entries(&self) -> usize {
        self.entries
    }

    /// Submit what is queued and wait for at least one completion, retrying
    /// the errors that only mean "try again" (a signal, a full completion
    /// queue that the caller drains next).
    fn submit_and_wait(&mut self) -> io::Result<()> {
        loop {
            match self.ring.submit_and_wait(1) {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                // The completion queue is full: the caller reaps, then calls again.
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::EAGAIN)) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// Submit what is queued without waiting, retrying an interrupted call;
    /// a full completion queue is left for the next wait to drain.
    fn submit(&mut self) -> io::Result<()> {
        if let Some(n) = self.fail_submit_after.as_mut() {
            if *n == 0 {
                return Err(io::Error::other("injected submission failure"));
            }
            *n -= 1;
        }
        loop {
            match self.ring.submit() {
                Ok(_) => return Ok(()),
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if matches!(e.raw_os_error(), Some(libc::EBUSY) | Some(libc::EAGAIN)) => return Ok(()),
                Err(e) => return Err(e),
            }
        }
    }

    /// At the end of a batch (from [`Batch`]'s drop: after its last
    /// completion, on an error, or in a panic's unwinding), make sure nothing
    /// of it (`pushed` entries not yet completed) is left to touch the
    /// caller's buffer once `run` is left. Entries the kernel has taken are
    /// waited for; entries still in the submission queue never reached it,
    /// and the ring is poisoned so that they never will (`run` refuses it,
    /// its owner drops it, queue and all). If even the wait fails, the kernel
    /// may still write into memory the caller is about to free, and the only
    /// safe thing left is to stop the process (a pending journal then
    /// restores the data). Nothing here panics, so it is safe to run while
    /// unwinding.
    fn quiesce(&mut self, pushed: usize) {
        let queued = {
            let mut sq = self.ring.submission();
            sq.sync();
            sq.len()
        };
        let mut in_kernel = pushed.saturating_sub(queued);
        while in_kernel > 0 {
            // SAFETY: to_submit is 0, so no queued entry is handed to the
            // kernel (they point into a buffer that is about to be freed);
            // the call only waits for completions of entries the kernel
            // already holds. No argument struct is passed.
            let waited = unsafe {
                self.ring
                    .submitter()
                    .enter::<libc::sigset_t>(0, 1, IORING_ENTER_GETEVENTS, None)
            };
            match waited {
                Ok(_) => {}
                Err(e)
                    if matches!(
                        e.raw_os_error(),
                        Some(libc::EINTR) | Some(libc::EBUSY) | Some(libc::EAGAIN)
                    ) => {}
                Err(e) => {
                    crate::errln!("fatal: io_uring cannot reap {in_kernel} request(s) still in flight: {e}");
                    std::process::abort();
                }
            }
            in_kernel = in_kernel.saturating_sub(self.ring.completion().count());
        }
        if queued > 0 {
            self.poisoned = true;
        }
    }

    pub fn run(&mut self, requests: &[Request], queue_depth: usize, buf: &mut AlignedBuf) -> Completions {
        // Its queue may hold entries into a buffer freed since: entering
        // the kernel would hand them over.
        if self.poisoned {
            return Err(TargetError::Io {
                op: "io_uring",
                offset: requests.first().map_or(0, |r| r.offset),
                source: io::Error::other("the ring was left unusable by a failed batch"),
            });
        }
        let depth = queue_depth.min(self.entries).max(1);
        let base = buf.as_mut_ptr();
        let mut started = vec![None::<Instant>; requests.len()];
        let mut out = vec![
            Completion {
                duration_ns: 0,
                errno: None
            };
            requests.len()
        ];
        // From the first push to the last completion, the ring is reached
        // only through `batch`; every way out of this function, a return or
        // an unwind, drops it, and its drop quiesces what is left.
        let mut batch = Batch {
            uring: self,
            in_flight: 0,
        };
        let (mut next, mut done) = (0usize, 0usize);
        while done < requests.len() {
            let first_new = next;
            while batch.in_flight < depth && next < requests.len() {
                let r = &requests[next];
                // SAFETY: check_requests() proved buf_offset + len <= buf.len(),
                // so the pointer stays inside the buffer's allocation.
                let ptr = unsafe { base.add(r.buf_offset) };
                let entry = match r.op {
                    Op::Read => opcode::Read::new(types::Fixed(0), ptr, r.len).offset(r.offset).build(),
                    Op::Write => opcode::Write::new(types::Fixed(0), ptr, r.len).offset(r.offset).build(),
                }
                .user_data(next as u64);
                // SAFETY: the entry points into `buf`, which this function
                // borrows mutably until it returns, and no entry is in the
                // kernel or can still reach it once it has: every way out
                // (a return, with results or an error, or an unwind from a
                // panic) drops `batch` first, and its drop goes through
                // `quiesce`, which waits for the entries the kernel took and
                // poisons the ring when some never left the submission
                // queue (a poisoned ring never enters the kernel again: this
                // function refuses it, and its owner drops it, queue and
                // all). `batch` counts this entry from the moment it is
                // queued (nothing between the push and the count can panic)
                // to the moment its completion is taken, so that wait is
                // never short. Fixed(0) is the target's file, registered for
                // the life of the ring. The queue never holds more than
                // `entries` entries (depth <= entries), so push cannot fail.
                if unsafe { batch.uring.ring.submission().push(&entry) }.is_err() {
                    return Err(TargetError::Io {
                        op: "io_uring",
                        offset: r.offset,
                        source: io::Error::other("submission queue full"),
                    });
                }
                batch.in_flight += 1;
                next += 1;
                // Deeper than one, each request goes to the kernel as soon
                // as it is queued, as fio does: the device starts on it
                // while the next is prepared (held back for one submission
                // of the whole refill, a loop device's 4 KiB reads at QD 32
                // ran 0.8x as fast, and waited longer).
                if depth > 1 {
                    started[next - 1] = Some(Instant::now());
                    if let Err(source) = batch.uring.submit() {
                        return Err(TargetError::Io {
                            op: "io_uring",
                            offset: r.offset,
                            source,
                        });
                    }
                }
                #[cfg(test)]
                if batch.uring.panic_after_pushes == Some(next) {
                    panic!("injected panic with {next} request(s) pushed");
                }
            }
            let now = Instant::now();
            for s in started[first_new..next].iter_mut().filter(|s| s.is_none()) {
                *s = Some(now);
            }
            if let Err(source) = batch.uring.submit_and_wait() {
                return Err(TargetError::Io {
                    op: "io_uring",
                    offset: requests[first_new.min(requests.len() - 1)].offset,
                    source,
                });
            }
            done += batch.reap(requests, &started, &mut out);
        }
        Ok(out)
    }
}

/// One batch of [`Uring::run`], from its first push to its last completion:
/// the ring, and how many of the batch's entries are queued or in the
/// kernel. Its drop is the one place a batch ends, so a panic that unwinds
/// out of `run` (an index, an allocation, an overflow check) leaves the
/// kernel no more pointers into the caller's buffer than an error does.
struct Batch<'a> {
    uring: &'a mut Uring,
    /// Pushed and not yet reaped.
    in_flight: usize,
}

impl Batch<'_> {
    /// Take every completion the ring holds into `out`, timed from
    /// `started`; returns how many.
    fn reap(&mut self, requests: &[Request], started: &[Option<Instant>], out: &mut [Completion]) -> usize {
        let mut taken = 0;
        for cqe in self.uring.ring.completion() {
            // Counted out first: a panic below must not leave the batch
            // waiting for a completion already taken.
            self.in_flight -= 1;
            taken += 1;
            let i = cqe.user_data() as usize;
            let ended = Instant::now();
            let res = cqe.result();
            out[i] = Completion {
                duration_ns: started[i].map_or(0, |s| ended.duration_since(s).as_nanos() as u64),
                errno: if res < 0 {
                    Some(-res)
                } else if res as u32 != requests[i].len {
                    Some(libc::EIO)
                } else {
                    None
                },
            };
        }
        taken
    }
}

impl Drop for Batch<'_> {
    /// Wait for what the kernel took, poison the ring if some never left the
    /// queue; after a whole batch, nothing is left and this only looks.
    fn drop(&mut self) {
        self.uring.quiesce(self.in_flight);
    }
}

impl Drop for Uring {
    /// Ring teardown is asynchronous in the kernel: without this, the registered
    /// file keeps an O_EXCL block device busy for a moment after the target is
    /// dropped, and the next exclusive open (the next test) fails with EBUSY.
    fn drop(&mut self) {
        let _ = self.ring.submitter().unregister_files();
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};
    use std::path::{Path, PathBuf};

    use super::*;
    use crate::targets::Target;
    use crate::targets::real::{EngineChoice, OpenOptions, RealTarget};

    const BLOCK: usize = 65536;

    /// A file of 8 blocks, block i filled with i + 1.
    fn file(dir: &Path) -> PathBuf {
        let bytes: Vec<u8> = (0..8u8).flat_map(|i| vec![i + 1; BLOCK]).collect();
        let path = dir.join("t.img");
        std::fs::write(&path, bytes).unwrap();
        path
    }

    fn reads() -> Vec<Request> {
        (0..8)
            .map(|i| Request::read((i * BLOCK) as u64, BLOCK as u32, i * BLOCK))
            .collect()
    }

    /// A ring of `depth` over a file of 8 blocks in a folder of its own,
    /// with the folder, the file and a buffer for all 8; None where
    /// io_uring is not there.
    fn ring(depth: usize) -> Option<(tempfile::TempDir, File, Uring, AlignedBuf)> {
        let dir = tempfile::tempdir().unwrap();
        let f = File::open(file(dir.path())).unwrap();
        let u = Uring::new(&f, depth).ok()?;
        Some((dir, f, u, AlignedBuf::new(8 * BLOCK)))
    }

    /// A batch of the 8 reads at `depth` that panics once `pushes` entries
    /// are pushed.
    fn panic_in_batch(u: &mut Uring, depth: usize, pushes: usize, buf: &mut AlignedBuf) {
        u.panic_after_pushes = Some(pushes);
        let unwound = catch_unwind(AssertUnwindSafe(|| u.run(&reads(), depth, buf)));
        assert!(unwound.is_err(), "the injected panic did not happen");
        u.panic_after_pushes = None;
    }

    fn holds_block(buf: &AlignedBuf, i: usize) -> bool {
        buf.as_slice()[i * BLOCK..(i + 1) * BLOCK]
            .iter()
            .all(|&b| usize::from(b) == i + 1)
    }

    /// Deeper than one, a panic with three requests in the kernel: the
    /// unwind waits for them (their bytes are in the buffer, their
    /// completions taken), nothing is left queued, and the ring, not
    /// poisoned, runs the next batch whole.
    #[test]
    fn a_panic_with_requests_in_the_kernel_waits_for_them() {
        let Some((_dir, _f, mut u, mut buf)) = ring(8) else {
            return;
        };
        panic_in_batch(&mut u, 8, 3, &mut buf);
        assert!(!u.poisoned);
        assert!(u.ring.submission().is_empty(), "an entry is still queued");
        assert!(u.ring.completion().is_empty(), "a completion was left unreaped");
        assert!((0..3).all(|i| holds_block(&buf, i)), "a request was left in the kernel");
        let mut other = AlignedBuf::new(8 * BLOCK);
        let done = u.run(&reads(), 8, &mut other).unwrap();
        assert!(done.iter().all(|c| c.errno.is_none()));
        assert!((0..8).all(|i| holds_block(&other, i)));
    }

    /// At depth one, a panic with a request queued and never submitted: the
    /// unwind poisons the ring, which then refuses to enter the kernel (the
    /// entry points into a buffer the caller may have freed) and leaves the
    /// entry where it is, never sent.
    #[test]
    fn a_panic_with_a_request_still_queued_poisons_the_ring() {
        let Some((_dir, _f, mut u, mut buf)) = ring(1) else {
            return;
        };
        panic_in_batch(&mut u, 1, 1, &mut buf);
        assert!(u.poisoned);
        assert_eq!(u.ring.submission().len(), 1);
        assert!(u.ring.completion().is_empty());
        drop(buf);
        let mut other = AlignedBuf::new(8 * BLOCK);
        let e = u.run(&reads(), 1, &mut other).unwrap_err();
        assert!(e.to_string().contains("unusable"), "{e}");
        assert_eq!(u.ring.submission().len(), 1, "the stale entry was sent");
        assert!(!holds_block(&other, 0));
    }

    /// An error return ends the batch the same way: a submission refused
    /// after two succeed leaves the third entry queued, so the ring is
    /// poisoned, and the two the kernel took are waited for.
    #[test]
    fn a_refused_submission_ends_the_batch_through_the_same_guard() {
        let Some((_dir, _f, mut u, mut buf)) = ring(8) else {
            return;
        };
        u.fail_submit_after = Some(2);
        let e = u.run(&reads(), 8, &mut buf).unwrap_err();
        assert!(e.to_string().contains("injected"), "{e}");
        assert!(u.poisoned);
        assert_eq!(u.ring.submission().len(), 1);
        assert!(u.ring.completion().is_empty());
        assert!((0..2).all(|i| holds_block(&buf, i)));
    }

    /// A target whose ring a panic left poisoned (the unwind skips the
    /// check after `run`) makes a new ring for its next batch.
    #[test]
    fn a_target_replaces_a_ring_a_panic_poisoned() {
        let dir = tempfile::tempdir().unwrap();
        let opts = OpenOptions {
            write: false,
            exclusive: false,
            engine: EngineChoice::IoUring,
        };
        let mut t = RealTarget::open(&file(dir.path()), "t.img", opts).unwrap();
        let mut buf = AlignedBuf::new(8 * BLOCK);
        t.run(&reads(), 1, &mut buf).unwrap();
        let Some(u) = t.uring.as_mut() else {
            // io_uring is unavailable here: psync ran it.
            return;
        };
        u.panic_after_pushes = Some(1);
        let unwound = catch_unwind(AssertUnwindSafe(|| t.run(&reads(), 1, &mut buf)));
        assert!(unwound.is_err(), "the injected panic did not happen");
        assert!(t.uring.as_ref().is_some_and(|u| u.poisoned));
        drop(buf);
        let mut other = AlignedBuf::new(8 * BLOCK);
        let done = t.run(&reads(), 1, &mut other).unwrap();
        assert!(done.iter().all(|c| c.errno.is_none()));
        assert!((0..8).all(|i| holds_block(&other, i)));
        let u = t.uring.as_mut().expect("a ring, made anew");
        assert!(!u.poisoned && u.ring.submission().is_empty());
    }
}
