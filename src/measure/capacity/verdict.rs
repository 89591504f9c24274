//! From every stage's blocks to what the next stage does and, at the end,
//! the verdict: genuine, fake (and how) or damaged.

use serde::{Deserialize, Serialize};

use super::layout::{dense, flush_start, flushed};
use super::{BLOCK, Checked, Cut, Evidence, Options, StageResult, THOROUGH_FLUSH, block_of};
use crate::targets::TargetDescription;
use crate::units::Iec;

/// The verdicts of the JSON contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    Genuine,
    Fake,
    Damaged,
}

/// How a fake loses what lies past its real size.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FakeKind {
    /// Addresses wrap: a write past N lands on earlier data.
    Wrap,
    /// Writes past N are lost.
    Drop,
    /// Writes past N read back only while a cache holds them.
    Cache,
    /// Addresses wrap, and below the wrap point writes past N are lost too
    /// (f3's "chain"): N is where the data ends, not where it wraps.
    Chain,
}

impl FakeKind {
    /// The contract's word for it.
    pub fn as_str(self) -> &'static str {
        match self {
            FakeKind::Wrap => "wrap",
            FakeKind::Drop => "drop",
            FakeKind::Cache => "cache",
            FakeKind::Chain => "chain",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BadRegion {
    pub offset: u64,
    pub len: u64,
    pub evidence: Evidence,
}

/// The `capacity` key of the JSON contract.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityResult {
    pub verdict: Verdict,
    pub kind: Option<FakeKind>,
    pub announced_bytes: u64,
    pub usable_bytes: u64,
    pub last_good_byte: u64,
    /// What reads past the real size return (fakes): "zeros", "old data",
    /// "I/O errors" or "earlier blocks".
    pub reads_past: Option<String>,
    /// Where the real size lies between, until it is found to the block.
    pub boundary: Option<(u64, u64)>,
    /// Regions before the real size that lost data or refused I/O.
    pub bad_regions: Vec<BadRegion>,
    /// Bytes the check wrote (the originals were written back besides).
    pub bytes_written: u64,
    /// Blocks written and checked.
    pub samples: u64,
    pub read_probes: u64,
    pub stages: usize,
    /// Bytes never written at the start, and the cache push.
    pub skip_bytes: u64,
    pub push_bytes: u64,
    /// Bytes written after the samples before they were read back, the
    /// push included: a write cache larger than this would hide lost
    /// writes.
    #[serde(default)]
    pub flush_bytes: u64,
    /// What the check cannot see, in words.
    pub limits: Vec<String>,
}

/// Nothing to derive: a result read back is shown as stored.
impl crate::measure::registry::Settle for CapacityResult {}

/// What the next stage should do.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Next {
    Done,
    Narrow(u64, u64),
    /// The card refuses reads past its real size: find the first block it
    /// refuses between the two by reads alone ([`Boundary`]); a window of
    /// writes would have to journal blocks that cannot be read.
    Reads(u64, u64),
}

/// Stages at most: seven resolve 2 TB to the block (four nine-fold stages
/// of [`WIDE_SAMPLES`](super::layout::WIDE_SAMPLES) down to about 100 MiB,
/// then two of [`CLOSE_SAMPLES`](super::layout::CLOSE_SAMPLES)); more is a
/// card that keeps changing its answer.
pub const MAX_STAGES: usize = 10;

/// Whether any stage saw a cache: a sample that read back right at once
/// and wrong after the push.
pub fn cache_seen(stages: &[StageResult]) -> bool {
    stages.iter().flat_map(|s| &s.checked).any(|c| c.before_push && !c.ok())
}

/// The next stage's [`Stage::lap`]: how many stages flushed so far.
pub fn lap(stages: &[StageResult]) -> u64 {
    stages.iter().filter(|s| s.flushed > 0).count() as u64
}

