//! The preservation journal: the original bytes of every declared range the
//! test writes, copied out before the first write to that range, checksummed
//! per record and fsync'd; written back and verified at the end (or by
//! `flashlab restore` after a crash).
//!
//! Layout: a magic line, one JSON header line (target identity, every declared
//! range), then records of a 32-byte header (`FLJR`, offset, length, CRC-32 of
//! the data, CRC-32 of the header) followed by the data. A range is written only
//! after its records are on disk, so a record cut short by a crash (a torn tail)
//! covers bytes that were never overwritten and is skipped, and a declared range
//! without records was never touched; a complete record whose checksum fails is
//! corruption and stops the restore before any write.

use std::fs::{File, OpenOptions};
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::SafetyError;
use super::signals::crash_point;
use crate::target::{AlignedBuf, Request, Target};

pub const EXTENSION: &str = "fljournal";
const MAGIC: &[u8] = b"flashlab-journal v1\n";
const RECORD: &[u8; 4] = b"FLJR";
const RECORD_HEADER: usize = 32;
/// Largest record: the unit of streaming, so memory stays small however large
/// the ranges are.
pub const CHUNK: usize = 1 << 20;
/// Records restored per batch (8 MiB, two buffers of it in memory).
const RESTORE_BATCH: usize = 8;
/// Restore writes and read-backs kept in flight: enough to keep a loop device or
/// an SSD streaming; an SD card simply serialises them.
const RESTORE_QUEUE_DEPTH: usize = 8;

/// Who the journal belongs to and what it covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Header {
    /// Canonical path of the target.
    pub target: String,
    pub size_bytes: u64,
    /// Serial number or CID serial, when the device has one.
    pub identity: Option<String>,
    pub created_unix: u64,
    pub pid: u32,
    /// `[offset, length]` of each declared range.
    pub ranges: Vec<[u64; 2]>,
    pub total_bytes: u64,
}

fn io(what: &Path, e: std::io::Error) -> SafetyError {
    SafetyError::Journal {
        path: what.display().to_string(),
        why: e.to_string(),
    }
}

/// Writes a new journal.
pub struct Writer {
    file: File,
    pub path: PathBuf,
}

