//! Block I/O traces, read for a replay (`flashlab life`): blkparse's default
//! text output, blktrace's binary per-CPU files, fio's iologs (versions 2
//! and 3) and biosnoop's output (bcc and libbpf-tools). A replay wants what
//! the device received, in order, and nothing else, so every reader turns
//! its format into the same [`TraceRecord`]s: reads, writes, discards and
//! flushes with byte offsets, in time order.
//!
//! Traces are large and come from elsewhere, so they are streamed (one
//! buffer per file, no line or record kept), any file may be gzip or zstd
//! compressed (told by its magic bytes, as a renamed file keeps its
//! content), and the format is told by the content too, never the name. A
//! malformed record stops the reading with its place (line or byte) and a
//! hint; a trace cut short (a copy stopped, a tool killed mid-write) reads
//! up to its last whole record and [`Trace::truncated`] says so.
//!
//! The format facts are measured in docs/notes/trace-formats.md; each reader
//! cites it, or the tool's own source file where the notes are silent.

mod biosnoop;
mod blkparse;
mod blktrace;
mod fio;
mod merged;
mod text;

use std::fmt;
use std::io::Read;
use std::path::{Path, PathBuf};

use merged::Merged;

/// The records a reader gives are the replay's own: one request the
/// device received, offsets and lengths in bytes (sectors are 512 bytes),
/// times from the trace's start as each tool counts it (blkparse and
/// blktrace from the first event, fio from the job's start, biosnoop from
/// the first request it printed, and at completion, not issue). A flush
/// carries offset 0 and length 0: it names no range.
pub use crate::sim::replay::{TraceOp, TraceRecord};
pub use blktrace::{Counts, Tally};

/// The formats read, told apart by content ([`Trace::open`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TraceFormat {
    Blkparse,
    Blktrace,
    FioV2,
    FioV3,
    Biosnoop,
}

impl fmt::Display for TraceFormat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            TraceFormat::Blkparse => "blkparse",
            TraceFormat::Blktrace => "blktrace",
            TraceFormat::FioV2 => "fio-v2",
            TraceFormat::FioV3 => "fio-v3",
            TraceFormat::Biosnoop => "biosnoop",
        })
    }
}

/// Which blktrace/blkparse action counts as "the device received it". D
/// (issued to the driver) counts what reached the device after merges,
/// splits and remaps; Q is what fio's own blktrace replay uses
/// (docs/notes/trace-formats.md, "Which events to count"). The other
/// formats have one event per request and ignore this.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Events {
    /// D: issued to the driver.
    #[default]
    Dispatch,
    /// Q: queued by the block layer.
    Queue,
}

#[derive(Debug, Clone, Copy, Default)]
pub struct TraceOptions {
    pub events: Events,
}

/// Where in a file a malformed record sits: a line (1-based) of a text
/// trace, or a byte offset of a binary one. For a compressed file it is the
/// place in the decompressed content, which is what the tools wrote.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum At {
    Line(u64),
    Byte(u64),
}

impl fmt::Display for At {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            At::Line(n) => write!(f, "line {n}"),
            At::Byte(n) => write!(f, "byte {n}"),
        }
    }
}

/// Why a trace could not be read. Each carries its path; [`TraceError::hint`]
/// says what to do.
#[derive(Debug, thiserror::Error)]
pub enum TraceError {
    /// Not opened or not read: missing, unreadable, or not a regular file.
    #[error("cannot read {}: {why}", .path.display())]
    Open { path: PathBuf, why: String },
    /// No format this module reads.
    #[error("{}: not a block trace flashlab reads", .path.display())]
    Unknown { path: PathBuf },
    /// A line or record that does not read as its format says.
    #[error("{}: {at}: {what}", .path.display())]
    Malformed {
        path: PathBuf,
        at: At,
        what: String,
        hint: String,
    },
    /// A gzip or zstd stream that is damaged (one merely cut short reads up
    /// to the cut, see [`Trace::truncated`]).
    #[error("{}: cannot decompress ({codec}): {why}", .path.display())]
    Decompress {
        path: PathBuf,
        codec: &'static str,
        why: String,
    },
    /// blktrace's per-CPU files that do not go together.
    #[error("{}: {why}", .path.display())]
    Files { path: PathBuf, why: String },
}

