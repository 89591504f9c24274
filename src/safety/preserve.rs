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
            let req = Request::read(off, n, 0);
            match self.reader.as_mut() {
                Some(reader) => super::run_batch(reader.as_mut(), &[req], 1, &mut buf)?,
                None => super::run_batch(self.inner.as_mut(), &[req], 1, &mut buf)?,
            };
            crash_point("journal record");
            let bytes = &buf.as_slice()[..n as usize];
            let original = match self.journal.as_mut() {
                Some(w) => Original::InJournal {
                    at: w.record(off, bytes)?,
                    len: n,
                },
                None => match bytes.split_first() {
                    Some((&byte, rest)) if rest.iter().all(|&b| b == byte) => Original::Uniform { byte, len: n },
                    _ => Original::InMemory(bytes.to_vec()),
                },
            };
            self.originals.insert(off, original);
            off += u64::from(n);
        }
        Ok(())
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
mod tests {
    use super::*;
    use crate::sim::SimTarget;

    fn fill(t: &mut dyn Target, off: u64, len: u64, byte: u8) {
        let mut buf = AlignedBuf::new(len as usize);
        buf.as_mut_slice().fill(byte);
        t.run(&[Request::write(off, len as u32, 0)], 1, &mut buf).unwrap();
    }

    fn read(t: &mut dyn Target, off: u64, len: u64) -> Vec<u8> {
        let mut buf = AlignedBuf::new(len as usize);
        t.run(&[Request::read(off, len as u32, 0)], 1, &mut buf).unwrap();
        buf.as_slice().to_vec()
    }

    #[test]
    fn ranges_that_touch_stay_apart_and_a_write_may_run_across_them() {
        let mut t = SimTarget::from_spec("sim:demo,capacity=64M,open_aus_random=4").unwrap();
        fill(&mut t, 0, 4 << 20, 0x33);
        let r = |offset: u64| Range { offset, len: 1 << 20 };
        // Three pieces that touch, and one past a gap.
        let ranges =
            crate::safety::ranges::normalize(vec![r(0), r(1 << 20), r(2 << 20), r(4 << 20)], 64 << 20, 512).unwrap();
        assert_eq!(ranges.len(), 4, "touching pieces are not merged");
        let mut p = PreservingTarget::in_memory(Box::new(t), ranges).unwrap();
        let mut buf = AlignedBuf::new(8192);
        buf.as_mut_slice().fill(0xee);
        // Across the first two pieces: both journalled, the third not.
        p.run(&[Request::write((1 << 20) - 4096, 8192, 0)], 1, &mut buf)
            .unwrap();
        assert_eq!(p.touched, [true, true, false, false]);
        // Across the gap between the third piece and the fourth: refused.
        assert!(matches!(
            p.run(&[Request::write((3 << 20) - 4096, 8192, 0)], 1, &mut buf),
            Err(TargetError::Undeclared { .. })
        ));
        assert_eq!(
            p.touched,
            [true, true, false, false],
            "nothing journalled for a refused write"
        );
        let (mut t, out) = p.finish();
        let out = out.unwrap();
        assert_eq!(out.ranges_touched, 2);
        assert_eq!(out.bytes_restored, 2 << 20, "the two chunks the write changed");
        assert!(read(t.as_mut(), 0, 4 << 20).iter().all(|&b| b == 0x33));
    }

