//! The preservation journal: the original bytes of every declared range a test
//! writes, copied out before the first write to that range, checksummed and
//! fsync'd; written back and verified at the end, or by `flashlab restore`
//! after a crash.
//!
//! The journal has to tell a crash from damage. A crash while journalling
//! leaves a torn tail that covers bytes the device never lost; a journal cut
//! short afterwards, edited, or with records moved, has lost the only copy of
//! bytes the device no longer holds. So:
//!
//! ```text
//! "flashlab-journal v2\n"
//! header: length (u32 LE), JSON, CRC-32 of length and JSON
//! commit slot A, commit slot B (32 bytes each, rewritten in place)
//! record 0, record 1, ...     (32-byte head + data, appended)
//! ```
//!
//! A record head holds `FLJR`, its sequence number, the target offset and
//! length, the CRC-32 of the data and the CRC-32 of the head. A commit slot
//! holds `FLJC`, a generation, how many records are committed and its CRC.
//! Before any write to a newly journalled range, [`Writer::commit`] makes the
//! records durable, then writes slot A and syncs, then slot B and syncs: the
//! device is written only once both slots say the records are there. Reading
//! a journal back ([`Journal::open`]):
//! - the header's checksum must hold (an edited target path is refused);
//! - records must carry sequence numbers 0, 1, 2... (reordered or duplicated
//!   records are refused), lie inside the declared ranges and not overlap;
//! - every committed record must be present and intact: a journal cut short
//!   at a record boundary, or inside one, is refused naming what is missing;
//! - past the committed count a record may be torn or missing: its range was
//!   never written, so skipping it loses nothing;
//! - one damaged slot is tolerated only as a crash leaves it (the other slot
//!   valid, every record complete, more records than the valid slot counts).

use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use super::SafetyError;
pub use super::header::Header;
use super::registry::Registry;
use super::signals::crash_point;
use crate::targets::{AlignedBuf, Request, Target};

pub const EXTENSION: &str = "fljournal";
const MAGIC: &[u8] = b"flashlab-journal v2\n";
/// What a journal of the first format begins with: refused, it has no header
/// checksum and cannot tell a truncation from a crash.
const MAGIC_V1: &[u8] = b"flashlab-journal v1\n";
const RECORD: &[u8; 4] = b"FLJR";
const SLOT: &[u8; 4] = b"FLJC";
const HEAD: usize = 32;
/// Largest header accepted: a sweep declaring thousands of ranges stays far
/// below it, and a damaged length field cannot make restore allocate more.
const MAX_HEADER: u32 = 4 << 20;
/// Largest record: the unit of streaming, so memory stays small however large
/// the ranges are.
pub const CHUNK: usize = 1 << 20;
/// Records restored per batch (8 MiB, two buffers of it in memory).
const RESTORE_BATCH: usize = 8;
/// Restore writes kept in flight: enough to keep a loop device or an SSD
/// streaming; an SD card simply serialises them.
const RESTORE_QUEUE_DEPTH: usize = 8;

fn io(what: &Path, e: std::io::Error) -> SafetyError {
    SafetyError::Journal {
        path: what.display().to_string(),
        why: e.to_string(),
    }
}

fn corrupt(path: &Path, region: String) -> SafetyError {
    SafetyError::Corrupt {
        path: path.display().to_string(),
        region,
    }
}

fn word(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"))
}

fn dword(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"))
}

fn slot_bytes(generation: u64, committed: u64) -> [u8; HEAD] {
    let mut s = [0u8; HEAD];
    s[..4].copy_from_slice(SLOT);
    s[8..16].copy_from_slice(&generation.to_le_bytes());
    s[16..24].copy_from_slice(&committed.to_le_bytes());
    let c = crc32fast::hash(&s[..24]);
    s[24..28].copy_from_slice(&c.to_le_bytes());
    s
}

/// (generation, committed) of a slot whose checksum holds.
fn read_slot(s: &[u8]) -> Option<(u64, u64)> {
    (&s[..4] == SLOT && crc32fast::hash(&s[..24]) == word(s, 24)).then(|| (dword(s, 8), dword(s, 16)))
}

