//! The preserving target: what every writing test is handed. It is itself a
//! [`Target`], wrapping the real or simulated one, so a test cannot reach the
//! device any other way: each declared range's original bytes go to the
//! journal, durably, just before the first write to that range; a write
//! outside the declared ranges is refused before any I/O; once Ctrl-C or
//! SIGTERM is pending, the next write is refused so the caller can restore.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use super::journal::{CHUNK, Header, Journal, Writer};
use super::ranges::Range;
use super::registry::Registry;
use super::signals::{self, crash_point};
use super::{Outcome, SafetyError};
use crate::targets::{AlignedBuf, Completions, Op, Request, Target, TargetDescription, TargetError};

mod written;

/// A target that journals before it writes. Reads pass straight through.
pub struct PreservingTarget<'a> {
    inner: Box<dyn Target + 'a>,
    /// Reads the originals and verifies the restore (see
    /// [`Target::independent_reader`]).
    reader: Option<Box<dyn Target>>,
    ranges: Vec<Range>,
    /// Which declared ranges a write has touched: only those are journalled
    /// and restored.
    touched: Vec<bool>,
    journal: Option<Writer>,
    /// Where each journalled chunk's original bytes are, by the chunk's
    /// device offset: in the journal file, or (a simulated card) here.
    originals: BTreeMap<u64, Original>,
    /// Chunks a write gave bytes other than their originals: only those
    /// are written back. A test that writes a chunk's own bytes back (open-au
    /// times writes, not contents) leaves nothing to restore there.
    changed: BTreeSet<u64>,
    /// A block of each write that changed bytes, to know it again in an
    /// original read later (a target that wraps: [`written`]).
    written: written::Written,
    bytes_written: u64,
    /// Device time the journal's reads took through `inner` (see
    /// [`Target::own_time_ns`]).
    own_ns: u64,
    /// Originals kept in memory ([`PreservingTarget::in_memory`]).
    in_memory: bool,
    /// What stops the test at its next request (see
    /// [`PreservingTarget::stopping_on`]).
    stop: signals::Stop,
}

/// One journalled chunk's original bytes.
enum Original {
    /// At this position of the journal file.
    InJournal { at: u64, len: u32 },
    /// Kept in memory (a simulated card, whose restore costs the device
    /// time it would on a card, though nothing real is at stake).
    InMemory(Vec<u8>),
    /// Kept in memory as one byte, every byte of the chunk being it: what a
    /// simulated card reads where nothing was written. A random write over
    /// a large area journals a new piece for nearly every request, and
    /// kept whole (a MiB a chunk) 1 device-second of them took 24 GB.
    Uniform { byte: u8, len: u32 },
}

impl Original {
    fn len(&self) -> u64 {
        match self {
            Original::InJournal { len, .. } => u64::from(*len),
            Original::InMemory(v) => v.len() as u64,
            Original::Uniform { len, .. } => u64::from(*len),
        }
    }

    /// Whether `data` is what an original kept in memory holds from its
    /// byte `at` on (one in the journal file is read from there instead:
    /// false).
    fn kept_holds(&self, at: usize, data: &[u8]) -> bool {
        match self {
            Original::InMemory(v) => v.get(at..at + data.len()) == Some(data),
            Original::Uniform { byte, .. } => data.iter().all(|b| b == byte),
            Original::InJournal { .. } => false,
        }
    }
}

fn journal_error(e: SafetyError) -> TargetError {
    match e {
        SafetyError::Target(t) => t,
        other @ (SafetyError::BadRange { .. }
        | SafetyError::PastEnd { .. }
        | SafetyError::JournalDir { .. }
        | SafetyError::Registry { .. }
        | SafetyError::Journal { .. }
        | SafetyError::NotAJournal { .. }
        | SafetyError::NotYours { .. }
        | SafetyError::Corrupt { .. }
        | SafetyError::IdentityMismatch { .. }
        | SafetyError::VerifyFailed { .. }
        | SafetyError::InUse { .. }
        | SafetyError::Live { .. }) => TargetError::Journal(other.to_string()),
    }
}

