//! Where a stage writes and reads: the dense region, the flush past it,
//! the sample blocks and the read probes, each from the options and the
//! card's size alone.

use super::{BLOCK, Options};
use crate::safety::ranges::Range;

/// Sample blocks written in each narrowing stage: 32 small writes in 32
/// AUs narrow the window 33-fold, so a 64 GB card is resolved to the block
/// in five stages.
pub const SAMPLES: u64 = 32;
/// Sample blocks of the first stage, over the whole card (the card's last
/// block besides). Each lands in an AU of its own and costs a merge there,
/// once written and once written back: up to 15 s each on a card of 128
/// MiB AUs and 4 KiB pages (sim::generate's hard family), so 32 of them
/// took 13 device-minutes. Two still catch writes lost past any real
/// size (the last block is always among them) and the read probes catch a
/// wrap; the narrowing stages, which only a fake card needs, take 32.
pub const SURVEY_SAMPLES: u64 = 2;
/// Sample blocks of a narrowing stage that flushes no cache over a window
/// so wide that `SAMPLES` of them would each land an AU apart on a card of
/// [`COMMON_AU`]: each such sample is an AU's merge, once written and once
/// written back, and merges are what such a stage costs (32 of them took
/// 3.1 of a drop fake's 8.1 simulated device-seconds). Eight split the
/// window nine-fold for a quarter of that; the stages after them, an AU
/// or so wide, take `SAMPLES` again, where they share a few AUs.
pub const WIDE_SAMPLES: u64 = 8;
/// Most sample blocks of a stage that flushes a cache over a window at
/// most `SAMPLES` AUs of [`COMMON_AU`] wide. Its samples share those few
/// AUs, so they cost the same merges as `SAMPLES` of them (a few small
/// writes more), while each stage costs its flush again (a card with a 48
/// MiB cache flushed 72 MiB in each of five stages, 361 MiB of its 23.5
/// simulated device-seconds). A stage spreads enough of them that the next
/// window is at most half this many blocks, and covers a window of this
/// many blocks or fewer block by block: the two stages after the first a
/// few AUs wide find the real size to the block. On `sim:demo` cards of 4
/// GiB with a cache, four stages took the place of five: 48 MiB cache 23.5
/// to 20.0 device-seconds, 8 MiB 9.0 to 8.6, 512 KiB behind the AT91 host
/// 170.7 to 162.7. A stage that flushes nothing costs less than the extra
/// samples: a drop fake went from 1.78 to 1.95, so it keeps `SAMPLES`.
pub const CLOSE_SAMPLES: u64 = 256;
/// The allocation unit most SD cards of 4 to 32 GB have: AU_SIZE of 4 MiB
/// for SDHC up to 32 GB in the SD spec (docs/SOURCES.md), and in the
/// `demo` and `kingston-sa04g` profiles.
const COMMON_AU: u64 = 4 << 20;
/// Most read probes: their spacing grows with the card past this.
const MAX_PROBES: u64 = 1 << 16;
/// Writes of the dense region.
pub(super) const CHUNK: u64 = 1 << 20;

/// The dense region, clipped to a small target.
pub(super) fn dense(o: &Options, size: u64, block: u64) -> Range {
    let len = o.push.min(size.saturating_sub(o.skip) / 2) / block * block;
    Range { offset: o.skip, len }
}

/// The flush written as it is, from `start` to `end` clipped to the target
/// short of its last block, without the `taken` blocks (samples and canary,
/// ascending): a block written with its own bytes after its tag would only
/// read back the tag, but two declared ranges must not overlap.
pub(super) fn as_is(start: u64, end: u64, size: u64, block: u64, taken: &[Range]) -> Vec<Range> {
    let end = end.min(size.saturating_sub(BLOCK.max(block)) / block * block);
    let mut out = Vec::new();
    let mut at = start;
    for s in taken {
        if s.end() <= at || s.offset >= end {
            continue;
        }
        if s.offset > at {
            out.push(Range {
                offset: at,
                len: s.offset - at,
            });
        }
        at = s.end();
    }
    if end > at {
        out.push(Range {
            offset: at,
            len: end - at,
        });
    }
    out
}