fn record_head(seq: u32, offset: u64, data: &[u8]) -> [u8; HEAD] {
    let mut h = [0u8; HEAD];
    h[..4].copy_from_slice(RECORD);
    h[4..8].copy_from_slice(&seq.to_le_bytes());
    h[8..16].copy_from_slice(&offset.to_le_bytes());
    h[16..20].copy_from_slice(&(data.len() as u32).to_le_bytes());
    h[20..24].copy_from_slice(&crc32fast::hash(data).to_le_bytes());
    let c = crc32fast::hash(&h[..24]);
    h[24..28].copy_from_slice(&c.to_le_bytes());
    h
}

/// Writes a new journal. The file is locked (flock) for the writer's life, so
/// `flashlab restore` can tell a live journal from one left by a crash.
pub struct Writer {
    file: File,
    /// The journal's directory, held open from the start so that deleting
    /// the journal (and syncing that) needs no new descriptor.
    dir_file: File,
    /// Where its entry is, removed with the journal.
    registry: Registry,
    pub path: PathBuf,
    /// Where slot A starts.
    slots_at: u64,
    /// Where the next record goes.
    end: u64,
    records: u64,
    committed: u64,
    generation: u64,
}

impl Writer {
    /// Create `dir/NAME.fljournal` with its header and empty commit slots,
    /// durable (file and directory entry) before returning, with its entry
    /// in `registry` made first.
    pub fn create(dir: &Path, header: &Header, registry: Registry) -> Result<Writer, SafetyError> {
        let name = header
            .target
            .trim_start_matches('/')
            .replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        let path = dir.join(format!("{name}-{}-{}.{EXTENSION}", header.created_unix, header.pid));
        // A header that a restore would refuse to read is refused here,
        // before the journal exists and anything is written.
        let size = serde_json::to_vec(header).map_or(usize::MAX, |j| j.len());
        if size > MAX_HEADER as usize {
            return Err(SafetyError::Journal {
                path: path.display().to_string(),
                why: format!("its header ({size} bytes: too many declared ranges) passes the {MAX_HEADER}-byte limit"),
            });
        }
        // The entry first: one for a journal that never came to be is
        // passed over, a journal without one could be missed. A run that
        // cannot leave one writes nothing.
        registry.register(&path, header)?;
        // Readable by its owner alone: it holds the device's own bytes (a
        // root run's journal of a disk must not hand them to every user).
        use std::os::unix::fs::OpenOptionsExt;
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(&path)
            .map_err(|e| io(&path, e));
        // Until its header is durable the file holds nothing of the target:
        // a failure removes it, so it is not mistaken for a pending journal.
        let made = file.and_then(|file| Self::start(file, &path, dir, header, registry.clone()));
        if made.is_err() {
            let _ = std::fs::remove_file(&path);
            registry.unregister(&path);
        }
        made
    }

    fn start(
        mut file: File,
        path: &Path,
        dir: &Path,
        header: &Header,
        registry: Registry,
    ) -> Result<Writer, SafetyError> {
        let path = path.to_path_buf();
        rustix::fs::flock(&file, rustix::fs::FlockOperation::NonBlockingLockExclusive)
            .map_err(|e| io(&path, e.into()))?;
        let json = serde_json::to_vec(header).expect("header serialises");
        let mut bytes = MAGIC.to_vec();
        // At most MAX_HEADER (checked in `create`).
        let len = (json.len() as u32).to_le_bytes();
        bytes.extend_from_slice(&len);
        bytes.extend_from_slice(&json);
        let mut c = crc32fast::Hasher::new();
        c.update(&len);
        c.update(&json);
        bytes.extend_from_slice(&c.finalize().to_le_bytes());
        let slots_at = bytes.len() as u64;
        bytes.extend_from_slice(&slot_bytes(0, 0));
        bytes.extend_from_slice(&slot_bytes(0, 0));
        file.write_all(&bytes)
            .and_then(|_| file.sync_all())
            .map_err(|e| io(&path, e))?;
        let dir_file = File::open(dir).map_err(|e| io(dir, e))?;
        dir_file.sync_all().map_err(|e| io(dir, e))?;
        Ok(Writer {
            file,
            dir_file,
            registry,
            path,
            slots_at,
            end: bytes.len() as u64,
            records: 0,
            committed: 0,
            generation: 0,
        })
    }

