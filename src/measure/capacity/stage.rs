//! One writing stage of the check: sample blocks written and read back at
//! once, a flush to push any write cache out, then everything read back
//! (the module doc says why in this order).

use super::boundary::narrow_refusals;
use super::layout::{
    CHUNK, as_is, chunked, cut_dense, dense, extra, flush_start, probes, sample_count, samples, survey_canary,
};
use super::tag::{self, check, tag};
use super::{BLOCK, Checked, Cut, Evidence, Options, StageResult, block_of};
use crate::measure::{MeasureError, Progress};
use crate::safety::ranges::Range;
use crate::targets::{AlignedBuf, Request, Target, TargetDescription};
use crate::units::Iec;

/// One stage: samples in `window` (the whole card for the first).
pub struct Stage {
    pub options: Options,
    pub window: Option<(u64, u64)>,
    /// Write the push (the dense region) to flush a cache. The first stage
    /// always does; later ones only where a cache was seen (each
    /// narrowing stage rewrote 32 MiB, 321 MiB written on a drop fake where
    /// f3probe wrote 1 MiB).
    pub flush: bool,
    /// A block known lost that no stage has written ([`canary_for`](super::canary_for)):
    /// written last before the flush and read after each of its chunks, so
    /// the flush ends soon after the cache has let go of it.
    pub canary: Option<u64>,
    /// How many stages before this one flushed: picks the region of a
    /// narrowing stage's flush ([`flush_start`]).
    pub lap: u64,
    /// Device time the survey's flush may take, the dense region's write
    /// back and the reads of the journal and the check after the restore
    /// counted in (priced by a timed MiB first). A slow host gets less of
    /// the flush past the dense region, and the
    /// verdict's `flush_bytes` says how large a cache it could have missed
    /// (the 72 MiB flush took up to 290 device-seconds behind
    /// an AT91 host). Narrowing stages flush what the survey did.
    pub flush_budget_ns: u64,
}

impl Stage {
    /// The dense region, the rest of the flush, the samples.
    fn ranges(&self, d: &TargetDescription) -> (Range, Vec<Range>, Vec<Range>) {
        let block = block_of(d);
        let push = dense(&self.options, d.size_bytes, block);
        let count = sample_count(self.window, self.flush, BLOCK.max(block));
        let samples = samples(&self.options, self.window, d.size_bytes, block, count);
        if !self.flush {
            return (Range { len: 0, ..push }, Vec::new(), samples);
        }
        let mut taken = samples.clone();
        taken.extend(self.canary(d));
        taken.sort_by_key(|r| r.offset);
        let b = BLOCK.max(block);
        if self.window.is_none() {
            // In chunks, each journalled at its first write (the gap of a
            // block keeps them from being joined into one), so a flush cut
            // short by a slow host reads no more originals than it writes.
            // (Longer by the gaps, so the chunks add up to the flush.)
            let gaps = self.options.flush.saturating_sub(push.len).div_ceil(CHUNK - b) * b;
            let o = Options {
                flush: self.options.flush + gaps,
                ..self.options
            };
            let mut need = self.options.flush.saturating_sub(push.len);
            let extra: Vec<Range> = chunked(&extra(&o, d.size_bytes, block, &taken), b)
                .into_iter()
                .filter_map(|r| {
                    let len = r.len.min(need);
                    need -= len;
                    (len > 0).then_some(Range { len, ..r })
                })
                .collect();
            return (push, extra, samples);
        }
        // A narrowing stage writes its whole flush as it is (nothing to
        // write back), in its turn's region. With a canary (no wrap seen,
        // so nothing aliases) in chunks journalled as they are first
        // written: a flush the canary ends early reads no more originals
        // than it wrote (the emulated 512 KiB cache card read 828 MiB when
        // each stage journalled all 72).
        let start = flush_start(&self.options, self.lap, d.size_bytes, block);
        let mut flush = as_is(start, start + self.options.flush, d.size_bytes, block, &taken);
        if self.canary.is_some() {
            flush = chunked(&flush, b);
        }
        (Range { len: 0, ..push }, flush, samples)
    }

