//! One request at a time with pread/pwrite: the baseline engine, and the only one
//! where io_uring is disabled.

use std::fs::File;
use std::time::Instant;

use crate::targets::{AlignedBuf, Completion, Completions, Op, Request};

pub fn run(file: &File, requests: &[Request], buf: &mut AlignedBuf) -> Completions {
    let mut out = Vec::with_capacity(requests.len());
    for r in requests {
        let range = r.buf_offset..r.buf_offset + r.len as usize;
        let start = Instant::now();
        let result = match r.op {
            Op::Read => rustix::io::pread(file, &mut buf.as_mut_slice()[range], r.offset),
            Op::Write => rustix::io::pwrite(file, &buf.as_slice()[range], r.offset),
        };
        let duration_ns = start.elapsed().as_nanos() as u64;
        let errno = match result {
            Ok(n) if n == r.len as usize => None,
            Ok(_) => Some(libc::EIO), // short transfer on an aligned request: the device ended early
            Err(e) => Some(e.raw_os_error()),
        };
        out.push(Completion { duration_ns, errno });
    }
    Ok(out)
}
