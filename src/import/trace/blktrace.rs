//! blktrace's binary files: one per CPU (`NAME.blktrace.N`), each a run of
//! records, a 48-byte header and then `pdu_len` bytes of payload
//! (docs/notes/trace-formats.md, "blktrace binary"; the struct is
//! `blk_io_trace` in blktrace_api.h). The header's magic tells the file's
//! byte order. The files are merged by time in `super::Merged`.

use std::path::{Path, PathBuf};

use super::{At, BINARY_BUFFER, Events, Input, Request, Take, TraceError, TraceOp};

// The record's layout is the kernel's, written by a capture and by
// `emulate --record` as well as read here: one place holds it.
pub(super) use crate::targets::real::blktrace::record::{
    ACT_ISSUE, ACT_QUEUE, HEADER, MAGIC, TC_DISCARD, TC_FLUSH, TC_NOTIFY, TC_PC, TC_WRITE, VERSION,
};

/// The one note blkparse keeps among the records (`BLK_TN_MESSAGE`), so it
/// counts for the start of time (`ms_prime` in blkparse.c).
const TN_MESSAGE: u32 = (TC_NOTIFY << 16) | 2;

/// More per-CPU files than this is not one machine's trace.
const MAX_FILES: usize = 1024;

const HINT: &str = "blktrace's binary files are read as blktrace writes them (blk_io_trace records, version 7); \
                    check the file is whole, or give blkparse's text output instead";

/// Whether these four bytes are blktrace's magic, in either byte order.
pub(super) fn is_magic(b: &[u8]) -> bool {
    byte_order(b).is_some()
}

/// Big-endian (true) or little-endian (false), from a magic word.
fn byte_order(b: &[u8]) -> Option<bool> {
    let w: [u8; 4] = b.get(..4)?.try_into().ok()?;
    if u32::from_le_bytes(w) & 0xffff_ff00 == MAGIC {
        Some(false)
    } else if u32::from_be_bytes(w) & 0xffff_ff00 == MAGIC {
        Some(true)
    } else {
        None
    }
}

/// A dev_t as the kernel packs it in a record: major above bit 20.
pub(super) fn dev_name(dev: u32) -> String {
    format!("{},{}", dev >> 20, dev & 0xf_ffff)
}

/// A record kept: the chosen action, with its request at the file's time.
pub(super) struct Kept {
    pub time: u64,
    pub device: u32,
    /// Its byte offset in the file.
    pub at: u64,
    pub request: Request,
}

struct Head {
    at: u64,
    time: u64,
    sector: u64,
    bytes: u32,
    action: u32,
    device: u32,
}

/// A header's magic word, payload length and fields, in byte order `big`.
fn decode(b: &[u8], big: bool, at: u64) -> (u32, usize, Head) {
    let u32_at = |i: usize| {
        let w = [b[i], b[i + 1], b[i + 2], b[i + 3]];
        if big {
            u32::from_be_bytes(w)
        } else {
            u32::from_le_bytes(w)
        }
    };
    let u64_at = |i: usize| {
        let (hi, lo) = (u64::from(u32_at(i)), u64::from(u32_at(i + 4)));
        if big { hi << 32 | lo } else { lo << 32 | hi }
    };
    let pdu_len = usize::from(if big {
        u16::from_be_bytes([b[46], b[47]])
    } else {
        u16::from_le_bytes([b[46], b[47]])
    });
    let head = Head {
        at,
        time: u64_at(8),
        sector: u64_at(16),
        bytes: u32_at(24),
        action: u32_at(28),
        device: u32_at(36),
    };
    (u32_at(0), pdu_len, head)
}

/// Live counts of a capture as its bytes arrive (`flashlab trace`): the
/// requests issued to the driver (D), by kind, from one CPU's stream,
/// whatever the chunks it comes in. A stream that loses the magic stops
/// counting rather than guess.
#[derive(Debug, Clone, Default)]
pub struct Tally {
    partial: Vec<u8>,
    lost: bool,
    pub counts: Counts,
}

/// Requests issued to the driver (D events), by kind.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Counts {
    pub reads: u64,
    pub writes: u64,
    pub discards: u64,
    pub flushes: u64,
    pub bytes_read: u64,
    pub bytes_written: u64,
}

impl std::fmt::Display for Counts {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        use crate::units::Iec;
        write!(
            f,
            "{} writes ({}), {} reads ({}), {} discards, {} flushes",
            self.writes,
            Iec(self.bytes_written),
            self.reads,
            Iec(self.bytes_read),
            self.discards,
            self.flushes
        )
    }
}

impl std::ops::AddAssign for Counts {
    fn add_assign(&mut self, o: Counts) {
        self.reads += o.reads;
        self.writes += o.writes;
        self.discards += o.discards;
        self.flushes += o.flushes;
        self.bytes_read += o.bytes_read;
        self.bytes_written += o.bytes_written;
    }
}