/// The formats, for a hint.
const FORMATS: &str = "flashlab reads blkparse's default text output, blktrace's binary files (NAME.blktrace.N), \
                       fio's iologs (version 2, and version 3 as --write_iolog writes), and biosnoop's output (bcc or \
                       libbpf-tools); any of them may be gzip or zstd compressed";

impl TraceError {
    /// The hint line for the user.
    pub fn hint(&self) -> String {
        match self {
            TraceError::Open { .. } => {
                "give the path of a trace file: a regular file, saved first (a pipe or a device is refused, as it \
                 could feed the replay forever or hang it)"
                    .into()
            }
            TraceError::Unknown { .. } => FORMATS.into(),
            TraceError::Malformed { hint, .. } => hint.clone(),
            TraceError::Decompress { .. } => {
                "the compressed file is damaged; decompress it by hand (gzip -t, zstd -t) to see where".into()
            }
            TraceError::Files { .. } => "give one of blktrace's NAME.blktrace.N files: its siblings NAME.blktrace.* \
                                         in the same directory, one per CPU, are read with it"
                .into(),
        }
    }

    pub(crate) fn malformed(path: &Path, at: At, what: impl Into<String>, hint: impl Into<String>) -> TraceError {
        TraceError::Malformed {
            path: path.to_path_buf(),
            at,
            what: what.into(),
            hint: hint.into(),
        }
    }
}

/// What one line or record of a trace asks of the device: a flush first
/// when `flush` (a preflush, or a flush alone), then the I/O when there is
/// one (op, offset, length; never a flush, never empty).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Request {
    pub time_ns: u64,
    pub flush: bool,
    pub io: Option<(TraceOp, u64, u64)>,
}

impl Request {
    /// The request of a flush and an I/O of `len` bytes at byte `offset`,
    /// or None when it asks nothing (no flush, and no data: `N`, or an I/O
    /// of no bytes). Errs on a range that ends past u64.
    fn new(time_ns: u64, flush: bool, op: Option<TraceOp>, offset: u64, len: u64) -> Result<Option<Request>, String> {
        let io = match op {
            Some(op) if len > 0 => {
                offset
                    .checked_add(len)
                    .ok_or_else(|| format!("{len} bytes at byte {offset} end past any device"))?;
                Some((op, offset, len))
            }
            _ => None,
        };
        Ok((flush || io.is_some()).then_some(Request { time_ns, flush, io }))
    }

    /// [`Request::new`] at a 512-byte sector.
    fn at_sector(
        time_ns: u64,
        flush: bool,
        op: Option<TraceOp>,
        sector: u64,
        len: u64,
    ) -> Result<Option<Request>, String> {
        let offset = sector
            .checked_mul(512)
            .ok_or_else(|| format!("sector {sector} is past any device (its byte offset overflows)"))?;
        Request::new(time_ns, flush, op, offset, len)
    }
}

/// A trace opened for streaming: records in time order.
pub struct Trace {
    format: TraceFormat,
    reader: Reader,
    /// The I/O of a request whose flush was just returned.
    pending: Option<TraceRecord>,
    last_ns: u64,
    /// Records stamped before the one returned before them.
    back: Option<Back>,
}

/// Where a trace's times went back, each such record taken at the time
/// before it.
struct Back {
    records: u64,
    most_ns: u64,
    /// Where the first stood ("line 4").
    first: String,
}

enum Reader {
    Blkparse(blkparse::Reader),
    Blktrace(Merged),
    Fio(fio::Reader),
    Biosnoop(biosnoop::Reader),
}

impl Reader {
    fn next(&mut self) -> Result<Option<Request>, TraceError> {
        match self {
            Reader::Blkparse(r) => r.next(),
            Reader::Blktrace(r) => r.next(),
            Reader::Fio(r) => r.next(),
            Reader::Biosnoop(r) => r.next(),
        }
    }

    /// Where the request [`Reader::next`] returned last stands.
    fn at(&self) -> (&Path, At) {
        match self {
            Reader::Blkparse(r) => r.input().at(),
            Reader::Blktrace(r) => r.at(),
            Reader::Fio(r) => r.input().at(),
            Reader::Biosnoop(r) => r.input().at(),
        }
    }
}