/// A narrowing stage's canary, where a cache was seen and no wrap: a block
/// in the lost tail past the window's top that no stage has written (the
/// middle of the widest gap between written blocks there), so a write cache takes it
/// in as new and lets it go after everything written before it. Without a
/// wrap nothing aliases it, so journalling it at its first write (not in
/// the first batch) is safe.
pub fn canary_for(stages: &[StageResult], o: &Options, window: (u64, u64), size: u64, block: u64) -> Option<u64> {
    if modulus(stages).is_some() || !cache_seen(stages) {
        return None;
    }
    let b = BLOCK.max(block);
    // Past both flush regions too: their blocks are written every other
    // stage.
    let from = (window.1.div_ceil(b) * b + b).max(flush_start(o, 1, size, b) + o.flush);
    let mut taken: Vec<u64> = stages
        .iter()
        .flat_map(|s| s.checked.iter().map(|c| c.offset).chain(s.canary))
        .filter(|&o| o >= from)
        .collect();
    taken.push(size.saturating_sub(b) / b * b);
    taken.sort_unstable();
    // The middle of the widest gap between written blocks past the top.
    let (lo, hi) = std::iter::once(from)
        .chain(taken.iter().map(|&o| o + b))
        .zip(taken.iter().copied())
        .max_by_key(|(lo, hi)| hi.saturating_sub(*lo))?;
    let at = (lo + hi.saturating_sub(lo) / 2) / b * b;
    (at >= lo && at + b <= hi).then_some(at)
}

/// The smallest wrap the read probes and samples saw: an address and the
/// lower one its tag names.
fn modulus(stages: &[StageResult]) -> Option<u64> {
    let probe = stages.iter().flat_map(|s| s.aliases.iter().copied());
    let written = stages.iter().flat_map(|s| {
        s.checked.iter().filter_map(|c| match c.bad {
            Some(Evidence::Foreign { from }) => Some((c.offset + c.good, from)),
            _ => None,
        })
    });
    probe
        .chain(written)
        .filter(|(at, from)| at > from)
        .map(|(at, from)| at - from)
        .min()
}

/// The blocks after the last good one, all bad: (last good byte's end,
/// first bad byte, index of the first bad block); None when the last block
/// is good.
fn after_last_good(blocks: &[Checked]) -> Option<(u64, u64, usize)> {
    let start = blocks.iter().rposition(Checked::ok).map_or(0, |i| i + 1);
    let first = blocks.get(start)?;
    let lo = if first.good > 0 {
        first.offset + first.good
    } else {
        start.checked_sub(1).map_or(0, |i| blocks[i].end())
    };
    Some((lo, first.offset + first.good, start))
}

/// The bad tail: the blocks from the last good one to the end, all bad.
/// Returns (last good byte's end, first bad byte, index of the tail's start).
fn tail(all: &[Checked], size: u64) -> Option<(u64, u64, usize)> {
    // The tail must reach the card's end: a bad last block and nothing good
    // after the region.
    if all.last()?.end() < size {
        return None;
    }
    after_last_good(all)
}

/// The bad tail below a wrap point `n`: the blocks under it from the last
/// good one on, all lost (none of them this run's tag for another address).
/// A plain wrap has none; a chain fake loses writes there.
fn tail_below(all: &[Checked], n: u64) -> Option<(u64, u64, usize)> {
    let below = &all[..all.partition_point(|c| c.offset < n)];
    let found = after_last_good(below)?;
    if below[found.2..]
        .iter()
        .any(|c| matches!(c.bad, Some(Evidence::Foreign { .. })))
    {
        return None;
    }
    Some(found)
}

/// What reads of lost blocks returned, in words.
fn reads_of(lost: &[Checked]) -> &'static str {
    let kinds: Vec<Evidence> = lost.iter().filter_map(|c| c.bad).collect();
    if kinds.iter().all(|e| *e == Evidence::Zeros) {
        "zeros"
    } else if kinds.iter().all(|e| *e == Evidence::IoError) {
        "I/O errors"
    } else {
        "other data (old data or garbage)"
    }
}

/// Every stage's blocks, a stage's good ones left out where its flush
/// ended with the canary still in the cache: they may have read back from
/// it (their bad ones stand).
fn merged(stages: &[StageResult]) -> Vec<Checked> {
    let mut all: Vec<Checked> = stages
        .iter()
        .flat_map(|s| s.checked.iter().filter(|c| !(s.unflushed && c.ok())).copied())
        .collect();
    all.sort_by_key(|c| (c.offset, c.len));
    all
}

/// A tail of I/O errors only, shorter than this share of the card, is
/// damage at its end rather than a fake's missing capacity.
const ERROR_TAIL_SHARE: u64 = 8;