/// `ranges` cut into chunks less a block each.
pub(super) fn chunked(ranges: &[Range], b: u64) -> Vec<Range> {
    ranges
        .iter()
        .flat_map(|r| {
            (0..r.len.div_ceil(CHUNK)).filter_map(move |k| {
                let len = (CHUNK - b).min(r.len - k * CHUNK);
                (len > 0).then_some(Range {
                    offset: r.offset + k * CHUNK,
                    len,
                })
            })
        })
        .collect()
}

/// The rest of the survey's flush past the dense region.
pub(super) fn extra(o: &Options, size: u64, block: u64, taken: &[Range]) -> Vec<Range> {
    let d = dense(o, size, block);
    as_is(d.end(), d.end() + o.flush.saturating_sub(d.len), size, block, taken)
}

/// Where the flush of a narrowing stage starts: after the survey, the
/// stages take turns between the bytes after the skipped start and the
/// same length past them. A cache that keeps its order when a block it
/// holds is written again lets nothing go for blocks the last stage wrote
/// (the emulated 48 MiB cache card kept this stage's samples through a
/// flush over the survey's region, and 1.31 GiB was called usable of 1).
pub(super) fn flush_start(o: &Options, lap: u64, size: u64, block: u64) -> u64 {
    let other = (o.skip + o.flush).div_ceil(block) * block;
    // On a card with no room for a second region the turns are all the
    // first's; the canary then tells whether the flush still let the
    // samples go (`StageResult::unflushed`).
    if lap % 2 == 1 && other + o.flush + BLOCK.max(block) <= size {
        other
    } else {
        o.skip.div_ceil(block) * block
    }
}

/// How many sample blocks a stage writes, of `b` bytes each:
/// [`SURVEY_SAMPLES`] in the survey, [`WIDE_SAMPLES`] in a narrowing stage
/// that flushes nothing over a wide window, [`CLOSE_SAMPLES`] at most in
/// a flushing one over a window a few AUs wide, else [`SAMPLES`] (a stage
/// that flushes a cache pays that flush per stage, more than its samples'
/// merges).
pub(super) fn sample_count(window: Option<(u64, u64)>, flush: bool, b: u64) -> u64 {
    let Some((lo, hi)) = window else {
        return SURVEY_SAMPLES;
    };
    let wide = hi.saturating_sub(lo);
    let blocks = wide.div_ceil(b.max(1));
    if flush && wide <= SAMPLES * COMMON_AU {
        // Enough that the next window is block by block.
        return if blocks <= CLOSE_SAMPLES {
            blocks.max(1)
        } else {
            blocks.div_ceil(CLOSE_SAMPLES / 2).clamp(SAMPLES, CLOSE_SAMPLES)
        };
    }
    if !flush && wide / (SAMPLES + 1) >= COMMON_AU {
        WIDE_SAMPLES
    } else {
        SAMPLES
    }
}

/// Sample blocks of a stage, ascending. The first stage spreads them over
/// the card past the dense region and always includes its last block;
/// later ones spread `count` over the window, or cover it whole once
/// `count` blocks (`SAMPLES` at least) do.
pub(super) fn samples(o: &Options, window: Option<(u64, u64)>, size: u64, block: u64, count: u64) -> Vec<Range> {
    let b = BLOCK.max(block);
    let d = dense(o, size, block);
    let (lo, hi) = window.unwrap_or((d.end(), size));
    if hi <= lo {
        return Vec::new();
    }
    let mut out = Vec::new();
    if window.is_some() && hi - lo <= count.max(SAMPLES) * b {
        let mut at = lo;
        while at < hi {
            let len = b.min(hi - at);
            out.push(Range { offset: at, len });
            at += len;
        }
        return out;
    }
    for k in 1..=count {
        let at = (lo + (hi - lo) / (count + 1) * k) / b * b;
        if at >= lo && at + b <= hi && out.last().is_none_or(|r: &Range| r.end() <= at) {
            out.push(Range { offset: at, len: b });
        }
    }
    if window.is_none() && size >= b && size - d.end() >= b {
        let last = (size - b) / block * block;
        if out.last().is_none_or(|r| r.end() <= last) {
            out.push(Range {
                offset: last,
                len: size - last,
            });
        }
    }
    out
}