impl Writer {
    /// Create `dir/NAME.fljournal` with its header, durable before returning.
    pub fn create(dir: &Path, header: &Header) -> Result<Writer, SafetyError> {
        let name = header
            .target
            .trim_start_matches('/')
            .replace(|c: char| !c.is_ascii_alphanumeric(), "_");
        let path = dir.join(format!("{name}-{}-{}.{EXTENSION}", header.created_unix, header.pid));
        let mut file = OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| io(&path, e))?;
        let json = serde_json::to_string(header).expect("header serialises");
        file.write_all(MAGIC)
            .and_then(|_| file.write_all(json.as_bytes()))
            .and_then(|_| file.write_all(b"\n"))
            .and_then(|_| file.sync_all())
            .map_err(|e| io(&path, e))?;
        sync_dir(dir)?;
        Ok(Writer { file, path })
    }

    /// Append the original bytes at `offset`.
    pub fn record(&mut self, offset: u64, data: &[u8]) -> Result<(), SafetyError> {
        let mut h = [0u8; RECORD_HEADER];
        h[..4].copy_from_slice(RECORD);
        h[8..16].copy_from_slice(&offset.to_le_bytes());
        h[16..20].copy_from_slice(&(data.len() as u32).to_le_bytes());
        h[20..24].copy_from_slice(&crc32fast::hash(data).to_le_bytes());
        let hc = crc32fast::hash(&h[..24]);
        h[24..28].copy_from_slice(&hc.to_le_bytes());
        self.file
            .write_all(&h)
            .and_then(|_| self.file.write_all(data))
            .map_err(|e| io(&self.path, e))
    }

    /// Make everything written so far durable.
    pub fn commit(&mut self) -> Result<(), SafetyError> {
        self.file.sync_all().map_err(|e| io(&self.path, e))
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

/// A journal read back and checked, ready to restore.
#[derive(Debug)]
pub struct Journal {
    pub path: PathBuf,
    pub header: Header,
    /// (target offset, length, position of the data in the file).
    records: Vec<(u64, u32, u64)>,
    /// Bytes of a torn final record that was never completed (nothing of it
    /// reached the device).
    pub torn_tail: bool,
}

impl Journal {
    /// Bytes the journal will put back.
    pub fn bytes(&self) -> u64 {
        self.records.iter().map(|r| u64::from(r.1)).sum()
    }

    /// The end of the last byte the journal restores.
    pub fn end(&self) -> Option<u64> {
        self.records.iter().map(|r| r.0 + u64::from(r.1)).max()
    }

    /// Read the header only (for listing).
    pub fn header_of(path: &Path) -> Result<Header, SafetyError> {
        let mut r = BufReader::new(File::open(path).map_err(|e| io(path, e))?);
        read_header(path, &mut r).map(|(h, _)| h)
    }

    /// Open and verify every record; corruption is refused naming the region.
    pub fn open(path: &Path) -> Result<Journal, SafetyError> {
        let file = File::open(path).map_err(|e| io(path, e))?;
        let file_len = file.metadata().map_err(|e| io(path, e))?.len();
        let mut r = BufReader::with_capacity(CHUNK, file);
        let (header, mut pos) = read_header(path, &mut r)?;
        let mut records = Vec::new();
        let mut data = vec![0u8; CHUNK];
        let mut torn_tail = false;
        while pos < file_len {
            if file_len - pos < RECORD_HEADER as u64 {
                torn_tail = true;
                break;
            }
            let mut h = [0u8; RECORD_HEADER];
            r.read_exact(&mut h).map_err(|e| io(path, e))?;
            let word = |a: usize| u32::from_le_bytes(h[a..a + 4].try_into().expect("4 bytes"));
            let offset = u64::from_le_bytes(h[8..16].try_into().expect("8 bytes"));
            let len = word(16);
            if &h[..4] != RECORD || crc32fast::hash(&h[..24]) != word(24) || len as usize > CHUNK {
                return Err(SafetyError::Corrupt {
                    path: path.display().to_string(),
                    region: format!("record header at journal byte {pos}"),
                });
            }
            pos += RECORD_HEADER as u64;
            if file_len - pos < u64::from(len) {
                torn_tail = true;
                break;
            }
            let d = &mut data[..len as usize];
            r.read_exact(d).map_err(|e| io(path, e))?;
            if crc32fast::hash(d) != word(20) {
                return Err(SafetyError::Corrupt {
                    path: path.display().to_string(),
                    region: format!("bytes {offset}..{} of the target", offset + u64::from(len)),
                });
            }
            let inside = header
                .ranges
                .iter()
                .any(|&[o, l]| offset >= o && offset + u64::from(len) <= o + l);
            if !inside {
                return Err(SafetyError::Corrupt {
                    path: path.display().to_string(),
                    region: format!("record for bytes {offset}.. lies outside the declared ranges"),
                });
            }
            records.push((offset, len, pos));
            pos += u64::from(len);
        }
        Ok(Journal {
            path: path.to_path_buf(),
            header,
            records,
            torn_tail,
        })
    }

    /// Write every record back to `target`, read it back and compare, then make
    /// it durable. Returns the bytes restored.
    ///
    /// Records go in batches of [`RESTORE_BATCH`]. A reader thread fills the next
    /// batch from the journal (page cache, one `pread` per record) while this
    /// thread writes the current one at queue depth [`RESTORE_QUEUE_DEPTH`], reads
    /// it back at the same depth and compares. The journal reads thus cost no
    /// device time; the read-back is the price of knowing the bytes are back
    /// (scripts/restore-speed.sh and examples/restore_speed.rs measure it).
    pub fn restore(&self, target: &mut dyn Target) -> Result<Restored, SafetyError> {
        use std::os::unix::fs::FileExt;
        use std::sync::mpsc::sync_channel;
        let file = File::open(&self.path).map_err(|e| io(&self.path, e))?;
        let records = &self.records;
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
                    for (i, &(offset, len, at)) in batch.iter().enumerate() {
                        let slot = i * CHUNK;
                        if let Err(e) = file.read_exact_at(&mut data.as_mut_slice()[slot..slot + len as usize], at) {
                            let _ = full_tx.send(Err(io(&self.path, e)));
                            return;
                        }
                        writes.push(Request::write(offset, len, slot));
                    }
                    if full_tx.send(Ok((data, writes))).is_err() {
                        return;
                    }
                }
            });
            // Owned here, so an early return drops both ends the reader waits
            // on and the scope's join cannot hang.
            let empty_tx = empty_tx;
            let mut back = AlignedBuf::new(batch_len * CHUNK);
            let mut done = Restored::default();
            let started = target.device_time_ns();
            for batch in full_rx {
                let (mut data, writes) = batch?;
                crash_point("restore batch");
                let t0 = target.device_time_ns();
                super::run_batch(target, &writes, RESTORE_QUEUE_DEPTH, &mut data)?;
                done.write_ns += target.device_time_ns() - t0;
                let reads: Vec<Request> = writes
                    .iter()
                    .map(|w| Request::read(w.offset, w.len, w.buf_offset))
                    .collect();
                super::run_batch(target, &reads, RESTORE_QUEUE_DEPTH, &mut back)?;
                for r in &reads {
                    let span = r.buf_offset..r.buf_offset + r.len as usize;
                    if back.as_slice()[span.clone()] != data.as_slice()[span] {
                        return Err(SafetyError::VerifyFailed {
                            offset: r.offset,
                            len: r.len.into(),
                        });
                    }
                    done.bytes += u64::from(r.len);
                }
                let _ = empty_tx.send(data);
            }
            target.sync()?;
            done.device_ns = target.device_time_ns() - started;
            Ok(done)
        })
    }

    /// Remove the journal once its bytes are back.
    pub fn delete(self) -> Result<(), SafetyError> {
        std::fs::remove_file(&self.path).map_err(|e| io(&self.path, e))?;
        if let Some(dir) = self.path.parent() {
            sync_dir(dir)?;
        }
        Ok(())
    }
}