    /// The stage's canary: the one asked for, or in the survey the block
    /// before the card's last ([`survey_canary`]).
    fn canary(&self, d: &TargetDescription) -> Option<Range> {
        let b = BLOCK.max(block_of(d));
        if self.window.is_none() {
            return survey_canary(&self.options, d.size_bytes, block_of(d));
        }
        let at = self.canary.filter(|_| self.flush)?;
        (at.is_multiple_of(b) && at + b <= d.size_bytes).then_some(Range { offset: at, len: b })
    }

    /// Read `ranges` back and check each against its tags.
    fn read_back(&self, t: &mut dyn Target, ranges: &[Range], block: u64) -> Result<Vec<Checked>, MeasureError> {
        let mut out = Vec::with_capacity(ranges.len());
        let mut scratch = Vec::new();
        for group in ranges.chunks(64) {
            let total: u64 = group.iter().map(|r| r.len).sum();
            let mut buf = AlignedBuf::new(total as usize);
            let mut reqs = Vec::with_capacity(group.len());
            let mut at = 0usize;
            for r in group {
                reqs.push(Request::read(r.offset, r.len as u32, at));
                at += r.len as usize;
            }
            let done = t.run(&reqs, 1, &mut buf)?;
            for ((r, req), c) in group.iter().zip(&reqs).zip(&done) {
                let got = &buf.as_slice()[req.buf_offset..req.buf_offset + r.len as usize];
                let (good, bad) = if c.errno.is_some() {
                    (0, Some(Evidence::IoError))
                } else {
                    check(self.options.nonce, r.offset, block, got, &mut scratch)
                };
                out.push(Checked {
                    offset: r.offset,
                    len: r.len,
                    good,
                    bad,
                    before_push: false,
                });
            }
        }
        Ok(out)
    }

    /// The survey tags its dense region (the read probes find a wrap by
    /// those tags); a narrowing stage writes it as it is, like the rest of
    /// the flush, so nothing needs writing back there.
    fn tagged(&self) -> bool {
        self.window.is_none()
    }

    /// The survey's flush within its budget, decided before anything is
    /// journalled: a MiB of the dense region read and written as it is,
    /// timed, prices a MiB of flush. Cut short, the verdict's
    /// `flush_bytes` says how large a cache it could have missed. Returns
    /// the bytes the pricing wrote.
    fn price_flush(&self, t: &mut dyn Target, p: &mut Plan) -> Result<u64, MeasureError> {
        let dense = p.dense;
        let mut priced_bytes = 0;
        if self.window.is_none() && self.flush_budget_ns < u64::MAX && dense.len >= 2 * CHUNK {
            // The second MiB is the one timed: the first opens the AU (a
            // merge elsewhere, perhaps), which the flush pays once.
            let mut probe = AlignedBuf::new(CHUNK as usize);
            let mut before = 0;
            for at in [dense.offset, dense.offset + CHUNK] {
                before = t.device_time_ns();
                crate::targets::run_all(t, &[Request::read(at, CHUNK as u32, 0)], 1, &mut probe)?;
                crate::targets::run_all(t, &[Request::write(at, CHUNK as u32, 0)], 1, &mut probe)?;
                priced_bytes += CHUNK;
            }
            // Three times: the check's read after the restore, and the
            // merges an AU's end brings, which one MiB in the middle of an
            // AU does not pay (an AT91 host with 64 KiB pages took 218
            // device-seconds at twice, when the journal still read each
            // MiB a second time: `Target::rewrite` reads it once now).
            let timed = t.device_time_ns().saturating_sub(before) as f64 / CHUNK as f64;
            p.byte_ns = Some(timed);
            let per_byte = timed * 3.0;
            let affordable = (self.flush_budget_ns as f64 / per_byte.max(1e-9)) as u64;
            let mut room = affordable.saturating_sub(dense.len);
            p.extra.retain(|r| {
                let keep = room >= r.len;
                room = room.saturating_sub(r.len);
                keep
            });
        }
        Ok(priced_bytes)
    }