impl<'a> PreservingTarget<'a> {
    /// Wrap `inner` for a test that may write `ranges`; they are normalised
    /// here (sorted, merged, aligned, inside the target), so a caller's plan in
    /// any order is enforced as written. With `journal`, a journal is created in
    /// the directory with the header (durable before returning, its entry in
    /// the registry first); without, the ranges are only enforced
    /// (`--no-preserve`, or a simulated card).
    pub fn new(
        inner: Box<dyn Target + 'a>,
        ranges: Vec<Range>,
        journal: Option<(&Path, Header, Registry)>,
    ) -> Result<Self, SafetyError> {
        let d = inner.description();
        let block = u64::from(d.logical_block_size.max(1));
        let ranges = super::ranges::normalize(ranges, d.size_bytes, block)?;
        let journal = match journal {
            None => None,
            Some((dir, header, registry)) => Some(Writer::create(dir, &header, registry)?),
        };
        let reader = if journal.is_some() {
            inner.independent_reader()
        } else {
            None
        };
        Ok(PreservingTarget {
            touched: vec![false; ranges.len()],
            ranges,
            journal,
            reader,
            inner,
            originals: BTreeMap::new(),
            changed: BTreeSet::new(),
            written: written::Written::default(),
            bytes_written: 0,
            own_ns: 0,
            in_memory: false,
            stop: signals::Stop::default(),
        })
    }

    /// Stop at the next request when `stop` says (its run's own stop, or a
    /// signal to the process); without it, on a signal alone.
    pub fn stopping_on(mut self, stop: signals::Stop) -> Self {
        self.stop = stop;
        self
    }

    /// A preserving target over a simulated card: the originals are kept in
    /// memory and written back at the end, as a journal's would be, so a
    /// step's device time includes its restore.
    pub fn in_memory(inner: Box<dyn Target + 'a>, ranges: Vec<Range>) -> Result<Self, SafetyError> {
        let mut p = Self::new(inner, ranges, None)?;
        p.in_memory = true;
        Ok(p)
    }

    /// Device time of the independent reader (the journal's reads of
    /// originals, then the restore's checks), from 0 when it was opened.
    fn reader_ns(&self) -> u64 {
        self.reader.as_ref().map_or(0, |r| r.device_time_ns())
    }

    pub fn journal_path(&self) -> Option<&Path> {
        self.journal.as_ref().map(|w| w.path.as_path())
    }

    pub fn ranges(&self) -> &[Range] {
        &self.ranges
    }

    /// The declared ranges a write covers, by binary search (ranges are
    /// sorted and disjoint; a write may run on across ranges that touch),
    /// or None when any of its bytes lies outside them.
    fn ranges_of(&self, offset: u64, len: u64) -> Option<std::ops::Range<usize>> {
        let first = self.ranges.partition_point(|r| r.end() <= offset);
        let end = offset.checked_add(len)?;
        if len == 0 {
            return self
                .ranges
                .get(first)
                .filter(|r| r.contains(offset, 0))
                .map(|_| first..first);
        }
        let (mut i, mut covered) = (first, offset);
        while i < self.ranges.len() && self.ranges[i].offset <= covered && covered < end {
            covered = self.ranges[i].end();
            i += 1;
        }
        (covered >= end).then_some(first..i)
    }

    /// Copy range `i`'s original bytes into the journal, read through the
    /// independent reader.
    fn journal_range(&mut self, i: usize) -> Result<(), SafetyError> {
        if self.journal.is_none() && !self.in_memory {
            return Ok(());
        }
        let r = self.ranges[i];
        let mut buf = AlignedBuf::new(CHUNK.min(r.len as usize));
        let mut off = r.offset;
        while off < r.end() {
            let n = (r.end() - off).min(CHUNK as u64) as u32;
            self.read_original(off, n, &mut buf)?;
            if let Some((at, other)) = self.written.found_in(off, &buf.as_slice()[..n as usize]) {
                let seen = &buf.as_slice()[(at - off) as usize..(at - off + written::BLOCK) as usize];
                if self.one_place(other, at, seen)? {
                    return Err(SafetyError::Target(TargetError::Aliased { offset: at, other }));
                }
            }
            crash_point("journal record");
            self.keep_original(off, &buf.as_slice()[..n as usize])?;
            off += u64::from(n);
        }
        Ok(())
    }

