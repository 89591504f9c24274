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

use crate::target::{AlignedBuf, Completion, Op, Request, TargetError};

pub struct Uring {
    ring: IoUring,
    entries: usize,
    /// A batch failed with entries still in the submission queue, which were
    /// never handed to the kernel and point into a buffer the caller may now
    /// free: this ring must never enter the kernel again. The owner drops it
    /// (the queue goes with it) and makes a new one.
    pub poisoned: bool,
    /// For the conformance tests: fail the submission after this many more
    /// succeed, as a kernel refusing one would.
    pub(super) fail_submit_after: Option<u32>,
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

    /// After a failure, make sure nothing of this batch (`pushed` entries
    /// not yet completed) is left to touch the caller's buffer once `run`
    /// returns. Entries the kernel has taken are waited for; entries still
    /// in the submission queue never reached it, and the ring is poisoned so
    /// that they never will (its owner drops it, queue and all). If even the
    /// wait fails, the kernel may still write into memory the caller is
    /// about to free, and the only safe thing left is to stop the process (a
    /// pending journal then restores the data).
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

    pub fn run(
        &mut self,
        requests: &[Request],
        queue_depth: usize,
        buf: &mut AlignedBuf,
    ) -> Result<Vec<Completion>, TargetError> {
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
        let (mut next, mut in_flight, mut done) = (0usize, 0usize, 0usize);
        while done < requests.len() {
            let first_new = next;
            while in_flight < depth && next < requests.len() {
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
                // borrows mutably until it returns, and it never returns (not
                // even with an error) while an entry is in the kernel or can
                // still reach it: every path out either reaped all
                // completions or went through `quiesce`, which waits for the
                // entries the kernel took and poisons the ring when some
                // never left the submission queue (the owner then drops the
                // ring before any other call, and the entries with it).
                // Fixed(0) is the target's file, registered for the life of
                // the ring. The queue never holds more than `entries` entries
                // (depth <= entries), so push cannot fail.
                if unsafe { self.ring.submission().push(&entry) }.is_err() {
                    self.quiesce(in_flight);
                    return Err(TargetError::Io {
                        op: "io_uring",
                        offset: r.offset,
                        source: io::Error::other("submission queue full"),
                    });
                }
                next += 1;
                in_flight += 1;
                // Deeper than one, each request goes to the kernel as soon
                // as it is queued, as fio does: the device starts on it
                // while the next is prepared (held back for one submission
                // of the whole refill, a loop device's 4 KiB reads at QD 32
                // ran 0.8x as fast, and waited longer).
                if depth > 1 {
                    started[next - 1] = Some(Instant::now());
                    if let Err(source) = self.submit() {
                        self.quiesce(in_flight);
                        return Err(TargetError::Io {
                            op: "io_uring",
                            offset: r.offset,
                            source,
                        });
                    }
                }
            }
            let now = Instant::now();
            for s in started[first_new..next].iter_mut().filter(|s| s.is_none()) {
                *s = Some(now);
            }
            if let Err(source) = self.submit_and_wait() {
                self.quiesce(in_flight);
                return Err(TargetError::Io {
                    op: "io_uring",
                    offset: requests[first_new.min(requests.len() - 1)].offset,
                    source,
                });
            }
            for cqe in self.ring.completion() {
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
                in_flight -= 1;
                done += 1;
            }
        }
        Ok(out)
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
