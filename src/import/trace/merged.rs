//! blktrace's per-CPU files of one trace, read as one stream in time
//! order.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::path::Path;

use super::{At, Request, TraceError, blktrace};

/// blktrace's per-CPU files merged by time: each file is in time order, so
/// the next record is the earliest of the files' next records (a heap of
/// one head per file), ties to the file of the lower CPU. Times count from
/// the earliest first record of any file, as blkparse's do (its genesis
/// time, `do_file` in blkparse.c), so the two give the same times.
pub(super) struct Merged {
    files: Vec<blktrace::CpuFile>,
    heads: Vec<Option<blktrace::Kept>>,
    heap: BinaryHeap<Reverse<(u64, usize)>>,
    /// The file whose head was taken last, read again on the next call (so
    /// that its error comes after the record before it).
    refill: Option<usize>,
    genesis: u64,
    device: Option<u32>,
    /// The file and byte of the record returned last.
    last: (usize, u64),
}

impl Merged {
    pub(super) fn open(mut files: Vec<blktrace::CpuFile>) -> Result<Merged, TraceError> {
        let mut genesis = u64::MAX;
        for f in &mut files {
            if let Some(t) = f.first_time()? {
                genesis = genesis.min(t);
            }
        }
        let mut merged = Merged {
            heads: (0..files.len()).map(|_| None).collect(),
            files,
            heap: BinaryHeap::new(),
            refill: None,
            genesis: if genesis == u64::MAX { 0 } else { genesis },
            device: None,
            last: (0, 0),
        };
        for i in 0..merged.files.len() {
            merged.read_head(i)?;
        }
        Ok(merged)
    }

    fn read_head(&mut self, i: usize) -> Result<(), TraceError> {
        if let Some(k) = self.files[i].next()? {
            self.heap.push(Reverse((k.time, i)));
            self.heads[i] = Some(k);
        }
        Ok(())
    }

    pub(super) fn next(&mut self) -> Result<Option<Request>, TraceError> {
        if let Some(i) = self.refill.take() {
            self.read_head(i)?;
        }
        let Some(Reverse((_, i))) = self.heap.pop() else {
            return Ok(None);
        };
        self.refill = Some(i);
        let Some(k) = self.heads[i].take() else {
            return Ok(None);
        };
        match self.device {
            None => self.device = Some(k.device),
            Some(d) if d != k.device => {
                return Err(TraceError::malformed(
                    self.files[i].path(),
                    At::Byte(k.at),
                    format!(
                        "a record of device {} after records of device {}: a replay is of one device",
                        blktrace::dev_name(k.device),
                        blktrace::dev_name(d)
                    ),
                    "trace one device (blktrace -d DEVICE) and give that device's files (NAME.blktrace.N, NAME the \
                     device's name)",
                ));
            }
            Some(_) => {}
        }
        self.last = (i, k.at);
        let mut req = k.request;
        req.time_ns = req.time_ns.saturating_sub(self.genesis);
        Ok(Some(req))
    }

    pub(super) fn at(&self) -> (&Path, At) {
        (self.files[self.last.0].path(), At::Byte(self.last.1))
    }

    pub(super) fn cut(&self) -> Option<String> {
        let cuts: Vec<String> = self
            .files
            .iter()
            .filter_map(|f| f.cut().map(|c| format!("{}: {c}", f.path().display())))
            .collect();
        (!cuts.is_empty()).then(|| cuts.join("; "))
    }
}