    /// Whether `at` is the same bytes as `other`, a block this run wrote
    /// and journalled that `at` reads back as `seen`: other bytes (`seen`
    /// inverted) written at `other` are read back at `at`. `other`'s chunk
    /// is already changed, so the restore writes its original back.
    fn one_place(&mut self, other: u64, at: u64, seen: &[u8]) -> Result<bool, SafetyError> {
        let mut probe = AlignedBuf::new(seen.len());
        for (p, s) in probe.as_mut_slice().iter_mut().zip(seen) {
            *p = !s;
        }
        let write = [Request::write(other, seen.len() as u32, 0)];
        crate::targets::first_failure(&write, &self.inner.run(&write, 1, &mut probe)?)?;
        let mut back = AlignedBuf::new(seen.len());
        self.read_original(at, seen.len() as u32, &mut back)?;
        Ok(back.as_slice() == probe.as_slice())
    }

    /// Read `len` bytes at `offset` into `buf` as every original is read:
    /// through the independent reader where there is one.
    fn read_original(&mut self, offset: u64, len: u32, buf: &mut AlignedBuf) -> Result<(), TargetError> {
        let read = [Request::read(offset, len, 0)];
        let done = match self.reader.as_mut() {
            Some(reader) => reader.run(&read, 1, buf)?,
            None => self.inner.run(&read, 1, buf)?,
        };
        crate::targets::first_failure(&read, &done)
    }

    /// Keep `bytes` as the original at `off`: in the journal, or in memory.
    fn keep_original(&mut self, off: u64, bytes: &[u8]) -> Result<(), SafetyError> {
        let len = bytes.len() as u32;
        let original = match self.journal.as_mut() {
            Some(w) => Original::InJournal {
                at: w.record(off, bytes)?,
                len,
            },
            None => match bytes.split_first() {
                Some((&byte, rest)) if rest.iter().all(|&b| b == byte) => Original::Uniform { byte, len },
                _ => Original::InMemory(bytes.to_vec()),
            },
        };
        self.originals.insert(off, original);
        Ok(())
    }

    /// The declared range that is exactly `len` bytes at `offset`, where
    /// no write has touched it yet and its original is to be kept.
    fn untouched_range(&self, offset: u64, len: u32) -> Option<usize> {
        let i = self.ranges.partition_point(|r| r.end() <= offset);
        let r = self.ranges.get(i)?;
        let exact = r.offset == offset && r.len == u64::from(len) && len as usize <= CHUNK;
        (exact && !self.touched[i] && (self.journal.is_some() || self.in_memory)).then_some(i)
    }

    /// Put the original bytes back, verify them through the independent
    /// reader against the journal's checksums, delete the journal, and hand
    /// the inner target back. On failure the journal is kept for
    /// `flashlab restore`.
    pub fn finish(mut self) -> (Box<dyn Target + 'a>, Result<Outcome, SafetyError>) {
        let result = self.restore();
        (self.inner, result)
    }