    #[test]
    fn only_the_ranges_a_test_wrote_are_written_back() {
        let mut t = SimTarget::from_spec("sim:demo,capacity=64M,open_aus_random=4").unwrap();
        let ranges = vec![
            Range {
                offset: 1 << 20,
                len: 1 << 20,
            },
            Range {
                offset: 4 << 20,
                len: 2 << 20,
            },
        ];
        fill(&mut t, 1 << 20, 1 << 20, 0x11);
        fill(&mut t, 4 << 20, 2 << 20, 0x22);
        let dir = tempfile::tempdir().unwrap();
        let reg = tempfile::tempdir().unwrap();
        let mut p = super::journalled(Box::new(t), "sim:demo", ranges, dir.path(), reg.path());
        let mut buf = AlignedBuf::new(8192);
        buf.as_mut_slice().fill(0xee);
        p.run(&[Request::write((5 << 20) + 8192, 8192, 0)], 1, &mut buf)
            .unwrap();
        assert!(matches!(
            p.run(&[Request::read(0, 4096, 0), Request::write(3 << 20, 4096, 0)], 1, &mut buf),
            Err(TargetError::Undeclared { offset, .. }) if offset == 3 << 20
        ));
        assert!(
            p.run(&[Request::write((6 << 20) - 4096, 8192, 0)], 1, &mut buf)
                .is_err(),
            "a write straddling a range's end"
        );
        let (mut t, out) = p.finish();
        let out = out.unwrap();
        assert_eq!(out.bytes_written, 8192);
        assert_eq!(
            out.bytes_restored,
            1 << 20,
            "the untouched first range, and the chunk of the second no write changed, are not rewritten"
        );
        assert!(read(t.as_mut(), 1 << 20, 1 << 20).iter().all(|&b| b == 0x11));
        assert!(read(t.as_mut(), 4 << 20, 2 << 20).iter().all(|&b| b == 0x22));
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0, "journal deleted");
    }

    /// A real target journals and verifies through an independent reader,
    /// on that reader's clock: the test's clock counts the journal's reads,
    /// and the outcome carries the reader's whole time, so the run counts it
    /// as device time (the target handed back never saw it).
    #[test]
    fn the_restores_read_back_is_device_time_the_outcome_carries() {
        use crate::targets::real::{EngineChoice, OpenOptions, RealTarget};
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("card.img");
        std::fs::write(&path, vec![0x33u8; 4 << 20]).unwrap();
        let opts = OpenOptions {
            write: true,
            exclusive: false,
            engine: EngineChoice::Psync,
        };
        let t = RealTarget::open(&path, "card.img", opts).unwrap();
        let ranges = vec![Range {
            offset: 1 << 20,
            len: 2 << 20,
        }];
        let journals = tempfile::tempdir().unwrap();
        let reg = tempfile::tempdir().unwrap();
        let mut p = super::journalled(Box::new(t), "card.img", ranges, journals.path(), reg.path());
        let mut buf = AlignedBuf::new(2 << 20);
        buf.as_mut_slice().fill(0xee);
        p.run(&[Request::write(1 << 20, 2 << 20, 0)], 1, &mut buf).unwrap();
        // The journal read the originals through the reader: the test's
        // clock (what its budget is checked against) counts them, and marks
        // them the layer's own, as a simulated card's in-memory journal does.
        let (journalled, total) = (p.reader_ns(), p.device_time_ns());
        assert!(journalled > 0 && total > journalled, "{journalled} of {total}");
        assert_eq!(p.own_time_ns(), journalled);
        let (_, out) = p.finish();
        let out = out.unwrap();
        assert_eq!((out.bytes_restored, out.bytes_verified), (2 << 20, 2 << 20));
        assert!(out.verify_device_ns > journalled, "{out:?}");
        assert!(std::fs::read(&path).unwrap().iter().all(|&b| b == 0x33));
    }

    /// A target stopping on its run's stop refuses the next request once
    /// that stop is given, and one with a stop of its own goes on; what it
    /// wrote goes back either way.
    #[test]
    fn a_stop_given_ends_its_own_target_alone() {
        let ranges = || {
            vec![Range {
                offset: 1 << 20,
                len: 1 << 20,
            }]
        };
        let card = || Box::new(SimTarget::from_spec("sim:demo,capacity=64M,open_aus_random=4").unwrap());
        let stop = signals::Stop::default();
        let mut mine = PreservingTarget::in_memory(card(), ranges())
            .unwrap()
            .stopping_on(stop.clone());
        let mut other = PreservingTarget::in_memory(card(), ranges())
            .unwrap()
            .stopping_on(signals::Stop::default());
        let mut buf = AlignedBuf::new(4096);
        buf.as_mut_slice().fill(0x77);
        mine.run(&[Request::write(1 << 20, 4096, 0)], 1, &mut buf).unwrap();
        stop.stop(libc::SIGINT);
        assert!(matches!(
            mine.run(&[Request::write((1 << 20) + 4096, 4096, 0)], 1, &mut buf),
            Err(TargetError::Interrupted { signal }) if signal == libc::SIGINT
        ));
        other.run(&[Request::write(1 << 20, 4096, 0)], 1, &mut buf).unwrap();
        for p in [mine, other] {
            let (mut t, out) = p.finish();
            assert_eq!(out.unwrap().bytes_restored, 1 << 20);
            assert!(read(t.as_mut(), 1 << 20, 4096).iter().all(|&b| b != 0x77));
        }
    }

    /// A write of a chunk's own bytes changes nothing: nothing is written
    /// back there; a write of other bytes is, in memory as from a journal.
    #[test]
    fn chunks_written_with_their_own_bytes_are_not_written_back() {
        let mut t = SimTarget::from_spec("sim:demo,capacity=64M,open_aus_random=4").unwrap();
        fill(&mut t, 8 << 20, 2 << 20, 0x5a);
        let ranges = vec![Range {
            offset: 8 << 20,
            len: 2 << 20,
        }];
        let mut p = PreservingTarget::in_memory(Box::new(t), ranges).unwrap();
        let mut buf = AlignedBuf::new(4096);
        buf.as_mut_slice().fill(0x5a);
        p.run(&[Request::write(8 << 20, 4096, 0)], 1, &mut buf).unwrap();
        buf.as_mut_slice()[17] = 0;
        p.run(&[Request::write((9 << 20) + 4096, 4096, 0)], 1, &mut buf)
            .unwrap();
        let before = p.device_time_ns();
        let (mut t, out) = p.finish();
        let out = out.unwrap();
        assert_eq!(out.bytes_written, 8192);
        assert_eq!(out.bytes_restored, 1 << 20, "only the second chunk");
        assert_eq!(
            out.bytes_verified,
            2 << 20,
            "the chunk written with its own bytes is read back too, as from a journal"
        );
        assert!(t.device_time_ns() > before, "the restore costs device time");
        assert!(read(t.as_mut(), 8 << 20, 2 << 20).iter().all(|&b| b == 0x5a));
    }

    /// Originals of one repeated byte (what a simulated card reads where
    /// nothing was written) are kept as that byte, others whole; both are
    /// written back and checked. A random write over 64 pieces kept 256
    /// MiB of erased bytes before.
    #[test]
    fn uniform_originals_are_kept_as_one_byte() {
        let mut t = SimTarget::from_spec("sim:demo,capacity=1P").unwrap();
        let mut buf = AlignedBuf::new(1 << 20);
        for (i, b) in buf.as_mut_slice().iter_mut().enumerate() {
            *b = (i % 251) as u8;
        }
        t.run(&[Request::write(1 << 44, 1 << 20, 0)], 1, &mut buf).unwrap();
        let pattern = buf.as_slice().to_vec();
        let erased = read(&mut t, 2 << 44, 4096);
        let ranges: Vec<Range> = (0..64)
            .map(|i| Range {
                offset: i << 44,
                len: 4 << 20,
            })
            .collect();
        let mut p = PreservingTarget::in_memory(Box::new(t), ranges).unwrap();
        buf.as_mut_slice().fill(0xee);
        let writes: Vec<Request> = (0..64).map(|i| Request::write(i << 44, 4096, 0)).collect();
        p.run(&writes, 1, &mut buf).unwrap();
        assert_eq!(p.originals.len(), 64 * 4, "every chunk of every piece journalled");
        let kept: usize = p
            .originals
            .values()
            .map(|o| match o {
                Original::InMemory(v) => v.len(),
                Original::Uniform { .. } | Original::InJournal { .. } => 0,
            })
            .sum();
        assert_eq!(kept, 1 << 20, "only the chunk that held a pattern is kept whole");
        let (mut t, out) = p.finish();
        assert_eq!(
            out.unwrap().bytes_restored,
            64 << 20,
            "the 64 chunks the writes changed"
        );
        assert_eq!(read(t.as_mut(), 1 << 44, 1 << 20), pattern);
        assert_eq!(read(t.as_mut(), 2 << 44, 4096), erased);
    }
}