/// The longest a trace may run from its start: ten years. `life` replays
/// a trace up to 25 times (its fill and `MAX_PASSES` in `measure/life`) on
/// one clock of u64 nanoseconds, which holds 584 years; a time past this
/// is a damaged line, not a capture.
pub const MAX_SPAN_NS: u64 = 10 * crate::units::YEAR_NS;

impl Trace {
    /// Open one trace given by the user. For a blktrace binary file named
    /// `NAME.blktrace.N` (possibly with a suffix such as `.zst`), all sibling
    /// per-CPU files NAME.blktrace.* in the same directory are opened and
    /// merged by time (k-way merge, streaming). Any file may be gzip or zstd
    /// compressed (detected by magic bytes, not by name). The format is
    /// detected by content (first bytes/lines), never by name.
    pub fn open(path: &Path, opts: TraceOptions) -> Result<Trace, TraceError> {
        let mut input = Input::open(path, TEXT_BUFFER)?;
        let format = detect(&mut input)?.ok_or_else(|| TraceError::Unknown {
            path: path.to_path_buf(),
        })?;
        let reader = match format {
            TraceFormat::Blkparse => Reader::Blkparse(blkparse::Reader::new(input, opts.events)),
            TraceFormat::Blktrace => Reader::Blktrace(Merged::open(blktrace::open_siblings(input, opts.events)?)?),
            TraceFormat::FioV2 | TraceFormat::FioV3 => Reader::Fio(fio::Reader::new(input)?),
            TraceFormat::Biosnoop => Reader::Biosnoop(biosnoop::Reader::new(input)?),
        };
        Ok(Trace {
            format,
            reader,
            pending: None,
            last_ns: 0,
            back: None,
        })
    }

    pub fn format(&self) -> TraceFormat {
        self.format
    }

    /// The next record, Ok(None) at the end. A flush that goes before an
    /// I/O (a preflush) is its own record, at the same time, just before
    /// it. Times never go back: a record stamped before the one returned
    /// last gets that one's time (biosnoop prints from per-CPU buffers, so
    /// its lines can be slightly out of order).
    pub fn next_record(&mut self) -> Result<Option<TraceRecord>, TraceError> {
        if let Some(r) = self.pending.take() {
            return Ok(Some(r));
        }
        while let Some(req) = self.reader.next()? {
            if req.time_ns > MAX_SPAN_NS {
                let (path, at) = self.reader.at();
                let what = format!(
                    "a time {:.3} s from the trace's start, more than ten years",
                    req.time_ns as f64 / 1e9
                );
                let hint = "a trace of more than ten years is a damaged line: check this line's time (seconds in \
                            blkparse's and biosnoop's output, microseconds in fio's v3 iolog)";
                return Err(TraceError::malformed(path, at, what, hint));
            }
            if req.time_ns < self.last_ns {
                let step = self.last_ns - req.time_ns;
                let at = self.reader.at().1;
                let b = self.back.get_or_insert_with(|| Back {
                    records: 0,
                    most_ns: 0,
                    first: at.to_string(),
                });
                b.records += 1;
                b.most_ns = b.most_ns.max(step);
            }
            let time_ns = req.time_ns.max(self.last_ns);
            self.last_ns = time_ns;
            let io = req.io.map(|(op, offset, len)| TraceRecord {
                time_ns,
                op,
                offset,
                len,
            });
            if req.flush {
                self.pending = io;
                return Ok(Some(TraceRecord {
                    time_ns,
                    op: TraceOp::Flush,
                    offset: 0,
                    len: 0,
                }));
            }
            if io.is_some() {
                return Ok(io);
            }
        }
        Ok(None)
    }

    /// After the end: where the trace's times went back, each such record
    /// taken at the time of the one before it. biosnoop's lines can be a
    /// little out of order; a long step back is a damaged or joined trace,
    /// whose span and rates read short.
    pub fn went_back(&self) -> Option<String> {
        self.back.as_ref().map(|b| {
            format!(
                "{}, by up to {}, the first at {}",
                crate::units::count(b.records, "record", "records"),
                crate::units::duration_ns(b.most_ns as f64),
                b.first
            )
        })
    }