    /// Note the chunks `r` (a write, its data in `buf`) gives other bytes
    /// than their originals.
    fn note_changes(&mut self, r: &Request, buf: &AlignedBuf) -> Result<(), SafetyError> {
        let (a, b) = (r.offset, r.offset + u64::from(r.len));
        let data = &buf.as_slice()[r.buf_offset..r.buf_offset + r.len as usize];
        let mut scratch = Vec::new();
        for (&start, original) in self.originals.range(..b).rev() {
            let end = start + original.len();
            if end <= a {
                break;
            }
            if self.changed.contains(&start) {
                continue;
            }
            let (from, to) = (a.max(start), b.min(end));
            let new = &data[(from - a) as usize..(to - a) as usize];
            let same = match original {
                Original::InJournal { at, .. } => {
                    scratch.resize((to - from) as usize, 0);
                    let w = self.journal.as_ref().expect("journalled chunks have a journal");
                    w.read_original(at + (from - start), &mut scratch)?;
                    new == &scratch[..]
                }
                Original::InMemory(_) | Original::Uniform { .. } => original.kept_holds((from - start) as usize, new),
            };
            if !same {
                self.changed.insert(start);
                // The write's first whole block, where it lies in this
                // chunk and changed.
                if let Some(k) = written::first_block(a, b - a).filter(|&k| from <= k && k + written::BLOCK <= to) {
                    let at = (k - from) as usize..(k - from + written::BLOCK) as usize;
                    let block = &new[at.clone()];
                    let was = match original {
                        Original::InJournal { .. } => &scratch[at] != block,
                        Original::InMemory(_) | Original::Uniform { .. } => {
                            !original.kept_holds((k - start) as usize, block)
                        }
                    };
                    if was {
                        self.written.note(block, k);
                    }
                }
            }
        }
        Ok(())
    }

    /// Write the in-memory originals of the changed chunks back and read
    /// each back to check it; then read the chunks written with their own
    /// bytes back too, and write back any that differ, as the journal's
    /// restore does (so a simulated card pays the read-back a real one
    /// does: an open-au run journals three times what it changes).
    /// The bytes written back, and the bytes read back.
    fn restore_memory(&mut self) -> Result<(u64, u64), SafetyError> {
        let changed: Vec<u64> = self.changed.iter().copied().collect();
        let mut restored = self.write_back(&changed)?;
        let mut checked = 0;
        let mut differ = Vec::new();
        let unchanged: Vec<(u64, u32)> = self
            .originals
            .iter()
            .filter(|(start, o)| !self.changed.contains(start) && !matches!(o, Original::InJournal { .. }))
            .map(|(&start, o)| (start, o.len() as u32))
            .collect();
        // One buffer for every read-back: a chunk is at most CHUNK bytes.
        let mut buf = AlignedBuf::new(CHUNK);
        for (start, len) in unchanged {
            if !self.holds_original(start, len, &mut buf)? {
                differ.push(start);
            }
            checked += u64::from(len);
        }
        restored += self.write_back(&differ)?;
        Ok((restored, restored + checked))
    }

    /// Write the in-memory originals of the chunks at `starts` back, and
    /// read each back to check it; the bytes written.
    fn write_back(&mut self, starts: &[u64]) -> Result<u64, SafetyError> {
        let mut restored = 0;
        for &start in starts {
            let mut buf = match self.originals.get(&start) {
                Some(Original::InMemory(bytes)) => {
                    let mut buf = AlignedBuf::new(bytes.len());
                    buf.as_mut_slice().copy_from_slice(bytes);
                    buf
                }
                Some(&Original::Uniform { byte, len }) => {
                    let mut buf = AlignedBuf::new(len as usize);
                    buf.as_mut_slice().fill(byte);
                    buf
                }
                Some(Original::InJournal { .. }) | None => continue,
            };
            let len = buf.as_slice().len();
            super::run_batch(
                self.inner.as_mut(),
                &[Request::write(start, len as u32, 0)],
                1,
                &mut buf,
            )?;
            if !self.holds_original(start, len as u32, &mut buf)? {
                return Err(SafetyError::VerifyFailed {
                    offset: start,
                    len: len as u64,
                });
            }
            restored += len as u64;
        }
        Ok(restored)
    }

    /// Read `len` bytes at `start` back into `buf` and say whether they are
    /// the original kept in memory (always, on a card that keeps no data:
    /// nothing there can be checked by content).
    fn holds_original(&mut self, start: u64, len: u32, buf: &mut AlignedBuf) -> Result<bool, SafetyError> {
        super::run_batch(self.inner.as_mut(), &[Request::read(start, len, 0)], 1, buf)?;
        let back = &buf.as_slice()[..len as usize];
        Ok(!self.inner.keeps_data() || self.originals.get(&start).is_some_and(|o| o.kept_holds(0, back)))
    }