    /// A sample whose original cannot be read cannot be put back: it is
    /// not written, and counts as bad. Returns those samples, checked.
    /// The survey's canary, a guess, is dropped the same way.
    fn drop_unreadable(&self, t: &mut dyn Target, p: &mut Plan) -> Result<Vec<Checked>, MeasureError> {
        let unreadable: Vec<Checked> = self
            .read_back(t, &p.samples, p.block)?
            .into_iter()
            .filter(|c| c.bad == Some(Evidence::IoError))
            .collect();
        p.samples.retain(|s| !unreadable.iter().any(|u| u.offset == s.offset));
        // Without the last sample's write nothing journals the survey's
        // canary before the samples are written.
        if let Some(c) = p.canary.filter(|_| self.window.is_none()) {
            let mut probe = AlignedBuf::new(c.len as usize);
            let last_gone = unreadable.iter().any(|u| u.offset == c.end());
            if last_gone
                || t.run(&[Request::read(c.offset, c.len as u32, 0)], 1, &mut probe)?[0]
                    .errno
                    .is_some()
            {
                p.canary = None;
            }
        }
        Ok(unreadable)
    }

    /// The samples first, highest first, in one batch, and read back
    /// right away (by the caller), while a cache may still hold them: a
    /// cache smaller than the push's first chunk (1 MiB) was flushed by it
    /// before this read, and called a drop. The batch opens with the first
    /// block of the dense region and of each flush range written with the
    /// bytes it holds, so every declared range is journalled before any
    /// is overwritten: on a card that wraps inside them, a sample lands
    /// on their bytes, and a journal taken later would keep the sample's
    /// tag as the original (a 12 MiB wrap card failed its restore that
    /// way). Returns the samples whose writes the card refused, and the
    /// bytes written.
    fn write_samples(&self, t: &mut dyn Target, p: &Plan) -> Result<(Vec<u64>, u64), MeasureError> {
        let block = p.block;
        let b = BLOCK.max(block);
        // (With a canary no wrap was seen: the flush's ranges are journalled
        // as they are first written. So are the survey's chunks past the
        // dense region: [`Stage::flush`] leaves alone a chunk that holds a
        // block of this run, so no chunk journalled late keeps a sample's
        // tag as its original; and a flush cut short reads none of the
        // rest.)
        let survey = self.window.is_none();
        // (The survey's canary is declared with the last sample, so this
        // batch journals it too.)
        let heads: Vec<Range> = std::iter::once(p.dense)
            .chain(p.extra.iter().copied().filter(|_| !survey))
            .filter(|r| r.len > 0 && (survey || p.canary.is_none()))
            .map(|r| Range { len: b.min(r.len), ..r })
            .collect();
        let head_bytes: u64 = heads.iter().map(|r| r.len).sum();
        let total = p.sample_bytes();
        let mut buf = AlignedBuf::new((head_bytes + total).max(1) as usize);
        let mut reqs = Vec::with_capacity(heads.len() + p.samples.len() + 1);
        let mut at = 0usize;
        for r in &heads {
            crate::targets::run_all(t, &[Request::read(r.offset, r.len as u32, at)], 1, &mut buf)?;
            reqs.push(Request::write(r.offset, r.len as u32, at));
            at += r.len as usize;
        }
        let written = reqs.len();
        for r in p.samples.iter().rev() {
            tag(
                self.options.nonce,
                r.offset,
                block,
                &mut buf.as_mut_slice()[at..at + r.len as usize],
            );
            reqs.push(Request::write(r.offset, r.len as u32, at));
            at += r.len as usize;
        }
        let done = t.run(&reqs, 1, &mut buf)?;
        let refused: Vec<u64> = reqs
            .iter()
            .zip(&done)
            .skip(written)
            .filter(|(_, c)| c.errno.is_some())
            .map(|(r, _)| r.offset)
            .collect();
        Ok((refused, head_bytes + total))
    }

    /// The canary, tagged, after the samples and their first read-back.
    /// Returns the bytes written.
    fn write_canary(&self, t: &mut dyn Target, p: &Plan) -> Result<u64, MeasureError> {
        let Some(c) = p.canary else {
            return Ok(0);
        };
        let mut probe = AlignedBuf::new(BLOCK.max(p.block) as usize);
        tag(self.options.nonce, c.offset, p.block, probe.as_mut_slice());
        crate::targets::run_all(t, &[Request::write(c.offset, c.len as u32, 0)], 1, &mut probe)?;
        Ok(c.len)
    }

