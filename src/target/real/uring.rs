//! io_uring engine for queue depths above one: the target is a registered (fixed)
//! file and the batch buffer a registered buffer, so the kernel skips per-request
//! fd lookups and page pinning.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;
use std::time::Instant;

use io_uring::{IoUring, opcode, types};

use crate::target::{AlignedBuf, Completion, Op, Request, TargetError};

pub struct Uring {
    ring: IoUring,
    entries: usize,
    /// The (address, length) currently registered as buffer 0.
    registered: Option<(usize, usize)>,
}

impl Uring {
    pub fn new(file: &File, queue_depth: usize) -> io::Result<Self> {
        let entries = queue_depth.next_power_of_two().max(4);
        let ring = IoUring::new(entries as u32)?;
        ring.submitter().register_files(&[file.as_raw_fd()])?;
        Ok(Uring {
            ring,
            entries,
            registered: None,
        })
    }

    pub fn entries(&self) -> usize {
        self.entries
    }

    fn register(&mut self, buf: &mut AlignedBuf) -> io::Result<()> {
        let key = (buf.as_mut_ptr() as usize, buf.len());
        if self.registered == Some(key) {
            return Ok(());
        }
        if self.registered.take().is_some() {
            self.ring.submitter().unregister_buffers()?;
        }
        let iov = libc::iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        // SAFETY: the buffer outlives every request of this batch (run() borrows it
        // mutably until all completions are reaped), and it is re-registered
        // whenever a different buffer is passed.
        unsafe { self.ring.submitter().register_buffers(&[iov])? };
        self.registered = Some(key);
        Ok(())
    }

    pub fn run(
        &mut self,
        requests: &[Request],
        queue_depth: usize,
        buf: &mut AlignedBuf,
    ) -> Result<Vec<Completion>, TargetError> {
        let io_err = |source| TargetError::Io {
            op: "io_uring",
            offset: 0,
            source,
        };
        self.register(buf).map_err(io_err)?;
        let depth = queue_depth.min(self.entries);
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
                // SAFETY: check_requests() proved buf_offset + len <= buf.len().
                let ptr = unsafe { base.add(r.buf_offset) };
                let entry = match r.op {
                    Op::Read => opcode::ReadFixed::new(types::Fixed(0), ptr, r.len, 0)
                        .offset(r.offset)
                        .build(),
                    Op::Write => opcode::WriteFixed::new(types::Fixed(0), ptr, r.len, 0)
                        .offset(r.offset)
                        .build(),
                }
                .user_data(next as u64);
                // SAFETY: the entry points into the registered buffer, which stays
                // alive and untouched until its completion is reaped below.
                unsafe { self.ring.submission().push(&entry) }.expect("queue depth never exceeds ring entries");
                next += 1;
                in_flight += 1;
            }
            let now = Instant::now();
            for s in &mut started[first_new..next] {
                *s = Some(now);
            }
            self.ring.submit_and_wait(1).map_err(io_err)?;
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
        if self.registered.take().is_some() {
            let _ = self.ring.submitter().unregister_buffers();
        }
    }
}