    /// Append the original bytes at `offset` (not yet committed); returns
    /// where in the journal file they are, for [`Writer::read_original`].
    pub fn record(&mut self, offset: u64, data: &[u8]) -> Result<u64, SafetyError> {
        let seq = u32::try_from(self.records).map_err(|_| SafetyError::Journal {
            path: self.path.display().to_string(),
            why: "too many records".into(),
        })?;
        let h = record_head(seq, offset, data);
        self.file
            .write_all_at(&h, self.end)
            .and_then(|_| self.file.write_all_at(data, self.end + HEAD as u64))
            .map_err(|e| io(&self.path, e))?;
        let at = self.end + HEAD as u64;
        self.end += (HEAD + data.len()) as u64;
        self.records += 1;
        Ok(at)
    }

    /// Read original bytes back from the journal file at `at` (what
    /// [`Writer::record`] returned, plus an offset into the record).
    pub fn read_original(&self, at: u64, out: &mut [u8]) -> Result<(), SafetyError> {
        self.file.read_exact_at(out, at).map_err(|e| io(&self.path, e))
    }

    /// Make every record so far durable and committed: records synced, then
    /// slot A written and synced, then slot B. Only after this may the ranges
    /// they cover be written.
    pub fn commit(&mut self) -> Result<(), SafetyError> {
        if self.committed == self.records {
            return Ok(());
        }
        let sync = |f: &File, p: &Path| f.sync_data().map_err(|e| io(p, e));
        sync(&self.file, &self.path)?;
        crash_point("journal commit");
        self.generation += 1;
        let slot = slot_bytes(self.generation, self.records);
        for k in 0..2u64 {
            if k == 1 {
                crash_point("journal second slot");
            }
            self.file
                .write_all_at(&slot, self.slots_at + k * HEAD as u64)
                .map_err(|e| io(&self.path, e))?;
            sync(&self.file, &self.path)?;
        }
        self.committed = self.records;
        Ok(())
    }
}

/// fsync a directory so a created or deleted entry survives a power cut.
pub fn sync_dir(dir: &Path) -> Result<(), SafetyError> {
    File::open(dir).and_then(|d| d.sync_all()).map_err(|e| io(dir, e))
}

/// What a restore did, in device time (virtual on a simulated card), so the
/// figure means the same on real and simulated targets.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Restored {
    pub bytes: u64,
    /// Writing the bytes back.
    pub write_ns: u64,
    /// Everything: writes, read-back and the final flush.
    pub device_ns: u64,
}

impl Restored {
    /// Verified restore throughput (write back, read back, flush).
    pub fn bytes_per_sec(&self) -> Option<f64> {
        (self.device_ns > 0).then(|| self.bytes as f64 * 1e9 / self.device_ns as f64)
    }

    /// Throughput of the write-back alone, to compare with the device's
    /// sequential write speed.
    pub fn write_bytes_per_sec(&self) -> Option<f64> {
        (self.write_ns > 0).then(|| self.bytes as f64 * 1e9 / self.write_ns as f64)
    }
}

/// One record: where its bytes go, how many, where they sit in the journal
/// and their checksum.
#[derive(Debug, Clone, Copy)]
struct Record {
    offset: u64,
    len: u32,
    at: u64,
    crc: u32,
}

/// A journal read back and checked, ready to restore.
#[derive(Debug)]
pub struct Journal {
    pub path: PathBuf,
    /// The journal, open: restore reads through it, so putting data back
    /// needs no new descriptor (a run at its descriptor limit can restore).
    /// Where it came from a [`Writer`], its lock is held until this drops.
    file: File,
    /// Its directory, when a writer held it open (see [`Writer`]).
    dir_file: Option<File>,
    /// The registry its entry is in: the writer's, or the system's.
    registry: Registry,
    pub header: Header,
    records: Vec<Record>,
    /// Records both commit slots vouch for.
    pub committed: u64,
    /// A record past the committed ones was cut short or never completed by a
    /// crash; its range was never written.
    pub torn_tail: bool,
}

/// Open a journal file without blocking on a FIFO or reading a device: only a
/// regular file is a journal.
pub(super) fn open_regular(path: &Path) -> Result<File, SafetyError> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            // A directory (or a link to one) where the journal was.
            Some(libc::EISDIR) => SafetyError::NotAJournal {
                path: path.display().to_string(),
            },
            // Another user's journal (mode 0600).
            Some(libc::EACCES) => SafetyError::NotYours {
                path: path.display().to_string(),
                owner: std::fs::metadata(path)
                    .ok()
                    .map(|m| std::os::unix::fs::MetadataExt::uid(&m)),
            },
            _ => io(path, e),
        })?;
    let meta = file.metadata().map_err(|e| io(path, e))?;
    if !meta.is_file() {
        return Err(SafetyError::NotAJournal {
            path: path.display().to_string(),
        });
    }
    Ok(file)
}