    /// The flush, chunk by chunk, then a sync: the survey's dense region
    /// tagged, everything else written with the bytes it holds. Once the
    /// canary is seen to go, it writes on to half again, and `keep` bytes
    /// at least (the part of the dense region the read probes need).
    fn flush(&self, t: &mut dyn Target, progress: &dyn Progress, p: &Plan, keep: u64) -> Result<Flushed, MeasureError> {
        let (block, nonce, canary) = (p.block, self.options.nonce, p.canary);
        let mut probe = AlignedBuf::new(BLOCK.max(block) as usize);
        let tagged = self.tagged();
        let flush: Vec<Range> = std::iter::once(p.dense)
            .chain(p.extra.iter().copied())
            .filter(|r| r.len > 0)
            .collect();
        let planned: u64 = flush.iter().map(|r| r.len).sum();
        let total = p.sample_bytes();
        let work = planned + total + if tagged { p.dense.len } else { 0 };
        let mut chunk = AlignedBuf::new(CHUNK as usize);
        // With a canary (a fresh block known lost, written after the
        // samples and their first read-back): once a cache that lets go in
        // the order it took (first in or least recently used) has let it
        // go, the samples are gone too. The flush ends there, with half
        // again as margin against a cache that lets go in another order,
        // instead of writing all of it at every stage (321 MiB
        // written on a cache card where f3probe wrote 15 MiB).
        // The survey's canary is a guess (the block before the card's
        // last): it ends the flush only once it reads back lost, not once
        // a wrap lays another block's tag over it.
        let mut stop_at = planned;
        let mut flushed = 0;
        let mut evicted = None;
        'flush: for (i, r) in flush.iter().enumerate() {
            let mut off = r.offset;
            while off < r.end() {
                if flushed >= stop_at {
                    break 'flush;
                }
                let as_is = !(i == 0 && tagged);
                progress.advance(total + flushed, work);
                let n = (r.end() - off).min(CHUNK);
                if as_is {
                    // A block of this run here came through a wrap (the
                    // read probes find it): written, its range would be
                    // journalled with the tag as original, so it is left
                    // alone. (A narrowing stage's chunks are journalled
                    // late only with a canary: no wrap was seen.)
                    let not_ours = |bytes: &[u8]| !(tagged && holds_ours(nonce, block, bytes));
                    if !t.rewrite(off, n as u32, &mut chunk, &not_ours)? {
                        off += n;
                        continue;
                    }
                } else {
                    tag(nonce, off, block, &mut chunk.as_mut_slice()[..n as usize]);
                    crate::targets::run_all(t, &[Request::write(off, n as u32, 0)], 1, &mut chunk)?;
                }
                flushed += n;
                off += n;
                if let Some(c) = canary.filter(|_| evicted.is_none()) {
                    let got = t.run(&[Request::read(c.offset, c.len as u32, 0)], 1, &mut probe)?;
                    let gone = got[0].errno.is_some()
                        || match check(nonce, c.offset, block, probe.as_slice(), &mut Vec::new()).1 {
                            Some(Evidence::Foreign { .. }) => !tagged,
                            bad => bad.is_some(),
                        };
                    if gone {
                        evicted = Some(flushed);
                        stop_at = planned.min((flushed + CHUNK + flushed / 2).max(keep));
                    }
                }
            }
        }
        t.sync()?;
        progress.advance(total + flushed, work);
        Ok(Flushed {
            bytes: flushed,
            evicted,
        })
    }

    /// The samples read back after the flush, each with whether it read
    /// back right before it (`early`) and whether the card refused its
    /// write; then the survey's dense region.
    fn check_samples(
        &self,
        t: &mut dyn Target,
        p: &Plan,
        early: &[Checked],
        refused: &[u64],
    ) -> Result<Vec<Checked>, MeasureError> {
        let mut checked = self.read_back(t, &p.samples, p.block)?;
        for (c, e) in checked.iter_mut().zip(early) {
            c.before_push = e.ok();
            if refused.contains(&c.offset) {
                c.good = 0;
                c.bad = Some(Evidence::IoError);
            }
        }
        if self.tagged() {
            let dense = p.dense;
            let dense_blocks: Vec<Range> = (0..dense.len.div_ceil(CHUNK))
                .map(|k| Range {
                    offset: dense.offset + k * CHUNK,
                    len: CHUNK.min(dense.len - k * CHUNK),
                })
                .collect();
            checked.extend(self.read_back(t, &dense_blocks, p.block)?);
        }
        Ok(checked)
    }

    /// The survey's read probes ([`probes`]), refused runs of them
    /// narrowed to the block: the aliases they found, the refused regions
    /// and the reads made.
    fn read_probes(&self, t: &mut dyn Target, size: u64, p: &Plan) -> Result<Probed, MeasureError> {
        let block = p.block;
        let mut aliases = Vec::new();
        let b = BLOCK.max(block);
        let all = probes(p.dense, size, block);
        let mut n_probes = all.len() as u64;
        let ranges: Vec<Range> = all.iter().map(|&a| Range { offset: a, len: b }).collect();
        let mut refusals = Vec::with_capacity(ranges.len());
        for c in self.read_back(t, &ranges, block)? {
            if let Some(Evidence::Foreign { from }) = c.bad {
                aliases.push((c.offset + c.good, from));
            }
            refusals.push((c.offset, c.bad == Some(Evidence::IoError)));
        }
        let (regions, reads) = narrow_refusals(t, &refusals, p.dense.end(), b)?;
        n_probes += reads;
        Ok(Probed {
            aliases,
            probe_errors: regions,
            probes: n_probes,
        })
    }
}