/// Read probes of the first stage: every `d.len` bytes (the dense region
/// as tagged) from the start past the skipped bytes, and the card's last
/// block, so that for any real size N up to the announced size less the
/// skip, one lands on the dense region through the wrap.
pub(super) fn probes(d: Range, size: u64, block: u64) -> Vec<u64> {
    if d.len == 0 {
        return Vec::new();
    }
    let step = d.len.max(size.div_ceil(MAX_PROBES)).div_ceil(block) * block;
    let b = BLOCK.max(block);
    let mut out: Vec<u64> = (1..)
        .map(|k| d.offset + k * step)
        .take_while(|&a| a + b <= size)
        .collect();
    let last = size.saturating_sub(b) / block * block;
    if last >= d.end() && out.last() != Some(&last) {
        out.push(last);
    }
    out
}

/// The survey's canary: the block right before the card's last (the last
/// is a sample), where a fake has lost writes if it has lost any. Written
/// after the samples and read after each chunk of the flush, it ends the
/// flush soon after a cache has let it go. It is declared with the last
/// sample as one range ([`Stage::plan`](super::Stage)), so the samples'
/// batch journals it before any sample is written, with no write of its
/// own (a guess, it might land on a sample through a wrap). None on a
/// target with no room for it past the dense region and clear of the
/// other samples.
pub(super) fn survey_canary(o: &Options, size: u64, block: u64) -> Option<Range> {
    let b = BLOCK.max(block);
    let s = samples(o, None, size, block, SURVEY_SAMPLES);
    let (last, others) = s.split_last()?;
    let c = Range {
        offset: last.offset.checked_sub(b)?,
        len: b,
    };
    let clear = others.iter().all(|s| s.end() <= c.offset);
    (last.end() == size && c.offset >= dense(o, size, block).end() && clear).then_some(c)
}

/// How much of the dense region a survey tags once a sample was lost at
/// once (no cache to push out): enough for the read probes, no more. Each
/// byte tagged costs a write and its write back, about `byte_ns` (a read
/// and a write, as [`Stage::price_flush`](super::Stage) timed them), and
/// the probes, one every `len` bytes of the card, cost `probe_ns` each:
/// `len * byte_ns + size / len * probe_ns` is least at the square root
/// below. Whole MiBs, at least one, and never so little that the probes
/// would have to be spaced wider than it ([`MAX_PROBES`]). Unpriced (a
/// `--thorough` flush), all of it.
pub(super) fn cut_dense(d: Range, size: u64, byte_ns: Option<f64>, probe_ns: f64) -> u64 {
    let Some(byte_ns) = byte_ns.filter(|&b| b > 0.0) else {
        return d.len;
    };
    let best = (size as f64 * probe_ns.max(0.0) / byte_ns).sqrt() as u64;
    best.max(size.div_ceil(MAX_PROBES))
        .div_ceil(CHUNK)
        .max(1)
        .saturating_mul(CHUNK)
        .min(d.len)
}

/// Bytes the first stage writes after its samples: the dense region and
/// the rest of the flush.
pub(super) fn flushed(o: &Options, size: u64, block: u64) -> u64 {
    let s = samples(o, None, size, block, SURVEY_SAMPLES);
    dense(o, size, block).len + extra(o, size, block, &s).iter().map(|r| r.len).sum::<u64>()
}