/// Read and check the magic and header; returns the header and where the
/// commit slots start.
fn read_header(path: &Path, r: &mut impl Read) -> Result<(Header, u64), SafetyError> {
    let bad = |why: &str| corrupt(path, format!("header ({why})"));
    let mut magic = [0u8; MAGIC.len()];
    r.read_exact(&mut magic).map_err(|_| bad("too short"))?;
    if magic == MAGIC_V1 {
        return Err(SafetyError::Journal {
            path: path.display().to_string(),
            why: "written by an older flashlab (journal format v1), whose header has no checksum; \
                  restore it with that version"
                .into(),
        });
    }
    if magic != MAGIC {
        return Err(bad("not a flashlab journal"));
    }
    let mut len = [0u8; 4];
    r.read_exact(&mut len).map_err(|_| bad("cut short"))?;
    let n = u32::from_le_bytes(len);
    if n == 0 || n > MAX_HEADER {
        return Err(bad("impossible length"));
    }
    let mut json = vec![0u8; n as usize];
    r.read_exact(&mut json).map_err(|_| bad("cut short"))?;
    let mut crc = [0u8; 4];
    r.read_exact(&mut crc).map_err(|_| bad("cut short"))?;
    let mut c = crc32fast::Hasher::new();
    c.update(&len);
    c.update(&json);
    if c.finalize() != u32::from_le_bytes(crc) {
        return Err(bad("checksum does not match: the header was changed"));
    }
    let header: Header = serde_json::from_slice(&json).map_err(|e| bad(&e.to_string()))?;
    for &[o, l] in &header.ranges {
        if l == 0 || o.checked_add(l).is_none_or(|e| e > header.size_bytes) {
            return Err(bad("a declared range passes the end of the target"));
        }
    }
    Ok((header, (MAGIC.len() + 4 + n as usize + 4) as u64))
}

/// The two commit slots as read: each `(generation, committed)` where its
/// checksum holds, and how many records the journal vouches for.
struct Slots {
    a: Option<(u64, u64)>,
    b: Option<(u64, u64)>,
    /// Where they are in the journal, for messages.
    at: u64,
    committed: u64,
}

/// Read the commit slots after the header, at `slots_at`: a step of its
/// own because how many records are committed decides, record by record,
/// whether damage is a crash's torn tail or lost originals.
fn read_slots(path: &Path, r: &mut impl Read, slots_at: u64) -> Result<Slots, SafetyError> {
    let mut slots = [0u8; 2 * HEAD];
    r.read_exact(&mut slots)
        .map_err(|_| corrupt(path, "commit slots (cut short)".into()))?;
    let (a, b) = (read_slot(&slots[..HEAD]), read_slot(&slots[HEAD..]));
    let committed = match (a, b) {
        (None, None) => return Err(corrupt(path, format!("both commit slots (journal bytes {slots_at}..)"))),
        (Some(a), Some(b)) => a.1.max(b.1),
        (Some(s), None) | (None, Some(s)) => s.1,
    };
    Ok(Slots {
        a,
        b,
        at: slots_at,
        committed,
    })
}