    fn restore(&mut self) -> Result<Outcome, SafetyError> {
        let mut out = Outcome {
            ranges: self.ranges.clone(),
            preserved: self.journal.is_some(),
            journal: self.journal.as_ref().map(|w| w.path.display().to_string()),
            bytes_written: self.bytes_written,
            ranges_touched: self.touched.iter().filter(|t| **t).count(),
            bytes_restored: 0,
            bytes_verified: 0,
            restore_bytes_per_sec: None,
            restore_write_bytes_per_sec: None,
            verify_device_ns: 0,
        };
        self.inner.sync()?;
        // The journal is read back through the writer's own descriptor, so
        // its lock stays held until the journal is gone, and a run at its
        // descriptor limit still restores.
        if let Some(w) = self.journal.take() {
            let j = Journal::from_writer(w)?;
            let reader = self.reader.as_mut().map(|r| r.as_mut() as &mut dyn Target);
            let changed = &self.changed;
            let mut done = j.restore_where(self.inner.as_mut(), reader, &|off| changed.contains(&off))?;
            // The chunks written with their own bytes are read back too: a
            // card that garbled one gets it back from the journal.
            let (differ, checked) = {
                let r = match self.reader.as_mut() {
                    Some(r) => r.as_mut() as &mut dyn Target,
                    None => self.inner.as_mut(),
                };
                j.differing(r, &|off| !changed.contains(&off))?
            };
            if !differ.is_empty() {
                let reader = self.reader.as_mut().map(|r| r.as_mut() as &mut dyn Target);
                let again = j.restore_where(self.inner.as_mut(), reader, &|off| differ.contains(&off))?;
                done.bytes += again.bytes;
            }
            out.bytes_restored = done.bytes;
            out.bytes_verified = done.bytes + checked;
            out.restore_bytes_per_sec = done.bytes_per_sec();
            out.restore_write_bytes_per_sec = done.write_bytes_per_sec();
            j.delete()?;
        }
        if self.in_memory {
            (out.bytes_restored, out.bytes_verified) = self.restore_memory()?;
        }
        out.verify_device_ns = self.reader_ns();
        Ok(out)
    }
}