fn read_header(path: &Path, r: &mut impl Read) -> Result<(Header, u64), SafetyError> {
    let bad = |why: &str| SafetyError::Corrupt {
        path: path.display().to_string(),
        region: format!("header ({why})"),
    };
    let mut magic = [0u8; MAGIC.len()];
    r.read_exact(&mut magic).map_err(|_| bad("too short"))?;
    if magic != MAGIC {
        return Err(bad("not a flashlab journal"));
    }
    let mut line = Vec::new();
    let mut byte = [0u8; 1];
    loop {
        r.read_exact(&mut byte).map_err(|_| bad("cut short"))?;
        if byte[0] == b'\n' {
            break;
        }
        line.push(byte[0]);
        if line.len() > 1 << 20 {
            return Err(bad("header line too long"));
        }
    }
    let header: Header = serde_json::from_slice(&line).map_err(|e| bad(&e.to_string()))?;
    Ok((header, (MAGIC.len() + line.len() + 1) as u64))
}

/// Journals in `dir`, each with its header or why it could not be read.
pub fn list(dir: &Path) -> Vec<(PathBuf, Result<Header, SafetyError>)> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut out: Vec<_> = entries
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|e| e == EXTENSION))
        .map(|p| {
            let h = Journal::header_of(&p);
            (p, h)
        })
        .collect();
    out.sort_by(|a, b| a.0.cmp(&b.0));
    out
}