impl Tally {
    pub fn feed(&mut self, chunk: &[u8]) {
        if self.lost {
            return;
        }
        self.partial.extend_from_slice(chunk);
        let mut at = 0;
        while self.partial.len() - at >= HEADER {
            let Some(big) = byte_order(&self.partial[at..]) else {
                self.lost = true;
                break;
            };
            let (_, pdu, head) = decode(&self.partial[at..], big, 0);
            if self.partial.len() - at < HEADER + pdu {
                break;
            }
            self.count(&head);
            at += HEADER + pdu;
        }
        self.partial.drain(..at);
    }

    fn count(&mut self, h: &Head) {
        let category = h.action >> 16;
        if category & (TC_NOTIFY | TC_PC) != 0 || h.action & 0xffff != ACT_ISSUE {
            return;
        }
        let bytes = u64::from(h.bytes);
        if category & TC_FLUSH != 0 {
            self.counts.flushes += 1;
        }
        if bytes == 0 {
            return;
        }
        if category & TC_DISCARD != 0 {
            self.counts.discards += 1;
        } else if category & TC_WRITE != 0 {
            self.counts.writes += 1;
            self.counts.bytes_written += bytes;
        } else {
            self.counts.reads += 1;
            self.counts.bytes_read += bytes;
        }
    }
}

/// One CPU's file.
pub(super) struct CpuFile {
    input: Input,
    big_endian: bool,
    action: u32,
    peeked: Option<Head>,
}

impl CpuFile {
    fn new(mut input: Input, events: Events) -> Result<CpuFile, TraceError> {
        let big_endian = byte_order(input.peek(4)?).unwrap_or(false);
        Ok(CpuFile {
            input,
            big_endian,
            action: match events {
                Events::Dispatch => ACT_ISSUE,
                Events::Queue => ACT_QUEUE,
            },
            peeked: None,
        })
    }

    pub(super) fn path(&self) -> &Path {
        self.input.path()
    }

    pub(super) fn cut(&self) -> Option<String> {
        self.input.truncated()
    }

    /// The next record of any kind, its payload skipped.
    fn read(&mut self) -> Result<Option<Head>, TraceError> {
        let at = self.input.pos;
        let big = self.big_endian;
        let b = match self.input.take(HEADER)? {
            Take::End => return Ok(None),
            Take::Short(n) => {
                self.input.dropped = Some(format!("its last record is cut mid-header, {n} bytes dropped"));
                return Ok(None);
            }
            Take::Bytes(b) => b,
        };
        let (magic, pdu_len, head) = decode(b, big, at);
        if magic & 0xffff_ff00 != MAGIC {
            let what = format!("no blktrace magic where a record starts (0x{magic:08x})");
            return Err(TraceError::malformed(self.input.path(), At::Byte(at), what, HINT));
        }
        if magic & 0xff != VERSION {
            let what = format!("a version {} record; this reader knows version {VERSION}", magic & 0xff);
            return Err(TraceError::malformed(self.input.path(), At::Byte(at), what, HINT));
        }
        let skipped = self.input.skip(pdu_len)?;
        if skipped < pdu_len {
            let n = HEADER + skipped;
            self.input.dropped = Some(format!("its last record is cut mid-payload, {n} bytes dropped"));
            return Ok(None);
        }
        Ok(Some(head))
    }

    /// The time of the first record blkparse keeps (not a note, but a
    /// message), which its times count from (`do_file` and `ms_prime` in
    /// blkparse.c).
    pub(super) fn first_time(&mut self) -> Result<Option<u64>, TraceError> {
        while self.peeked.is_none() {
            match self.read()? {
                None => return Ok(None),
                Some(h) if (h.action >> 16) & TC_NOTIFY != 0 && h.action != TN_MESSAGE => {}
                Some(h) => self.peeked = Some(h),
            }
        }
        Ok(self.peeked.as_ref().map(|h| h.time))
    }

    /// The next record of the chosen action. Notes, passthrough commands
    /// and other actions are skipped. FLUSH in the category is a flush
    /// (before the data when it carries some); then DISCARD, WRITE, or else
    /// a read when there are bytes, the order of `fill_rwbs`
    /// (blkparse_fmt.c). Sectors are 512 bytes, `bytes` is in bytes.
    pub(super) fn next(&mut self) -> Result<Option<Kept>, TraceError> {
        loop {
            let h = match self.peeked.take() {
                Some(h) => h,
                None => match self.read()? {
                    Some(h) => h,
                    None => return Ok(None),
                },
            };
            let category = h.action >> 16;
            if category & (TC_NOTIFY | TC_PC) != 0 || h.action & 0xffff != self.action {
                continue;
            }
            let op = if category & TC_DISCARD != 0 {
                TraceOp::Discard
            } else if category & TC_WRITE != 0 {
                TraceOp::Write
            } else {
                TraceOp::Read
            };
            let flush = category & TC_FLUSH != 0;
            match Request::at_sector(h.time, flush, Some(op), h.sector, u64::from(h.bytes)) {
                Ok(Some(request)) => {
                    return Ok(Some(Kept {
                        time: h.time,
                        device: h.device,
                        at: h.at,
                        request,
                    }));
                }
                Ok(None) => {}
                Err(what) => return Err(TraceError::malformed(self.input.path(), At::Byte(h.at), what, HINT)),
            }
        }
    }
}