impl Target for PreservingTarget<'_> {
    fn description(&self) -> &TargetDescription {
        self.inner.description()
    }

    /// Run a batch, refusing the whole batch before any I/O if one write lies
    /// outside the declared ranges or a signal is pending (reads too); ranges written for
    /// the first time are journalled and committed first.
    fn run(&mut self, requests: &[Request], queue_depth: usize, buf: &mut AlignedBuf) -> Completions {
        let mut bytes = 0;
        let mut first = Vec::new();
        for r in requests.iter().filter(|r| r.op == Op::Write) {
            let Some(covered) = self.ranges_of(r.offset, r.len.into()) else {
                return Err(TargetError::Undeclared {
                    offset: r.offset,
                    len: r.len.into(),
                });
            };
            first.extend(covered.filter(|&i| !self.touched[i]));
            bytes += u64::from(r.len);
        }
        // Sorted rather than searched as they come: a batch of random
        // writes (65536 requests) may each be the first to its range.
        first.sort_unstable();
        first.dedup();
        // Reads stop too: Ctrl-C during a test's reads (bench's read
        // tests) went on reading for seconds before its next write.
        if let Some(signal) = self.stop.pending() {
            return Err(TargetError::Interrupted { signal });
        }
        if !first.is_empty() {
            let before = self.inner.device_time_ns();
            for &i in &first {
                self.journal_range(i).map_err(journal_error)?;
            }
            self.own_ns += self.inner.device_time_ns().saturating_sub(before);
            if let Some(w) = self.journal.as_mut() {
                w.commit().map_err(journal_error)?;
            }
            // Marked before the batch runs: a batch that fails half-way may
            // still have written some of its requests.
            for i in first {
                self.touched[i] = true;
            }
        }
        // Before the batch runs, for the same reason.
        for r in requests.iter().filter(|r| r.op == Op::Write) {
            self.note_changes(r, buf).map_err(journal_error)?;
        }
        if bytes > 0 {
            crash_point("device write");
        }
        let done = self.inner.run(requests, queue_depth, buf)?;
        self.bytes_written += bytes;
        Ok(done)
    }

    /// The device's time, the journal's reads of originals through the
    /// independent reader included: a step's budget counts them, as it does
    /// on a simulated card, whose originals are read through the card
    /// itself. Uncounted, the real path's open-au swept on within its
    /// budget where the simulator had stopped (22 counts against 10 on a
    /// 32 MiB-AU card behind at91-mci) and then read back 184 MiB: 1.19x
    /// the simulator's device time (scripts/probe-vs-emulate.sh).
    fn device_time_ns(&self) -> u64 {
        self.inner.device_time_ns() + self.reader_ns()
    }

    fn own_time_ns(&self) -> u64 {
        self.own_ns + self.inner.own_time_ns() + self.reader_ns()
    }

    fn sync(&mut self) -> Result<(), TargetError> {
        self.inner.sync()
    }

    fn independent_reader(&self) -> Option<Box<dyn Target>> {
        self.inner.independent_reader()
    }

    fn engines_used(&self) -> Vec<crate::targets::real::EngineChoice> {
        self.inner.engines_used()
    }

    fn keeps_data(&self) -> bool {
        self.inner.keeps_data()
    }

    /// Bytes that are exactly one declared range no write has touched
    /// yet are read once, through the independent reader as every
    /// original is, and journalled (durably, before the write) from that
    /// read; the caller's read and the journal's were two. Written back
    /// through the target's own engine, so the restore's check reads what
    /// that engine wrote. Bytes `keep` refuses are journalled nowhere and
    /// the range stays untouched. Anything else reads and writes through
    /// [`Target::run`], journalled there.
    fn rewrite(
        &mut self,
        offset: u64,
        len: u32,
        buf: &mut AlignedBuf,
        keep: &dyn Fn(&[u8]) -> bool,
    ) -> Result<bool, TargetError> {
        let Some(i) = self.untouched_range(offset, len) else {
            return crate::targets::rewrite_through(self, offset, len, buf, keep);
        };
        if let Some(signal) = self.stop.pending() {
            return Err(TargetError::Interrupted { signal });
        }
        self.read_original(offset, len, buf)?;
        let bytes = &buf.as_slice()[..len as usize];
        if !keep(bytes) {
            return Ok(false);
        }
        crash_point("journal record");
        self.keep_original(offset, bytes).map_err(journal_error)?;
        if let Some(w) = self.journal.as_mut() {
            w.commit().map_err(journal_error)?;
        }
        // Marked before the write, as a batch's ranges are; the bytes are
        // their own original, so nothing is noted as changed.
        self.touched[i] = true;
        crash_point("device write");
        let write = [Request::write(offset, len, 0)];
        crate::targets::first_failure(&write, &self.inner.run(&write, 1, buf)?)?;
        self.bytes_written += u64::from(len);
        Ok(true)
    }
}

/// A preserving target over `t` with a journal in `dir` and its registry
/// entry in `reg`, as a run makes one: for tests here and in the tests'
/// own folders.
#[cfg(test)]
pub(crate) fn journalled<'a>(
    t: Box<dyn Target + 'a>,
    spec: &str,
    ranges: Vec<Range>,
    dir: &Path,
    reg: &Path,
) -> PreservingTarget<'a> {
    let header = Header {
        target: spec.into(),
        size_bytes: t.description().size_bytes,
        identity: super::identity::Identity::default(),
        created_unix: 0,
        created_ns: 0,
        sequence: 0,
        pid: 0,
        ranges: ranges.iter().map(|r| [r.offset, r.len]).collect(),
        total_bytes: ranges.iter().map(|r| r.len).sum(),
    };
    PreservingTarget::new(t, ranges, Some((dir, header, super::registry::Registry::at(reg)))).unwrap()
}

#[cfg(test)]
mod tests;