impl crate::measure::Test for Stage {
    const KEY: &'static str = "capacity";
    type Output = StageResult;

    fn plan(&self, d: &TargetDescription) -> Result<Vec<Range>, MeasureError> {
        let block = block_of(d);
        let need = self.options.skip.saturating_add(4 * BLOCK.max(block));
        if d.size_bytes < need {
            return Err(MeasureError::DoesNotFit {
                what: "capacity".into(),
                from: self.options.skip,
                need: 4 * BLOCK.max(block),
                size: d.size_bytes,
                fix: "--skip smaller".into(),
            });
        }
        if !self.options.skip.is_multiple_of(block) || !self.options.push.is_multiple_of(block) {
            return Err(MeasureError::Bad {
                why: format!(
                    "--skip {} and --push {} must be multiples of the {} logical block",
                    Iec(self.options.skip),
                    Iec(self.options.push),
                    Iec(block)
                ),
                fix: "give whole logical blocks".into(),
            });
        }
        let room = (d.size_bytes - self.options.skip) / 2;
        if self.options.push < BLOCK.max(block) || self.options.push > room {
            return Err(MeasureError::Bad {
                why: format!(
                    "--push {} must lie between {} and half the target past --skip ({})",
                    Iec(self.options.push),
                    Iec(BLOCK.max(block)),
                    Iec(room)
                ),
                fix: "give a --push of a few MiB (32M by default)".into(),
            });
        }
        let (d_range, extra, mut s) = self.ranges(d);
        let mut all: Vec<Range> = (d_range.len > 0).then_some(d_range).into_iter().collect();
        all.extend(extra);
        match (self.canary(d), s.last_mut()) {
            // The survey's canary and the last sample, one range
            // ([`survey_canary`]).
            (Some(c), Some(last)) if self.window.is_none() && c.end() == last.offset => {
                last.len += c.len;
                last.offset = c.offset;
            }
            (canary, _) => all.extend(canary),
        }
        all.extend(s);
        Ok(all)
    }

    /// A stage's result is the command's to interpret: the verdict from
    /// all stages is what the run records.
    fn record(_: &StageResult, _: &mut crate::measure::Results) {}

