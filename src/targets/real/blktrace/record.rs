//! The kernel's `blk_io_trace` record (`blktrace_api.h`;
//! docs/notes/trace-formats.md, "blktrace binary"): a 48-byte header, then
//! `pdu_len` bytes of payload. A capture copies the kernel's records as
//! they are, `emulate --record` writes its own, and `flashlab life` reads
//! them (`import::trace`); their layout is here once.

/// The magic in a header's first word, with the version in its low byte.
pub const MAGIC: u32 = 0x6561_7400;
/// The record layout written and read here (blkparse reads this one only:
/// `verify_trace` in blktrace.h).
pub const VERSION: u32 = 7;
pub const HEADER: usize = 48;

// Action codes, the low 16 bits of `action`.
pub const ACT_QUEUE: u32 = 1;
/// The request issued to the driver (blkparse's D).
pub const ACT_ISSUE: u32 = 7;

// Category bits, the high 16 bits of `action`.
pub const TC_READ: u32 = 1;
pub const TC_WRITE: u32 = 1 << 1;
pub const TC_FLUSH: u32 = 1 << 2;
/// Passthrough (SCSI) commands: no sector range (blkparse_fmt.c prints their
/// payload instead).
pub const TC_PC: u32 = 1 << 9;
/// Process names and clock notes, not I/O; their action codes overlap the
/// I/O ones (a timestamp note is 1, as Q is), so the category comes first.
pub const TC_NOTIFY: u32 = 1 << 10;
pub const TC_DISCARD: u32 = 1 << 13;

/// One request issued to the driver (a D record) as the kernel writes it,
/// little-endian, with no payload: `category` its bits (a discard is
/// `TC_WRITE | TC_DISCARD`, a flush `TC_WRITE | TC_FLUSH`, as the kernel
/// marks them), `offset` and `bytes` in bytes (the record counts 512-byte
/// sectors; a flush has no bytes).
pub fn issue_record(sequence: u32, time_ns: u64, category: u32, offset: u64, bytes: u32, device: u32) -> [u8; HEADER] {
    let mut h = [0u8; HEADER];
    h[0..4].copy_from_slice(&(MAGIC | VERSION).to_le_bytes());
    h[4..8].copy_from_slice(&sequence.to_le_bytes());
    h[8..16].copy_from_slice(&time_ns.to_le_bytes());
    h[16..24].copy_from_slice(&(offset / 512).to_le_bytes());
    h[24..28].copy_from_slice(&bytes.to_le_bytes());
    h[28..32].copy_from_slice(&((category << 16) | ACT_ISSUE).to_le_bytes());
    h[36..40].copy_from_slice(&device.to_le_bytes());
    h
}