    /// After the end: requests the trace holds but names no place for
    /// (biosnoop's disk `<unknown>`), left out of the replay.
    pub fn left_out(&self) -> Option<String> {
        match &self.reader {
            Reader::Biosnoop(r) => r.unplaced(),
            Reader::Blkparse(_) | Reader::Blktrace(_) | Reader::Fio(_) => None,
        }
    }

    /// After the end: whether the trace was cut short (a last partial line
    /// with no newline that does not parse, a binary record cut
    /// mid-header or mid-pdu, or a truncated compressed stream). It was read
    /// up to its last whole record, and this says what was dropped.
    pub fn truncated(&self) -> Option<String> {
        match &self.reader {
            Reader::Blkparse(r) => r.input().truncated(),
            Reader::Blktrace(r) => r.cut(),
            Reader::Fio(r) => r.input().truncated(),
            Reader::Biosnoop(r) => r.input().truncated(),
        }
    }
}

/// The format of a trace, from its first bytes (decompressed): blktrace's
/// magic, or the first line that says something (blank lines and
/// blkparse's "Input file ... added" notes aside, which blkparse prints at
/// the start or the end depending on buffering).
fn detect(input: &mut Input) -> Result<Option<TraceFormat>, TraceError> {
    if input.peek(MAX_LINE + 1)?.is_empty()
        && let Some(cut) = &input.cut
    {
        return Err(TraceError::Decompress {
            path: input.path.clone(),
            codec: input.codec.name(),
            why: format!("{cut}, before any content"),
        });
    }
    let head = input.peek(MAX_LINE + 1)?;
    if head.len() >= 4 && blktrace::is_magic(&head[..4]) {
        return Ok(Some(TraceFormat::Blktrace));
    }
    for line in head.split(|&b| b == b'\n') {
        let line = line.trim_ascii();
        if line.is_empty() || line.starts_with(b"Input file ") {
            continue;
        }
        return Ok(match line {
            b"fio version 2 iolog" => Some(TraceFormat::FioV2),
            b"fio version 3 iolog" => Some(TraceFormat::FioV3),
            _ if biosnoop::is_header(line) => Some(TraceFormat::Biosnoop),
            _ if blkparse::is_event_line(line) => Some(TraceFormat::Blkparse),
            _ => None,
        });
    }
    Ok(None)
}

/// The longest line a text trace may hold. The tools print lines under 200
/// bytes; a longer one is not a trace line, and the bound keeps a file with
/// no newline from filling memory.
const MAX_LINE: usize = 64 * 1024;
/// A text file's buffer: a whole line of [`MAX_LINE`] and then some.
const TEXT_BUFFER: usize = 2 * MAX_LINE + 2;
/// A binary file's buffer, one per CPU file.
const BINARY_BUFFER: usize = 32 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Codec {
    Plain,
    Gzip,
    Zstd,
}

impl Codec {
    fn name(self) -> &'static str {
        match self {
            Codec::Plain => "plain",
            Codec::Gzip => "gzip",
            Codec::Zstd => "zstd",
        }
    }
}

/// One file's content, decompressed, read through one buffer: lines or
/// fixed-size records are handed out as slices of it, so nothing is
/// allocated per line.
struct Input {
    path: PathBuf,
    inner: Box<dyn Read + Send>,
    codec: Codec,
    buf: Box<[u8]>,
    start: usize,
    end: usize,
    eof: bool,
    /// Bytes consumed before `buf[start]`, in the decompressed content.
    pos: u64,
    /// Lines handed out so far.
    line: u64,
    /// How a compressed stream ended early.
    cut: Option<String>,
    /// What the reader dropped at the end (a last line or record cut short).
    dropped: Option<String>,
    /// The reader has read its last request: nothing more is read.
    ended: bool,
}