/// Read and check every record from `pos` to `file_len`: returns them and
/// whether a torn tail (past the `committed` ones) ended the reading. A
/// step of its own: it walks the file, where the steps after it judge the
/// records as a whole.
fn read_records(
    path: &Path,
    r: &mut impl Read,
    header: &Header,
    (mut pos, file_len): (u64, u64),
    committed: u64,
) -> Result<(Vec<Record>, bool), SafetyError> {
    let mut records: Vec<Record> = Vec::new();
    let mut data = vec![0u8; CHUNK];
    let mut torn_tail = false;
    while pos < file_len {
        let seq = records.len() as u64;
        let uncommitted = seq >= committed;
        let at = pos;
        let here = |what: &str| {
            corrupt(
                path,
                format!(
                    "record {seq} at journal byte {at} ({what}; {} committed)",
                    crate::units::count(committed, "record was", "records were")
                ),
            )
        };
        if file_len - pos < HEAD as u64 {
            if uncommitted {
                torn_tail = true;
                break;
            }
            return Err(here("cut short"));
        }
        let mut h = [0u8; HEAD];
        r.read_exact(&mut h).map_err(|e| io(path, e))?;
        let head_ok = &h[..4] == RECORD && crc32fast::hash(&h[..24]) == word(&h, 24);
        if !head_ok {
            // A crash may leave garbage where an uncommitted record was
            // being appended; anywhere else it is damage.
            if uncommitted {
                torn_tail = true;
                break;
            }
            return Err(here("damaged record head"));
        }
        let offset = dword(&h, 8);
        let len = word(&h, 16);
        if u64::from(word(&h, 4)) != seq {
            return Err(here(&format!(
                "carries sequence number {}: records reordered or duplicated",
                word(&h, 4)
            )));
        }
        if len == 0 || len as usize > CHUNK {
            return Err(here("impossible length"));
        }
        pos += HEAD as u64;
        if file_len - pos < u64::from(len) {
            if uncommitted {
                torn_tail = true;
                break;
            }
            return Err(here("cut short"));
        }
        let d = &mut data[..len as usize];
        r.read_exact(d).map_err(|e| io(path, e))?;
        let end = offset.checked_add(u64::from(len));
        if crc32fast::hash(d) != word(&h, 20) {
            if uncommitted {
                torn_tail = true;
                break;
            }
            return Err(corrupt(
                path,
                format!(
                    "bytes {offset}..{} of the target (record {seq}, checksum does not match)",
                    end.unwrap_or(u64::MAX)
                ),
            ));
        }
        let inside = end.is_some_and(|end| header.ranges.iter().any(|&[o, l]| offset >= o && end <= o + l));
        if !inside {
            return Err(here(&format!("bytes {offset}.. lie outside the declared ranges")));
        }
        records.push(Record {
            offset,
            len,
            at: pos,
            crc: word(&h, 20),
        });
        pos += u64::from(len);
    }
    Ok((records, torn_tail))
}

/// The records read against the slots: every committed one present, and
/// a damaged slot only as a crash leaves it. A step of its own because it
/// needs the whole file read, where each record was judged alone.
fn check_ending(path: &Path, records: &[Record], torn_tail: bool, slots: &Slots) -> Result<(), SafetyError> {
    let committed = slots.committed;
    if (records.len() as u64) < committed {
        return Err(corrupt(
            path,
            format!(
                "its end: {} committed but only {} remain; the journal was cut short",
                crate::units::count(committed, "record was", "records were"),
                records.len()
            ),
        ));
    }
    // A commit syncs its records, then writes slot A, then slot B, and
    // nothing follows a crash. So a crash while writing A leaves B one
    // commit behind the complete records, and a crash while writing B
    // leaves A counting every record; any other damaged slot is damage.
    let present = records.len() as u64;
    let slot_fault = match (slots.a, slots.b) {
        (None, Some(_)) => torn_tail || present <= committed,
        (Some(_), None) => torn_tail || present != committed,
        _ => false,
    };
    if slot_fault {
        return Err(corrupt(path, format!("a commit slot (journal bytes {}..)", slots.at)));
    }
    Ok(())
}

/// No two records cover the same byte: the last check, since it sorts
/// the records as a whole, and a duplicate would put back two originals.
fn check_no_overlap(path: &Path, records: &[Record]) -> Result<(), SafetyError> {
    let mut sorted: Vec<(u64, u64)> = records.iter().map(|r| (r.offset, u64::from(r.len))).collect();
    sorted.sort_unstable();
    if let Some(w) = sorted.windows(2).find(|w| w[0].0 + w[0].1 > w[1].0) {
        return Err(corrupt(
            path,
            format!("records for bytes {}.. and {}.. overlap: duplicated", w[0].0, w[1].0),
        ));
    }
    Ok(())
}

impl Journal {
    /// Who owns the journal file (who made it, or root).
    pub fn owner(&self) -> Result<u32, SafetyError> {
        use std::os::unix::fs::MetadataExt;
        self.file.metadata().map(|m| m.uid()).map_err(|e| io(&self.path, e))
    }

    /// Bytes the journal will put back.
    pub fn bytes(&self) -> u64 {
        self.records.iter().map(|r| u64::from(r.len)).sum()
    }