    fn run(&self, cx: &mut crate::measure::Cx<'_>) -> Result<StageResult, MeasureError> {
        let progress = cx.progress;
        let t = &mut *cx.target;
        let d = t.description().clone();
        let (dense, extra, samples) = self.ranges(&d);
        let mut p = Plan {
            dense,
            extra,
            samples,
            canary: self.canary(&d),
            block: block_of(&d),
            byte_ns: None,
        };
        // Every byte written counts, the pricing's too: the run's own line
        // ("65.02 MiB of writes landed ...") and this one agree.
        let priced_bytes = self.price_flush(t, &mut p)?;
        let mut unreadable = self.drop_unreadable(t, &mut p)?;
        let (refused, batch_bytes) = self.write_samples(t, &p)?;
        let before = t.device_time_ns();
        let early = self.read_back(t, &p.samples, p.block)?;
        // A survey sample read back wrong right after its write, which the
        // card took: a cache that lets go in the order it took had let it
        // go after the few KiB written behind it, so the flush past the
        // dense region would only cost time (40 MiB read and written again
        // on a drop fake, where f3probe wrote 1 MiB in all), and of the
        // dense region the read probes need only a part.
        let lost_at_once = self.tagged() && early.iter().any(|c| lost(c) && !refused.contains(&c.offset));
        let probe_ns = t.device_time_ns().saturating_sub(before) as f64 / early.len().max(1) as f64;
        let keep = if self.tagged() {
            cut_dense(p.dense, d.size_bytes, p.byte_ns, probe_ns)
        } else {
            0
        };
        if lost_at_once {
            p.extra.clear();
            p.dense.len = keep;
            p.canary = None;
        }
        let canary_bytes = self.write_canary(t, &p)?;
        let flushed = self.flush(t, progress, &p, keep)?;
        // The survey's canary went: a cache let the samples go too, and the
        // read probes see the dense region as far as it was tagged.
        let cut = match (lost_at_once, flushed.evicted) {
            (true, _) => Some(Cut::LostAtOnce),
            (false, Some(after)) if self.tagged() => {
                p.dense.len = p.dense.len.min(flushed.bytes);
                Some(Cut::LetGo { after })
            }
            (false, _) => None,
        };
        let mut checked = self.check_samples(t, &p, &early, &refused)?;
        checked.append(&mut unreadable);
        let probed = if self.window.is_none() {
            self.read_probes(t, d.size_bytes, &p)?
        } else {
            Probed::default()
        };
        checked.sort_by_key(|c| c.offset);
        Ok(StageResult {
            window: self.window,
            checked,
            aliases: probed.aliases,
            probe_errors: probed.probe_errors,
            probes: probed.probes,
            bytes_written: priced_bytes + batch_bytes + canary_bytes + flushed.bytes,
            reads_only: false,
            canary: p.canary.map(|c| c.offset),
            flushed: flushed.bytes,
            // (The survey's canary is a guess: a genuine card keeps it.)
            unflushed: !self.tagged() && p.canary.is_some() && flushed.evicted.is_none(),
            cut,
        })
    }
}

/// Whether any block of `data` carries a tag of the run `nonce`.
fn holds_ours(nonce: u64, block: u64, data: &[u8]) -> bool {
    data.chunks(block as usize).any(|b| tag::is_ours(nonce, b))
}

/// A block that read back wrong for want of its write: zeros, other
/// data or another address's tag, not a refusal.
fn lost(c: &Checked) -> bool {
    matches!(
        c.bad,
        Some(Evidence::Zeros | Evidence::Other | Evidence::Foreign { .. })
    )
}

/// A stage's blocks as its run writes them ([`Stage::ranges`]), less the
/// samples whose originals cannot be read.
struct Plan {
    dense: Range,
    extra: Vec<Range>,
    samples: Vec<Range>,
    canary: Option<Range>,
    block: u64,
    /// Device-ns a byte of the dense region took to read and write as it
    /// is, where [`Stage::price_flush`] timed it.
    byte_ns: Option<f64>,
}

impl Plan {
    fn sample_bytes(&self) -> u64 {
        self.samples.iter().map(|r| r.len).sum()
    }
}

/// What a stage's flush did ([`Stage::flush`]).
struct Flushed {
    bytes: u64,
    /// The bytes flushed when the canary was seen to go.
    evicted: Option<u64>,
}

/// What the survey's read probes found.
#[derive(Default)]
struct Probed {
    /// (where read, the address the tag names).
    aliases: Vec<(u64, u64)>,
    /// Refused regions as (offset, length).
    probe_errors: Vec<(u64, u64)>,
    /// Reads made, the narrowing's included.
    probes: u64,
}
