//! Where a card starts refusing reads, found by reads alone: the
//! [`Boundary`] stage, and the survey's refused read probes narrowed to the
//! block.

use super::{BLOCK, Checked, Evidence, StageResult, block_of};
use crate::measure::MeasureError;
use crate::safety::ranges::Range;
use crate::targets::{AlignedBuf, Request, Target, TargetDescription};

/// The first block the card refuses to read between `lo` (the end of a
/// block known good) and `hi` (a block it refused), by bisection with
/// single-block reads; nothing is written.
pub struct Boundary {
    pub lo: u64,
    pub hi: u64,
}

impl crate::measure::Test for Boundary {
    const KEY: &'static str = "capacity";
    type Output = StageResult;
    fn plan(&self, _: &TargetDescription) -> Result<Vec<Range>, MeasureError> {
        Ok(Vec::new())
    }
    fn record(_: &StageResult, _: &mut crate::measure::Results) {}
    fn run(&self, cx: &mut crate::measure::Cx<'_>) -> Result<StageResult, MeasureError> {
        let t = &mut *cx.target;
        let b = BLOCK.max(block_of(t.description()));
        let mut checked = Vec::new();
        bisect(t, self.lo.div_ceil(b) * b, self.hi / b * b, b, true, &mut checked)?;
        Ok(StageResult {
            window: Some((self.lo, self.hi)),
            probes: checked.len() as u64,
            checked,
            aliases: Vec::new(),
            probe_errors: Vec::new(),
            bytes_written: 0,
            reads_only: true,
            canary: None,
            flushed: 0,
            unflushed: false,
            cut: None,
        })
    }
}

/// The first block from `lo` to `hi` (block offsets) whose reads the card
/// refuses (`refused`) or answers (not `refused`), where `hi` is known to
/// be one and the blocks before `lo` are not: bisection with single-block
/// reads, each recorded in `checked`. Nothing is written.
fn bisect(
    t: &mut dyn Target,
    mut lo: u64,
    mut hi: u64,
    b: u64,
    refused: bool,
    checked: &mut Vec<Checked>,
) -> Result<u64, MeasureError> {
    let mut buf = AlignedBuf::new(b as usize);
    while lo < hi {
        let mid = lo + (hi - lo) / b / 2 * b;
        let no = t.run(&[Request::read(mid, b as u32, 0)], 1, &mut buf)?[0]
            .errno
            .is_some();
        checked.push(Checked {
            offset: mid,
            len: b,
            good: if no { 0 } else { b },
            bad: no.then_some(Evidence::IoError),
            before_push: false,
        });
        if no == refused {
            hi = mid;
        } else {
            lo = mid + b;
        }
    }
    Ok(hi)
}

/// Runs of read probes the card refused, each narrowed to the block by
/// [`bisect`] against the probes on either side (one 64 MiB
/// fault was two 4 KiB regions). A run that reaches the last probe ends
/// there. At most [`MAX_NARROWED`] runs are narrowed; the rest stay one
/// block each. Returns the regions as (offset, length) and the reads.
pub(super) fn narrow_refusals(
    t: &mut dyn Target,
    probes: &[(u64, bool)],
    floor: u64,
    b: u64,
) -> Result<(Vec<(u64, u64)>, u64), MeasureError> {
    let mut out = Vec::new();
    let mut scratch = Vec::new();
    let mut i = 0;
    while i < probes.len() {
        if !probes[i].1 {
            i += 1;
            continue;
        }
        let mut j = i;
        while j + 1 < probes.len() && probes[j + 1].1 {
            j += 1;
        }
        let (first, last) = (probes[i].0, probes[j].0);
        if out.len() >= MAX_NARROWED {
            out.extend(probes[i..=j].iter().map(|p| (p.0, b)));
        } else {
            let below = if i > 0 { probes[i - 1].0 + b } else { floor };
            let start = bisect(t, below.div_ceil(b) * b, first, b, true, &mut scratch)?;
            let end = match probes.get(j + 1) {
                Some(next) => bisect(t, last + b, next.0, b, false, &mut scratch)?,
                None => last + b,
            };
            out.push((start, end - start));
        }
        i = j + 1;
    }
    Ok((out, scratch.len() as u64))
}

/// Runs of refused probes narrowed at most: each costs about 2 log2(32
/// MiB / 4 KiB) = 26 single-block reads.
const MAX_NARROWED: usize = 16;