    /// The end of the last byte the journal restores.
    pub fn end(&self) -> Option<u64> {
        self.records.iter().map(|r| r.offset + u64::from(r.len)).max()
    }

    /// The byte ranges the records cover, `(offset, length)`.
    pub fn covered(&self) -> Vec<(u64, u64)> {
        self.records.iter().map(|r| (r.offset, u64::from(r.len))).collect()
    }

    /// Read the header only (for listing).
    pub fn header_of(path: &Path) -> Result<Header, SafetyError> {
        let mut r = std::io::BufReader::new(open_regular(path)?);
        read_header(path, &mut r).map(|(h, _)| h)
    }

    /// Open and verify every record (see the module documentation for the
    /// rules); damage is refused naming the region.
    pub fn open(path: &Path) -> Result<Journal, SafetyError> {
        Journal::read(path, open_regular(path)?)
    }

    /// The journal a [`Writer`] has written, read back through the writer's
    /// own descriptor (and lock).
    pub fn from_writer(w: Writer) -> Result<Journal, SafetyError> {
        let mut j = Journal::read(&w.path, w.file)?;
        j.dir_file = Some(w.dir_file);
        j.registry = w.registry;
        Ok(j)
    }

    fn read(path: &Path, file: File) -> Result<Journal, SafetyError> {
        let file_len = file.metadata().map_err(|e| io(path, e))?.len();
        // A writer's descriptor stands at the end of what it wrote.
        (&file).seek(SeekFrom::Start(0)).map_err(|e| io(path, e))?;
        let mut r = std::io::BufReader::with_capacity(CHUNK, &file);
        let (header, slots_at) = read_header(path, &mut r)?;
        let slots = read_slots(path, &mut r, slots_at)?;
        let pos = slots_at + 2 * HEAD as u64;
        r.seek(SeekFrom::Start(pos)).map_err(|e| io(path, e))?;
        let (records, torn_tail) = read_records(path, &mut r, &header, (pos, file_len), slots.committed)?;
        check_ending(path, &records, torn_tail, &slots)?;
        check_no_overlap(path, &records)?;
        drop(r);
        Ok(Journal {
            path: path.to_path_buf(),
            file,
            dir_file: None,
            registry: Registry::system(),
            header,
            records,
            committed: slots.committed,
            torn_tail,
        })
    }

    /// Write every record back to `target`, read each one back through
    /// `verifier` (an independent reader, see
    /// [`Target::independent_reader`]; `None` reads through `target` with
    /// another buffer) and compare it with the checksum the journal took of
    /// the original, then flush.
    ///
    /// Records go in batches of [`RESTORE_BATCH`]. A reader thread fills the
    /// next batch from the journal while this thread writes the current one
    /// at queue depth [`RESTORE_QUEUE_DEPTH`] and checks it.
    pub fn restore(&self, target: &mut dyn Target, verifier: Option<&mut dyn Target>) -> Result<Restored, SafetyError> {
        self.restore_where(target, verifier, &|_| true)
    }