/// The next line of a text file, without its newline (nor a `\r` before it).
enum Line<'a> {
    Whole(&'a [u8]),
    /// The last line, with no newline after it: maybe cut short.
    Last(&'a [u8]),
    /// Longer than [`MAX_LINE`]: not a trace line.
    TooLong,
    End,
}

/// The next `n` bytes of a binary file.
enum Take<'a> {
    Bytes(&'a [u8]),
    End,
    /// Fewer than `n` bytes were left, and this many were dropped.
    Short(usize),
}

impl Input {
    /// Open a trace file given by the user. As `src/files.rs` does, opened
    /// without blocking (a FIFO cannot hang it) and refused unless a
    /// regular file (a FIFO or a device would feed it forever or not at
    /// all). gzip (1f 8b) and zstd (28 b5 2f fd) are told by their magic
    /// bytes.
    fn open(path: &Path, capacity: usize) -> Result<Input, TraceError> {
        use std::io::BufRead;
        use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
        let open_err = |why: String| TraceError::Open {
            path: path.to_path_buf(),
            why,
        };
        let file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)
            .map_err(|e| open_err(e.to_string()))?;
        let meta = file.metadata().map_err(|e| open_err(e.to_string()))?;
        if !meta.is_file() {
            let t = meta.file_type();
            let what = if t.is_dir() {
                "a directory"
            } else if t.is_fifo() {
                "a FIFO"
            } else if t.is_block_device() {
                "a block device"
            } else if t.is_char_device() {
                "a character device"
            } else {
                "not a regular file"
            };
            return Err(open_err(format!("{what}, not a regular file")));
        }
        let mut raw = std::io::BufReader::with_capacity(capacity.min(64 * 1024), file);
        let magic = raw.fill_buf().map_err(|e| open_err(e.to_string()))?;
        let codec = match magic {
            [0x1f, 0x8b, ..] => Codec::Gzip,
            [0x28, 0xb5, 0x2f, 0xfd, ..] => Codec::Zstd,
            _ => Codec::Plain,
        };
        let inner: Box<dyn Read + Send> = match codec {
            Codec::Plain => Box::new(raw),
            Codec::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
            Codec::Zstd => {
                Box::new(
                    zstd::stream::read::Decoder::with_buffer(raw).map_err(|e| TraceError::Decompress {
                        path: path.to_path_buf(),
                        codec: "zstd",
                        why: e.to_string(),
                    })?,
                )
            }
        };
        Ok(Input {
            path: path.to_path_buf(),
            inner,
            codec,
            buf: vec![0; capacity].into_boxed_slice(),
            start: 0,
            end: 0,
            eof: false,
            pos: 0,
            line: 0,
            cut: None,
            dropped: None,
            ended: false,
        })
    }

    /// The line handed out last.
    fn at(&self) -> (&Path, At) {
        (&self.path, At::Line(self.line))
    }

    fn path(&self) -> &Path {
        &self.path
    }

    /// Read more after what the buffer holds; false when nothing more can
    /// come (the end, or a full buffer).
    fn fill(&mut self) -> Result<bool, TraceError> {
        if self.eof {
            return Ok(false);
        }
        if self.start > 0 {
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        if self.end == self.buf.len() {
            return Ok(false);
        }
        loop {
            match self.inner.read(&mut self.buf[self.end..]) {
                Ok(0) => {
                    self.eof = true;
                    return Ok(false);
                }
                Ok(n) => {
                    self.end += n;
                    return Ok(true);
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return self.failed(e),
            }
        }
    }

    /// A read error: a compressed stream that stops before its end is a
    /// file cut short (read up to there); anything else stops the trace.
    fn failed(&mut self, e: std::io::Error) -> Result<bool, TraceError> {
        let path = self.path.clone();
        match self.codec {
            Codec::Plain => Err(TraceError::Open {
                path,
                why: e.to_string(),
            }),
            c @ (Codec::Gzip | Codec::Zstd) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                self.eof = true;
                let at = self.pos + (self.end - self.start) as u64;
                self.cut = Some(format!(
                    "the {} stream stops before its end, after {at} bytes of content",
                    c.name()
                ));
                Ok(false)
            }
            c @ (Codec::Gzip | Codec::Zstd) => Err(TraceError::Decompress {
                path,
                codec: c.name(),
                why: e.to_string(),
            }),
        }
    }

    /// At least `n` bytes from where reading stands, or all that is left.
    fn peek(&mut self, n: usize) -> Result<&[u8], TraceError> {
        while self.end - self.start < n {
            if !self.fill()? {
                break;
            }
        }
        Ok(&self.buf[self.start..self.end])
    }

    fn consume(&mut self, n: usize) {
        self.start += n;
        self.pos += n as u64;
    }

    fn next_line(&mut self) -> Result<Line<'_>, TraceError> {
        let mut scanned = 0;
        loop {
            let found = self.buf[self.start + scanned..self.end]
                .iter()
                .position(|&b| b == b'\n');
            if let Some(i) = found {
                let (s, e) = (self.start, self.start + scanned + i);
                self.consume(e + 1 - s);
                self.line += 1;
                return Ok(Line::Whole(trim_cr(&self.buf[s..e])));
            }
            scanned = self.end - self.start;
            if scanned > MAX_LINE {
                self.line += 1;
                return Ok(Line::TooLong);
            }
            if !self.fill()? {
                if !self.eof {
                    // A full buffer: a line longer than it holds.
                    self.line += 1;
                    return Ok(Line::TooLong);
                }
                if scanned == 0 {
                    return Ok(Line::End);
                }
                let (s, e) = (self.start, self.end);
                self.consume(e - s);
                self.line += 1;
                return Ok(Line::Last(trim_cr(&self.buf[s..e])));
            }
        }
    }

    /// The next request of a line-based trace whose lines `parse` reads
    /// (`Ok(None)`: a line with none), or None at its end. A line too
    /// long, or one `parse` refuses, is an error at its number, with the
    /// hint `parse` gives (`hint` for one too long); a last line cut short
    /// (refused, or cut with its compressed stream) is dropped, and
    /// `dropped` says so. After the last request, None again.
    pub(super) fn next_request(
        &mut self,
        hint: &'static str,
        parse: impl FnMut(&[u8]) -> Result<Option<Request>, (String, &'static str)>,
    ) -> Result<Option<Request>, TraceError> {
        if self.ended {
            return Ok(None);
        }
        let r = self.request(hint, parse)?;
        self.ended = r.is_none();
        Ok(r)
    }

    fn request(
        &mut self,
        hint: &'static str,
        mut parse: impl FnMut(&[u8]) -> Result<Option<Request>, (String, &'static str)>,
    ) -> Result<Option<Request>, TraceError> {
        loop {
            let n = self.line + 1;
            let (parsed, last, len) = match self.next_line()? {
                Line::End => return Ok(None),
                Line::TooLong => {
                    let what = format!("a line longer than {MAX_LINE} bytes");
                    return Err(TraceError::malformed(self.path(), At::Line(n), what, hint));
                }
                Line::Whole(l) => (parse(l), false, l.len()),
                Line::Last(l) => (parse(l), true, l.len()),
            };
            if last && (parsed.is_err() || self.cut.is_some()) {
                self.dropped = Some(format!("its last line is cut short, {len} bytes dropped"));
                return Ok(None);
            }
            match parsed {
                Err((what, hint)) => return Err(TraceError::malformed(self.path(), At::Line(n), what, hint)),
                Ok(Some(r)) => return Ok(Some(r)),
                Ok(None) => {}
            }
        }
    }

    fn take(&mut self, n: usize) -> Result<Take<'_>, TraceError> {
        let have = self.peek(n)?.len();
        if have >= n {
            let s = self.start;
            self.consume(n);
            return Ok(Take::Bytes(&self.buf[s..s + n]));
        }
        self.consume(have);
        Ok(if have == 0 { Take::End } else { Take::Short(have) })
    }

    /// Skip `n` bytes; how many were there.
    fn skip(&mut self, n: usize) -> Result<usize, TraceError> {
        let mut left = n;
        while left > 0 {
            let have = self.end - self.start;
            if have == 0 && !self.fill()? {
                break;
            }
            let k = left.min(self.end - self.start);
            self.consume(k);
            left -= k;
        }
        Ok(n - left)
    }

    /// Why the content ends early, with what the reader dropped at its end.
    fn truncated(&self) -> Option<String> {
        match (&self.cut, &self.dropped) {
            (Some(c), Some(d)) => Some(format!("{c}; {d}")),
            (Some(c), None) => Some(c.clone()),
            (None, d) => d.clone(),
        }
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

#[cfg(test)]
mod tests;
