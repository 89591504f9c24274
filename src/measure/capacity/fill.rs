//! The full write-and-verify of every block, as f3write/f3read and H2testw
//! do it (f3; docs/SOURCES.md): each block written with its own address
//! and the run's nonce ([`super::tag`]), then every block read back and
//! checked. It destroys the device's data (a journal of a whole card would
//! need the card's size again), so it runs only with its own consent
//! (`batch --destructive`). What it finds is exact for the blocks it
//! reached: the bytes that read back, those that came back from another
//! address (a wrapping fake), as zeros, as other data, or as I/O errors.

use serde::{Deserialize, Serialize};

use super::Evidence;
use super::tag::{check, tag};
use crate::measure::{Cx, MeasureError, Results, Test};
use crate::safety::ranges::Range;
use crate::targets::{Request, TargetDescription};

/// Bytes a request: large enough for a card's sequential speed, small
/// enough that a stop (Ctrl-C, a pulled card) comes within a request.
const CHUNK: u64 = 4 << 20;

/// The test: the run's nonce, and the device time it may take (None: the
/// whole card, as the user asked for every block).
#[derive(Debug, Clone)]
pub struct Fill {
    pub nonce: u64,
    pub budget_ns: Option<u64>,
}

/// What the fill found.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FillResult {
    pub size_bytes: u64,
    /// Bytes written, and of those read back: all of the device unless
    /// the budget ended first (`complete` false).
    pub written_bytes: u64,
    pub verified_bytes: u64,
    pub complete: bool,
    /// Bytes that read back as written.
    pub good_bytes: u64,
    /// Bytes that came back holding another address's block (a wrap),
    /// as zeros, as anything else, or with an I/O error.
    pub foreign_bytes: u64,
    pub zero_bytes: u64,
    pub other_bytes: u64,
    pub io_error_bytes: u64,
    /// The first byte that did not read back as written.
    pub first_bad_offset: Option<u64>,
    /// Sequential write and read over the whole device, MB/s of device
    /// time.
    pub write_mb_s: Option<f64>,
    pub read_mb_s: Option<f64>,
}

impl FillResult {
    /// Bytes that did not read back as written.
    pub fn bad_bytes(&self) -> u64 {
        self.foreign_bytes + self.zero_bytes + self.other_bytes + self.io_error_bytes
    }

    fn count(&mut self, at: u64, len: u64, e: Evidence) {
        self.first_bad_offset.get_or_insert(at);
        match e {
            Evidence::Foreign { .. } => self.foreign_bytes += len,
            Evidence::Zeros => self.zero_bytes += len,
            Evidence::Other => self.other_bytes += len,
            Evidence::IoError => self.io_error_bytes += len,
        }
    }
}

impl Test for Fill {
    const KEY: &'static str = "fill";
    type Output = FillResult;

    /// Every byte of the device.
    fn plan(&self, d: &TargetDescription) -> Result<Vec<Range>, MeasureError> {
        Ok(vec![Range {
            offset: 0,
            len: d.size_bytes,
        }])
    }

    fn run(&self, cx: &mut Cx<'_>) -> Result<FillResult, MeasureError> {
        let d = cx.target.description().clone();
        let block = u64::from(d.logical_block_size.max(512));
        let size = d.size_bytes - d.size_bytes % block;
        let mut out = FillResult {
            size_bytes: d.size_bytes,
            ..FillResult::default()
        };
        let mut buf = crate::measure::buffer(CHUNK)?;
        let started = cx.target.device_time_ns();
        let over = |cx: &Cx<'_>| self.budget_ns.is_some_and(|b| cx.target.device_time_ns() - started > b);
        // Written: where each chunk's write failed, so the reads skip it.
        let mut failed: Vec<(u64, u64)> = Vec::new();
        while out.written_bytes < size && !over(cx) {
            cx.check()?;
            let at = out.written_bytes;
            let len = CHUNK.min(size - at);
            tag(self.nonce, at, block, &mut buf.as_mut_slice()[..len as usize]);
            let done = cx.target.run(&[Request::write(at, len as u32, 0)], 1, &mut buf)?;
            if done[0].errno.is_some() {
                failed.push((at, len));
            }
            out.written_bytes += len;
            cx.progress.advance(out.written_bytes, 2 * size);
        }
        let wrote_ns = cx.target.device_time_ns() - started;
        out.write_mb_s = mb_s(out.written_bytes, wrote_ns);
        let mut scratch = Vec::new();
        while out.verified_bytes < out.written_bytes {
            cx.check()?;
            let at = out.verified_bytes;
            let len = CHUNK.min(out.written_bytes - at);
            if failed.contains(&(at, len)) {
                out.count(at, len, Evidence::IoError);
            } else {
                let done = cx.target.run(&[Request::read(at, len as u32, 0)], 1, &mut buf)?;
                match done[0].errno {
                    Some(_) => out.count(at, len, Evidence::IoError),
                    None => self.verify(&mut out, at, &buf.as_slice()[..len as usize], block, &mut scratch),
                }
            }
            out.verified_bytes += len;
            cx.progress.advance(out.written_bytes + out.verified_bytes, 2 * size);
        }
        out.read_mb_s = mb_s(out.verified_bytes, cx.target.device_time_ns() - started - wrote_ns);
        out.complete = out.verified_bytes == size;
        Ok(out)
    }

    /// A fill is kept in its batch row, not among a single run's results.
    fn record(_: &FillResult, _: &mut Results) {}
}

impl Fill {
    /// Check one chunk read back at `at`, block by block.
    fn verify(&self, out: &mut FillResult, at: u64, got: &[u8], block: u64, scratch: &mut Vec<u8>) {
        let mut from = 0u64;
        while from < got.len() as u64 {
            let (good, bad) = check(self.nonce, at + from, block, &got[from as usize..], scratch);
            out.good_bytes += good;
            from += good;
            if let Some(e) = bad {
                out.count(at + from, block, e);
                from += block;
            }
        }
    }
}

fn mb_s(bytes: u64, ns: u64) -> Option<f64> {
    (ns > 0 && bytes > 0).then(|| bytes as f64 / (ns as f64 / 1e9) / 1e6)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sim::SimTarget;

    /// A genuine card reads back whole; a wrapping fake's blocks past its
    /// real size come back from another address, counted exactly.
    #[test]
    fn a_fill_counts_every_block_that_did_not_come_back() {
        let fill = Fill {
            nonce: 7,
            budget_ns: None,
        };
        let mut genuine = SimTarget::from_spec("sim:demo,capacity=64M,open_aus_random=4").unwrap();
        let r = crate::measure::run_alone(&fill, &mut genuine).unwrap();
        assert_eq!((r.good_bytes, r.bad_bytes(), r.complete), (64 << 20, 0, true));
        assert!(r.write_mb_s.is_some() && r.read_mb_s.is_some());
        let mut fake =
            SimTarget::from_spec("sim:demo,capacity=64M,real_capacity=16M,fake_mode=wrap,open_aus_random=4").unwrap();
        let r = crate::measure::run_alone(&fill, &mut fake).unwrap();
        // The last 16 MiB written win the real flash; every other block
        // reads back someone else's.
        assert_eq!((r.good_bytes, r.foreign_bytes), (16 << 20, 48 << 20));
        assert_eq!(r.first_bad_offset, Some(0));
        let short = Fill {
            nonce: 7,
            budget_ns: Some(1),
        };
        let r = crate::measure::run_alone(&short, &mut genuine).unwrap();
        assert!(!r.complete && r.written_bytes == CHUNK, "{r:?}");
    }
}