/// After each stage: stop, or narrow the window where the real size lies.
pub fn next(stages: &[StageResult], size: u64) -> Next {
    // A flush that could not empty the cache: another would not either.
    if stages.len() >= MAX_STAGES || stages.last().is_some_and(|s| s.unflushed) {
        return Next::Done;
    }
    let all = merged(stages);
    if let Some(n) = modulus(stages) {
        // A wrap: writes below the wrap point may be lost too (a chain
        // fake). One stage samples the stretch between the last good block
        // and the wrap point; a tail of lost blocks found there is narrowed
        // like a drop's.
        return match tail_below(&all, n) {
            Some((lo, hi, _)) if hi > lo => Next::Narrow(lo, hi),
            Some(_) => Next::Done,
            None => {
                let below = &all[..all.partition_point(|c| c.offset < n)];
                let lo = below.last().map_or(0, Checked::end);
                let looked = stages.iter().any(|s| s.window.is_some_and(|(_, hi)| hi == n));
                if looked || n.saturating_sub(lo) <= BLOCK {
                    Next::Done
                } else {
                    Next::Narrow(lo, n)
                }
            }
        };
    }
    match tail(&all, size) {
        Some((lo, hi, start)) if hi > lo && !errors_only(&all[start..], size) => {
            let refused = all[start..].iter().all(|c| c.bad == Some(Evidence::IoError));
            match (refused, stages.last().is_some_and(|s| s.reads_only)) {
                (true, false) => Next::Reads(lo, hi),
                (true, true) => Next::Done,
                (false, _) => Next::Narrow(lo, hi),
            }
        }
        _ => Next::Done,
    }
}

fn errors_only(tail: &[Checked], size: u64) -> bool {
    tail.iter().all(|c| c.bad == Some(Evidence::IoError))
        && tail.first().is_some_and(|c| size - c.offset < size / ERROR_TAIL_SHARE)
}

/// Bad runs outside the tail, each from its first bad byte to the next
/// good byte checked.
fn bad_regions(all: &[Checked], upto: usize, probe_errors: &[(u64, u64)]) -> Vec<BadRegion> {
    let mut out: Vec<BadRegion> = Vec::new();
    for (i, c) in all[..upto].iter().enumerate() {
        let Some(e) = c.bad else { continue };
        let from = c.offset + c.good;
        let to = all[i + 1..upto]
            .iter()
            .find(|n| n.ok())
            .map_or(c.end(), |n| n.offset)
            .max(c.end());
        match out.last_mut() {
            Some(l) if l.offset + l.len >= from => l.len = to.max(l.offset + l.len) - l.offset,
            _ => out.push(BadRegion {
                offset: from,
                len: to - from,
                evidence: e,
            }),
        }
    }
    for &(offset, len) in probe_errors {
        out.push(BadRegion {
            offset,
            len,
            evidence: Evidence::IoError,
        });
    }
    out.sort_by_key(|r| r.offset);
    // A probe's narrowed region may cover a written block's.
    let mut merged: Vec<BadRegion> = Vec::with_capacity(out.len());
    for r in out {
        match merged.last_mut() {
            Some(l) if r.offset <= l.offset + l.len => l.len = (r.offset + r.len).max(l.offset + l.len) - l.offset,
            _ => merged.push(r),
        }
    }
    merged
}

/// Whether `--thorough` would flush more than `flushed`: not where it was
/// given, nor on a card too small for a longer flush.
pub fn thorough_helps(flushed: u64, size: u64, skip: u64) -> bool {
    flushed < THOROUGH_FLUSH && size.saturating_sub(skip) / 2 > flushed
}

/// What the survey flushed (all it planned, if there was none).
fn survey_flush(stages: &[StageResult], o: &Options, size: u64, block: u64) -> u64 {
    stages
        .iter()
        .find(|s| s.window.is_none())
        .map_or_else(|| flushed(o, size, block), |s| s.flushed)
}