/// `NAME.blktrace.N`, possibly followed by a suffix (`.gz`, `.zst`): NAME
/// and N.
fn name_parts(name: &str) -> Option<(&str, u32)> {
    const MID: &str = ".blktrace.";
    let at = name.rfind(MID)?;
    let rest = &name[at + MID.len()..];
    let digits = rest.len() - rest.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    let after = &rest[digits..];
    if digits == 0 || digits > 9 || !(after.is_empty() || after.starts_with('.')) {
        return None;
    }
    Some((&name[..at], rest[..digits].parse().ok()?))
}

/// The per-CPU files of the trace the user named, in CPU order: the named
/// one's siblings in its directory (blktrace writes one file per CPU, and
/// blkparse reads them together, `setup_file` in blkparse.c). Empty ones
/// are left out, as blkparse leaves them. A file not named so is read
/// alone (one file of all CPUs, as `blkparse -d` dumps).
pub(super) fn open_siblings(input: Input, events: Events) -> Result<Vec<CpuFile>, TraceError> {
    let path = input.path().to_path_buf();
    let name = path.file_name().and_then(|n| n.to_str()).map(str::to_string);
    let Some((prefix, _)) = name.as_deref().and_then(name_parts) else {
        return Ok(vec![CpuFile::new(input, events)?]);
    };
    let dir = path.parent().unwrap_or(Path::new(""));
    let files_err = |why: String| TraceError::Files {
        path: path.clone(),
        why,
    };
    let listed = std::fs::read_dir(if dir.as_os_str().is_empty() {
        Path::new(".")
    } else {
        dir
    })
    .map_err(|e| TraceError::Open {
        path: dir.to_path_buf(),
        why: e.to_string(),
    })?;
    let mut found: Vec<(u32, PathBuf)> = Vec::new();
    for entry in listed.flatten() {
        let entry_name = entry.file_name();
        let Some(s) = entry_name.to_str() else { continue };
        if let Some((p, cpu)) = name_parts(s)
            && p == prefix
        {
            found.push((cpu, dir.join(s)));
            if found.len() > MAX_FILES {
                return Err(files_err(format!(
                    "more than {MAX_FILES} files named {prefix}.blktrace.N"
                )));
            }
        }
    }
    found.sort();
    if let Some(w) = found.windows(2).find(|w| w[0].0 == w[1].0) {
        let (a, b) = (w[0].1.display(), w[1].1.display());
        return Err(files_err(format!(
            "two files hold CPU {}'s records: {a} and {b}",
            w[0].0
        )));
    }
    let mut named = Some(input);
    let mut files = Vec::with_capacity(found.len());
    for (_, p) in found {
        let mut sibling = match named.take_if(|i| i.path() == p) {
            Some(i) => i,
            None => Input::open(&p, BINARY_BUFFER)?,
        };
        let head = sibling.peek(4)?;
        if head.is_empty() {
            continue;
        }
        if !is_magic(head) {
            let why = format!("{} is not a blktrace binary file, unlike its sibling", p.display());
            return Err(files_err(why));
        }
        files.push(CpuFile::new(sibling, events)?);
    }
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn per_cpu_names_read_with_or_without_a_suffix() {
        assert_eq!(name_parts("sda.blktrace.0"), Some(("sda", 0)));
        assert_eq!(name_parts("run.1.blktrace.12.zst"), Some(("run.1", 12)));
        assert_eq!(name_parts("sda.blktrace.x"), None);
        assert_eq!(name_parts("sda.blktrace."), None);
        assert_eq!(name_parts("sda.blktrace.3x"), None);
        assert_eq!(name_parts("trace.bin"), None);
    }

    #[test]
    fn the_magic_reads_in_either_byte_order() {
        assert_eq!(byte_order(&[0x07, 0x74, 0x61, 0x65]), Some(false));
        assert_eq!(byte_order(&[0x65, 0x61, 0x74, 0x07]), Some(true));
        assert_eq!(byte_order(&[0x65, 0x61, 0x75, 0x07]), None);
        assert_eq!(byte_order(&[0x07, 0x74]), None);
        assert_eq!(dev_name(7 << 20), "7,0");
        assert_eq!(dev_name((259 << 20) | 3), "259,3");
    }
}