    /// [`Journal::restore`] for the records whose device offset `changed`
    /// says a write changed (a run that wrote some chunks with their own
    /// original bytes leaves those as they were; after a crash nobody knows,
    /// and every record goes back).
    pub fn restore_where(
        &self,
        target: &mut dyn Target,
        mut verifier: Option<&mut dyn Target>,
        changed: &dyn Fn(u64) -> bool,
    ) -> Result<Restored, SafetyError> {
        use std::sync::mpsc::sync_channel;
        let file = &self.file;
        let records: Vec<Record> = self.records.iter().filter(|r| changed(r.offset)).copied().collect();
        let records = records.as_slice();
        let batch_len = records.len().clamp(1, RESTORE_BATCH);
        let (full_tx, full_rx) = sync_channel::<Result<(AlignedBuf, Vec<Request>), SafetyError>>(1);
        let (empty_tx, empty_rx) = sync_channel::<AlignedBuf>(2);
        for _ in 0..2 {
            empty_tx
                .send(AlignedBuf::new(batch_len * CHUNK))
                .expect("receiver alive");
        }
        std::thread::scope(|scope| {
            scope.spawn(move || {
                for batch in records.chunks(RESTORE_BATCH) {
                    let Ok(mut data) = empty_rx.recv() else { return };
                    let mut writes = Vec::with_capacity(batch.len());
                    for (i, rec) in batch.iter().enumerate() {
                        let slot = i * CHUNK;
                        let d = &mut data.as_mut_slice()[slot..slot + rec.len as usize];
                        if let Err(e) = file.read_exact_at(d, rec.at) {
                            let _ = full_tx.send(Err(io(&self.path, e)));
                            return;
                        }
                        // Checked when the journal was opened; checked again
                        // here in case the file changed since.
                        if crc32fast::hash(d) != rec.crc {
                            let _ = full_tx.send(Err(corrupt(
                                &self.path,
                                format!("bytes {}.. of the target (changed while restoring)", rec.offset),
                            )));
                            return;
                        }
                        writes.push(Request::write(rec.offset, rec.len, slot));
                    }
                    if full_tx.send(Ok((data, writes))).is_err() {
                        return;
                    }
                }
            });
            // Owned here, so an early return drops both ends the reader waits
            // on and the scope's join cannot hang.
            let empty_tx = empty_tx;
            let mut back = AlignedBuf::new(CHUNK);
            let mut done = Restored::default();
            let started = target.device_time_ns();
            for (batch, recs) in full_rx.into_iter().zip(records.chunks(RESTORE_BATCH)) {
                let (mut data, writes) = batch?;
                crash_point("restore batch");
                let t0 = target.device_time_ns();
                super::run_batch(target, &writes, RESTORE_QUEUE_DEPTH, &mut data)?;
                done.write_ns += target.device_time_ns() - t0;
                for rec in recs {
                    match verifier.as_deref_mut() {
                        Some(v) => check(v, rec, &mut back)?,
                        None => check(target, rec, &mut back)?,
                    };
                    done.bytes += u64::from(rec.len);
                }
                let _ = empty_tx.send(data);
            }
            target.sync()?;
            done.device_ns = target.device_time_ns() - started;
            Ok(done)
        })
    }

    /// Read every record's bytes back through `reader` and compare them
    /// with the journal's checksums (after a restore, once the other names
    /// of the bytes have been flushed).
    pub fn verify(&self, reader: &mut dyn Target) -> Result<(), SafetyError> {
        let mut back = AlignedBuf::new(CHUNK);
        self.records.iter().try_for_each(|rec| check(reader, rec, &mut back))
    }

    /// The device offsets of the records `which` selects whose bytes, read
    /// through `reader`, differ from the originals (the chunks a run wrote
    /// with their own bytes are checked rather than trusted).
    pub fn differing(
        &self,
        reader: &mut dyn Target,
        which: &dyn Fn(u64) -> bool,
    ) -> Result<(Vec<u64>, u64), SafetyError> {
        let mut back = AlignedBuf::new(CHUNK);
        let (mut differ, mut read) = (Vec::new(), 0);
        for rec in self.records.iter().filter(|r| which(r.offset)) {
            match check(reader, rec, &mut back) {
                Ok(()) => {}
                Err(SafetyError::VerifyFailed { .. }) => differ.push(rec.offset),
                Err(e) => return Err(e),
            }
            read += u64::from(rec.len);
        }
        Ok((differ, read))
    }

    /// Remove the journal once its bytes are back, then its entry in the
    /// registry.
    pub fn delete(self) -> Result<(), SafetyError> {
        crash_point("journal delete");
        std::fs::remove_file(&self.path).map_err(|e| io(&self.path, e))?;
        match (&self.dir_file, self.path.parent()) {
            (Some(d), Some(dir)) => d.sync_all().map_err(|e| io(dir, e))?,
            (None, Some(dir)) => sync_dir(dir)?,
            (_, None) => {}
        }
        self.registry.unregister(&self.path);
        Ok(())
    }
}

/// Read `rec`'s bytes through `reader` into `back` and compare them with
/// the checksum of the original.
fn check(reader: &mut dyn Target, rec: &Record, back: &mut AlignedBuf) -> Result<(), SafetyError> {
    super::run_batch(reader, &[Request::read(rec.offset, rec.len, 0)], 1, back)?;
    if crc32fast::hash(&back.as_slice()[..rec.len as usize]) != rec.crc {
        return Err(SafetyError::VerifyFailed {
            offset: rec.offset,
            len: rec.len.into(),
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests;