/// What size of write cache the check could have missed, in words.
fn cache_limit(stages: &[StageResult], o: &Options, size: u64, block: u64) -> String {
    let flushed = survey_flush(stages, o, size, block);
    match stages.iter().find_map(|s| s.cut) {
        Some(Cut::LostAtOnce) => {
            return format!(
                "only {} of tags for the read probes was written after the samples: one read back wrong \
                 right after its write, so no write cache kept it",
                Iec(flushed)
            );
        }
        Some(Cut::LetGo { after }) => {
            return format!(
                "{} was written after the samples, and a block written after them read back lost after {}: \
                 a write cache that lets go in the order it took had let them go",
                Iec(flushed),
                Iec(after)
            );
        }
        None => {}
    }
    format!(
        "a write cache larger than the {} written after the samples would hide lost writes{}",
        Iec(flushed),
        if thorough_helps(flushed, size, o.skip) {
            " (--thorough: 1 GiB)"
        } else {
            ""
        }
    )
}

/// The verdict from every stage's blocks.
pub fn verdict(stages: &[StageResult], d: &TargetDescription, o: &Options) -> CapacityResult {
    let size = d.size_bytes;
    let block = block_of(d);
    let all = merged(stages);
    let probe_errors: Vec<(u64, u64)> = stages.iter().flat_map(|s| s.probe_errors.iter().copied()).collect();
    let mut r = CapacityResult {
        verdict: Verdict::Genuine,
        kind: None,
        announced_bytes: size,
        usable_bytes: size,
        last_good_byte: size.saturating_sub(1),
        reads_past: None,
        boundary: None,
        bad_regions: Vec::new(),
        bytes_written: stages.iter().map(|s| s.bytes_written).sum(),
        samples: stages.iter().map(|s| s.checked.len() as u64).sum(),
        read_probes: stages.iter().map(|s| s.probes).sum(),
        stages: stages.len(),
        skip_bytes: o.skip,
        push_bytes: dense(o, size, block).len,
        flush_bytes: survey_flush(stages, o, size, block),
        limits: vec![
            format!(
                "the first {} is never written, so a card whose real size falls in it or within {} of the announced size is not told apart",
                Iec(o.skip),
                Iec(o.skip + BLOCK.max(block))
            ),
            cache_limit(stages, o, size, block),
        ],
    };
    if stages.iter().any(|s| s.unflushed) {
        r.limits.push(
            "a write cache still held a stage's blocks after its whole flush (the card is too small for \
             two flush regions): the real size is known only to the window given"
                .into(),
        );
    }
    if stages.iter().any(|s| s.reads_only) {
        r.limits.push(
            "the real size is where the card starts refusing reads (found by reads of single blocks, \
             not by writes)"
                .into(),
        );
    }
    if let Some(n) = modulus(stages) {
        r.verdict = Verdict::Fake;
        r.kind = Some(FakeKind::Wrap);
        r.usable_bytes = n;
        r.last_good_byte = n - 1;
        r.reads_past = Some("earlier blocks".into());
        let mut upto = all.partition_point(|c| c.offset < n);
        if let Some((lo, hi, start)) = tail_below(&all, n) {
            r.kind = Some(FakeKind::Chain);
            r.usable_bytes = lo;
            r.last_good_byte = lo.saturating_sub(1);
            r.boundary = (hi > lo).then_some((lo, hi));
            r.reads_past = Some(format!(
                "{} below the wrap at byte {n}, earlier blocks past it",
                reads_of(&all[start..upto])
            ));
            upto = start;
        }
        let n = r.usable_bytes;
        r.bad_regions = bad_regions(&all, upto, &probe_errors)
            .into_iter()
            .filter(|b| b.offset < n && !matches!(b.evidence, Evidence::Foreign { .. }))
            .collect();
        return r;
    }
    match tail(&all, size) {
        Some((lo, hi, start)) if !errors_only(&all[start..], size) => {
            let t = &all[start..];
            r.verdict = Verdict::Fake;
            r.kind = Some(if t.iter().any(|c| c.before_push && c.bad != Some(Evidence::IoError)) {
                FakeKind::Cache
            } else {
                FakeKind::Drop
            });
            r.usable_bytes = lo;
            r.last_good_byte = lo.saturating_sub(1);
            r.boundary = (hi > lo).then_some((lo, hi));
            r.reads_past = Some(reads_of(t).into());
            r.bad_regions = bad_regions(&all, start, &probe_errors)
                .into_iter()
                .filter(|b| b.offset < lo)
                .collect();
        }
        _ => {
            r.bad_regions = bad_regions(&all, all.len(), &probe_errors);
            if !r.bad_regions.is_empty() {
                r.verdict = Verdict::Damaged;
            }
        }
    }
    r
}
